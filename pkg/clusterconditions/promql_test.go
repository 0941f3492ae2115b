package clusterconditions

import (
	"context"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	clocktesting "k8s.io/utils/clock/testing"
)

// fakePrometheus answers /api/v1/query with answer(query) and records what
// it was asked.
type fakePrometheus struct {
	answer func(w http.ResponseWriter, r *http.Request, query string)

	mu       sync.Mutex
	queries  []string
	methods  []string
	authz    []string
	requests int
}

func (f *fakePrometheus) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/api/v1/query" {
		http.NotFound(w, r)
		return
	}
	q := r.FormValue("query")
	f.mu.Lock()
	f.requests++
	f.queries = append(f.queries, q)
	f.methods = append(f.methods, r.Method)
	f.authz = append(f.authz, r.Header.Get("Authorization"))
	f.mu.Unlock()
	f.answer(w, r, q)
}

func (f *fakePrometheus) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests
}

// vector is a query response of samples with a "cluster" label each.
func vector(values ...string) string {
	samples := make([]string, len(values))
	for i, v := range values {
		samples[i] = fmt.Sprintf(`{"metric":{"cluster":"c%d"},"value":[1700000000,%q]}`, i, v)
	}
	return `{"status":"success","data":{"resultType":"vector","result":[` + strings.Join(samples, ",") + `]}}`
}

func fixedAnswer(status int, body string) func(http.ResponseWriter, *http.Request, string) {
	return func(w http.ResponseWriter, _ *http.Request, _ string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprint(w, body)
	}
}

func promqlRule(q string) *configv1.ClusterCondition {
	return &configv1.ClusterCondition{Type: TypePromQL, PromQL: &configv1.PromQLClusterCondition{PromQL: q}}
}

// newTestPromQL serves fake on a test server and returns a PromQL for it
// with a fake clock.
func newTestPromQL(t *testing.T, fake *fakePrometheus, cfg PromQLConfig) (*PromQL, *clocktesting.FakeClock) {
	t.Helper()
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	cfg.URL = srv.URL
	cfg.Clock = clk
	p, err := NewPromQL(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p, clk
}

func TestPromQLAnswers(t *testing.T) {
	for _, tc := range []struct {
		name    string
		status  int
		body    string
		match   bool
		wantErr string
	}{
		{"one sample of 1 matches", 200, vector("1"), true, ""},
		{"one sample of 0 does not", 200, vector("0"), false, ""},
		{"no sample fails", 200, vector(), false, "returned 0 samples, not one"},
		{"two samples fail, naming them", 200, vector("1", "0"), false, `returned 2 samples, not one: {cluster="c0"} => 1, {cluster="c1"} => 0`},
		{"0.5 fails", 200, vector("0.5"), false, `returned 0.5 for {cluster="c0"}, not 0 or 1`},
		{"NaN fails", 200, vector("NaN"), false, "returned NaN"},
		{"a scalar fails", 200, `{"status":"success","data":{"resultType":"scalar","result":[1700000000,"1"]}}`, false, "returned a scalar"},
		{"HTTP 500 fails", 500, "internal trouble", false, "server error: 500"},
		{"bad PromQL fails with Prometheus's error", 400, `{"status":"error","errorType":"bad_data","error":"invalid parameter \"query\": 1:5: parse error"}`, false, "bad_data: invalid parameter"},
		{"a body that is not JSON fails", 200, "<html>", false, "bad_response"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := &fakePrometheus{answer: fixedAnswer(tc.status, tc.body)}
			p, _ := newTestPromQL(t, fake, PromQLConfig{})
			match, err := p.Match(context.Background(), promqlRule("risk_metric"))
			if match != tc.match {
				t.Errorf("match = %v, want %v", match, tc.match)
			}
			checkErr(t, err, tc.wantErr)
			if fake.count() != 1 {
				t.Errorf("%d requests, want 1", fake.count())
			}
			for _, m := range fake.methods {
				if m != http.MethodGet {
					t.Errorf("queried with %s; kube-rbac-proxy needs GET", m)
				}
			}
		})
	}
}

func checkErr(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("unexpected error: %v", err)
	case want != "" && err == nil:
		t.Errorf("no error, want one containing %q", want)
	case want != "" && !strings.Contains(err.Error(), want):
		t.Errorf("error %q, want one containing %q", err, want)
	}
}

func TestPromQLSlowServerFailsWithinTheTimeout(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	fake := &fakePrometheus{answer: func(w http.ResponseWriter, r *http.Request, _ string) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}}
	p, _ := newTestPromQL(t, fake, PromQLConfig{Timeout: 200 * time.Millisecond})
	start := time.Now()
	_, err := p.Match(context.Background(), promqlRule("slow"))
	took := time.Since(start)
	checkErr(t, err, "context deadline exceeded")
	// Generous against a loaded machine; the server would answer never.
	if took > 5*time.Second {
		t.Errorf("Match took %s with a 200ms timeout", took)
	}
}

func TestPromQLHugeResponseFails(t *testing.T) {
	huge := `{"status":"success","data":{"resultType":"vector","result":[],"pad":"` + strings.Repeat("x", MaxResponseBytes) + `"}}`
	for _, tc := range []struct {
		name    string
		chunked bool
	}{{"with a length", false}, {"chunked", true}} {
		t.Run(tc.name, func(t *testing.T) {
			fake := &fakePrometheus{answer: func(w http.ResponseWriter, _ *http.Request, _ string) {
				if !tc.chunked {
					w.Header().Set("Content-Length", fmt.Sprint(len(huge)))
				}
				w.WriteHeader(200)
				for i := 0; i < len(huge); i += 4096 {
					_, _ = w.Write([]byte(huge[i:min(i+4096, len(huge))]))
					w.(http.Flusher).Flush()
				}
			}}
			p, _ := newTestPromQL(t, fake, PromQLConfig{})
			_, err := p.Match(context.Background(), promqlRule("huge"))
			checkErr(t, err, "over the 1048576-byte limit of a Prometheus response")
		})
	}
}

func TestPromQLErrorTextIsBounded(t *testing.T) {
	fake := &fakePrometheus{answer: fixedAnswer(400, `{"status":"error","errorType":"bad_data","error":"`+strings.Repeat("e", 100000)+`"}`)}
	p, _ := newTestPromQL(t, fake, PromQLConfig{})
	_, err := p.Match(context.Background(), promqlRule("x"))
	if err == nil || len(err.Error()) > maxErrorBytes {
		t.Fatalf("error of %d bytes, want at most %d", len(fmt.Sprint(err)), maxErrorBytes)
	}
	checkErr(t, err, "bytes cut")
}

func TestPromQLReadsTheTokenFileForEachQuery(t *testing.T) {
	token := filepath.Join(t.TempDir(), "token")
	fake := &fakePrometheus{answer: fixedAnswer(200, vector("1"))}
	p, clk := newTestPromQL(t, fake, PromQLConfig{TokenFile: token})
	ctx := context.Background()

	_, err := p.Match(ctx, promqlRule("before"))
	checkErr(t, err, "read the Prometheus token file")
	for i, tok := range []string{"first\n", "rotated"} {
		if err := os.WriteFile(token, []byte(tok), 0o600); err != nil {
			t.Fatal(err)
		}
		clk.Step(QueryInterval)
		if _, err := p.Match(ctx, promqlRule(fmt.Sprint("q", i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(token, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	clk.Step(QueryInterval)
	_, err = p.Match(ctx, promqlRule("empty"))
	checkErr(t, err, "is empty")

	want := []string{"Bearer first", "Bearer rotated"}
	if strings.Join(fake.authz, ",") != strings.Join(want, ",") {
		t.Errorf("Authorization headers %q, want %q", fake.authz, want)
	}
}

func TestPromQLVerifiesWithTheCAFile(t *testing.T) {
	fake := &fakePrometheus{answer: fixedAnswer(200, vector("1"))}
	srv := httptest.NewTLSServer(fake)
	defer srv.Close()
	dir := t.TempDir()
	caFile := filepath.Join(dir, "ca.crt")
	clk := clocktesting.NewFakeClock(time.Now())

	p, err := NewPromQL(PromQLConfig{URL: srv.URL, CAFile: caFile, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Match(context.Background(), promqlRule("no-ca-yet"))
	checkErr(t, err, "read the Prometheus CA file")

	if err := os.WriteFile(caFile, []byte("not PEM"), 0o600); err != nil {
		t.Fatal(err)
	}
	clk.Step(QueryInterval)
	_, err = p.Match(context.Background(), promqlRule("garbage-ca"))
	checkErr(t, err, "holds no PEM certificate")

	// The service CA appears later, as a mounted ConfigMap would fill in.
	cert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(caFile, cert, 0o600); err != nil {
		t.Fatal(err)
	}
	clk.Step(QueryInterval)
	match, err := p.Match(context.Background(), promqlRule("trusted"))
	if err != nil || !match {
		t.Fatalf("Match = %v, %v; want a match over TLS", match, err)
	}

	noCA, err := NewPromQL(PromQLConfig{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	_, err = noCA.Match(context.Background(), promqlRule("untrusted"))
	checkErr(t, err, "certificate")
}

func TestPromQLFillsInTheClusterID(t *testing.T) {
	fake := &fakePrometheus{answer: fixedAnswer(200, vector("0"))}
	p, clk := newTestPromQL(t, fake, PromQLConfig{ClusterID: "from-config"})
	q := `group(cluster_operator_conditions{_id="",name="x"}) or on() vector(0)`
	if _, err := p.Match(WithClusterID(context.Background(), "0b5e-42"), promqlRule(q)); err != nil {
		t.Fatal(err)
	}
	clk.Step(QueryInterval)
	if _, err := p.Match(context.Background(), promqlRule(q)); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`group(cluster_operator_conditions{_id="0b5e-42",name="x"}) or on() vector(0)`,
		`group(cluster_operator_conditions{_id="from-config",name="x"}) or on() vector(0)`,
	}
	if strings.Join(fake.queries, "\n") != strings.Join(want, "\n") {
		t.Errorf("queries\n%s\nwant\n%s", strings.Join(fake.queries, "\n"), strings.Join(want, "\n"))
	}
}

func TestPromQLValid(t *testing.T) {
	p, err := NewPromQL(PromQLConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		rule *configv1.ClusterCondition
		want string
	}{
		{"no promql", &configv1.ClusterCondition{Type: TypePromQL}, "needs promql"},
		{"empty promql", promqlRule(""), "non-empty"},
		{"blank promql", promqlRule("  \n"), "non-empty"},
		{"a query", promqlRule("up"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) { checkErr(t, p.Valid(context.Background(), tc.rule), tc.want) })
	}
}

func TestPromQLWithoutAURLFailsToEvaluate(t *testing.T) {
	p, err := NewPromQL(PromQLConfig{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Match(context.Background(), promqlRule("up"))
	checkErr(t, err, "no --prometheus-url")

	// The registry falls through to a later rule, and reports the failure
	// when none evaluates.
	r := New(map[string]Condition{TypePromQL: p})
	match, err := r.Match(context.Background(), []configv1.ClusterCondition{*promqlRule("up"), {Type: TypeAlways}})
	if err != nil || !match {
		t.Errorf("PromQL then Always: %v, %v; want a match", match, err)
	}
	_, err = r.Match(context.Background(), []configv1.ClusterCondition{*promqlRule("up")})
	checkErr(t, err, "rule 0 (PromQL): no Prometheus to query")
}

func TestNewPromQLRefusesABadURL(t *testing.T) {
	for _, u := range []string{"thanos:9091", "ftp://host", "http://", "http://a b"} {
		if _, err := NewPromQL(PromQLConfig{URL: u}); err == nil {
			t.Errorf("NewPromQL(%q) succeeded", u)
		}
	}
}

func TestPromQLRegistersItsCounter(t *testing.T) {
	fake := &fakePrometheus{answer: fixedAnswer(200, vector("1"))}
	p, _ := newTestPromQL(t, fake, PromQLConfig{})
	reg := prometheus.NewRegistry()
	if err := p.Register(reg); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Match(context.Background(), promqlRule("up")); err != nil {
		t.Fatal(err)
	}
	want := `
# HELP payload_applier_risk_queries_total PromQL queries of conditional update risks sent to Prometheus, by result: match, no_match or error.
# TYPE payload_applier_risk_queries_total counter
payload_applier_risk_queries_total{result="match"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "payload_applier_risk_queries_total"); err != nil {
		t.Error(err)
	}
}

// TestPromQLTokenStaysWithThePrometheusURL: a Prometheus that redirects
// the query to another host gets it answered there without the token, and
// one that redirects to plain http is refused.
func TestPromQLTokenStaysWithThePrometheusURL(t *testing.T) {
	elsewhere := &fakePrometheus{answer: fixedAnswer(200, vector("1"))}
	other := httptest.NewTLSServer(elsewhere)
	defer other.Close()
	plainFake := &fakePrometheus{answer: fixedAnswer(200, vector("1"))}
	plain := httptest.NewServer(plainFake)
	defer plain.Close()
	dir := t.TempDir()
	caFile, tokenFile := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "token")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: other.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tokenFile, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{other.URL, plain.URL} {
		fake := &fakePrometheus{answer: func(w http.ResponseWriter, r *http.Request, _ string) {
			http.Redirect(w, r, target+r.URL.RequestURI(), http.StatusFound)
		}}
		srv := httptest.NewTLSServer(fake)
		defer srv.Close()
		p, err := NewPromQL(PromQLConfig{URL: srv.URL, CAFile: caFile, TokenFile: tokenFile})
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.Match(context.Background(), promqlRule("up"))
		if target == plain.URL {
			checkErr(t, err, "may not redirect to plain http")
		} else if err != nil {
			t.Errorf("a redirect to another host: %v", err)
		}
		if strings.Join(fake.authz, ",") != "Bearer secret" {
			t.Errorf("the Prometheus URL got Authorization %q, want the token", fake.authz)
		}
	}
	if strings.Join(elsewhere.authz, ",") != "" || len(elsewhere.authz) != 1 {
		t.Errorf("the other host got Authorization %q, want one query without", elsewhere.authz)
	}
	if len(plainFake.authz) != 0 {
		t.Errorf("the plain http server got %d queries", len(plainFake.authz))
	}
}
