package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/google/uuid"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"

	"github.com/payload-applier/payload-applier/pkg/apply"
	"github.com/payload-applier/payload-applier/pkg/payload"
	"github.com/payload-applier/payload-applier/test/cluster"
)

// The side-by-side run (-cvo): the real cluster-version operator and
// payload-applier `start`, each on a fresh control plane prepared alike,
// install the real payload while a stub plays every operator of the
// payload; the audit log counts each one's requests under its own user.

const (
	cvoName     = "cluster-version-operator"
	applierName = "payload-applier"
	cvoUser     = "bench-cvo"
	// cvoNamespace is where both keep their state, as the CVO's is.
	cvoNamespace = "openshift-cluster-version"
	// sideTimeout bounds one operator's install.
	sideTimeout = 10 * time.Minute
)

// sideRun is one operator's install of the payload.
type sideRun struct {
	Operator string
	// FirstWrite and Completed are measured from the process's start.
	FirstWrite, Completed time.Duration
	// Requests and Writes are the operator's until Completed.
	Requests, Writes int
	// Failed counts its requests answered 400 or more, but for the answers
	// that only say whether an object exists (probed).
	Failed int
	// FailedBy counts them by verb, resource and code.
	FailedBy map[string]int
	// PeakRSSMiB is the process's VmHWM when Completed was seen.
	PeakRSSMiB float64
	// AnonPeakMiB is its largest sampled RssAnon until then: heap and
	// stacks, without the binary's pages.
	AnonPeakMiB float64
	// CPUSeconds is the process's user and system time when Completed was
	// seen.
	CPUSeconds float64
	// ByVerb counts the requests until Completed by verb and resource.
	ByVerb map[string]int
	// IdleRequests and IdleWrites are per minute over the idle window
	// after Completed; zero without one.
	IdleRequests, IdleWrites float64
	// Edits is what became of the hand edits of the -diff check.
	Edits []editResult
	// Update is how long the -update check's update took to Complete.
	Update time.Duration
	Err    string
}

// sideOperator starts one operator's process against a prepared cluster.
type sideOperator struct {
	name string
	user string
	// command returns the process to start, writing into work.
	command func(e *env, rel *payload.Release, work string) (*exec.Cmd, error)
	// update asks the running operator for next (update.go).
	update func(ctx context.Context, e *env, next *payload.Release, work string) error
}

// sideBySide runs each operator reps times, one fresh control plane per
// run, and prints the table.
func sideBySide(ctx context.Context, o options, cli string) error {
	rel, err := loadReal(o.realDir)
	if err != nil {
		return err
	}
	crds, err := configCRDs()
	if err != nil {
		return err
	}
	operators := []sideOperator{
		{name: cvoName, user: cvoUser, command: cvoCommand(o.cvo), update: cvoUpdate},
		// At the CVO's client budget, start's default, and without one.
		{name: applierName, user: "bench-payload-applier", command: applierCommand(cli), update: applierUpdate},
		{name: "payload-applier-unlimited", user: "bench-payload-applier", command: applierCommand(cli, "--kube-api-qps", "0", "--install-kube-api-qps", "0"), update: applierUpdate},
	}
	// -tools picks one of them, to look into it alone.
	operators = slices.DeleteFunc(operators, func(op sideOperator) bool { return !o.wants(op.name) })
	var next *payload.Release
	if o.update {
		if o.diff == "" {
			return fmt.Errorf("-update needs -diff")
		}
		if next, err = nextRelease(rel, filepath.Join(o.diff, "next-release")); err != nil {
			return fmt.Errorf("next release: %w", err)
		}
	}
	var runs []sideRun
	edits := map[string][]editResult{}
	for rep := 1; rep <= o.reps; rep++ {
		for _, op := range operators {
			logf("side by side: %s, run %d of %d", op.name, rep, o.reps)
			// The differential check looks at the first run of the CVO and
			// of payload-applier at its defaults.
			diffDir := ""
			if o.diff != "" && rep == 1 && (op.name == cvoName || op.name == applierName) {
				diffDir = filepath.Join(o.diff, op.name)
			}
			var update *payload.Release
			if diffDir != "" {
				update = next
			}
			r := runSide(ctx, o, op, rel, crds, diffDir, update)
			if r.Err != "" {
				logf("%s: %s", op.name, r.Err)
			}
			if diffDir != "" {
				edits[op.name] = r.Edits
			}
			runs = append(runs, r)
		}
	}
	fmt.Print(sideTable(runs, rel))
	_, ours := edits[applierName]
	if _, theirs := edits[cvoName]; ours && theirs {
		report, err := diffReport(o.diff, cvoName, applierName, edits)
		if err != nil {
			return fmt.Errorf("diff: %w", err)
		}
		fmt.Print("\n" + report)
		return os.WriteFile(filepath.Join(o.diff, "diff.md"), []byte(report), 0o644)
	}
	return nil
}

// runSide starts a control plane, prepares it, runs op until the
// ClusterVersion says the payload's version Completed, and stops both.
// With diffDir, it first dumps the objects, edits some and dumps them
// again once op undid the edits (diff.go).
func runSide(ctx context.Context, o options, op sideOperator, rel *payload.Release, crds []*unstructured.Unstructured, diffDir string, next *payload.Release) sideRun {
	r := sideRun{Operator: op.name}
	work, err := os.MkdirTemp(o.work, "side-")
	if err != nil {
		r.Err = err.Error()
		return r
	}
	var played []string
	if next != nil {
		played = updateControllers
	}
	e, err := startEnv(ctx, work, o.keepClusters, played...)
	if err != nil {
		r.Err = err.Error()
		return r
	}
	defer e.c.Stop()
	if err := prepareSide(ctx, e, rel, crds); err != nil {
		r.Err = "prepare: " + err.Error()
		return r
	}
	mark, err := e.c.AuditMark()
	if err != nil {
		r.Err = err.Error()
		return r
	}
	cmd, err := op.command(e, rel, work)
	if err != nil {
		r.Err = err.Error()
		return r
	}
	logPath := filepath.Join(work, op.name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		r.Err = err.Error()
		return r
	}
	defer logFile.Close()
	cmd.Stdout, cmd.Stderr = logFile, logFile
	start := time.Now()
	if err := cmd.Start(); err != nil {
		r.Err = err.Error()
		return r
	}
	defer stopProcess(cmd)
	versions := operatorVersions(rel)
	stub := newStubOperators(o.operatorDelay, o.episodes)
	var peak, anonPeak int64
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, sideTimeout, true, func(ctx context.Context) (bool, error) {
		if hwm, _, anon, err := procMemory(cmd.Process.Pid); err == nil {
			peak, anonPeak = max(peak, hwm), max(anonPeak, anon)
		}
		stub.report(ctx, e, versions)
		return completedOn(ctx, e, rel.Version), nil
	})
	r.Completed = time.Since(start)
	r.CPUSeconds, _ = procCPUSeconds(cmd.Process.Pid)
	r.PeakRSSMiB = float64(peak) / 1024
	r.AnonPeakMiB = float64(anonPeak) / 1024
	if err != nil {
		r.Err = fmt.Sprintf("not Completed within %s (log %s): %v", sideTimeout, logPath, err)
		return r
	}
	idleFrom := time.Now()
	if o.idle > 0 {
		logf("%s: idle for %s", op.name, o.idle)
		// The stub keeps playing the operators, as they keep reporting.
		_ = wait.PollUntilContextTimeout(ctx, time.Second, o.idle, true, func(ctx context.Context) (bool, error) {
			stub.report(ctx, e, versions)
			return false, nil
		})
	}
	events, err := e.c.AuditEventsSince(mark)
	if err != nil {
		r.Err = err.Error()
		return r
	}
	r.count(events, op.user, start)
	if o.idle > 0 {
		r.countIdle(events, op.user, idleFrom, o.idle)
	}
	if diffDir != "" {
		logf("%s: differential check into %s", op.name, diffDir)
		if r.Edits, err = diffInOperator(ctx, e, rel, versions, diffDir); err != nil {
			r.Err = "diff: " + err.Error()
		} else if next != nil {
			logf("%s: update to %s", op.name, next.Version)
			if r.Update, err = updateInOperator(ctx, e, op, next, work, filepath.Join(diffDir, phaseUpdate)); err != nil {
				r.Err = "update: " + err.Error()
			}
		}
	}
	return r
}

// probed reports whether a request's answer only told whether its object
// exists: a read answered 404, before a create, or a create answered 409,
// of an object already there (an install creates without reading first).
func probed(verb string, code int) bool {
	switch verb {
	case "get", "list", "watch":
		return code == 404
	case "create":
		return code == 409
	}
	return false
}

// countIdle sets the user's requests and writes per minute in the window
// of length d from from.
func (r *sideRun) countIdle(events []cluster.AuditEvent, user string, from time.Time, d time.Duration) {
	var requests, writes int
	for _, ev := range cluster.FilterAudit(events, cluster.AuditFilter{Stage: cluster.AuditStageResponseComplete, User: user}) {
		at := ev.RequestReceivedTimestamp
		if at.Before(from) || at.After(from.Add(d)) {
			continue
		}
		requests++
		if ev.IsWrite() {
			writes++
		}
	}
	r.IdleRequests = float64(requests) / d.Minutes()
	r.IdleWrites = float64(writes) / d.Minutes()
}

// count tallies the user's requests that reached the apiserver up to its
// last ClusterVersion status write before the harness saw Completed: the
// write that reported it. The harness polls every 250 ms; without this,
// whatever either operator sent between its write and the poll counted.
func (r *sideRun) count(events []cluster.AuditEvent, user string, start time.Time) {
	end := start.Add(r.Completed)
	mine := cluster.FilterAudit(events, cluster.AuditFilter{Stage: cluster.AuditStageResponseComplete, User: user})
	var reported time.Time
	for _, ev := range mine {
		if o := ev.ObjectRef; o != nil && o.Resource == "clusterversions" && o.Subresource == "status" && ev.IsWrite() &&
			!ev.RequestReceivedTimestamp.After(end) && ev.RequestReceivedTimestamp.After(reported) {
			reported = ev.RequestReceivedTimestamp
		}
	}
	if !reported.IsZero() {
		end = reported
	}
	r.ByVerb = map[string]int{}
	for _, ev := range mine {
		if ev.RequestReceivedTimestamp.After(end) {
			continue
		}
		r.Requests++
		resource := "(discovery)"
		if ev.ObjectRef != nil && ev.ObjectRef.Resource != "" {
			resource = ev.ObjectRef.Resource
		}
		r.ByVerb[ev.Verb+" "+resource]++
		if code := ev.ResponseStatus; code != nil && code.Code >= 400 && !probed(ev.Verb, code.Code) {
			r.Failed++
			if r.FailedBy == nil {
				r.FailedBy = map[string]int{}
			}
			resource := ""
			if ev.ObjectRef != nil {
				resource = ev.ObjectRef.Resource
			}
			r.FailedBy[fmt.Sprintf("%s %s %d", ev.Verb, resource, code.Code)]++
		}
		if !ev.IsWrite() {
			continue
		}
		r.Writes++
		if at := ev.RequestReceivedTimestamp.Sub(start); r.FirstWrite == 0 || at < r.FirstWrite {
			r.FirstWrite = at
		}
	}
}

// prepareSide makes the cluster an installer leaves for the CVO: the config
// CRDs the CVO reads, its namespace, the namespaces that operators outside
// the payload create, a ClusterVersion with a cluster ID, no channel (a
// channel would send the CVO to the public update service) and no
// desiredUpdate (the CVO takes its release from --release-image), and a
// FeatureGate whose status lists the Default gates for the payload's
// version, so that both filter the payload alike.
func prepareSide(ctx context.Context, e *env, rel *payload.Release, crds []*unstructured.Unstructured) error {
	crdClient := e.dynamic.Resource(payload.CRDGVR)
	for _, crd := range crds {
		if _, err := crdClient.Create(ctx, crd.DeepCopy(), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create CRD %s: %w", crd.GetName(), err)
		}
	}
	for _, crd := range crds {
		if err := waitEstablished(ctx, e, crd.GetName()); err != nil {
			return err
		}
	}
	e.mapper.Reset()
	w := releaseWorkload("real", rel)
	if err := e.createNamespaces(ctx, append([]string{cvoNamespace}, w.namespaces...)); err != nil {
		return err
	}
	cv := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "config.openshift.io/v1", "kind": "ClusterVersion",
		"metadata": map[string]interface{}{"name": "version"},
		"spec":     map[string]interface{}{"clusterID": uuid.NewString()},
	}}
	if _, err := e.dynamic.Resource(clusterVersions).Create(ctx, cv, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create ClusterVersion: %w", err)
	}
	var enabled []interface{}
	for _, g := range sets.List(payload.DefaultFeatureGates("self-managed-high-availability")) {
		enabled = append(enabled, map[string]interface{}{"name": g})
	}
	fg := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "config.openshift.io/v1", "kind": "FeatureGate",
		"metadata": map[string]interface{}{"name": "cluster"},
		"spec":     map[string]interface{}{},
	}}
	gates := e.dynamic.Resource(schema.GroupVersionResource{Group: "config.openshift.io", Version: "v1", Resource: "featuregates"})
	created, err := gates.Create(ctx, fg, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create FeatureGate: %w", err)
	}
	_ = unstructured.SetNestedSlice(created.Object, []interface{}{map[string]interface{}{
		"version": rel.Version, "enabled": enabled, "disabled": []interface{}{}}}, "status", "featureGates")
	if _, err := gates.UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("write the FeatureGate's status: %w", err)
	}
	return nil
}

func waitEstablished(ctx context.Context, e *env, name string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	_, err := apply.WaitEstablished(ctx, e.dynamic.Resource(payload.CRDGVR), name, "")
	return err
}

// configCRDs are the config.openshift.io CRDs the CVO reads, from the
// pinned openshift/api module: the Default feature set's where a CRD has
// one per feature set.
func configCRDs() ([]*unstructured.Unstructured, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/openshift/api").Output()
	if err != nil {
		return nil, fmt.Errorf("find the openshift/api module: %w", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "config", "v1", "zz_generated.crd-manifests")
	var crds []*unstructured.Unstructured
	for _, name := range []string{
		"0000_00_cluster-version-operator_01_clusteroperators.crd.yaml",
		"0000_00_cluster-version-operator_01_clusterversions-Default.crd.yaml",
		"0000_03_config-operator_01_proxies.crd.yaml",
		"0000_10_config-operator_01_apiservers-Default.crd.yaml",
		"0000_10_config-operator_01_featuregates.crd.yaml",
		"0000_10_config-operator_01_infrastructures-Default.crd.yaml",
	} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(data, &obj.Object); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		crds = append(crds, obj)
	}
	return crds, nil
}

// cvoCommand starts the CVO at bin as the recipe does: the payload
// through PAYLOAD_OVERRIDE (release-manifests/ and an empty manifests/),
// no metrics listener, no automatic updates.
func cvoCommand(bin string) func(e *env, rel *payload.Release, work string) (*exec.Cmd, error) {
	return func(e *env, rel *payload.Release, work string) (*exec.Cmd, error) {
		kc, err := e.kubeconfig(cvoUser)
		if err != nil {
			return nil, err
		}
		override := filepath.Join(work, "payload")
		if err := os.MkdirAll(filepath.Join(override, "manifests"), 0o755); err != nil {
			return nil, err
		}
		if err := os.Symlink(manifestsDir(rel), filepath.Join(override, "release-manifests")); err != nil {
			return nil, err
		}
		cmd := exec.Command(bin, "start", "--release-image=registry.example.com/ocp/release:"+rel.Version,
			"--enable-auto-update=false", "--listen=", "--kubeconfig", kc, "--v=2")
		cmd.Env = append(os.Environ(), "NODE_NAME=bench", "PAYLOAD_OVERRIDE="+override, "KUBECONFIG="+kc)
		return cmd, nil
	}
}

// applierCommand starts payload-applier's operator on a release store
// holding the payload, with flags added.
func applierCommand(cli string, flags ...string) func(e *env, rel *payload.Release, work string) (*exec.Cmd, error) {
	return func(e *env, rel *payload.Release, work string) (*exec.Cmd, error) {
		kc, err := e.kubeconfig("bench-payload-applier")
		if err != nil {
			return nil, err
		}
		// payload-applier takes its release from spec.desiredUpdate.
		patch := fmt.Sprintf(`{"spec":{"desiredUpdate":{"version":%q}}}`, rel.Version)
		if _, err := e.dynamic.Resource(clusterVersions).Patch(context.Background(), "version", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			return nil, err
		}
		store := filepath.Join(work, "store")
		if err := os.MkdirAll(store, 0o755); err != nil {
			return nil, err
		}
		if err := os.Symlink(rel.Dir, filepath.Join(store, rel.Version)); err != nil {
			return nil, err
		}
		// Leader election on, as the CVO's: its Lease renewals are writes.
		return exec.Command(cli, append([]string{"start", "--payloads", store, "--kubeconfig", kc, "--listen", "",
			"--namespace", cvoNamespace}, flags...)...), nil
	}
}

// manifestsDir is where rel's manifests are: its release-manifests/ in a
// release image's layout, else its directory.
func manifestsDir(rel *payload.Release) string {
	if st, err := os.Stat(filepath.Join(rel.Dir, "release-manifests")); err == nil && st.IsDir() {
		return filepath.Join(rel.Dir, "release-manifests")
	}
	return rel.Dir
}

// stopProcess ends cmd: SIGTERM, then SIGKILL after 15 s.
func stopProcess(cmd *exec.Cmd) {
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

// reportAvailable plays the operators on e's cluster.
func reportAvailable(ctx context.Context, e *env, versions map[string][]interface{}) {
	(&bench{e: e}).reportOperatorsAvailable(ctx, versions)
}

// completedOn reports whether e's ClusterVersion completed version.
func completedOn(ctx context.Context, e *env, version string) bool {
	return completed(ctx, &bench{e: e}, version)
}

// sideTable is the runs as a markdown table, one row per run.
func sideTable(runs []sideRun, rel *payload.Release) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\nSide by side on %s (%d manifests applied by payload-applier's filters), one fresh control plane per run:\n\n", rel.Version, len(rel.Manifests))
	b.WriteString("| operator | start → first write | start → Completed | requests | writes | failed requests | peak RSS | anonymous peak | CPU until Completed | idle requests/min | idle writes/min |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	row := func(name string, r sideRun) {
		fmt.Fprintf(&b, "| %s | %.1f s | %.1f s | %d | %d | %d | %.0f MiB | %.0f MiB | %.1f s | %.1f | %.1f |\n", name, r.FirstWrite.Seconds(), r.Completed.Seconds(),
			r.Requests, r.Writes, r.Failed, r.PeakRSSMiB, r.AnonPeakMiB, r.CPUSeconds, r.IdleRequests, r.IdleWrites)
	}
	byOperator := map[string][]sideRun{}
	var order []string
	for _, r := range runs {
		if r.Err != "" {
			fmt.Fprintf(&b, "| %s | failed: %s | | | | | | | | | |\n", r.Operator, strings.ReplaceAll(r.Err, "|", "/"))
			continue
		}
		row(r.Operator, r)
		if byOperator[r.Operator] == nil {
			order = append(order, r.Operator)
		}
		byOperator[r.Operator] = append(byOperator[r.Operator], r)
	}
	for _, name := range order {
		if rs := byOperator[name]; len(rs) > 1 {
			row(name+", median", medianRun(rs))
		}
	}
	b.WriteString(verbTable(order, byOperator))
	// The goals are set at the same client budget: payload-applier at its
	// defaults, the CVO's.
	b.WriteString(goalsReport(byOperator[applierName], byOperator[cvoName]))
	for _, name := range order {
		failed := map[string]int{}
		for _, r := range byOperator[name] {
			for k, n := range r.FailedBy {
				failed[k] += n
			}
		}
		if len(failed) == 0 {
			continue
		}
		keys := slices.Sorted(maps.Keys(failed))
		fmt.Fprintf(&b, "\nFailed requests of %s, over its runs:", name)
		for _, k := range keys {
			fmt.Fprintf(&b, " %s ×%d;", k, failed[k])
		}
		b.WriteString("\n")
	}
	return b.String()
}

// medianRun takes each column's median over runs.
func medianRun(runs []sideRun) sideRun {
	med := func(f func(sideRun) float64) float64 {
		vs := make([]float64, len(runs))
		for i, r := range runs {
			vs[i] = f(r)
		}
		slices.Sort(vs)
		return vs[len(vs)/2]
	}
	return sideRun{
		FirstWrite:   time.Duration(med(func(r sideRun) float64 { return float64(r.FirstWrite) })),
		Completed:    time.Duration(med(func(r sideRun) float64 { return float64(r.Completed) })),
		Requests:     int(med(func(r sideRun) float64 { return float64(r.Requests) })),
		Writes:       int(med(func(r sideRun) float64 { return float64(r.Writes) })),
		Failed:       int(med(func(r sideRun) float64 { return float64(r.Failed) })),
		PeakRSSMiB:   med(func(r sideRun) float64 { return r.PeakRSSMiB }),
		AnonPeakMiB:  med(func(r sideRun) float64 { return r.AnonPeakMiB }),
		IdleRequests: med(func(r sideRun) float64 { return r.IdleRequests }),
		IdleWrites:   med(func(r sideRun) float64 { return r.IdleWrites }),
		CPUSeconds:   med(func(r sideRun) float64 { return r.CPUSeconds }),
	}
}

// verbTableRows bounds the requests-by-verb table: the most frequent of
// either operator.
const verbTableRows = 15

// verbTable is each operator's median requests until Completed by verb
// and resource, for the verbs and resources either sends most.
func verbTable(order []string, byOperator map[string][]sideRun) string {
	medians := map[string]map[string]int{}
	keys := map[string]bool{}
	for _, name := range order {
		all := map[string][]int{}
		for _, r := range byOperator[name] {
			for k, n := range r.ByVerb {
				all[k] = append(all[k], n)
			}
		}
		medians[name] = map[string]int{}
		for k, ns := range all {
			// Runs that sent none count as zero.
			for len(ns) < len(byOperator[name]) {
				ns = append(ns, 0)
			}
			slices.Sort(ns)
			medians[name][k] = ns[len(ns)/2]
		}
		top := slices.SortedFunc(maps.Keys(medians[name]), func(a, b string) int {
			if d := medians[name][b] - medians[name][a]; d != 0 {
				return d
			}
			return strings.Compare(a, b)
		})
		for _, k := range top[:min(len(top), verbTableRows)] {
			keys[k] = true
		}
	}
	if len(keys) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\nRequests until Completed by verb and resource (medians over runs; each operator's most frequent):\n\n| verb and resource |")
	for _, name := range order {
		fmt.Fprintf(&b, " %s |", name)
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(order)) + "\n")
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		fmt.Fprintf(&b, "| %s |", k)
		for _, name := range order {
			fmt.Fprintf(&b, " %d |", medians[name][k])
		}
		b.WriteString("\n")
	}
	return b.String()
}
