package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/payload-applier/payload-applier/pkg/clusterversion"
	"github.com/payload-applier/payload-applier/pkg/operator"
	"github.com/payload-applier/payload-applier/pkg/precondition"
)

// conditionalE2EGraph: 1.0.0 updates to 1.0.1 plainly and to 1.1.0 with
// the risk BadDisk, which applies to every cluster.
const conditionalE2EGraph = `{"nodes": [
  {"version": "1.0.0", "payload": "r:1.0.0"},
  {"version": "1.0.1", "payload": "r:1.0.1"},
  {"version": "1.1.0", "payload": "r:1.1.0"}
], "edges": [[0, 1]], "conditionalEdges": [
  {"edges": [{"from": "1.0.0", "to": "1.1.0"}], "risks": [{"name": "BadDisk", "url": "https://example.com/bad-disk", "message": "Disks fail after the update.", "matchingRules": [{"type": "Always"}]}]}
]}`

var clusterVersionsGVR = schema.GroupVersionResource{Group: "config.openshift.io", Version: "v1", Resource: "clusterversions"}

// patchClusterVersion merge-patches the ClusterVersion name as the admin,
// through the dynamic client: the typed one would drop acceptRisks.
func patchClusterVersion(t *testing.T, name, patch string) *unstructured.Unstructured {
	t.Helper()
	dyn, err := dynamic.NewForConfig(testCluster.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	u, err := dyn.Resource(clusterVersionsGVR).Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// newInstalledOperator is an operator on a ClusterVersion of its own,
// named after base, with one release per version, the first installed.
func newInstalledOperator(t *testing.T, base string, versions ...string) (*testOperator, string) {
	t.Helper()
	ns := testCluster.CreateNamespace(t)
	keep := map[string]string{"0000_50_demo_00_keep.yaml": configMap(ns, "keep", "x")}
	releases := map[string]map[string]string{}
	for _, v := range versions {
		releases[v] = keep
	}
	name := uniqueName(t, base)
	op := newOperatorOn(t, &operator.DirStore{Root: writeStore(t, releases)}, name, ns, nil, nil)
	op.request(t, versions[0], false)
	if out := op.sync(t); !out.Result.Complete() {
		t.Fatalf("install: %v", out.Result.Errors)
	}
	return op, name
}

// riskStatusOf reads the ClusterVersion name as the apiserver holds it:
// status.conditionalUpdateRisks' Applies conditions, and each conditional
// update's riskNames by version.
func riskStatusOf(t *testing.T, name string) (clusterversion.RiskApplies, map[string][]string) {
	t.Helper()
	dyn, err := dynamic.NewForConfig(testCluster.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	u, err := dyn.Resource(clusterVersionsGVR).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	names := map[string][]string{}
	updates, _, _ := unstructured.NestedSlice(u.Object, "status", "conditionalUpdates")
	for _, raw := range updates {
		version, _, _ := unstructured.NestedString(raw.(map[string]any), "release", "version")
		names[version], _, _ = unstructured.NestedStringSlice(raw.(map[string]any), "riskNames")
	}
	return clusterversion.RiskAppliesOf(u.Object), names
}

func recommendedOf(cv *configv1.ClusterVersion, version string) *metav1.Condition {
	for _, u := range cv.Status.ConditionalUpdates {
		if u.Release.Version != version {
			continue
		}
		for i := range u.Conditions {
			if u.Conditions[i].Type == precondition.ConditionRecommended {
				return &u.Conditions[i]
			}
		}
	}
	return nil
}

// TestConditionalUpdateRisksRefuseUntilAccepted: an update whose risk
// applies is listed as not recommended and refused; once
// spec.desiredUpdate.acceptRisks names the risk, it is recommended,
// proceeds, and history records the accepted risk.
func TestConditionalUpdateRisksRefuseUntilAccepted(t *testing.T) {
	op, name := newInstalledOperator(t, "conditional", "1.0.0", "1.0.1", "1.1.0")
	srv := newGraphServer(t, conditionalE2EGraph)
	patchClusterVersion(t, name, `{"spec": {"upstream": "`+srv.URL+`/graph", "channel": "stable-1.0"}}`)

	t.Log("1.1.0 is listed with its risk, Recommended=False BadDisk, and is not available")
	op.sync(t)
	cv := op.clusterVersion(t)
	requireCondition(t, cv, configv1.RetrievedUpdates, configv1.ConditionTrue, "")
	rec := recommendedOf(cv, "1.1.0")
	if rec == nil || rec.Status != metav1.ConditionFalse || rec.Reason != "BadDisk" || rec.Message != "Disks fail after the update. https://example.com/bad-disk" {
		t.Fatalf("Recommended of 1.1.0 = %+v, want False BadDisk", rec)
	}
	if len(cv.Status.ConditionalUpdates) != 1 || len(cv.Status.ConditionalUpdates[0].Risks) != 1 || cv.Status.ConditionalUpdates[0].Release.Image != "r:1.1.0" {
		t.Errorf("conditionalUpdates = %+v", cv.Status.ConditionalUpdates)
	}
	if len(cv.Status.AvailableUpdates) != 1 || cv.Status.AvailableUpdates[0].Version != "1.0.1" {
		t.Errorf("availableUpdates = %+v, want 1.0.1 only", cv.Status.AvailableUpdates)
	}
	if applies, names := riskStatusOf(t, name); applies["BadDisk"].Status != metav1.ConditionTrue || applies["BadDisk"].Reason != "Match" ||
		len(applies) != 1 || strings.Join(names["1.1.0"], ",") != "BadDisk" {
		t.Errorf("conditionalUpdateRisks %+v, riskNames %v: want BadDisk Applies=True Match", applies, names)
	}

	t.Log("an update to 1.1.0 without acceptance is refused, naming the risk")
	op.request(t, "1.1.0", false)
	if out := op.sync(t); out.Refused == nil || !strings.Contains(out.Refused.Error(), "BadDisk") {
		t.Fatalf("refused %v, want the update refused naming BadDisk", out.Refused)
	}
	cv = op.clusterVersion(t)
	accepted := requireCondition(t, cv, clusterversion.ConditionReleaseAccepted, configv1.ConditionFalse, clusterversion.ReasonPreconditionChecks)
	if !strings.Contains(accepted.Message, precondition.NameClusterVersionRecommendedUpdate) || !strings.Contains(accepted.Message, "BadDisk") {
		t.Errorf("ReleaseAccepted message %q, want the check and the risk named", accepted.Message)
	}
	if cv.Status.Desired.Version != "1.0.0" {
		t.Errorf("desired = %s, want 1.0.0 kept", cv.Status.Desired.Version)
	}

	t.Log("with acceptRisks naming BadDisk, the update proceeds")
	u := patchClusterVersion(t, name, `{"spec": {"desiredUpdate": {"version": "1.1.0", "acceptRisks": [{"name": "BadDisk"}]}}}`)
	if names, _, _ := unstructured.NestedSlice(u.Object, "spec", "desiredUpdate", "acceptRisks"); len(names) != 1 {
		t.Fatalf("the apiserver kept acceptRisks %v, want [BadDisk]: the CRD must carry the field", names)
	}
	out := op.sync(t)
	if out.Refused != nil {
		t.Fatalf("refused %v after acceptance", out.Refused)
	}
	cv = op.clusterVersion(t)
	// 1.0.0's updates, 1.1.0 among them, are gone until the graph answers
	// for 1.1.0.
	if len(cv.Status.ConditionalUpdates) != 0 || len(cv.Status.AvailableUpdates) != 0 {
		t.Errorf("updates of 1.0.0 still listed once 1.1.0 was accepted: %+v, %+v", cv.Status.AvailableUpdates, cv.Status.ConditionalUpdates)
	}
	h := cv.Status.History[0]
	if h.Version != "1.1.0" || !strings.Contains(h.AcceptedRisks, "BadDisk") || !strings.Contains(h.AcceptedRisks, precondition.ReasonAllExposedRisksAccepted) {
		t.Errorf("history[0] = %s with accepted risks %q, want 1.1.0 naming BadDisk", h.Version, h.AcceptedRisks)
	}
	if out := op.sync(t); out.Result == nil || !out.Result.Complete() {
		t.Fatalf("the update must complete")
	}
	if h := op.clusterVersion(t).Status.History[0]; h.Version != "1.1.0" || h.State != configv1.CompletedUpdate {
		t.Errorf("history[0] = %s %s, want 1.1.0 Completed", h.Version, h.State)
	}
}

// TestRunningOperatorEvaluatesRisksBesideItsPasses: under Run, risks are
// evaluated beside the passes and a result wakes one; the slow resync
// interval shows that nothing else drives the status.
func TestRunningOperatorEvaluatesRisksBesideItsPasses(t *testing.T) {
	op, name := newInstalledOperator(t, "conditional-run", "1.0.0", "1.1.0")
	srv := newGraphServer(t, conditionalE2EGraph)
	op.run(t, operator.RunOptions{ResyncInterval: 10 * time.Minute})
	patchClusterVersion(t, name, `{"spec": {"upstream": "`+srv.URL+`/graph", "channel": "stable-1.0"}}`)

	start := time.Now()
	waitFor(t, "Recommended=False BadDisk on 1.1.0", time.Minute, func() bool {
		rec := recommendedOf(op.clusterVersion(t), "1.1.0")
		return rec != nil && rec.Status == metav1.ConditionFalse && rec.Reason == "BadDisk"
	})
	t.Logf("the risk's evaluation reached the status %s after the upstream was set", time.Since(start).Round(time.Millisecond))

	t.Log("risks accepted first, then the update requested as apply requests it: the request keeps acceptRisks")
	patchClusterVersion(t, name, `{"spec": {"desiredUpdate": {"acceptRisks": [{"name": "BadDisk"}]}}}`)
	op.request(t, "1.1.0", false)
	waitFor(t, "the accepted update to 1.1.0 to complete", time.Minute, func() bool {
		h := op.clusterVersion(t).Status.History
		return len(h) > 0 && h[0].Version == "1.1.0" && h[0].State == configv1.CompletedUpdate
	})
	if h := op.clusterVersion(t).Status.History[0]; !strings.Contains(h.AcceptedRisks, "BadDisk") {
		t.Errorf("history[0] accepted risks %q, want BadDisk", h.AcceptedRisks)
	}
}

// TestConditionalUpdatesOfEveryShapeAreWritten: the apiserver takes every
// shape of entry the operator writes: a risk name that is no valid reason,
// a long message, a pruned rule type, a PromQL rule nobody evaluates.
func TestConditionalUpdatesOfEveryShapeAreWritten(t *testing.T) {
	op, name := newInstalledOperator(t, "conditional-shapes", "1.0.0")
	long := strings.Repeat("m", 10<<10)
	graph := `{"nodes": [
  {"version": "1.0.0", "payload": "r:1.0.0"}, {"version": "1.1.0", "payload": "r:1.1.0"},
  {"version": "1.2.0", "payload": "r:1.2.0"}, {"version": "1.3.0", "payload": ""}
], "edges": [], "conditionalEdges": [
  {"edges": [{"from": "1.0.0", "to": "1.1.0"}], "risks": [{"name": "not a reason!", "url": "https://example.com/a", "message": "` + long + `", "matchingRules": [{"type": "Nope"}, {"type": "Always"}]}]},
  {"edges": [{"from": "1.0.0", "to": "1.2.0"}], "risks": [{"name": "Metric", "url": "https://example.com/b", "message": "m", "matchingRules": [{"type": "PromQL", "promql": {"promql": "cluster_version{_id=\"\"} > 0"}}]},
                                                        {"name": "Also", "url": "https://example.com/c", "message": "m", "matchingRules": [{"type": "Always"}]}]},
  {"edges": [{"from": "1.0.0", "to": "1.3.0"}], "risks": [{"name": "Dropped", "url": "relative", "message": "m", "matchingRules": [{"type": "Always"}]}]}
]}`
	srv := newGraphServer(t, graph)
	patchClusterVersion(t, name, `{"spec": {"upstream": "`+srv.URL+`/graph", "channel": "stable-1.0"}}`)
	op.sync(t)
	cv := op.clusterVersion(t)
	requireCondition(t, cv, configv1.RetrievedUpdates, configv1.ConditionTrue, "")
	if n := len(cv.Status.ConditionalUpdates); n != 2 {
		t.Fatalf("%d conditional updates written, want 2 (1.3.0 dropped for its URL): %+v", n, cv.Status.ConditionalUpdates)
	}
	if rec := recommendedOf(cv, "1.1.0"); rec == nil || rec.Status != metav1.ConditionFalse || rec.Reason != precondition.ReasonExposedToRisks {
		t.Errorf("1.1.0: %+v, want False ExposedToRisks", rec)
	}
	if r := cv.Status.ConditionalUpdates[1].Risks[0]; len(r.Message) > 4<<10 || len(r.MatchingRules) != 1 {
		t.Errorf("1.1.0's risk: message of %d bytes, rules %+v: want it bounded and Nope pruned", len(r.Message), r.MatchingRules)
	}
	if rec := recommendedOf(cv, "1.2.0"); rec == nil || rec.Status != metav1.ConditionFalse || rec.Reason != precondition.ReasonMultipleReasons ||
		!strings.Contains(rec.Message, `unknown type "PromQL"`) {
		t.Errorf("1.2.0: %+v, want False MultipleReasons with the PromQL rule unevaluated", rec)
	}
	applies, names := riskStatusOf(t, name)
	for risk, want := range map[string]metav1.ConditionStatus{"Also": metav1.ConditionTrue, "Metric": metav1.ConditionUnknown, "not a reason!": metav1.ConditionTrue} {
		if c, ok := applies[risk]; !ok || c.Status != want {
			t.Errorf("conditionalUpdateRisks[%s] Applies %+v, want %s", risk, c, want)
		}
	}
	if len(applies) != 3 || strings.Join(names["1.2.0"], ",") != "Also,Metric" || strings.Join(names["1.1.0"], ",") != "not a reason!" {
		t.Errorf("conditionalUpdateRisks %v, riskNames %v: want the three risks, each update naming its own, sorted", applies, names)
	}
}
