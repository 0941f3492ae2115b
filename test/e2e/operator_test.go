package e2e

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/payload-applier/payload-applier/pkg/clusterversion"
	"github.com/payload-applier/payload-applier/pkg/graph"
	"github.com/payload-applier/payload-applier/pkg/operator"
)

// storyReleases is a small release line: 1.0.1 removes two objects, one held
// by a finalizer; 1.0.2 is a z-stream that still carries the deletes; 1.1.0
// is a minor that no longer does.
func storyReleases(ns string) map[string]map[string]string {
	base := func() map[string]string {
		return map[string]string{"0000_50_demo_00_keep.yaml": configMap(ns, "keep", "x")}
	}
	v100 := base()
	v100["0000_50_demo_01_first.yaml"] = configMap(ns, "first", "x")
	v100["0000_55_demo_02_held.yaml"] = heldConfigMap(ns, "held")
	v101 := base()
	v101["0000_50_demo_01_first.yaml"] = withDelete(configMap(ns, "first", "x"))
	v101["0000_55_demo_02_held.yaml"] = withDelete(heldConfigMap(ns, "held"))
	v102 := base()
	for k, v := range v101 {
		v102[k] = v
	}
	v102["0000_60_more_00_z.yaml"] = configMap(ns, "z-stream", "x")
	v110 := base()
	v110["0000_60_more_00_minor.yaml"] = configMap(ns, "minor", "x")
	return map[string]map[string]string{"1.0.0": v100, "1.0.1": v101, "1.0.2": v102, "1.1.0": v110}
}

// servedMetrics registers the operator's metrics on a registry of their
// own, served over HTTP for scrape until the test ends.
func servedMetrics(t testing.TB) (*operator.Metrics, string) {
	t.Helper()
	reg := prometheus.NewRegistry()
	metrics, err := operator.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	t.Cleanup(srv.Close)
	return metrics, srv.URL
}

func scrape(t testing.TB, url, metric string) float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	m := regexp.MustCompile(`(?m)^` + metric + `(?:\{[^}]*\})? (\S+)$`).FindStringSubmatch(string(body))
	if m == nil {
		t.Fatalf("metric %s not in scrape:\n%s", metric, body)
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v
}

func TestOperatorUpdateStory(t *testing.T) {
	c := newClients(t)
	ns := testCluster.CreateNamespace(t)
	metrics, metricsURL := servedMetrics(t)
	op := newOperator(t, writeStore(t, storyReleases(ns)), uniqueName(t, "story"), ns, nil, metrics)

	t.Log("install 1.0.0")
	op.request(t, "1.0.0", false)
	out := op.sync(t)
	if out.Mode != graph.ModeInstall || !out.Result.Complete() {
		t.Fatalf("install: mode %s, result %+v", out.Mode, out.Result)
	}
	cv := op.clusterVersion(t)
	requireCondition(t, cv, configv1.OperatorAvailable, configv1.ConditionTrue, "")
	if p := requireCondition(t, cv, configv1.OperatorProgressing, configv1.ConditionFalse, ""); p.Message != "Cluster version is 1.0.0" {
		t.Errorf("progressing = %q", p.Message)
	}
	if len(cv.Status.History) != 1 || cv.Status.History[0].State != configv1.CompletedUpdate {
		t.Fatalf("history = %+v", cv.Status.History)
	}

	t.Log("the same version again is a reconcile that writes nothing")
	mark := auditMark(t)
	if out = op.sync(t); out.Mode != graph.ModeReconcile {
		t.Fatalf("mode = %s, want reconcile", out.Mode)
	}
	if w := applierWrites(t, mark); len(w) != 0 {
		t.Errorf("a no-op operator resync made %d writes, first %s", len(w), w[0])
	}

	t.Log("update to 1.0.1 deletes; the finalizer keeps one pending")
	op.request(t, "1.0.1", false)
	out = op.sync(t)
	if out.Mode != graph.ModeUpdate || !out.Result.Complete() {
		t.Fatalf("update: mode %s, complete %v", out.Mode, out.Result.Complete())
	}
	cv = op.clusterVersion(t)
	if cv.Status.History[0].Version != "1.0.1" || cv.Status.History[0].State != configv1.CompletedUpdate {
		t.Fatalf("an update completes once its applies succeed, deletes pending or not: %+v", cv.Status.History[0])
	}
	up := requireCondition(t, cv, configv1.OperatorUpgradeable, configv1.ConditionFalse, clusterversion.ReasonDeletionInProgress)
	if !strings.Contains(up.Message, "ConfigMap/"+ns+"/held") || !strings.Contains(up.Message, "example.com/hold") {
		t.Errorf("Upgradeable must name the pending object and its finalizer: %q", up.Message)
	}
	if got := scrape(t, metricsURL, "payload_applier_deletes_in_progress"); got != 2 {
		t.Errorf("payload_applier_deletes_in_progress = %v, want 2", got)
	}

	t.Log("a minor update is refused while the delete is pending")
	op.request(t, "1.1.0", false)
	out = op.sync(t)
	if out.Refused == nil {
		t.Fatal("1.1.0 was not refused")
	}
	cv = op.clusterVersion(t)
	ra := requireCondition(t, cv, "ReleaseAccepted", configv1.ConditionFalse, clusterversion.ReasonPreconditionChecks)
	if !strings.Contains(ra.Message, "ResourceDeletionInProgress") && !strings.Contains(ra.Message, "resource deletions are in progress") {
		t.Errorf("the refusal must say why: %q", ra.Message)
	}
	if cv.Status.Desired.Version != "1.0.1" || c.get(t, configMapGVK, ns, "minor") != nil {
		t.Fatal("nothing of a refused release may be applied")
	}

	t.Log("withdrawing the refused target clears the refusal")
	op.request(t, "1.0.1", false)
	op.sync(t)
	requireCondition(t, op.clusterVersion(t), "ReleaseAccepted", configv1.ConditionTrue, clusterversion.ReasonPayloadLoaded)
	op.request(t, "1.1.0", false)
	if out = op.sync(t); out.Refused == nil {
		t.Fatal("1.1.0 must still be refused")
	}

	t.Log("a z-stream update is allowed while the delete is pending")
	op.request(t, "1.0.2", false)
	out = op.sync(t)
	if out.Refused != nil || !out.Result.Complete() || c.get(t, configMapGVK, ns, "z-stream") == nil {
		t.Fatalf("1.0.2 must be accepted and applied: refused=%v", out.Refused)
	}

	t.Log("once the finalizer clears, Upgradeable turns True by itself")
	c.removeFinalizers(t, schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, ns, "held")
	c.waitGone(t, configMapGVK, ns, "held")
	op.sync(t)
	cv = op.clusterVersion(t)
	requireCondition(t, cv, configv1.OperatorUpgradeable, configv1.ConditionTrue, "")
	if c.get(t, configMapGVK, ns, "first") != nil {
		t.Error("the paced delete must have been issued by the later pass")
	}
	if got := scrape(t, metricsURL, "payload_applier_deletes_in_progress"); got != 0 {
		t.Errorf("payload_applier_deletes_in_progress = %v, want 0", got)
	}
	// The held delete completed between passes and the paced one in a pass:
	// both count, once each.
	for _, result := range []string{"requested", "completed"} {
		if got := scrape(t, metricsURL, `payload_applier_deletes_total\{result="`+result+`"\}`); got != 2 {
			t.Errorf("deletes_total{result=%q} = %v, want 2", result, got)
		}
	}

	t.Log("now the minor update is accepted")
	op.request(t, "1.1.0", false)
	out = op.sync(t)
	if out.Refused != nil || !out.Result.Complete() {
		t.Fatalf("1.1.0 must be accepted now: %v", out.Refused)
	}
	cv = op.clusterVersion(t)
	requireCondition(t, cv, "ReleaseAccepted", configv1.ConditionTrue, clusterversion.ReasonPayloadLoaded)
	if len(cv.Status.History) != 4 || cv.Status.History[0].Version != "1.1.0" {
		t.Errorf("history = %+v", cv.Status.History)
	}
	if got := scrape(t, metricsURL, `cluster_version\{from_version="1.0.2",image="[^"]*",type="completed",version="1.1.0"\}`); got == 0 {
		t.Error("cluster_version{type=completed} must report 1.1.0")
	}
}

func TestOperatorPreconditions(t *testing.T) {
	ns := testCluster.CreateNamespace(t)
	files := map[string]string{"0000_50_demo_00_a.yaml": configMap(ns, "a", "x")}
	releases := map[string]map[string]string{}
	for _, v := range []string{"4.19.3", "4.19.4", "4.20.0", "4.21.0", "4.22.1", "5.0.0", "5.1.0"} {
		releases[v] = files
	}
	tests := []struct {
		name    string
		path    []string
		target  string
		force   bool
		refused string // a substring of the refusal, "" when accepted
	}{
		{"a z-stream update is accepted", []string{"4.19.3"}, "4.19.4", false, ""},
		{"a minor update is accepted when Upgradeable is True", []string{"4.19.3"}, "4.20.0", false, ""},
		{"skipping a minor is refused", []string{"4.19.3"}, "4.21.0", false, "MultipleMinorVersionsUpdate"},
		{"a major update beyond 5.0 is refused", []string{"4.21.0"}, "5.1.0", false, "MajorVersionUpdate"},
		{"4 to 5.0 is accepted, as the CVO allows", []string{"4.21.0"}, "5.0.0", false, ""},
		{"rolling back to the previous z-stream is accepted", []string{"4.19.3", "4.19.4"}, "4.19.3", false, ""},
		{"rolling back across a minor is refused", []string{"4.19.4", "4.20.0"}, "4.19.4", false, "LowDesiredVersion"},
		{"rolling back to an older release than the previous is refused", []string{"4.19.3", "4.19.4", "4.20.0"}, "4.19.3", false, "LowDesiredVersion"},
		{"force accepts a refused update and records the risk", []string{"4.19.3"}, "4.21.0", true, ""},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			op := newOperator(t, writeStore(t, releases), uniqueName(t, "pre"+strconv.Itoa(i)), ns, nil, nil)
			for _, v := range tt.path {
				op.request(t, v, false)
				if out := op.sync(t); out.Refused != nil || !out.Result.Complete() {
					t.Fatalf("setting up %s: refused=%v", v, out.Refused)
				}
			}
			op.request(t, tt.target, tt.force)
			out := op.sync(t)
			cv := op.clusterVersion(t)
			if tt.refused != "" {
				if out.Refused == nil || !strings.Contains(out.Refused.Error(), tt.refused) {
					t.Fatalf("want a refusal with %q, got %v", tt.refused, out.Refused)
				}
				requireCondition(t, cv, "ReleaseAccepted", configv1.ConditionFalse, clusterversion.ReasonPreconditionChecks)
				if cv.Status.Desired.Version == tt.target {
					t.Error("a refused release must not become desired")
				}
				return
			}
			if out.Refused != nil {
				t.Fatalf("refused: %v", out.Refused)
			}
			if cv.Status.Desired.Version != tt.target || cv.Status.History[0].Version != tt.target {
				t.Fatalf("desired %s, history[0] %s", cv.Status.Desired.Version, cv.Status.History[0].Version)
			}
			if tt.force && !strings.Contains(cv.Status.History[0].AcceptedRisks, "MultipleMinorVersionsUpdate") {
				t.Errorf("acceptedRisks = %q", cv.Status.History[0].AcceptedRisks)
			}
		})
	}
}
