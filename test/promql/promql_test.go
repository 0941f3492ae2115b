// Package promql tests the PromQL rules of conditional update risks
// (pkg/clusterconditions) against a real Prometheus, the Debian package's
// server started on loopback by test/cluster's harness, scraping a metrics
// endpoint the test serves. It needs no control plane.
package promql

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/payload-applier/payload-applier/pkg/clusterconditions"
	"github.com/payload-applier/payload-applier/test/cluster"
)

// serveMetrics serves body at /metrics on loopback and returns its address.
func serveMetrics(t *testing.T, body string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprint(w, body)
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { srv.Close() })
	return l.Addr().String()
}

func rules(queries ...string) []configv1.ClusterCondition {
	out := make([]configv1.ClusterCondition, len(queries))
	for i, q := range queries {
		out[i] = configv1.ClusterCondition{Type: clusterconditions.TypePromQL, PromQL: &configv1.PromQLClusterCondition{PromQL: q}}
	}
	return out
}

func TestPromQLRisksAgainstARealPrometheus(t *testing.T) {
	target := serveMetrics(t, `# TYPE test_risk gauge
test_risk{cluster="a"} 1
test_risk{cluster="b"} 0
# TYPE test_cluster_info gauge
test_cluster_info{_id="cid-123"} 1
`)
	prom := cluster.StartPrometheusForTest(t, cluster.PrometheusOptions{Targets: []string{target}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// up comes with the scrape that brings the test's series.
	if err := prom.WaitForQuery(ctx, `up == 1`, `"job":"test"`); err != nil {
		t.Fatal(err)
	}

	// Prometheus ignores the token; the operator's path through the token
	// file is still the one taken.
	token := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(token, []byte("sa-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	promql, err := clusterconditions.NewPromQL(clusterconditions.PromQLConfig{URL: prom.URL(), TokenFile: token})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	if err := promql.Register(reg); err != nil {
		t.Fatal(err)
	}
	risks := clusterconditions.New(map[string]clusterconditions.Condition{clusterconditions.TypePromQL: promql})
	withID := clusterconditions.WithClusterID(ctx, "cid-123")

	cases := []struct {
		name, query string
		match       bool
		wantErr     string
	}{
		{"a risk that applies", `test_risk{cluster="a"}`, true, ""},
		{"a risk that does not", `test_risk{cluster="b"}`, false, ""},
		{"the cluster's ID filled in", `group(test_cluster_info{_id=""}) or on() vector(0)`, true, ""},
		{"two samples", `test_risk`, false, "returned 2 samples, not one"},
		{"bad PromQL", `sum(rate(test_risk[1m]`, false, "bad_data"},
		{"no series", `test_risk{cluster="nope"}`, false, "returned 0 samples"},
	}
	// Asked over and over, as the operator does on every pass: each query
	// reaches Prometheus once, one a second at most.
	const rounds = 20
	start := time.Now()
	for round := range rounds {
		for _, tc := range cases {
			match, err := risks.Match(withID, rules(tc.query))
			if round > 0 && !t.Failed() {
				continue // the answers were checked in the first round
			}
			if match != tc.match {
				t.Errorf("%s: match = %v, want %v", tc.name, match, tc.match)
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("%s: %v", tc.name, err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.wantErr)
			}
		}
	}
	t.Logf("%d rounds of %d risks evaluated in %s", rounds, len(cases), time.Since(start).Round(time.Millisecond))

	// The ID-less query with another cluster's ID is a new query, and
	// does not match.
	if match, err := risks.Match(clusterconditions.WithClusterID(ctx, "other"), rules(cases[2].query)); err != nil || match {
		t.Errorf("another cluster's ID: %v, %v; want no match", match, err)
	}

	counts := map[string]float64{}
	total := 0.0
	for _, result := range []string{"match", "no_match", "error"} {
		counts[result] = counterValue(t, reg, result)
		total += counts[result]
	}
	if total != float64(len(cases)+1) || counts["match"] != 2 || counts["no_match"] != 2 || counts["error"] != 3 {
		t.Errorf("payload_applier_risk_queries_total = %v, want match 2, no_match 2, error 3 (one query per distinct query)", counts)
	}

	// Prometheus's own record: the valid queries once each (a query it
	// cannot parse is not logged), at least QueryInterval apart.
	logged := riskQueries(t, prom, "test_risk", "test_cluster_info")
	seen := map[string]int{}
	for _, q := range logged {
		seen[q.Query]++
	}
	want := map[string]int{
		`test_risk{cluster="a"}`: 1, `test_risk{cluster="b"}`: 1, `test_risk`: 1, `test_risk{cluster="nope"}`: 1,
		`group(test_cluster_info{_id="cid-123"}) or on() vector(0)`: 1,
		`group(test_cluster_info{_id="other"}) or on() vector(0)`:   1,
	}
	if fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Errorf("Prometheus logged the risk queries %v, want %v", seen, want)
	}
	for i := 1; i < len(logged); i++ {
		if gap := logged[i].Time.Sub(logged[i-1].Time); gap < clusterconditions.QueryInterval-10*time.Millisecond {
			t.Errorf("risk queries %q and %q reached Prometheus %s apart, under %s", logged[i-1].Query, logged[i].Query, gap, clusterconditions.QueryInterval)
		}
	}
}

// counterValue is payload_applier_risk_queries_total{result} in reg.
func counterValue(t *testing.T, reg *prometheus.Registry, result string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "payload_applier_risk_queries_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "result" && l.GetValue() == result {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// riskQueries are the API queries in prom's query log that mention one of
// names, oldest first.
func riskQueries(t *testing.T, prom *cluster.Prometheus, names ...string) []cluster.LoggedQuery {
	t.Helper()
	all, err := prom.QueryLog()
	if err != nil {
		t.Fatal(err)
	}
	var out []cluster.LoggedQuery
	for _, q := range all {
		if q.Path != "/api/v1/query" {
			continue
		}
		for _, n := range names {
			if strings.Contains(q.Query, n) {
				out = append(out, q)
				break
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	return out
}

func TestPromQLRiskWithPrometheusDown(t *testing.T) {
	prom := cluster.StartPrometheusForTest(t, cluster.PrometheusOptions{})
	url := prom.URL()
	if err := prom.Stop(); err != nil {
		t.Fatal(err)
	}
	promql, err := clusterconditions.NewPromQL(clusterconditions.PromQLConfig{URL: url, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 10)
	start := time.Now()
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = promql.Match(context.Background(), &rules("up")[0])
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "connection refused") {
			t.Errorf("call %d: %v, want connection refused", i, err)
		}
	}
	// Each call is bounded by the wait for its turn plus one query.
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("10 calls took %s", took)
	}
}

func TestPrometheusMissingFailsSayingHowToInstall(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := cluster.FindPrometheus()
	if err == nil || !strings.Contains(err.Error(), "`make tools` installs it") {
		t.Fatalf("FindPrometheus without prometheus on PATH: %v", err)
	}
}

// The harness loads rule files, for the tests of the shipped alerts.
func TestPrometheusHarnessLoadsRuleFiles(t *testing.T) {
	target := serveMetrics(t, "# TYPE test_risk gauge\ntest_risk{cluster=\"a\"} 1\n")
	rulesFile := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(rulesFile, []byte(`groups:
- name: test
  rules:
  - alert: TestRiskApplies
    expr: test_risk == 1
`), 0o600); err != nil {
		t.Fatal(err)
	}
	prom := cluster.StartPrometheusForTest(t, cluster.PrometheusOptions{Targets: []string{target}, RuleFiles: []string{rulesFile}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := prom.WaitForQuery(ctx, `ALERTS{alertname="TestRiskApplies"}`, `"alertstate":"firing"`); err != nil {
		t.Fatal(err)
	}
}
