package apply

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/payload-applier/payload-applier/pkg/apply/cleanup"
	"github.com/payload-applier/payload-applier/pkg/apply/deletion"
	"github.com/payload-applier/payload-applier/pkg/graph"
)

func TestRateValidate(t *testing.T) {
	for _, tc := range []struct {
		r  Rate
		ok bool
	}{
		{Rate{}, true},
		{Rate{QPS: 20, Burst: 40}, true},
		{Rate{QPS: 0.5, Burst: 1}, true},
		{Rate{QPS: -1, Burst: 10}, false},
		{Rate{QPS: 5}, false},
	} {
		if err := tc.r.Validate(); (err == nil) != tc.ok {
			t.Errorf("%+v: err = %v, want ok %v", tc.r, err, tc.ok)
		}
	}
}

func TestBudgetForMode(t *testing.T) {
	for mode, want := range map[graph.Mode]Rate{
		graph.ModeInstall:   CVOBudget.Install,
		graph.ModeUpdate:    CVOBudget.Steady,
		graph.ModeReconcile: CVOBudget.Steady,
	} {
		if got := CVOBudget.For(mode); got != want {
			t.Errorf("%s: %v, want %v", mode, got, want)
		}
	}
}

// A budget whose bucket refills too slowly to matter lets a pass send its
// burst and no more: what reaches the server counts the budget, with no
// timing in the assertion.
func TestAPassSendsWithinItsModesBudget(t *testing.T) {
	slow := func(burst int) Rate { return Rate{QPS: 0.001, Burst: burst} }
	for _, tc := range []struct {
		name   string
		budget Budget
		mode   graph.Mode
		want   func(int64) bool
		says   string
	}{
		{"install", Budget{Install: slow(5), Steady: slow(2)}, graph.ModeInstall, func(n int64) bool { return n == 5 }, "5"},
		{"reconcile", Budget{Install: slow(5), Steady: slow(2)}, graph.ModeReconcile, func(n int64) bool { return n == 2 }, "2"},
		{"no limit", Budget{}, graph.ModeInstall, func(n int64) bool { return n >= 20 }, "at least 20"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var requests atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				requests.Add(1)
				w.Header().Set("Content-Type", "application/json")
				if r.Method == http.MethodGet {
					w.WriteHeader(http.StatusNotFound)
					_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`)
					return
				}
				body, _ := io.ReadAll(r.Body)
				w.WriteHeader(http.StatusCreated)
				_, _ = w.Write(body)
			}))
			defer srv.Close()
			rm := meta.NewDefaultRESTMapper([]schema.GroupVersion{{Version: "v1"}})
			rm.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
			e, err := NewForConfig(&rest.Config{Host: srv.URL, QPS: -1}, Config{
				Mapper: resettable{rm}, Ledger: &deletion.MemoryStore{}, CleanupStore: &cleanup.MemoryStore{},
				Budget: tc.budget,
			})
			if err != nil {
				t.Fatal(err)
			}
			var docs []planDoc
			for i := range 20 {
				docs = append(docs, planDoc{fmt.Sprintf("0000_50_a_%02d_cm.yaml", i), cmYAML(fmt.Sprintf("cm-%d", i), "v")})
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			_, _ = e.Sync(ctx, planRelease(t, docs...), SyncOptions{Mode: tc.mode})
			if n := requests.Load(); !tc.want(n) {
				t.Errorf("%d requests reached the server, want %s", n, tc.says)
			}
		})
	}
}

func TestNewForConfigRefusesABudgetABucketCannotHave(t *testing.T) {
	_, err := NewForConfig(&rest.Config{Host: "http://127.0.0.1:1"}, Config{
		Ledger: &deletion.MemoryStore{}, Budget: Budget{Install: Rate{QPS: -3, Burst: 1}},
	})
	if err == nil {
		t.Fatal("a negative QPS was taken")
	}
}
