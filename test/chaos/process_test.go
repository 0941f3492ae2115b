package chaos

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/payload-applier/payload-applier/test/cluster"
)

// operatorProcess is `payload-applier start` running as a child process
// under its own token user.
type operatorProcess struct {
	name       string
	user       string
	identity   string
	cmd        *exec.Cmd
	logPath    string
	metricsURL string
	// mark is the end of the audit log just before the process started.
	mark cluster.AuditMark

	done    chan struct{}
	waitErr error
	killed  atomic.Bool
}

type processOptions struct {
	// store is the release store; namespace the operator's own.
	store, namespace string
	user             string
	leaderElect      bool
}

var processCount atomic.Int64

// startOperator starts `payload-applier start` and arranges for it to be
// killed when the test ends. It resyncs every second so that the tests
// see many passes.
func startOperator(t *testing.T, opts processOptions) *operatorProcess {
	t.Helper()
	bin := buildCLI(t)
	n := processCount.Add(1)
	dir := t.TempDir()
	kubeconfig := writeKubeconfig(t, dir, opts.user)
	port := freePort(t)
	p := &operatorProcess{
		name:       fmt.Sprintf("%s#%d", opts.user, n),
		user:       opts.user,
		identity:   fmt.Sprintf("%s-%d", opts.user, n),
		logPath:    filepath.Join(dir, "operator.log"),
		metricsURL: fmt.Sprintf("http://127.0.0.1:%d/metrics", port),
		done:       make(chan struct{}),
	}
	logFile, err := os.Create(p.logPath)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(bin, "start",
		"--payloads", opts.store,
		"--kubeconfig", kubeconfig,
		"--namespace", opts.namespace,
		"--listen", fmt.Sprintf("127.0.0.1:%d", port),
		"--leader-elect="+strconv.FormatBool(opts.leaderElect),
		"--resync-interval=1s",
		"--identity", p.identity,
	)
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	// Its own process group, and killed with the test binary.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if p.mark, err = testCluster.AuditMark(); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		logFile.Close()
		t.Fatalf("start operator: %v", err)
	}
	go func() {
		p.waitErr = p.cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("last lines of %s's log (%s):\n%s", p.name, p.logPath, tail(p.logPath, 30))
		}
	})
	return p
}

// kill sends SIGKILL and waits until the process is reaped.
func (p *operatorProcess) kill() {
	select {
	case <-p.done:
		return
	default:
	}
	p.killed.Store(true)
	_ = syscall.Kill(p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

// stop sends SIGTERM, the way a pod is stopped, and waits for the exit;
// it fails the test if the operator does not exit cleanly in time.
func (p *operatorProcess) stop(t *testing.T) {
	t.Helper()
	select {
	case <-p.done:
		t.Fatalf("%s exited before it was stopped: %v", p.name, p.waitErr)
	default:
	}
	_ = syscall.Kill(p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
		if p.waitErr != nil {
			t.Errorf("%s exited with %v after SIGTERM", p.name, p.waitErr)
		}
	case <-time.After(30 * time.Second):
		p.kill()
		t.Errorf("%s did not exit within 30s of SIGTERM", p.name)
	}
}

// exited reports whether the process ended without being killed by us.
func (p *operatorProcess) exited() (bool, error) {
	select {
	case <-p.done:
		return !p.killed.Load(), p.waitErr
	default:
		return false, nil
	}
}

// requireRunning fails the test when the process has exited by itself.
func (p *operatorProcess) requireRunning(t *testing.T) {
	t.Helper()
	if gone, err := p.exited(); gone {
		t.Fatalf("%s exited by itself (%v); last lines of its log:\n%s", p.name, err, tail(p.logPath, 30))
	}
}

// syncs counts the syncs the process finished applying, from its
// payload_applier_sync_duration_seconds histogram; 0 while it serves none.
// A sync is counted before it writes status, so status after n syncs is
// only certain once n+1 are counted.
func (p *operatorProcess) syncs() int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.metricsURL, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	total := 0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "payload_applier_sync_duration_seconds_count") {
			continue
		}
		fields := strings.Fields(line)
		if v, err := strconv.ParseFloat(fields[len(fields)-1], 64); err == nil {
			total += int(v)
		}
	}
	return total
}

// writes counts the write requests the process's user made since it started.
func (p *operatorProcess) writes(t *testing.T) int {
	t.Helper()
	n, err := testCluster.CountAudit(p.mark, cluster.AuditFilter{User: p.user, WritesOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// writeKubeconfig writes a kubeconfig for a token user of the test cluster.
func writeKubeconfig(t *testing.T, dir, user string) string {
	t.Helper()
	cfg, err := testCluster.UserRESTConfig(user)
	if err != nil {
		t.Fatal(err)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["chaos"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken}
	kc.Contexts["chaos"] = &clientcmdapi.Context{Cluster: "chaos", AuthInfo: user}
	kc.CurrentContext = "chaos"
	path := filepath.Join(dir, user+".kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// tail returns the last n lines of a file.
func tail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > 64<<10 {
		_, _ = f.Seek(st.Size()-64<<10, io.SeekStart)
	}
	data, _ := io.ReadAll(f)
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
