package main

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
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/payload-applier/payload-applier/pkg/payload"
)

var (
	clusterVersions  = schema.GroupVersionResource{Group: "config.openshift.io", Version: "v1", Resource: "clusterversions"}
	clusterOperators = schema.GroupVersionResource{Group: "config.openshift.io", Version: "v1", Resource: "clusteroperators"}
)

// operatorRSS runs `payload-applier start` against the control plane with a
// release store holding the real payload, requests it through the
// ClusterVersion, plays the part of the operators (each ClusterOperator is
// reported Available at its payload versions), and waits until the
// operator has completed the install and run one reconcile pass. The peak
// is the process's VmHWM.
func (b *bench) operatorRSS(ctx context.Context, cli string) error {
	rel, err := loadReal(b.o.realDir)
	if err != nil {
		return err
	}
	w := releaseWorkload("real", rel)
	if err := b.e.createNamespaces(ctx, w.namespaces); err != nil {
		return err
	}
	store := filepath.Join(b.work, "store")
	if err := os.MkdirAll(store, 0o755); err != nil {
		return err
	}
	if err := os.Symlink(rel.Dir, filepath.Join(store, rel.Version)); err != nil && !os.IsExist(err) {
		return err
	}
	versions := operatorVersions(rel)
	kc, err := b.e.kubeconfig("bench-payload-applier")
	if err != nil {
		return err
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	logPath := filepath.Join(b.work, "operator.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logFile.Close()
	listen := "127.0.0.1:" + strconv.Itoa(port)
	argv := []string{cli, "start", "--payloads", store, "--kubeconfig", kc, "--listen", listen,
		"--leader-elect=false", "--resync-interval=10s", "--namespace", ledgerNamespace}
	if b.o.operatorMemoryLimit != "" {
		cg, err := newMemoryCgroup(b.o.operatorMemoryLimit)
		if err != nil {
			return err
		}
		defer cg.remove()
		argv = cg.wrap(argv)
		logf("operator runs in cgroup %s limited to %s", cg.dir, b.o.operatorMemoryLimit)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), b.o.operatorEnv...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return err
	}
	defer stopProcess(cmd)
	logf("operator started (pid %d); requesting %s", cmd.Process.Pid, rel.Version)

	// The anonymous part (heap, stacks) is sampled, so its peak may miss a
	// spike; the rest of the RSS is the binary's pages, which the kernel
	// can drop and read again.
	var peak, rss, anonPeak int64
	sampleMem := func() {
		hwm, cur, anon, err := procMemory(cmd.Process.Pid)
		if err == nil {
			peak, rss, anonPeak = max(peak, hwm), cur, max(anonPeak, anon)
		}
	}
	cv := b.e.dynamic.Resource(clusterVersions)
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		sampleMem()
		_, err := cv.Get(ctx, "version", metav1.GetOptions{})
		return err == nil, nil
	}); err != nil {
		return fmt.Errorf("the operator did not create ClusterVersion version (log %s): %w", logPath, err)
	}
	patch := fmt.Sprintf(`{"spec":{"desiredUpdate":{"version":%q}}}`, rel.Version)
	if _, err := cv.Patch(ctx, "version", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		return err
	}
	metricsURL := "http://" + listen + "/metrics"
	var installDone time.Duration
	debug := os.Getenv("BENCH_DEBUG") != ""
	err = wait.PollUntilContextTimeout(ctx, time.Second, 8*time.Minute, true, func(ctx context.Context) (bool, error) {
		sampleMem()
		b.reportOperatorsAvailable(ctx, versions)
		counts := syncCounts(metricsURL)
		if debug {
			logf("  operator +%4.0fs rss %6.1f MiB peak %6.1f MiB syncs %v heap %s", time.Since(start).Seconds(), float64(rss)/1024, float64(peak)/1024, counts, heapMetrics(metricsURL))
		}
		if installDone == 0 && completed(ctx, b, rel.Version) {
			installDone = time.Since(start)
		}
		return installDone > 0 && counts["reconcile"] >= 1, nil
	})
	sampleMem()
	if err != nil {
		return fmt.Errorf("the operator did not complete the install and reconcile (log %s): %w", logPath, err)
	}
	b.res.RSS = &rssInfo{
		PeakMiB:     float64(peak) / 1024,
		FinalMiB:    float64(rss) / 1024,
		AnonPeakMiB: float64(anonPeak) / 1024,
		MemoryLimit: b.o.operatorMemoryLimit,
		InstallSec:  installDone.Seconds(),
		TotalSec:    time.Since(start).Seconds(),
		Manifests:   len(rel.Manifests),
	}
	logf("operator peak RSS %.1f MiB (now %.1f MiB; anonymous peak sampled %.1f MiB); install completed after %s", b.res.RSS.PeakMiB, b.res.RSS.FinalMiB, b.res.RSS.AnonPeakMiB, installDone.Round(time.Second))
	return nil
}

// operatorVersions maps each ClusterOperator of rel to the status.versions
// its manifest asks for.
func operatorVersions(rel *payload.Release) map[string][]interface{} {
	versions := map[string][]interface{}{}
	for _, m := range rel.Manifests {
		if m.GVK.Kind == "ClusterOperator" && m.GVK.Group == "config.openshift.io" {
			v, _, _ := unstructured.NestedSlice(m.Obj.Object, "status", "versions")
			versions[m.Obj.GetName()] = v
		}
	}
	return versions
}

// playOperators reports the payload's ClusterOperators Available every
// 250ms until the returned function is called.
func (b *bench) playOperators(ctx context.Context, rel *payload.Release) func() {
	versions := operatorVersions(rel)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			b.reportOperatorsAvailable(ctx, versions)
			return false, nil
		})
	}()
	return func() {
		cancel()
		<-done
	}
}

// reportOperatorsAvailable marks every ClusterOperator of the payload
// Available, not Degraded, at its payload versions, as its operator would.
func (b *bench) reportOperatorsAvailable(ctx context.Context, versions map[string][]interface{}) {
	newStubOperators(0, nil).report(ctx, b.e, versions)
}

// completed reports whether the ClusterVersion's newest history entry is
// version, Completed.
func completed(ctx context.Context, b *bench, version string) bool {
	cv, err := b.e.dynamic.Resource(clusterVersions).Get(ctx, "version", metav1.GetOptions{})
	if err != nil {
		return false
	}
	hist, _, _ := unstructured.NestedSlice(cv.Object, "status", "history")
	if len(hist) == 0 {
		return false
	}
	h, _ := hist[0].(map[string]interface{})
	return h["version"] == version && h["state"] == "Completed"
}

// syncCounts reads payload_applier_sync_duration_seconds_count by mode.
func syncCounts(url string) map[string]int {
	out := map[string]int{}
	resp, err := http.Get(url)
	if err != nil {
		return out
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(io.LimitReader(resp.Body, 4<<20))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	const prefix = `payload_applier_sync_duration_seconds_count{mode="`
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		rest := strings.TrimPrefix(line, prefix)
		mode, val, ok := strings.Cut(rest, `"} `)
		if !ok {
			continue
		}
		n, _ := strconv.ParseFloat(val, 64)
		out[mode] = int(n)
	}
	return out
}

// heapMetrics reads the Go heap figures the operator exports, in MiB.
func heapMetrics(url string) string {
	resp, err := http.Get(url)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(io.LimitReader(resp.Body, 4<<20))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var out []string
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), " ")
		switch {
		case !ok:
		case name == "go_memstats_heap_inuse_bytes", name == "go_memstats_sys_bytes", name == "go_memstats_next_gc_bytes", name == "go_memstats_heap_released_bytes":
			v, _ := strconv.ParseFloat(val, 64)
			out = append(out, fmt.Sprintf("%s=%.0f", strings.TrimSuffix(strings.TrimPrefix(name, "go_memstats_"), "_bytes"), v/1048576))
		}
	}
	return strings.Join(out, " ")
}

// procMemory returns VmHWM and VmRSS of pid, in KiB.
func procMemory(pid int) (hwm, rss, anon int64, err error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		v, _ := strconv.ParseInt(fields[1], 10, 64)
		switch fields[0] {
		case "VmHWM:":
			hwm = v
		case "VmRSS:":
			rss = v
		case "RssAnon:":
			anon = v
		}
	}
	return hwm, rss, anon, nil
}

// procCPUSeconds is a process's user and system time so far, from
// /proc/PID/stat, whose clock ticks are USER_HZ: 100 a second on Linux.
func procCPUSeconds(pid int) (float64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name, in parentheses, may hold spaces: fields count
	// from after it.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	fields := strings.Fields(s[i+1:])
	// utime and stime are the stat file's 14th and 15th fields; the
	// state, the 3rd, is fields[0] here.
	if len(fields) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(fields))
	}
	utime, err1 := strconv.ParseFloat(fields[11], 64)
	stime, err2 := strconv.ParseFloat(fields[12], 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: utime %q, stime %q", pid, fields[11], fields[12])
	}
	return (utime + stime) / 100, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
