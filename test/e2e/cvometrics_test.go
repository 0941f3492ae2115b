package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/payload-applier/payload-applier/pkg/clusterversion"
	"github.com/payload-applier/payload-applier/pkg/operator"
	"github.com/payload-applier/payload-applier/pkg/updategraph"
)

// namespaceDelete is a manifest deleting the namespace name: lint cannot
// know the operator runs there, the engine refuses it.
func namespaceDelete(name string) string {
	return `
apiVersion: v1
kind: Namespace
metadata:
  name: ` + name + `
  annotations:
    ` + include + `
    ` + deleteAnnotation + `
`
}

// series is one scraped sample.
type series struct {
	labels map[string]string
	value  float64
}

var (
	sampleLine = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$`)
	labelPair  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"`)
)

// scrapeAll reads every sample the operator serves, by metric name.
func scrapeAll(t testing.TB, url string) map[string][]series {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]series{}
	for _, line := range strings.Split(string(body), "\n") {
		m := sampleLine.FindStringSubmatch(line)
		if m == nil || strings.HasPrefix(line, "#") {
			continue
		}
		s := series{labels: map[string]string{}}
		for _, p := range labelPair.FindAllStringSubmatch(m[2], -1) {
			s.labels[p[1]] = p[2]
		}
		s.value, err = strconv.ParseFloat(m[3], 64)
		if err != nil {
			t.Fatalf("bad sample %q: %v", line, err)
		}
		out[m[1]] = append(out[m[1]], s)
	}
	return out
}

// find returns the samples of name whose labels include want.
func (s series) has(want map[string]string) bool {
	for k, v := range want {
		if s.labels[k] != v {
			return false
		}
	}
	return true
}

func find(all map[string][]series, name string, want map[string]string) []series {
	var out []series
	for _, s := range all[name] {
		if s.has(want) {
			out = append(out, s)
		}
	}
	return out
}

// requireOne fails unless exactly one sample of name has the labels, all of
// them and no others, and returns its value.
func requireOne(t testing.TB, all map[string][]series, name string, labels map[string]string) float64 {
	t.Helper()
	got := find(all, name, labels)
	if len(got) != 1 || len(got[0].labels) != len(labels) {
		t.Fatalf("%s%v: %d samples, want one with exactly these labels; all %s: %v", name, labels, len(got), name, all[name])
	}
	return got[0].value
}

// requireVersionConditions checks cluster_operator_conditions{name="version"}
// and cluster_operator_up{name="version"} against the ClusterVersion's
// conditions: one series per True or False condition, none for others.
func requireVersionConditions(t testing.TB, all map[string][]series, cv *configv1.ClusterVersion, completed string) {
	t.Helper()
	var want, got []string
	for _, c := range cv.Status.Conditions {
		switch c.Status {
		case configv1.ConditionTrue:
			want = append(want, fmt.Sprintf("%s/%s=1", c.Type, c.Reason))
		case configv1.ConditionFalse:
			want = append(want, fmt.Sprintf("%s/%s=0", c.Type, c.Reason))
		}
		if c.Type == configv1.OperatorAvailable {
			v := requireOne(t, all, "cluster_operator_up", map[string]string{"name": "version", "version": completed, "reason": c.Reason})
			if (v == 1) != (c.Status == configv1.ConditionTrue) {
				t.Errorf("cluster_operator_up{name=version} = %v, Available is %s", v, c.Status)
			}
		}
	}
	for _, s := range find(all, "cluster_operator_conditions", map[string]string{"name": "version"}) {
		got = append(got, fmt.Sprintf("%s/%s=%v", s.labels["condition"], s.labels["reason"], s.value))
	}
	sort.Strings(want)
	sort.Strings(got)
	if !slices.Equal(got, want) {
		t.Errorf("cluster_operator_conditions{name=version}:\n got %v\nwant %v", got, want)
	}
}

// TestCVOMetricsScrapedFromTheOperator scrapes the operator's /metrics and
// checks each CVO metric it exports, labels and value, after an install,
// after a refused update and with a delete that fails.
func TestCVOMetricsScrapedFromTheOperator(t *testing.T) {
	started := time.Now().Add(-time.Second)
	ns := testCluster.CreateNamespace(t)
	applierNS := testCluster.CreateNamespace(t)
	keep := map[string]string{"0000_50_demo_00_keep.yaml": configMap(ns, "keep", "x")}
	// 1.0.1 deletes the namespace the operator runs in: the engine refuses
	// that delete, which then fails every pass.
	v101 := map[string]string{"0000_50_demo_00_keep.yaml": keep["0000_50_demo_00_keep.yaml"], "0000_00_danger_00_ns.yaml": namespaceDelete(applierNS)}
	// 1.0.2 holds a ConfigMap the apiserver refuses: its apply fails.
	v102 := map[string]string{"0000_50_demo_00_keep.yaml": keep["0000_50_demo_00_keep.yaml"],
		"0000_50_demo_01_bad.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bad\n  namespace: " + ns + "\n  annotations:\n    " + include + "\ndata:\n  \"not a key\": x\n"}
	store := writeStore(t, map[string]map[string]string{"1.0.0": keep, "1.0.1": v101, "1.0.2": v102, "1.2.0": keep})
	graphFile := filepath.Join(t.TempDir(), "graph.json")
	const channels = "io.openshift.upgrades.graph.release.channels"
	graph := `{"nodes": [
  {"version": "1.0.0", "payload": "r:1.0.0", "metadata": {"` + channels + `": "stable-1"}},
  {"version": "1.0.1", "payload": "r:1.0.1", "metadata": {"` + channels + `": "stable-1"}}
], "edges": [[0, 1]]}`
	if err := os.WriteFile(graphFile, []byte(graph), 0o644); err != nil {
		t.Fatal(err)
	}
	metrics, metricsURL := servedMetrics(t)
	op := newOperatorOn(t, &operator.DirStore{Root: store}, uniqueName(t, "cvom"), applierNS, nil, metrics,
		func(c *operator.Config) { c.UpdateGraph = updategraph.FileSource{Path: graphFile} })
	ctx := context.Background()

	co := uniqueName(t, "cvom-co")
	setAvailable := func(status configv1.ConditionStatus, reason string) {
		t.Helper()
		obj, err := op.config.ConfigV1().ClusterOperators().Get(ctx, co, metav1.GetOptions{})
		if err != nil {
			if obj, err = op.config.ConfigV1().ClusterOperators().Create(ctx, &configv1.ClusterOperator{ObjectMeta: metav1.ObjectMeta{Name: co}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = op.config.ConfigV1().ClusterOperators().Delete(ctx, co, metav1.DeleteOptions{}) })
		}
		obj.Status.Versions = []configv1.OperandVersion{{Name: "operator", Version: "1.0.0"}}
		obj.Status.Conditions = []configv1.ClusterOperatorStatusCondition{
			{Type: configv1.OperatorAvailable, Status: status, Reason: reason, LastTransitionTime: metav1.Now()},
			{Type: configv1.OperatorDegraded, Status: configv1.ConditionUnknown, Reason: "NotYetKnown", LastTransitionTime: metav1.Now()},
		}
		if _, err := op.config.ConfigV1().ClusterOperators().UpdateStatus(ctx, obj, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	setAvailable(configv1.ConditionTrue, "AsExpected")
	cv := op.clusterVersion(t)
	cv.Spec.Channel = "stable-1"
	if _, err := op.config.ConfigV1().ClusterVersions().Update(ctx, cv, metav1.UpdateOptions{FieldValidation: "Ignore"}); err != nil {
		t.Fatal(err)
	}
	// The loop, for its ClusterOperator informer and its graph reader, until
	// the transitions are counted; the test syncs itself after that, so that
	// no pass of the loop changes the status between a scrape and a read.
	loopCtx, stopLoop := context.WithCancel(ctx)
	loopDone := make(chan struct{})
	go func() {
		defer close(loopDone)
		_ = op.Run(loopCtx, operator.RunOptions{ResyncInterval: time.Hour})
	}()
	t.Cleanup(func() { stopLoop(); <-loopDone })

	t.Log("install 1.0.0")
	op.request(t, "1.0.0", false)
	var all map[string][]series
	waitFor(t, "the install and the update graph in the metrics", time.Minute, func() bool {
		all = scrapeAll(t, metricsURL)
		u := all["cluster_version_available_updates"]
		return len(find(all, "cluster_version", map[string]string{"type": "completed"})) == 1 && len(u) == 1 && u[0].value == 1
	})
	cv = op.clusterVersion(t)
	image := cv.Status.Desired.Image
	if image == "" {
		t.Fatal("status.desired.image is empty")
	}
	created := float64(cv.CreationTimestamp.Unix())
	if v := requireOne(t, all, "cluster_version", map[string]string{"type": "completed", "version": "1.0.0", "image": image, "from_version": ""}); v != float64(cv.Status.History[0].CompletionTime.Unix()) {
		t.Errorf("completed = %v, want the completion time %v", v, cv.Status.History[0].CompletionTime.Unix())
	}
	if v := requireOne(t, all, "cluster_version", map[string]string{"type": "initial", "version": "1.0.0", "image": image, "from_version": ""}); v != created {
		t.Errorf("initial = %v, want the ClusterVersion's creation %v", v, created)
	}
	if v := requireOne(t, all, "cluster_version", map[string]string{"type": "cluster", "version": "1.0.0", "image": image, "from_version": "1.0.0"}); v != created {
		t.Errorf("cluster = %v, want the ClusterVersion's creation %v", v, created)
	}
	if v := requireOne(t, all, "cluster_version", map[string]string{"type": "current", "version": "1.0.0", "image": image, "from_version": "1.0.0"}); v != float64(cv.Status.History[0].StartedTime.Unix()) {
		t.Errorf("current = %v, want the start of 1.0.0 %v", v, cv.Status.History[0].StartedTime.Unix())
	}
	if n := len(all["cluster_version"]); n != 4 {
		t.Errorf("cluster_version has %d series after the install, want completed, initial, cluster, current: %v", n, all["cluster_version"])
	}
	requireVersionConditions(t, all, cv, "1.0.0")
	if v := requireOne(t, all, "cluster_version_available_updates", map[string]string{"upstream": graphFile, "channel": "stable-1"}); v != 1 {
		t.Errorf("cluster_version_available_updates = %v, want 1 (1.0.1)", v)
	}
	if v := requireOne(t, all, "cluster_version_operator_update_retrieval_timestamp_seconds", map[string]string{"name": ""}); v < float64(started.Unix()) || v > float64(time.Now().Unix()) {
		t.Errorf("update retrieval at %v, want during this test (from %v)", v, started.Unix())
	}
	if v := requireOne(t, all, "cluster_version_payload", map[string]string{"version": "1.0.0", "type": "applied"}); v != 1 {
		t.Errorf("cluster_version_payload{applied} = %v, want 1", v)
	}
	if v := requireOne(t, all, "cluster_version_payload", map[string]string{"version": "1.0.0", "type": "pending"}); v != 0 {
		t.Errorf("cluster_version_payload{pending} = %v, want 0", v)
	}
	if len(all["cluster_version_capability"]) == 0 {
		t.Error("no cluster_version_capability series")
	}
	if len(all["cluster_operator_payload_errors"]) != 0 {
		t.Errorf("cluster_operator_payload_errors without a failed apply: %v", all["cluster_operator_payload_errors"])
	}
	if v := requireOne(t, all, "cluster_operator_up", map[string]string{"name": co, "version": "1.0.0", "reason": "AsExpected"}); v != 1 {
		t.Errorf("cluster_operator_up{%s} = %v, want 1", co, v)
	}
	// Degraded is Unknown: the CVO exports no series for it.
	if got := find(all, "cluster_operator_conditions", map[string]string{"name": co}); len(got) != 1 || got[0].labels["condition"] != "Available" || got[0].value != 1 {
		t.Errorf("cluster_operator_conditions{name=%s} = %v, want Available=1 only", co, got)
	}

	t.Log("the ClusterOperator goes down and comes back: two transitions of Available")
	setAvailable(configv1.ConditionFalse, "Crashing")
	waitFor(t, "the ClusterOperator down in the metrics", time.Minute, func() bool {
		all = scrapeAll(t, metricsURL)
		return len(find(all, "cluster_operator_up", map[string]string{"name": co, "reason": "Crashing"})) == 1
	})
	if v := requireOne(t, all, "cluster_operator_up", map[string]string{"name": co, "version": "1.0.0", "reason": "Crashing"}); v != 0 {
		t.Errorf("cluster_operator_up{%s} = %v, want 0", co, v)
	}
	setAvailable(configv1.ConditionTrue, "AsExpected")
	waitFor(t, "two transitions counted", time.Minute, func() bool {
		all = scrapeAll(t, metricsURL)
		got := find(all, "cluster_operator_condition_transitions", map[string]string{"name": co, "condition": "Available"})
		return len(got) == 1 && got[0].value == 2
	})
	if got := find(all, "cluster_operator_condition_transitions", map[string]string{"name": co}); len(got) != 1 {
		t.Errorf("transitions of %s: %v, want Available only (Degraded stayed Unknown)", co, got)
	}

	stopLoop()
	<-loopDone

	t.Log("a refused update: 1.2.0 skips a minor")
	op.request(t, "1.2.0", false)
	if out := op.sync(t); out.Refused == nil {
		t.Fatal("1.2.0 was not refused")
	}
	all = scrapeAll(t, metricsURL)
	cv = op.clusterVersion(t)
	requireOne(t, all, "cluster_operator_conditions", map[string]string{"name": "version", "condition": "ReleaseAccepted", "reason": clusterversion.ReasonPreconditionChecks})
	if v := requireOne(t, all, "cluster_version", map[string]string{"type": "desired", "version": "1.2.0", "image": "", "from_version": "1.0.0"}); v < float64(started.Unix()) {
		t.Errorf("desired = %v, want the latest status change", v)
	}
	requireOne(t, all, "cluster_version", map[string]string{"type": "current", "version": "1.0.0", "image": image, "from_version": "1.0.0"})
	requireVersionConditions(t, all, cv, "1.0.0")
	if f := condition(cv, clusterversion.ConditionFailing); f.Status == configv1.ConditionTrue {
		requireOne(t, all, "cluster_version", map[string]string{"type": "failure", "version": "1.2.0", "image": "", "from_version": "1.0.0"})
	} else if got := find(all, "cluster_version", map[string]string{"type": "failure"}); len(got) != 0 {
		t.Errorf("a failure series while Failing is %s: %v", f.Status, got)
	}

	t.Log("1.0.1, whose delete fails")
	op.request(t, "1.0.1", false)
	if out := op.sync(t); out.Refused != nil || !out.Result.Complete() {
		t.Fatalf("1.0.1 must be accepted and complete: refused %v", out.Refused)
	}
	all = scrapeAll(t, metricsURL)
	cv = op.clusterVersion(t)
	up := requireCondition(t, cv, configv1.OperatorUpgradeable, configv1.ConditionFalse, "")
	if up.Reason != "ResourceDeletionFailed" && up.Reason != clusterversion.ReasonMultipleReasons {
		t.Errorf("Upgradeable = %s, want ResourceDeletionFailed (or MultipleReasons beside other tests' operators)", up.Reason)
	}
	if v := requireOne(t, all, "cluster_operator_conditions", map[string]string{"name": "version", "condition": "Upgradeable", "reason": up.Reason}); v != 0 {
		t.Errorf("Upgradeable series = %v, want 0", v)
	}
	requireVersionConditions(t, all, cv, "1.0.1")
	requireOne(t, all, "cluster_version", map[string]string{"type": "completed", "version": "1.0.1", "image": cv.Status.Desired.Image, "from_version": "1.0.0"})
	requireOne(t, all, "cluster_version", map[string]string{"type": "initial", "version": "1.0.0", "image": image, "from_version": ""})
	requireOne(t, all, "cluster_version", map[string]string{"type": "cluster", "version": "1.0.1", "image": cv.Status.Desired.Image, "from_version": "1.0.0"})
	if got := find(all, "cluster_version", map[string]string{"type": "desired"}); len(got) != 0 {
		t.Errorf("a desired series once the spec's release is applied: %v", got)
	}
	if v := requireOne(t, all, "payload_applier_deletes_total", map[string]string{"result": "failed"}); v < 1 {
		t.Errorf("deletes_total{failed} = %v", v)
	}

	t.Log("1.0.2, whose apply fails: Failing, updating and payload errors")
	op.request(t, "1.0.2", false)
	if out := op.sync(t); out.Refused != nil || out.Result.Complete() {
		t.Fatalf("1.0.2 must be accepted and fail: refused %v", out.Refused)
	}
	all = scrapeAll(t, metricsURL)
	cv = op.clusterVersion(t)
	failing := requireCondition(t, cv, clusterversion.ConditionFailing, configv1.ConditionTrue, "")
	image102 := cv.Status.Desired.Image
	if v := requireOne(t, all, "cluster_version", map[string]string{"type": "failure", "version": "1.0.2", "image": image102, "from_version": "1.0.1"}); v != float64(failing.LastTransitionTime.Unix()) {
		t.Errorf("failure = %v, want Failing's transition %v", v, failing.LastTransitionTime.Unix())
	}
	if v := requireOne(t, all, "cluster_version", map[string]string{"type": "updating", "version": "1.0.2", "image": image102, "from_version": "1.0.1"}); v != float64(cv.Status.History[0].StartedTime.Unix()) {
		t.Errorf("updating = %v, want the start of 1.0.2 %v", v, cv.Status.History[0].StartedTime.Unix())
	}
	requireOne(t, all, "cluster_version", map[string]string{"type": "current", "version": "1.0.2", "image": image102, "from_version": "1.0.1"})
	if v := requireOne(t, all, "cluster_operator_payload_errors", map[string]string{"version": "1.0.2"}); v < 1 {
		t.Errorf("cluster_operator_payload_errors{1.0.2} = %v, want at least the one failed apply", v)
	}
	if v := requireOne(t, all, "cluster_version_payload", map[string]string{"version": "1.0.2", "type": "pending"}); v != 1 {
		t.Errorf("cluster_version_payload{pending} = %v, want the failed manifest", v)
	}
	requireVersionConditions(t, all, cv, "1.0.1")

	t.Log("the ClusterVersion deleted: ClusterVersionNotFound")
	if err := op.config.ConfigV1().ClusterVersions().Delete(ctx, op.name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "ClusterVersionNotFound in the metrics", time.Minute, func() bool {
		_, _ = op.Sync(ctx, nil)
		all = scrapeAll(t, metricsURL)
		return len(find(all, "cluster_operator_up", map[string]string{"name": "version", "reason": "ClusterVersionNotFound"})) == 1
	})
	requireOne(t, all, "cluster_operator_conditions", map[string]string{"name": "version", "condition": "Available", "reason": "ClusterVersionNotFound"})
	if n := len(all["cluster_version"]); n != 0 {
		t.Errorf("cluster_version series without a ClusterVersion: %v", all["cluster_version"])
	}
}
