package operator

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/payload-applier/payload-applier/pkg/clusterconditions"
	"github.com/payload-applier/payload-applier/pkg/clusterversion"
	"github.com/payload-applier/payload-applier/pkg/payload/payloadtest"
	"github.com/payload-applier/payload-applier/pkg/precondition"
	"github.com/payload-applier/payload-applier/pkg/updategraph"
)

func TestRecommended(t *testing.T) {
	risk := func(name string) configv1.ConditionalUpdateRisk {
		return configv1.ConditionalUpdateRisk{Name: name, Message: name + " breaks", URL: "https://x/" + name}
	}
	match := clusterversion.RiskResult{Status: metav1.ConditionTrue, Reason: clusterversion.ReasonMatch, Message: ""}
	noMatch := clusterversion.RiskResult{Status: metav1.ConditionFalse, Reason: clusterversion.ReasonNotMatch, Message: ""}
	unknown := clusterversion.RiskResult{Status: metav1.ConditionUnknown, Reason: clusterversion.ReasonRiskEvaluationFailed, Message: "could not ask"}
	for _, tc := range []struct {
		name    string
		risks   []string
		results map[string]clusterversion.RiskResult
		accept  []string
		status  metav1.ConditionStatus
		reason  string
		message string
	}{
		{"none applies", []string{"A", "B"}, map[string]clusterversion.RiskResult{"A": noMatch, "B": noMatch}, nil, metav1.ConditionTrue, precondition.ReasonNotExposedToRisks, clusterversion.RecommendedMessageNotExposed},
		{"one applies: its name", []string{"A", "B"}, map[string]clusterversion.RiskResult{"A": noMatch, "B": match}, nil, metav1.ConditionFalse, "B", "B breaks https://x/B"},
		{"an invalid name: ExposedToRisks", []string{"bad name!"}, map[string]clusterversion.RiskResult{"bad name!": match}, nil, metav1.ConditionFalse, precondition.ReasonExposedToRisks, "bad name! breaks"},
		{"a name ending in a colon is invalid", []string{"A:"}, map[string]clusterversion.RiskResult{"A:": match}, nil, metav1.ConditionFalse, precondition.ReasonExposedToRisks, ""},
		{"two apply: MultipleReasons", []string{"A", "B"}, map[string]clusterversion.RiskResult{"A": match, "B": match}, nil, metav1.ConditionFalse, precondition.ReasonMultipleReasons, "A breaks https://x/A\n\nB breaks https://x/B"},
		{"unknown", []string{"A"}, map[string]clusterversion.RiskResult{"A": unknown}, nil, metav1.ConditionUnknown, precondition.ReasonEvaluationFailed, "could not ask"},
		{"unknown and applies: False, MultipleReasons", []string{"A", "B"}, map[string]clusterversion.RiskResult{"A": unknown, "B": match}, nil, metav1.ConditionFalse, precondition.ReasonMultipleReasons, "could not ask\n\nB breaks"},
		{"not evaluated: unknown", []string{"A"}, nil, nil, metav1.ConditionUnknown, precondition.ReasonEvaluationFailed, "failed to find risk condition for risk A"},
		{"all applying accepted", []string{"A", "B", "C"}, map[string]clusterversion.RiskResult{"A": match, "B": match, "C": noMatch}, []string{"A", "B"}, metav1.ConditionTrue, precondition.ReasonAllExposedRisksAccepted, clusterversion.RecommendedMessageAllAccepted},
		{"one accepted, one not", []string{"A", "B"}, map[string]clusterversion.RiskResult{"A": match, "B": match}, []string{"A"}, metav1.ConditionFalse, "B", "B breaks"},
		{"accepted and unknown", []string{"A", "B"}, map[string]clusterversion.RiskResult{"A": match, "B": unknown}, []string{"A"}, metav1.ConditionUnknown, precondition.ReasonEvaluationFailed, "could not ask"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var risks []configv1.ConditionalUpdateRisk
			for _, n := range tc.risks {
				risks = append(risks, risk(n))
			}
			c := clusterversion.Recommended(risks, tc.results, tc.accept)
			if c.Type != "Recommended" || c.Status != tc.status || c.Reason != tc.reason || !strings.Contains(c.Message, tc.message) {
				t.Errorf("got %s=%s %s %q, want %s %s with %q", c.Type, c.Status, c.Reason, c.Message, tc.status, tc.reason, tc.message)
			}
		})
	}
}

// stuck is a rule type that never answers, whatever its context says.
type stuck struct{}

func (stuck) Valid(context.Context, *configv1.ClusterCondition) error { return nil }
func (stuck) Match(context.Context, *configv1.ClusterCondition) (bool, error) {
	select {}
}

func TestEvaluateRisksIsBounded(t *testing.T) {
	reg := clusterconditions.New(map[string]clusterconditions.Condition{"PromQL": stuck{}})
	risks := []configv1.ConditionalUpdateRisk{
		{Name: "Slow", MatchingRules: []configv1.ClusterCondition{{Type: "PromQL"}}},
		{Name: "Later", MatchingRules: []configv1.ClusterCondition{{Type: "PromQL"}, {Type: "Always"}}},
		{Name: "Bad", MatchingRules: []configv1.ClusterCondition{{Type: "Nope"}}},
	}
	start := time.Now()
	got := evaluateRisks(context.Background(), reg, []updategraph.ConditionalUpdate{{Risks: risks}}, 100*time.Millisecond)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %s, want about the 100ms bound", d)
	}
	for _, name := range []string{"Slow", "Later", "Bad"} {
		if r := got[name]; r.Status != metav1.ConditionUnknown || r.Reason != clusterversion.ReasonRiskEvaluationFailed || !strings.Contains(r.Message, "Could not evaluate exposure to update risk "+name) {
			t.Errorf("%s: %+v, want Unknown EvaluationFailed", name, r)
		}
	}
	if !strings.Contains(got["Slow"].Message, "not evaluated within 100ms") {
		t.Errorf("Slow: %q, want the bound named", got["Slow"].Message)
	}
}

func TestAcceptRisksOf(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"desiredUpdate": map[string]any{
		"acceptRisks": []any{map[string]any{"name": "A"}, "junk", map[string]any{"name": int64(3)}, map[string]any{"name": "B"}, map[string]any{"name": "A"}}}}}}
	if got := acceptRisksOf(u); strings.Join(got, ",") != "A,B" {
		t.Errorf("got %v, want [A B]", got)
	}
	if got := acceptRisksOf(&unstructured.Unstructured{Object: map[string]any{}}); got != nil {
		t.Errorf("got %v, want none", got)
	}
}

// conditionalGraphJSON: 1.0.0 updates to 1.0.1 plainly, to 1.1.0 with the
// risk BadDisk (Always), to 1.2.0 with Unmatched (a PromQL rule, here one
// that never matches), and lists 1.1.0 unconditionally too.
const conditionalGraphJSON = `{"nodes": [
  {"version": "1.0.0", "payload": "r:1.0.0"},
  {"version": "1.0.1", "payload": "r:1.0.1"},
  {"version": "1.1.0", "payload": "r:1.1.0"},
  {"version": "1.2.0", "payload": "r:1.2.0"}
], "edges": [[0, 1], [0, 2]], "conditionalEdges": [
  {"edges": [{"from": "1.0.0", "to": "1.1.0"}], "risks": [{"name": "BadDisk", "url": "https://example.com/bad-disk", "message": "Disks fail.", "matchingRules": [{"type": "Always"}]}]},
  {"edges": [{"from": "1.0.0", "to": "1.2.0"}], "risks": [{"name": "Unmatched", "url": "https://example.com/u", "message": "Never.", "matchingRules": [{"type": "PromQL", "promql": {"promql": "0"}}]}]}
]}`

// never is a rule type that never matches.
type never struct{}

func (never) Valid(context.Context, *configv1.ClusterCondition) error         { return nil }
func (never) Match(context.Context, *configv1.ClusterCondition) (bool, error) { return false, nil }

// newGraphFileCluster is a fake cluster at version whose releases are
// versions, reading the update graph in the file it returns, with metrics.
func newGraphFileCluster(t *testing.T, graph, version string, versions ...string) (*fakeCluster, string, *Metrics) {
	t.Helper()
	root := t.TempDir()
	for _, v := range versions {
		payloadtest.WriteRelease(t, root, v, nil, map[string]string{"0000_50_demo_00_keep.yaml": configMapManifest("keep")})
	}
	graphFile := filepath.Join(t.TempDir(), "graph.json")
	if err := os.WriteFile(graphFile, []byte(graph), 0o644); err != nil {
		t.Fatal(err)
	}
	c := newFakeCluster(t, &DirStore{Root: root}, version)
	c.op.cfg.UpdateGraph = updategraph.FileSource{Path: graphFile}
	metrics, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	c.op.metrics = metrics
	c.op.writer.metrics = metrics
	c.op.updates.metrics = metrics
	return c, graphFile, metrics
}

func TestSyncEvaluatesConditionalUpdates(t *testing.T) {
	c, graphFile, metrics := newGraphFileCluster(t, conditionalGraphJSON, "1.0.0", "1.0.0", "1.1.0")
	c.op.cfg.RiskConditions = clusterconditions.New(map[string]clusterconditions.Condition{"PromQL": never{}})
	c.op.risks.registry = c.op.cfg.RiskConditions
	c.setChannel(t, "stable")
	c.sync(t)

	t.Log("1.1.0 is conditional, exposed to BadDisk, and no longer available; 1.2.0 is recommended")
	cv := c.clusterVersion(t)
	wantCondition(t, cv, configv1.RetrievedUpdates, configv1.ConditionTrue, "")
	if got := strings.Join(availableVersions(cv), ","); got != "1.2.0,1.0.1" {
		t.Errorf("availableUpdates = %s, want 1.2.0,1.0.1", got)
	}
	if n := len(cv.Status.ConditionalUpdates); n != 2 {
		t.Fatalf("%d conditional updates, want 2: %+v", n, cv.Status.ConditionalUpdates)
	}
	exposed := cv.Status.ConditionalUpdates[1]
	rec := findRecommended(exposed)
	if exposed.Release.Version != "1.1.0" || exposed.Release.Image != "r:1.1.0" || len(exposed.Risks) != 1 || rec == nil ||
		rec.Status != metav1.ConditionFalse || rec.Reason != "BadDisk" || rec.Message != "Disks fail. https://example.com/bad-disk" {
		t.Errorf("1.1.0 entry %+v", exposed)
	}
	if r := findRecommended(cv.Status.ConditionalUpdates[0]); r == nil || r.Status != metav1.ConditionTrue || r.Reason != precondition.ReasonNotExposedToRisks {
		t.Errorf("1.2.0 Recommended = %+v, want True", r)
	}
	if v := testutil.ToFloat64(metrics.conditional.riskConditions.WithLabelValues("Applies", "BadDisk", "Match")); v != 1 {
		t.Errorf("cluster_version_risk_conditions{BadDisk} = %v, want 1", v)
	}
	if v := testutil.ToFloat64(metrics.conditional.conditionSeconds.WithLabelValues("1.1.0", "Recommended", "False", "BadDisk")); v != float64(rec.LastTransitionTime.Unix()) {
		t.Errorf("cluster_version_conditional_update_condition_seconds{1.1.0} = %v, want %d", v, rec.LastTransitionTime.Unix())
	}

	t.Log("a conditional target missing from the nodes: ResponseInvalid")
	good, _ := os.ReadFile(graphFile)
	if err := os.WriteFile(graphFile, []byte(strings.Replace(string(good), `"to": "1.2.0"`, `"to": "9.9.9"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	c.clock.Step(3 * time.Minute)
	c.sync(t)
	cv = c.clusterVersion(t)
	wantCondition(t, cv, configv1.RetrievedUpdates, configv1.ConditionFalse, updategraph.ReasonResponseInvalid, "no node for conditional update 9.9.9")
	if len(cv.Status.ConditionalUpdates) != 0 || len(cv.Status.AvailableUpdates) != 0 {
		t.Errorf("updates kept: %v, %v", cv.Status.AvailableUpdates, cv.Status.ConditionalUpdates)
	}
	if err := os.WriteFile(graphFile, good, 0o644); err != nil {
		t.Fatal(err)
	}
	c.clock.Step(3 * time.Minute)
	c.sync(t)

	t.Log("an update to 1.1.0 is refused, naming the risk")
	c.request(t, "1.1.0")
	if out := c.sync(t); out.Refused == nil || !strings.Contains(out.Refused.Error(), "BadDisk") {
		t.Fatalf("refused %v, want the update refused naming BadDisk", out.Refused)
	}
	wantCondition(t, c.clusterVersion(t), clusterversion.ConditionReleaseAccepted, configv1.ConditionFalse, clusterversion.ReasonPreconditionChecks, "BadDisk", "ClusterVersionRecommendedUpdate")

	t.Log("with acceptRisks naming it, it is recommended and proceeds, history naming the risk")
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "config.openshift.io/v1", "kind": "ClusterVersion",
		"metadata": map[string]any{"name": c.clusterVersion(t).Name},
		"spec":     map[string]any{"desiredUpdate": map[string]any{"version": "1.1.0", "acceptRisks": []any{map[string]any{"name": "BadDisk"}}}}}}
	if err := c.dynamic.Tracker().Create(clusterVersionsResource, u, ""); err != nil {
		t.Fatal(err)
	}
	// The typed fake does not hold acceptRisks: a change of it is a new
	// resourceVersion of the object it holds too.
	touched := c.clusterVersion(t)
	touched.Annotations = map[string]string{"acceptRisks": "changed"}
	if _, err := c.config.ConfigV1().ClusterVersions().Update(context.Background(), touched, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	out := c.sync(t)
	if out.Refused != nil {
		t.Fatalf("refused %v", out.Refused)
	}
	cv = c.clusterVersion(t)
	if h := cv.Status.History[0]; h.Version != "1.1.0" || !strings.Contains(h.AcceptedRisks, "BadDisk") || !strings.Contains(h.AcceptedRisks, "AllExposedRisksAccepted") {
		t.Errorf("history[0] = %s with risks %q, want 1.1.0 naming BadDisk", h.Version, h.AcceptedRisks)
	}

}

// TestSyncWritesTheRiskStatus: status.conditionalUpdateRisks and each
// update's riskNames and risks' Applies are written with the status, once:
// a pass that changes nothing writes nothing, and neither does one on a
// CRD that prunes them.
func TestSyncWritesTheRiskStatus(t *testing.T) {
	for _, keeps := range []bool{true, false} {
		t.Run(fmt.Sprintf("the CRD keeps them: %v", keeps), func(t *testing.T) {
			c, _, _ := newGraphFileCluster(t, conditionalGraphJSON, "1.0.0", "1.0.0")
			c.op.cfg.RiskConditions = clusterconditions.New(map[string]clusterconditions.Condition{"PromQL": never{}})
			c.op.risks.registry = c.op.cfg.RiskConditions
			if !keeps {
				c.op.writer.put = typedStatusPut(c.config)
			}
			var bodies []map[string]any
			put := c.op.writer.put
			c.op.writer.put = func(ctx context.Context, name string, body []byte) ([]byte, error) {
				var sent map[string]any
				if err := json.Unmarshal(body, &sent); err != nil {
					t.Fatal(err)
				}
				bodies = append(bodies, sent)
				return put(ctx, name, body)
			}
			c.setChannel(t, "stable")
			c.sync(t)
			if len(bodies) == 0 {
				t.Fatal("no status written")
			}
			status := bodies[len(bodies)-1]["status"].(map[string]any)
			applies := clusterversion.RiskAppliesOf(bodies[len(bodies)-1])
			if a, u := applies["BadDisk"], applies["Unmatched"]; len(applies) != 2 || a.Status != metav1.ConditionTrue || a.Reason != "Match" || u.Status != metav1.ConditionFalse || u.Reason != "NotMatch" {
				t.Errorf("conditionalUpdateRisks' Applies %+v, want BadDisk True Match, Unmatched False NotMatch", applies)
			}
			for _, raw := range status["conditionalUpdates"].([]any) {
				u := raw.(map[string]any)
				names, _ := u["riskNames"].([]any)
				risks := u["risks"].([]any)
				conds, _ := risks[0].(map[string]any)["conditions"].([]any)
				if len(names) != 1 || names[0] != risks[0].(map[string]any)["name"] || len(conds) != 1 {
					t.Errorf("conditional update %v: riskNames %v, conditions %v", u["release"], names, conds)
				}
			}
			n := len(bodies)
			c.clock.Step(time.Second)
			c.sync(t)
			if len(bodies) != n {
				t.Errorf("a pass that changed nothing wrote the status again")
			}
		})
	}
}

func findRecommended(u configv1.ConditionalUpdate) *metav1.Condition {
	for i := range u.Conditions {
		if u.Conditions[i].Type == precondition.ConditionRecommended {
			return &u.Conditions[i]
		}
	}
	return nil
}

func TestStatusBudgetBoundsConditionalUpdates(t *testing.T) {
	long := strings.Repeat("x", 64<<10)
	var st configv1.ClusterVersionStatus
	for i := range clusterversion.MaxConditionalUpdates + 10 {
		st.ConditionalUpdates = append(st.ConditionalUpdates, configv1.ConditionalUpdate{
			Release: configv1.Release{Version: "1.1." + strings.Repeat("9", i%5), URL: configv1.URL(long)},
			Risks: []configv1.ConditionalUpdateRisk{{Name: "R", URL: "https://x", Message: long,
				MatchingRules: []configv1.ClusterCondition{{Type: "PromQL", PromQL: &configv1.PromQLClusterCondition{PromQL: long}}}}},
			Conditions: []metav1.Condition{{Type: "Recommended", Status: metav1.ConditionFalse, Reason: "R", Message: long}},
		})
	}
	clusterversion.Fit(&st, nil, metav1.Now())
	if size := clusterversion.StatusSize(&st, nil); size > clusterversion.MaxStatusBytes {
		t.Fatalf("status of %d bytes, over the %d budget", size, clusterversion.MaxStatusBytes)
	}
	if len(st.ConditionalUpdates) == 0 {
		t.Fatal("every conditional update dropped; the first ones fit")
	}
	u := st.ConditionalUpdates[0]
	if len(u.Risks[0].Message) > clusterversion.MaxRiskMessageBytes || len(u.Risks[0].MatchingRules[0].PromQL.PromQL) > clusterversion.MaxMessageBytes ||
		len(u.Conditions[0].Message) > clusterversion.MaxMessageBytes || len(u.Release.URL) > clusterversion.MaxReleaseFieldBytes {
		t.Errorf("a string over its limit: %d %d %d %d", len(u.Risks[0].Message), len(u.Risks[0].MatchingRules[0].PromQL.PromQL), len(u.Conditions[0].Message), len(u.Release.URL))
	}
	if c := clusterversion.FindCondition(st.Conditions, clusterversion.ConditionStatusTruncated); c == nil || !strings.Contains(c.Message, "conditionalUpdates") {
		t.Errorf("StatusTruncated %+v, want the cut named", c)
	}
}

func TestUsableConditionalPrunesWhatTheCRDRefuses(t *testing.T) {
	risk := func(name, url, message string, types ...string) configv1.ConditionalUpdateRisk {
		r := configv1.ConditionalUpdateRisk{Name: name, URL: url, Message: message}
		for _, ty := range types {
			r.MatchingRules = append(r.MatchingRules, configv1.ClusterCondition{Type: ty})
		}
		return r
	}
	update := func(version string, risks ...configv1.ConditionalUpdateRisk) updategraph.ConditionalUpdate {
		return updategraph.ConditionalUpdate{Release: updategraph.Node{Version: version}, Risks: risks}
	}
	got := usableConditional([]updategraph.ConditionalUpdate{
		update("1.0.1", risk("A", "https://x", "m", "Nope", "Always")),
		update("1.0.2", risk("B", "https://x", "m", "Nope")),
		update("1.0.3", risk("C", "https://x", "", "Always")),
		update("1.0.4", risk("D", "not-absolute", "m", "Always")),
		update("1.0.5", risk("E", "https://x", "m", "PromQL")),
	})
	var kept []string
	for _, u := range got {
		var types []string
		for _, r := range u.Risks[0].MatchingRules {
			types = append(types, r.Type)
		}
		kept = append(kept, u.Release.Version+":"+strings.Join(types, ","))
	}
	if s := strings.Join(kept, " "); s != "1.0.1:Always 1.0.5:PromQL" {
		t.Errorf("kept %s, want 1.0.1:Always 1.0.5:PromQL", s)
	}
	// PromQL without a Prometheus: kept, and Unknown.
	results := evaluateRisks(context.Background(), clusterconditions.New(nil), got[1:], time.Second)
	if r := results["E"]; r.Status != metav1.ConditionUnknown || !strings.Contains(r.Message, `unknown type "PromQL"`) {
		t.Errorf("E: %+v, want Unknown naming the type", r)
	}
}

// TestWorstConditionalGroupCostsASyncLittle: one conditional group at
// every per-item cap of pkg/updategraph, with edges to 25 and then 250
// targets. Its risks are bounded and held once for all targets, and the
// status budget reads the conditional updates only as far as it could
// keep them, so that one sync allocates under 64 MiB (it allocated 800
// MiB for 25 targets) and about as much for ten times the targets.
func TestWorstConditionalGroupCostsASyncLittle(t *testing.T) {
	syncAllocates := func(targets int) uint64 {
		c, _ := budgetCluster(t, worstConditionalGraph(targets), nil)
		c.sync(t)
		// The least of three syncs: the process's other goroutines
		// (informers, timers) allocate now and then, and TotalAlloc counts
		// theirs too.
		least := uint64(math.MaxUint64)
		for range 3 {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			c.sync(t)
			runtime.ReadMemStats(&after)
			least = min(least, after.TotalAlloc-before.TotalAlloc)
		}
		cv := wantWithinBudget(t, c)
		wantCondition(t, cv, configv1.RetrievedUpdates, configv1.ConditionTrue, "")
		// One entry's risks alone are over the budget.
		wantCondition(t, cv, clusterversion.ConditionStatusTruncated, configv1.ConditionTrue, clusterversion.ReasonStatusLimits,
			fmt.Sprintf("conditionalUpdates keeps the first 0 of %d entries", targets))
		return least
	}
	small := syncAllocates(25)
	t.Logf("a sync allocates %d MiB with 25 targets", small>>20)
	if small > 64<<20 {
		t.Fatalf("a sync allocates %d MiB with 25 targets, want under 64 MiB", small>>20)
	}
	large := syncAllocates(250)
	t.Logf("a sync allocates %d MiB with 250 targets", large>>20)
	if large > 2*small {
		t.Errorf("a sync allocates %d MiB with 250 targets and %d MiB with 25: the cost grows with the targets", large>>20, small>>20)
	}
}
