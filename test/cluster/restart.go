package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// auditShutDown is what kube-apiserver logs once its graceful termination
// has flushed and closed the audit log. It then only waits for open watch
// connections to go, up to its request timeout of a minute.
const auditShutDown = `"[graceful-termination] audit backend shutdown completed"`

// RestartAPIServer stops kube-apiserver and starts it again with the same
// flags, port, certificates, token users and audit log, while etcd and
// kube-controller-manager keep running. It returns once /readyz answers 200
// within Options.StartTimeout.
//
// The stop is graceful: SIGTERM, then SIGKILL once the apiserver has
// stopped listening and closed its audit log, since it would otherwise wait
// a minute for the controller manager's watches to end (or after
// Options.StopGracePeriod at the latest). Everything stored survives, as
// etcd keeps running. Clients keep their configuration: their connections
// break and they reconnect to the same address. The new apiserver appends to
// the audit log, so marks taken before the restart stay valid, and its
// output is appended to kube-apiserver.log.
func (c *Cluster) RestartAPIServer(ctx context.Context) error {
	c.procsMu.Lock()
	defer c.procsMu.Unlock()
	idx := -1
	for i, p := range c.procs {
		if p.name == apiServerBin {
			idx = i
		}
	}
	if idx < 0 || len(c.apiServerArgs) == 0 {
		return errors.New("restart kube-apiserver: it is not running")
	}
	old := c.procs[idx]
	if err := old.terminate(c.opts.StopGracePeriod, func() bool {
		return strings.Contains(lastLines(old.logPath, 200), auditShutDown)
	}); err != nil {
		return fmt.Errorf("restart kube-apiserver: %w", err)
	}
	// A kill before the audit log was closed may leave half a line, which
	// would run into the new apiserver's first event.
	if err := trimPartialLine(c.auditLog); err != nil {
		return fmt.Errorf("restart kube-apiserver: %w", err)
	}
	p, err := startProcess(apiServerBin, filepath.Join(c.binDir, apiServerBin),
		filepath.Join(c.LogDir(), apiServerBin+".log"), c.apiServerArgs, true)
	if err != nil {
		return fmt.Errorf("restart kube-apiserver: %w", err)
	}
	c.procs[idx] = p
	readyCtx, cancel := context.WithTimeout(ctx, c.opts.StartTimeout)
	defer cancel()
	if err := p.waitReady(readyCtx, c.checkAPIServer); err != nil {
		return fmt.Errorf("restart kube-apiserver: %w", err)
	}
	return nil
}

// terminate sends SIGTERM to the process group and waits until the process
// exits. Once stopped() reports that what matters has shut down, or after
// grace, it sends SIGKILL; either way it waits until the process is reaped.
func (p *process) terminate(grace time.Duration, stopped func() bool) error {
	select {
	case <-p.done:
		return nil
	default:
	}
	pgid := p.cmd.Process.Pid // Setpgid makes the group id equal the pid.
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	deadline := time.After(grace)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
wait:
	for {
		select {
		case <-p.done:
			return nil
		case <-deadline:
			break wait
		case <-tick.C:
			if stopped() {
				break wait
			}
		}
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	select {
	case <-p.done:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("%s (pid %d) did not exit after SIGKILL", p.name, pgid)
	}
}

// trimPartialLine cuts a file back to its last newline.
func trimPartialLine(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return err
	}
	const window = 1 << 20
	start := max(st.Size()-window, 0)
	buf := make([]byte, st.Size()-start)
	if _, err := f.ReadAt(buf, start); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	if buf[len(buf)-1] == '\n' {
		return nil
	}
	cut := start + int64(bytes.LastIndexByte(buf, '\n')) + 1
	return f.Truncate(cut)
}
