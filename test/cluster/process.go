package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// errPortInUse marks a start that failed because a port picked as free was
// taken before the process could bind it; Start retries with new ports.
var errPortInUse = errors.New("port already in use")

// process is one control plane program started by this package.
type process struct {
	name    string
	logPath string
	cmd     *exec.Cmd
	done    chan struct{} // closed once the process has exited and been reaped
	waitErr error         // the exit status; read only after done is closed
}

// startProcess runs binary with args, sending its output to logPath. A
// restart appends to the log of the process it replaces.
func startProcess(name, binary, logPath string, args []string, appendLog bool) (*process, error) {
	flags := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	if appendLog {
		flags = os.O_WRONLY | os.O_CREATE | os.O_APPEND
	}
	logFile, err := os.OpenFile(logPath, flags, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create %s log: %w", name, err)
	}
	fmt.Fprintf(logFile, "$ %s %s\n", binary, strings.Join(args, " "))
	cmd := exec.Command(binary, args...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = childProcAttr()
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s (log %s): %w", name, logPath, err)
	}
	p := &process{name: name, logPath: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// exitError reports whether the process has exited and, if so, an error
// naming its log file and showing its last lines.
func (p *process) exitError() error {
	select {
	case <-p.done:
	default:
		return nil
	}
	tail := lastLines(p.logPath, 20)
	err := fmt.Errorf("%s exited during start (%v); log %s\nlast lines:\n%s", p.name, p.waitErr, p.logPath, tail)
	if strings.Contains(tail, "address already in use") {
		return fmt.Errorf("%w: %w", errPortInUse, err)
	}
	return err
}

// stop sends SIGTERM to the process group, then SIGKILL once grace has
// passed, and waits until the process has been reaped.
func (p *process) stop(grace time.Duration) error {
	select {
	case <-p.done:
		return nil
	default:
	}
	pgid := p.cmd.Process.Pid // Setpgid makes the group id equal the pid.
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	select {
	case <-p.done:
		return fmt.Errorf("%s ignored SIGTERM for %s and was killed", p.name, grace)
	case <-time.After(10 * time.Second):
		return fmt.Errorf("%s (pid %d) did not exit after SIGKILL", p.name, pgid)
	}
}

// waitReady polls check until it succeeds, the process exits, or ctx ends.
// The error of a timeout names the log file and shows its last lines.
func (p *process) waitReady(ctx context.Context, check func(context.Context) error) error {
	var lastErr error
	for {
		if err := p.exitError(); err != nil {
			return err
		}
		checkCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
		lastErr = check(checkCtx)
		cancel()
		if lastErr == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			if err := p.exitError(); err != nil {
				return err
			}
			return fmt.Errorf("%s not ready: %w (last check: %v); log %s\nlast lines:\n%s",
				p.name, ctx.Err(), lastErr, p.logPath, lastLines(p.logPath, 20))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// freePorts returns n distinct loopback ports that were free a moment ago.
// Another program can still take one before the control plane binds it;
// Start detects that and retries.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		// Holding every listener until all are chosen keeps the ports distinct.
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
