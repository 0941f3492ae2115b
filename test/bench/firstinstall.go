package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
)

// The first install through the CLI (-first-install): one Namespace (run
// level 10) and cmCount ConfigMaps in it (run level 50, one component),
// put on a control plane started for the run and used as soon as it
// answers, by `payload-applier apply` and by the raw limit run as a
// process of its own (-raw-child), each timed from process start to exit.

const firstInstallNamespace = "bench-first"

// firstInstallRun is one process's install.
type firstInstallRun struct {
	Tool    string
	Seconds float64
	Err     string
}

// firstInstallWorkload is the Namespace, alone in its run level, and n
// ConfigMaps in one component of a later one.
func firstInstallWorkload(n int) *workload {
	w := &workload{name: "first-install", objects: []*unstructured.Unstructured{namespaceObject(firstInstallNamespace)}}
	w.files = append(w.files, payloadFile{name: "0000_10_bench-first-ns_00_namespace.yaml", objects: []int{0}})
	cms := oneComponentConfigMaps("first-install", firstInstallNamespace, n)
	f := payloadFile{name: "0000_50_bench-first_00_configmaps.yaml"}
	for _, obj := range cms.objects {
		f.objects = append(f.objects, len(w.objects))
		w.objects = append(w.objects, obj)
	}
	w.files = append(w.files, f)
	return w
}

// firstInstall runs each tool reps times, alternating, and prints the
// table and the goal.
func firstInstall(ctx context.Context, o options, cli string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	type side struct {
		name, user string
		command    func(w *workload, kubeconfig string) *exec.Cmd
	}
	sides := []side{
		{toolRaw, "bench-raw", func(w *workload, kc string) *exec.Cmd {
			return exec.Command(self, "-raw-child", w.flatDir, "-raw-child-kubeconfig", kc)
		}},
		{toolEngine, "bench-payload-applier", func(w *workload, kc string) *exec.Cmd {
			return exec.Command(cli, "apply", "--payload", w.payloadDir, "--kubeconfig", kc)
		}},
	}
	var runs []firstInstallRun
	for rep := 1; rep <= o.reps; rep++ {
		for i := range sides {
			s := sides[(i+rep-1)%len(sides)]
			logf("first install: %s, run %d of %d", s.name, rep, o.reps)
			r := firstInstallOnce(ctx, o, s.name, s.user, s.command)
			if r.Err != "" {
				logf("%s: %s", s.name, r.Err)
			}
			runs = append(runs, r)
		}
	}
	fmt.Print(firstInstallTable(runs, o.cmCount))
	return nil
}

func firstInstallOnce(ctx context.Context, o options, tool, user string, command func(*workload, string) *exec.Cmd) firstInstallRun {
	r := firstInstallRun{Tool: tool}
	work, err := os.MkdirTemp(o.work, "first-")
	if err != nil {
		r.Err = err.Error()
		return r
	}
	w := firstInstallWorkload(o.cmCount)
	if err := w.write(work); err != nil {
		r.Err = err.Error()
		return r
	}
	e, err := startEnv(ctx, work, o.keepClusters)
	if err != nil {
		r.Err = err.Error()
		return r
	}
	defer e.c.Stop()
	kc, err := e.kubeconfig(user)
	if err != nil {
		r.Err = err.Error()
		return r
	}
	cmd := command(w, kc)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kc)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err = cmd.Run()
	r.Seconds = time.Since(start).Seconds()
	if err != nil {
		r.Err = fmt.Sprintf("%v: %s", err, lastLines(out.String(), 5))
		return r
	}
	if got, err := e.countPresent(ctx, w.objects); err != nil || got != len(w.objects) {
		r.Err = fmt.Sprintf("%d of %d objects present (%v)", got, len(w.objects), err)
	}
	return r
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], " / ")
}

// firstInstallTable is the runs, the medians and the goal: payload-applier
// within 1.5× the raw client.
func firstInstallTable(runs []firstInstallRun, n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\nFirst install through the CLI on a fresh control plane: a Namespace and %d ConfigMaps, process start to exit:\n\n", n)
	b.WriteString("| tool | runs | median |\n|---|---|---|\n")
	medians := map[string]float64{}
	for _, tool := range []string{toolRaw, toolEngine} {
		var secs []float64
		var cells []string
		for _, r := range runs {
			if r.Tool != tool {
				continue
			}
			if r.Err != "" {
				cells = append(cells, "failed: "+strings.ReplaceAll(r.Err, "|", "/"))
				continue
			}
			secs = append(secs, r.Seconds)
			cells = append(cells, fmt.Sprintf("%.2f s", r.Seconds))
		}
		med := "–"
		if len(secs) > 0 {
			slices.Sort(secs)
			medians[tool] = secs[len(secs)/2]
			med = fmt.Sprintf("%.2f s", medians[tool])
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", tool, strings.Join(cells, ", "), med)
	}
	raw, ours := medians[toolRaw], medians[toolEngine]
	if raw > 0 && ours > 0 {
		verdict := "not met"
		if ours <= 1.5*raw {
			verdict = "met"
		}
		fmt.Fprintf(&b, "\nGoal: payload-applier ≤ 1.5× the raw client: %s (%.2f×)\n", verdict, ours/raw)
	}
	return b.String()
}

// rawChild is the raw limit as a process: it creates the objects of the
// YAML files in dir, in file order, Namespaces first.
func rawChild(ctx context.Context, dir, kubeconfig string) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	cfg = unthrottled(cfg)
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	objs, err := readObjects(dir)
	if err != nil {
		return err
	}
	return rawInstall(ctx, dyn, restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc)), objs, false)
}

// readObjects decodes every YAML document of the files in dir, in name order.
func readObjects(dir string) ([]*unstructured.Unstructured, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var objs []*unstructured.Unstructured
	for _, ent := range entries {
		f, err := os.Open(filepath.Join(dir, ent.Name()))
		if err != nil {
			return nil, err
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(f, 64*1024)
		for {
			obj := &unstructured.Unstructured{}
			if err := dec.Decode(&obj.Object); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				f.Close()
				return nil, fmt.Errorf("%s: %w", ent.Name(), err)
			}
			if len(obj.Object) > 0 {
				objs = append(objs, obj)
			}
		}
		f.Close()
	}
	return objs, nil
}
