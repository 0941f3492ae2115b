package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	syncpkg "sync"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/payload-applier/payload-applier/pkg/clusterconditions"
	"github.com/payload-applier/payload-applier/pkg/clusterversion"
	"github.com/payload-applier/payload-applier/pkg/operator"
	"github.com/payload-applier/payload-applier/pkg/precondition"
	"github.com/payload-applier/payload-applier/test/cluster"
)

// promqlRiskGraph: from 1.0.0, 1.1.0 carries DiskRisk, whose query
// matches this cluster, 1.0.2 NetRisk, whose query does not, and 1.0.3
// BrokenQuery, whose query Prometheus cannot parse. The queries name the
// cluster by `_id=""`, which the operator fills in.
const promqlRiskGraph = `{"nodes": [
  {"version": "1.0.0", "payload": "r:1.0.0"},
  {"version": "1.0.2", "payload": "r:1.0.2"},
  {"version": "1.0.3", "payload": "r:1.0.3"},
  {"version": "1.1.0", "payload": "r:1.1.0"}
], "edges": [], "conditionalEdges": [
  {"edges": [{"from": "1.0.0", "to": "1.1.0"}], "risks": [{"name": "DiskRisk", "url": "https://example.com/disk", "message": "Disks fail.",
    "matchingRules": [{"type": "PromQL", "promql": {"promql": "test_cluster_risk{_id=\"\",risk=\"disk\"}"}}]}]},
  {"edges": [{"from": "1.0.0", "to": "1.0.2"}], "risks": [{"name": "NetRisk", "url": "https://example.com/net", "message": "The network fails.",
    "matchingRules": [{"type": "PromQL", "promql": {"promql": "test_cluster_risk{_id=\"\",risk=\"net\"}"}}]}]},
  {"edges": [{"from": "1.0.0", "to": "1.0.3"}], "risks": [{"name": "BrokenQuery", "url": "https://example.com/broken", "message": "Nobody knows.",
    "matchingRules": [{"type": "PromQL", "promql": {"promql": "test_cluster_risk{_id=\"\""}}]}]}
]}`

// textHandler serves a /metrics text that the test sets.
type textHandler struct {
	mu   syncpkg.Mutex
	text string
}

func (h *textHandler) set(text string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.text = text
}

func (h *textHandler) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	h.mu.Lock()
	defer h.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	_, _ = io.WriteString(w, h.text)
}

func hostPort(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// TestPromQLRisksAgainstARealPrometheus joins the operator, with the risk
// registry payload-applier start builds, to a real Prometheus that scrapes
// a series of this cluster and the operator's own metrics with the shipped
// rules loaded: a matching risk, one not matching and one whose query
// fails; the refused, then accepted, update; and the cache asking each
// query once.
func TestPromQLRisksAgainstARealPrometheus(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	risksTarget := &textHandler{}
	risksSrv := httptest.NewServer(risksTarget)
	t.Cleanup(risksSrv.Close)
	reg := prometheus.NewRegistry()
	metrics, err := operator.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	metricsSrv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	t.Cleanup(metricsSrv.Close)
	rules, err := filepath.Abs("../../manifests/monitoring/cluster-version-operator.rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	prom := cluster.StartPrometheusForTest(t, cluster.PrometheusOptions{
		Targets:   []string{hostPort(t, risksSrv.URL)},
		Jobs:      map[string][]string{"cluster-version-operator": {hostPort(t, metricsSrv.URL)}},
		RuleFiles: []string{rules},
	})
	risks, err := clusterconditions.NewWithPromQL(clusterconditions.PromQLConfig{URL: prom.URL(), Timeout: clusterconditions.DefaultQueryTimeout}, reg)
	if err != nil {
		t.Fatal(err)
	}

	ns := testCluster.CreateNamespace(t)
	keep := map[string]string{"0000_50_demo_00_keep.yaml": configMap(ns, "keep", "x")}
	store := writeStore(t, map[string]map[string]string{"1.0.0": keep, "1.1.0": keep})
	name := uniqueName(t, "conditional-promql")
	op := newOperatorOn(t, &operator.DirStore{Root: store}, name, ns, nil, metrics,
		func(c *operator.Config) { c.RiskConditions = risks })
	op.request(t, "1.0.0", false)
	if out := op.sync(t); !out.Result.Complete() {
		t.Fatalf("install: %v", out.Result.Errors)
	}
	id := string(op.clusterVersion(t).Spec.ClusterID)
	if id == "" {
		t.Fatal("the ClusterVersion has no clusterID")
	}

	t.Log("this cluster's series in Prometheus before any risk is evaluated: a failure would be cached")
	risksTarget.set(fmt.Sprintf("# TYPE test_cluster_risk gauge\ntest_cluster_risk{_id=%q,risk=\"disk\"} 1\ntest_cluster_risk{_id=%q,risk=\"net\"} 0\n", id, id))
	if err := prom.WaitForQuery(ctx, `count(test_cluster_risk{_id="`+id+`"})`, `"2"`); err != nil {
		t.Fatal(err)
	}

	srv := newGraphServer(t, promqlRiskGraph)
	patchClusterVersion(t, name, `{"spec": {"upstream": "`+srv.URL+`/graph", "channel": "stable-1.0"}}`)
	start := time.Now()
	op.sync(t)
	t.Logf("the sync evaluating three PromQL risks took %s", time.Since(start).Round(time.Millisecond))
	cv := op.clusterVersion(t)
	requireCondition(t, cv, configv1.RetrievedUpdates, configv1.ConditionTrue, "")
	if rec := recommendedOf(cv, "1.1.0"); rec == nil || rec.Status != metav1.ConditionFalse || rec.Reason != "DiskRisk" || rec.Message != "Disks fail. https://example.com/disk" {
		t.Errorf("Recommended of 1.1.0 = %+v, want False DiskRisk", rec)
	}
	if rec := recommendedOf(cv, "1.0.2"); rec == nil || rec.Status != metav1.ConditionTrue || rec.Reason != precondition.ReasonNotExposedToRisks {
		t.Errorf("Recommended of 1.0.2 = %+v, want True NotExposedToRisks", rec)
	}
	if rec := recommendedOf(cv, "1.0.3"); rec == nil || rec.Status != metav1.ConditionUnknown || rec.Reason != precondition.ReasonEvaluationFailed || !strings.Contains(rec.Message, "BrokenQuery") {
		t.Errorf("Recommended of 1.0.3 = %+v, want Unknown EvaluationFailed naming BrokenQuery", rec)
	}
	if len(cv.Status.AvailableUpdates) != 1 || cv.Status.AvailableUpdates[0].Version != "1.0.2" {
		t.Errorf("availableUpdates = %+v, want the recommended 1.0.2 only", cv.Status.AvailableUpdates)
	}

	t.Log("CannotEvaluateConditionalUpdates: its rule is loaded and its inner expression has the failed evaluation")
	if err := prom.WaitForQuery(ctx, `time()-cluster_version_conditional_update_condition_seconds{job="cluster-version-operator", condition="Recommended", status="Unknown"}`,
		`"reason":"EvaluationFailed"`); err != nil {
		t.Fatal(err)
	}
	data, err := prom.Query(ctx, `cluster_version_conditional_update_condition_seconds{condition="Recommended",status="Unknown"}`)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"version":"1.0.3"`) || strings.Contains(string(data), `"version":"1.1.0"`) || strings.Contains(string(data), `"version":"1.0.2"`) {
		t.Errorf("Recommended=Unknown series %s, want 1.0.3's only", data)
	}
	if names := prometheusRuleNames(ctx, t, prom); !slices.Contains(names, "CannotEvaluateConditionalUpdates") {
		t.Errorf("CannotEvaluateConditionalUpdates is not among the loaded rules %v", names)
	}

	t.Log("an update to 1.1.0 without acceptance is refused, naming DiskRisk")
	op.request(t, "1.1.0", false)
	if out := op.sync(t); out.Refused == nil || !strings.Contains(out.Refused.Error(), "DiskRisk") {
		t.Fatalf("refused %v, want the update refused naming DiskRisk", out.Refused)
	}
	accepted := requireCondition(t, op.clusterVersion(t), clusterversion.ConditionReleaseAccepted, configv1.ConditionFalse, clusterversion.ReasonPreconditionChecks)
	if !strings.Contains(accepted.Message, precondition.NameClusterVersionRecommendedUpdate) || !strings.Contains(accepted.Message, "DiskRisk") {
		t.Errorf("ReleaseAccepted message %q, want the check and the risk named", accepted.Message)
	}
	for range 2 {
		if out := op.sync(t); out.Refused == nil {
			t.Fatal("the update was accepted without acceptRisks")
		}
	}

	t.Log("with acceptRisks naming DiskRisk, the update proceeds to Completed")
	patchClusterVersion(t, name, `{"spec": {"desiredUpdate": {"version": "1.1.0", "acceptRisks": [{"name": "DiskRisk"}]}}}`)
	if out := op.sync(t); out.Refused != nil {
		t.Fatalf("refused %v after acceptance", out.Refused)
	}
	cv = op.clusterVersion(t)
	if rec := recommendedOf(cv, "1.1.0"); rec != nil && (rec.Status != metav1.ConditionTrue || rec.Reason != precondition.ReasonAllExposedRisksAccepted) {
		t.Errorf("Recommended of 1.1.0 = %+v, want True AllExposedRisksAccepted", rec)
	}
	waitFor(t, "the accepted update to complete", time.Minute, func() bool {
		h := op.clusterVersion(t).Status.History
		if len(h) > 0 && h[0].Version == "1.1.0" && h[0].State == configv1.CompletedUpdate {
			return true
		}
		op.sync(t)
		return false
	})
	if h := op.clusterVersion(t).Status.History[0]; !strings.Contains(h.AcceptedRisks, "DiskRisk") || !strings.Contains(h.AcceptedRisks, precondition.ReasonAllExposedRisksAccepted) {
		t.Errorf("history[0] accepted risks %q, want DiskRisk, AllExposedRisksAccepted", h.AcceptedRisks)
	}

	t.Log("the cache: after these syncs, Prometheus saw each risk query once")
	wantQueries := map[string]int{
		`test_cluster_risk{_id="` + id + `",risk="disk"}`: 1,
		`test_cluster_risk{_id="` + id + `",risk="net"}`:  1,
	}
	log, err := prom.QueryLog()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, q := range log {
		if strings.Contains(q.Query, "risk=") || strings.Contains(q.Query, `_id=""`) {
			got[q.Query]++
		}
	}
	for q, n := range got {
		if wantQueries[q] != n {
			t.Errorf("Prometheus evaluated %q %d times, want %d", q, n, wantQueries[q])
		}
	}
	for q := range wantQueries {
		if got[q] == 0 {
			t.Errorf("Prometheus never evaluated %q: the cluster's ID was not filled in", q)
		}
	}
	all := scrapeAll(t, metricsSrv.URL)
	for result, want := range map[string]float64{"match": 1, "no_match": 1, "error": 1} {
		if v := requireOne(t, all, "payload_applier_risk_queries_total", map[string]string{"result": result}); v != want {
			t.Errorf("payload_applier_risk_queries_total{result=%q} = %v, want %v", result, v, want)
		}
	}
}

// prometheusRuleNames lists the rules Prometheus has loaded, by name.
func prometheusRuleNames(ctx context.Context, t *testing.T, prom *cluster.Prometheus) []string {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, prom.URL()+"/api/v1/rules", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var answer struct {
		Data struct {
			Groups []struct {
				Rules []struct {
					Name string `json:"name"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil {
		t.Fatalf("/api/v1/rules: %s: %v", resp.Status, err)
	}
	var names []string
	for _, g := range answer.Data.Groups {
		for _, r := range g.Rules {
			names = append(names, r.Name)
		}
	}
	return names
}
