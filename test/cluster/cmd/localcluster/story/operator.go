package story

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// OperatorOptions configure StartOperator. CLI, Kubeconfig and LogPath
// are required, and Payloads or ReleaseCache or both.
type OperatorOptions struct {
	// CLI is the payload-applier binary.
	CLI string
	// Kubeconfig is the operator's identity: cluster.ApplierKubeconfig, so
	// that the audit log tells its requests from the story's.
	Kubeconfig string
	// Payloads is the release store, one payload directory per version.
	Payloads string
	// ReleaseCache is where the operator keeps the release images it pulls.
	ReleaseCache string
	// LogPath receives the operator's output.
	LogPath string
	// ResyncInterval is passed to --resync-interval. Default 10s.
	ResyncInterval time.Duration
	// ReadyTimeout bounds the wait for the metrics endpoint. Default 30s.
	ReadyTimeout time.Duration
	// StopGracePeriod is how long Stop waits after SIGTERM. Default 10s.
	StopGracePeriod time.Duration
}

// Operator is a `payload-applier start` child process.
type Operator struct {
	opts       OperatorOptions
	cmd        *exec.Cmd
	args       []string
	metricsURL string
	done       chan struct{} // closed once the process has exited and been reaped
	waitErr    error         // read only after done is closed
}

// StartOperator runs `payload-applier start` against the cluster, without
// leader election and with a short resync, and returns once its metrics
// endpoint answers. The process outlives ctx, which bounds only the start:
// call Stop.
func StartOperator(ctx context.Context, opts OperatorOptions) (*Operator, error) {
	var missing []string
	for name, v := range map[string]string{"CLI": opts.CLI, "Kubeconfig": opts.Kubeconfig, "Payloads or ReleaseCache": opts.Payloads + opts.ReleaseCache, "LogPath": opts.LogPath} {
		if v == "" {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("story: OperatorOptions lack %s", strings.Join(missing, ", "))
	}
	if opts.ResyncInterval <= 0 {
		opts.ResyncInterval = 10 * time.Second
	}
	if opts.ReadyTimeout <= 0 {
		opts.ReadyTimeout = 30 * time.Second
	}
	if opts.StopGracePeriod <= 0 {
		opts.StopGracePeriod = 10 * time.Second
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	args := []string{"start"}
	if opts.Payloads != "" {
		args = append(args, "--payloads", opts.Payloads)
	}
	if opts.ReleaseCache != "" {
		args = append(args, "--release-cache", opts.ReleaseCache)
	}
	args = append(args,
		"--kubeconfig", opts.Kubeconfig,
		"--listen", addr,
		"--leader-elect=false",
		"--resync-interval", opts.ResyncInterval.String(),
	)
	logFile, err := os.Create(opts.LogPath)
	if err != nil {
		return nil, fmt.Errorf("create operator log: %w", err)
	}
	fmt.Fprintf(logFile, "$ %s %s\n", opts.CLI, strings.Join(args, " "))
	cmd := exec.Command(opts.CLI, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = childProcAttr()
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start the operator: %w", err)
	}
	op := &Operator{opts: opts, cmd: cmd, args: args, metricsURL: "http://" + addr + "/metrics", done: make(chan struct{})}
	go func() {
		op.waitErr = cmd.Wait()
		logFile.Close()
		close(op.done)
	}()
	if err := op.waitReady(ctx, "http://"+addr+"/healthz"); err != nil {
		return nil, errors.Join(err, op.Stop())
	}
	return op, nil
}

// waitReady polls the health endpoint, failing fast if the process exits.
func (o *Operator) waitReady(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, o.opts.ReadyTimeout)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-o.done:
			return o.exitError()
		case <-ctx.Done():
			return fmt.Errorf("the operator did not serve %s within %s (log %s)", url, o.opts.ReadyTimeout, o.opts.LogPath)
		case <-tick.C:
		}
	}
}

// Done is closed when the operator process has exited.
func (o *Operator) Done() <-chan struct{} { return o.done }

// exitError describes an exited operator with the end of its log.
func (o *Operator) exitError() error {
	return fmt.Errorf("the operator exited (%v); log %s ends with:\n%s", o.waitErr, o.opts.LogPath, LastLines(o.opts.LogPath, 15))
}

// MetricsURL is the operator's /metrics endpoint.
func (o *Operator) MetricsURL() string { return o.metricsURL }

// LogPath is where the operator's output goes.
func (o *Operator) LogPath() string { return o.opts.LogPath }

// Args are the arguments the operator was started with.
func (o *Operator) Args() []string { return o.args }

// PID is the operator's process id.
func (o *Operator) PID() int { return o.cmd.Process.Pid }

// Stop sends SIGTERM, which `start` handles by shutting down cleanly, and
// SIGKILL after the grace period. It is safe to call more than once.
func (o *Operator) Stop() error {
	select {
	case <-o.done:
		return nil
	default:
	}
	if err := o.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("stop the operator: %w", err)
	}
	select {
	case <-o.done:
		return nil
	case <-time.After(o.opts.StopGracePeriod):
	}
	if err := o.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("kill the operator: %w", err)
	}
	<-o.done
	return fmt.Errorf("the operator ignored SIGTERM for %s and was killed", o.opts.StopGracePeriod)
}

// Metrics returns the operator's metric samples whose names start with one
// of prefixes, as exposition-format lines.
func (o *Operator) Metrics(ctx context.Context, prefixes ...string) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, o.metricsURL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", o.metricsURL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape %s: %s", o.metricsURL, resp.Status)
	}
	var out []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		for _, p := range prefixes {
			if strings.HasPrefix(line, p) {
				out = append(out, line)
				break
			}
		}
	}
	return out, sc.Err()
}

// freePort asks the kernel for a free loopback port. Another process may
// take it before the operator binds it; the operator then exits with
// "address already in use", which StartOperator reports.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// LastLines returns up to n last lines of the file at path, for error
// messages; a file that cannot be read gives a note saying so.
func LastLines(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
