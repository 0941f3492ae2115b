package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/payload-applier/payload-applier/pkg/apply"
	"github.com/payload-applier/payload-applier/pkg/graph"
	"github.com/payload-applier/payload-applier/pkg/operator"
	"github.com/payload-applier/payload-applier/pkg/payload"
)

// engineTool is payload-applier through the engine users get: the operator's
// (operator.NewForConfig builds the clients, with its default client
// settings, the RESTMapper, the ConfigMap ledger and the engine, as
// `payload-applier apply` and `start` do), driven with apply.Engine.Sync so that no
// ClusterVersion bookkeeping is timed. Each run loads the payload and
// builds a new operator, as a CLI invocation does, so a resync compares
// against the cluster rather than against the engine's memory of its own
// writes.
type engineTool struct {
	e    *env
	user string
	// profileDir, when set, receives CPU and allocation profiles of each run.
	profileDir string
	// label names the current measurement in profile file names.
	label string
	// strictOrder turns waves off (SyncOptions.StrictOrder).
	strictOrder bool
}

func (t *engineTool) name() string { return toolEngine }

func (t *engineTool) userName() string { return t.user }

func (t *engineTool) maxReps() int         { return 1 << 30 }
func (t *engineTool) maxSize() int         { return 1 << 30 }
func (t *engineTool) measuresDelete() bool { return true }
func (t *engineTool) deleteReps() int      { return 1 << 30 }

// ledgerNamespace holds the applier's ledger during the bench.
const ledgerNamespace = "openshift-cluster-version"

// installPasses bounds the passes of an install. In install mode every
// component runs at once, so a manifest can race the namespace or CRD that
// another component creates; the operator retries such a pass, and so does
// the bench, at once, until every manifest applied.
const installPasses = 5

func (t *engineTool) install(ctx context.Context, w *workload) error {
	t.label = w.name
	var err error
	for pass := 1; pass <= installPasses; pass++ {
		if err = t.sync(ctx, w.payloadDir, graph.ModeInstall, fmt.Sprintf("install-%d", pass)); err == nil {
			if pass > 1 {
				logf("%s: install complete after %d passes", t.name(), pass)
			}
			return nil
		}
	}
	return err
}

func (t *engineTool) resync(ctx context.Context, w *workload) error {
	t.label = w.name
	return t.sync(ctx, w.payloadDir, graph.ModeReconcile, "resync")
}

func (t *engineTool) remove(ctx context.Context, w *workload) error {
	t.label = w.name
	return t.sync(ctx, w.deleteDir, graph.ModeUpdate, "delete")
}

// prepare runs before each timed step. The ledger namespace must exist, and
// the ledger starts empty with each workload's first install.
func (t *engineTool) prepare(ctx context.Context, id string) error {
	if err := t.e.createNamespaces(ctx, []string{ledgerNamespace}); err != nil {
		return err
	}
	if id == mCreate || strings.Contains(id, "install") {
		return t.resetLedger(ctx)
	}
	return nil
}

// resetLedger empties the delete ledger, so that every repetition of a
// delete saves the same records; it runs untimed before each install.
func (t *engineTool) resetLedger(ctx context.Context) error {
	err := t.e.kube.CoreV1().ConfigMaps(ledgerNamespace).Delete(ctx, apply.DefaultSelf().Ledger, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}

func (t *engineTool) sync(ctx context.Context, dir string, mode graph.Mode, step string) error {
	stop := t.startProfile(step)
	defer stop()
	rel, err := payload.Load(dir, payload.DefaultLoadOptions())
	if err != nil {
		return err
	}
	cfg := t.e.userConfig(t.user)
	op, err := operator.NewForConfig(cfg, operator.Config{
		Releases:  operator.LoadedRelease{Release: rel},
		Namespace: ledgerNamespace,
		Identity:  "bench",
	})
	if err != nil {
		return err
	}
	op.StartEvents()
	defer op.Shutdown()
	opts := apply.SyncOptions{Mode: mode, StrictOrder: t.strictOrder}
	if b := os.Getenv("BENCH_INSTALL_BACKOFF"); b != "" && mode == graph.ModeInstall {
		// "DURATION FACTOR STEPS CAP", for experiments.
		if f := strings.Fields(b); len(f) == 4 {
			d, _ := time.ParseDuration(f[0])
			factor, _ := strconv.ParseFloat(f[1], 64)
			steps, _ := strconv.Atoi(f[2])
			c, _ := time.ParseDuration(f[3])
			opts.Backoff = &wait.Backoff{Duration: d, Factor: factor, Steps: steps, Cap: c}
		}
	}
	var trace *passTrace
	if os.Getenv("BENCH_DEBUG") != "" {
		trace = newPassTrace()
		opts.Events = trace.events
	}
	res, err := op.Engine().Sync(ctx, rel, opts)
	if trace != nil {
		trace.report(step, res)
	}
	if err != nil {
		return err
	}
	var failed []string
	for _, err := range res.Errors {
		var te *apply.TaskError
		if errors.As(err, &te) && te.Subject.Kind == "ClusterOperator" && te.Reason == apply.ReasonCONotAvailable {
			continue // no operator runs here to report Available
		}
		failed = append(failed, err.Error())
	}
	if len(failed) > 0 {
		if len(failed) > 3 {
			failed = append(failed[:3], "…")
		}
		return fmt.Errorf("%d of %d tasks failed: %s", len(failed), res.Total, strings.Join(failed, "; "))
	}
	for _, o := range res.Objects {
		if o.Delete && o.Action == apply.ActionFailed {
			return fmt.Errorf("delete %s failed: %v", o.ID, o.Err)
		}
	}
	return nil
}

// startProfile starts a CPU profile of this run when profiling is on and
// returns the function that stops it and writes the allocation profile.
func (t *engineTool) startProfile(step string) func() {
	if t.profileDir == "" {
		return func() {}
	}
	base := filepath.Join(t.profileDir, fmt.Sprintf("%s-%s-%s", t.name(), t.label, step))
	f, err := os.Create(base + ".cpu.pprof")
	if err != nil {
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
		runtime.GC()
		if hf, err := os.Create(base + ".allocs.pprof"); err == nil {
			_ = pprof.Lookup("allocs").WriteTo(hf, 0)
			hf.Close()
		}
	}
}

// passTrace logs, with BENCH_DEBUG set, when each task of a pass finished,
// to show what a pass waits on.
type passTrace struct {
	start  time.Time
	events chan apply.Event
	done   chan struct{}
	seen   []apply.Event
}

func newPassTrace() *passTrace {
	t := &passTrace{start: time.Now(), events: make(chan apply.Event, 1024), done: make(chan struct{})}
	go func() {
		defer close(t.done)
		for ev := range t.events {
			t.seen = append(t.seen, ev)
		}
	}()
	return t
}

func (t *passTrace) report(step string, res *apply.SyncResult) {
	close(t.events)
	<-t.done
	logf("trace %s: %d events in %s", step, len(t.seen), time.Since(t.start).Round(time.Millisecond))
	sort.Slice(t.seen, func(i, j int) bool { return t.seen[i].Time.Before(t.seen[j].Time) })
	from := len(t.seen) - 12
	if from < 0 {
		from = 0
	}
	for _, ev := range t.seen[from:] {
		logf("  +%6.2fs %-12s %s %s", ev.Time.Sub(t.start).Seconds(), ev.Object.Action, ev.Object.ID, oneLine(ev.Object.Message, 160))
	}
	if res != nil {
		for i, err := range res.Errors {
			if i == 8 {
				break
			}
			logf("  error: %s", oneLine(err.Error(), 200))
		}
	}
}
