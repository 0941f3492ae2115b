// Command bench compares payload-applier with the raw API limit, kapp and
// kubectl on one local control plane, and writes docs/benchmarks.md and a
// chart. Run it from the repository root: `make bench`, or
//
//	go run ./test/bench [-quick] [-reps N] [-sizes 1000,2500,5000] [-profile DIR]
//
// Every tool acts as its own token user, so the audit log counts each
// tool's requests apart. Timings on a shared machine are noisy: each figure
// is the median of the repetitions, and the ratios matter more than the
// seconds.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/klog/v2"

	"github.com/payload-applier/payload-applier/pkg/payload"
)

// Tool names, as they appear in the output.
const (
	toolRaw       = "raw"
	toolRawApply  = "raw-apply"
	toolEngine    = "payload-applier"
	toolKapp      = "kapp"
	toolKappTyped = "kapp-typed-input"
	toolKubectl   = "kubectl"
)

// tool is one way of putting a workload on the cluster and taking it off.
type tool interface {
	name() string
	userName() string
	install(ctx context.Context, w *workload) error
	resync(ctx context.Context, w *workload) error
	remove(ctx context.Context, w *workload) error
}

// limited is a tool too slow to run at every repetition and size.
type limited interface {
	maxReps() int
	maxSize() int
	measuresDelete() bool
	deleteReps() int
}

// preparer is a tool with untimed set-up before each step.
type preparer interface {
	prepare(ctx context.Context, step string) error
}

type options struct {
	// operatorDelay and episodes script the stub operators of -cvo.
	operatorDelay time.Duration
	episodes      []episode
	reps          int
	sizes         []int
	cmCount       int
	realDir       string
	update        bool
	docs          string
	chart         string
	jsonOut       string
	profileDir    string
	work          string
	skipRSS       bool
	skipReal      bool
	skipCM        bool
	skipOne       bool
	// strictOrder runs payload-applier one manifest at a time per
	// component, as before waves, for a before/after comparison.
	strictOrder bool
	only        map[string]bool
	// operatorEnv is added to the environment of the operator whose RSS
	// is measured, e.g. GOMEMLIMIT=100MiB.
	operatorEnv []string
	// operatorMemoryLimit, when set, runs the operator in a cgroup with
	// this memory limit, as a container's limit would.
	operatorMemoryLimit string
	// cvo, when set, is a cluster-version-operator binary: the bench then
	// only runs it and payload-applier side by side (cvo.go).
	cvo string
	// firstInstall runs only the first install through the CLI
	// (firstinstall.go).
	firstInstall bool
	// idle is how long the side-by-side run watches each operator once it
	// completed, counting its requests and writes per minute.
	idle time.Duration
	// keepClusters keeps each side-by-side control plane's data
	// directory (its audit log, its logs).
	keepClusters bool
	// diff, when set, is where the side-by-side run dumps each operator's
	// objects and writes diff.md, the comparison (diff.go).
	diff string
}

func main() {
	var o options
	var sizes, only string
	quick := flag.Bool("quick", false, "one repetition, the 1000-manifest size only; writes nothing unless -docs is given")
	flag.IntVar(&o.reps, "reps", 3, "repetitions of the 1000-ConfigMap measurements (medians are reported)")
	flag.StringVar(&sizes, "sizes", "1000,2500,5000", "sizes of the generated mixed-kind payloads")
	flag.IntVar(&o.cmCount, "configmaps", 1000, "ConfigMaps in the create/resync/delete measurements")
	flag.StringVar(&o.realDir, "real", filepath.Join("..", "shared", "payloads", "ocp-real"), "the real payload; skipped when absent")
	flag.StringVar(&o.docs, "docs", "docs/benchmarks.md", "markdown file whose end-to-end section is rewritten; empty writes none")
	flag.StringVar(&o.chart, "chart", "docs/benchmarks-size.png", "PNG chart of time by payload size; empty draws none")
	flag.StringVar(&o.jsonOut, "json", "bin/bench-results.json", "raw results as JSON")
	flag.StringVar(&o.profileDir, "profile", "", "write CPU and allocation profiles of every payload-applier run here")
	flag.StringVar(&o.work, "work", "", "scratch directory (default: a new temporary directory, removed afterwards)")
	flag.BoolVar(&o.skipRSS, "skip-rss", false, "skip the operator's peak RSS measurement")
	flag.BoolVar(&o.skipReal, "skip-real", false, "skip the real payload")
	flag.BoolVar(&o.skipCM, "skip-configmaps", false, "skip the ConfigMap create, resync and delete measurements")
	flag.BoolVar(&o.skipOne, "skip-one-component", false, "skip the one-component installs (-configmaps ConfigMaps; as many mixed kinds with a Deployment every 100)")
	flag.BoolVar(&o.strictOrder, "strict-order", false, "run payload-applier with --strict-order: one manifest at a time in each component, no waves")
	flag.Func("operator-env", "NAME=VALUE added to the measured operator's environment (repeatable), e.g. GOMEMLIMIT=100MiB", func(v string) error {
		if !strings.Contains(v, "=") {
			return fmt.Errorf("want NAME=VALUE")
		}
		o.operatorEnv = append(o.operatorEnv, v)
		return nil
	})
	flag.StringVar(&o.operatorMemoryLimit, "operator-memory-limit", "", "run the measured operator in a cgroup with this memory limit (e.g. 256Mi), as a container's; needs root")
	flag.DurationVar(&o.operatorDelay, "operator-delay", 0, "with -cvo: each stub operator reports its ClusterOperator Available this long after it appears")
	episodes := flag.String("operator-episodes", "", "with -cvo: stub operators' troubles, operator:Degraded|Unavailable:after:for,... (e.g. network:Degraded:0s:20s), counted from when each reports")
	flag.DurationVar(&o.idle, "idle", 0, "with -cvo: after each operator completed, count its requests and writes per minute over this long (the goal's window is 10m)")
	flag.BoolVar(&o.keepClusters, "keep-clusters", false, "with -cvo: keep each control plane's data directory, its audit log and logs, under -work")
	flag.BoolVar(&o.update, "update", false, "with -diff: after the reconcile check, update each operator to a z-stream made from the payload (a ConfigMap added, one changed), playing the Deployment controller and the CVO's version- pod, and compare the objects once it Completed")
	flag.StringVar(&o.diff, "diff", "", "with -cvo: dump every object of the payload after each operator's first install and again after it undid hand edits, under this directory, and compare the two operators (diff.md)")
	flag.StringVar(&o.cvo, "cvo", "", "a cluster-version-operator binary (make cvo): run only it and payload-applier side by side on the -real payload, -reps times each, and print the table")
	flag.BoolVar(&o.firstInstall, "first-install", false, "run only the first install through the CLI: a Namespace and -configmaps ConfigMaps, payload-applier apply and the raw client each as a process on a fresh control plane, -reps times each")
	rawChildDir := flag.String("raw-child", "", "internal: create the objects of the YAML files in this directory as the raw client, and exit")
	rawChildKubeconfig := flag.String("raw-child-kubeconfig", "", "internal: the kubeconfig of -raw-child")
	flag.StringVar(&only, "tools", "", "comma-separated tools to run (default all): "+strings.Join(allTools, ","))
	flag.Parse()
	var err error
	if o.episodes, err = parseEpisodes(*episodes); err != nil {
		fatalf("-operator-episodes: %v", err)
	}
	if *rawChildDir != "" {
		if err := rawChild(context.Background(), *rawChildDir, *rawChildKubeconfig); err != nil {
			fatalf("raw: %v", err)
		}
		return
	}
	if *quick {
		o.reps = 1
		sizes = "1000"
		if !flagSet("docs") {
			o.docs = ""
		}
		if !flagSet("chart") {
			o.chart = ""
		}
	}
	for _, s := range strings.Split(sizes, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < benchComponents*8 {
			fatalf("-sizes: %q is not a size of at least %d", s, benchComponents*8)
		}
		o.sizes = append(o.sizes, n)
	}
	if only != "" {
		o.only = map[string]bool{}
		for _, t := range strings.Split(only, ",") {
			o.only[strings.TrimSpace(t)] = true
		}
	}
	klog.SetOutput(os.Stderr)
	klog.LogToStderr(false)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fatalf("%v", err)
	}
}

var allTools = []string{toolRaw, toolRawApply, toolEngine, toolKapp, toolKappTyped, toolKubectl}

func flagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func fatalf(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...)
	os.Exit(1)
}

func logf(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "bench: %s "+format+"\n", append([]interface{}{time.Now().Format("15:04:05")}, args...)...)
}

func run(ctx context.Context, o options) error {
	started := time.Now()
	work := o.work
	if work == "" {
		dir, err := os.MkdirTemp("", "payload-applier-bench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		work = dir
	} else if err := os.MkdirAll(work, 0o755); err != nil {
		return err
	}
	if o.profileDir != "" {
		if err := os.MkdirAll(o.profileDir, 0o755); err != nil {
			return err
		}
	}
	res := newResults(o)

	var kappBin string
	if o.wants(toolKapp) && o.cvo == "" {
		bin, err := ensureKapp(ctx)
		if err != nil {
			return err
		}
		kappBin = bin
	}
	kubectlBin, _ := exec.LookPath("kubectl")
	if kubectlBin == "" {
		res.notef("kubectl is not installed: its column is empty.")
	}
	cliBin := ""
	if !o.skipRSS || o.cvo != "" || o.firstInstall {
		cliBin = filepath.Join(work, "payload-applier")
		logf("building the payload-applier CLI for the RSS measurement")
		build := exec.CommandContext(ctx, "go", "build", "-o", cliBin, "./cmd/payload-applier")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("build the CLI: %w", err)
		}
	}

	if o.cvo != "" {
		o.work = work
		return sideBySide(ctx, o, cliBin)
	}
	if o.firstInstall {
		o.work = work
		return firstInstall(ctx, o, cliBin)
	}
	logf("starting the local control plane")
	e, err := startEnv(ctx, work, false)
	if err != nil {
		return err
	}
	defer e.c.Stop()
	res.describeCluster(e)
	logf("control plane up: %s", e.c.Host())

	tools, err := o.tools(e, kappBin, kubectlBin)
	if err != nil {
		return err
	}
	b := &bench{e: e, o: o, res: res, work: work}

	if !o.skipCM {
		if err := b.configMaps(ctx, tools); err != nil {
			return err
		}
	}
	if !o.skipOne {
		if err := b.oneComponent(ctx, tools); err != nil {
			return err
		}
	}
	if !o.skipReal {
		if _, err := os.Stat(o.realDir); err != nil {
			res.notef("The real payload (%s) is absent: its measurements are skipped.", o.realDir)
		} else if err := b.realPayload(ctx, tools); err != nil {
			return err
		}
	}
	if err := b.mixed(ctx, tools); err != nil {
		return err
	}
	if !o.skipRSS {
		if _, err := os.Stat(o.realDir); err == nil {
			if err := b.operatorRSS(ctx, cliBin); err != nil {
				res.notef("Operator RSS measurement failed: %v", err)
			}
		}
	}
	res.Duration = time.Since(started).Round(time.Second).String()
	return res.write(o)
}

func (o options) wants(t string) bool { return o.only == nil || o.only[t] }

// tools builds the tools in the order they run.
func (o options) tools(e *env, kappBin, kubectlBin string) ([]tool, error) {
	var out []tool
	add := func(t tool) {
		if o.wants(t.name()) {
			out = append(out, t)
		}
	}
	add(&rawTool{e: e, user: "bench-raw"})
	add(&rawTool{e: e, user: "bench-raw", apply: true})
	add(&engineTool{e: e, user: "bench-payload-applier", profileDir: o.profileDir, strictOrder: o.strictOrder})
	if kappBin != "" {
		kc, err := e.kubeconfig("bench-kapp")
		if err != nil {
			return nil, err
		}
		add(&kappTool{e: e, bin: kappBin, kubeconfig: kc})
	}
	if kubectlBin != "" {
		kc, err := e.kubeconfig("bench-kubectl")
		if err != nil {
			return nil, err
		}
		add(&kubectlTool{bin: kubectlBin, kubeconfig: kc})
	}
	return out, nil
}

// loadReal loads the real payload as payload-applier filters it.
func loadReal(dir string) (*payload.Release, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	rel, err := payload.Load(abs, payload.DefaultLoadOptions())
	if err != nil {
		return nil, err
	}
	rel.Dir = abs
	return rel, nil
}
