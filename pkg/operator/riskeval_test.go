package operator

import (
	"context"
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/payload-applier/payload-applier/pkg/clusterconditions"
	"github.com/payload-applier/payload-applier/pkg/clusterversion"
	"github.com/payload-applier/payload-applier/pkg/updategraph"
)

// gated matches once released, and counts its evaluations.
type gated struct {
	release chan struct{}
	calls   chan struct{}
}

func (gated) Valid(context.Context, *configv1.ClusterCondition) error { return nil }
func (g gated) Match(ctx context.Context, _ *configv1.ClusterCondition) (bool, error) {
	g.calls <- struct{}{}
	select {
	case <-g.release:
		return true, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

func TestRunningRiskEvaluatorNeverHoldsASync(t *testing.T) {
	g := gated{release: make(chan struct{}), calls: make(chan struct{}, 10)}
	clk := clocktesting.NewFakeClock(time.Now())
	e := newRiskEvaluator(clk, clusterconditions.New(map[string]clusterconditions.Condition{"PromQL": g}), time.Minute)
	woken := make(chan struct{}, 10)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e.start(ctx, func() { woken <- struct{}{} })
	updates := []updategraph.ConditionalUpdate{{Risks: []configv1.ConditionalUpdateRisk{{Name: "Slow", MatchingRules: []configv1.ClusterCondition{{Type: "PromQL"}}}}}}

	start := time.Now()
	got := e.lookup(ctx, updates)
	if d := time.Since(start); d > time.Second {
		t.Fatalf("lookup took %s while the rule blocks", d)
	}
	if r := got["Slow"]; r.Status != metav1.ConditionUnknown || !strings.Contains(r.Message, "not evaluated yet") {
		t.Fatalf("before evaluation: %+v, want Unknown, not evaluated yet", r)
	}
	<-g.calls
	close(g.release)
	select {
	case <-woken:
	case <-time.After(10 * time.Second):
		t.Fatal("no wake after the evaluation")
	}
	if r := e.lookup(ctx, updates)["Slow"]; r.Status != metav1.ConditionTrue || r.Reason != clusterversion.ReasonMatch {
		t.Errorf("after evaluation: %+v, want True Match", r)
	}
	t.Log("re-evaluated after the refresh, without a wake when nothing changed")
	for deadline := time.Now().Add(10 * time.Second); !clk.HasWaiters() && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	clk.Step(defaultRiskRefresh + time.Second)
	select {
	case <-g.calls:
	case <-time.After(10 * time.Second):
		t.Fatal("not evaluated again after the refresh")
	}
	select {
	case <-woken:
		t.Error("woken though the result did not change")
	case <-time.After(200 * time.Millisecond):
	}
}

// idSeen matches and reports the cluster's ID each evaluation carried.
type idSeen chan string

func (idSeen) Valid(context.Context, *configv1.ClusterCondition) error { return nil }
func (s idSeen) Match(ctx context.Context, _ *configv1.ClusterCondition) (bool, error) {
	id, ok := clusterconditions.ClusterIDFrom(ctx)
	if !ok {
		id = "<none>"
	}
	s <- id
	return true, nil
}

// TestRiskEvaluatorCarriesTheClusterID: rules see the cluster's ID of the
// lookup, evaluated in the sync or in the goroutine, and a new ID is
// evaluated again.
func TestRiskEvaluatorCarriesTheClusterID(t *testing.T) {
	seen := make(idSeen, 10)
	e := newRiskEvaluator(clocktesting.NewFakeClock(time.Now()), clusterconditions.New(map[string]clusterconditions.Condition{"PromQL": seen}), time.Minute)
	updates := []updategraph.ConditionalUpdate{{Risks: []configv1.ConditionalUpdateRisk{{Name: "R", MatchingRules: []configv1.ClusterCondition{{Type: "PromQL"}}}}}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	next := func() string {
		t.Helper()
		select {
		case id := <-seen:
			return id
		case <-time.After(10 * time.Second):
			t.Fatal("not evaluated")
			return ""
		}
	}

	e.lookup(clusterconditions.WithClusterID(ctx, "in-sync"), updates)
	if id := next(); id != "in-sync" {
		t.Errorf("evaluated in the sync with ID %q, want in-sync", id)
	}
	e.start(ctx, func() {})
	e.lookup(clusterconditions.WithClusterID(ctx, "first"), updates)
	if id := next(); id != "first" {
		t.Errorf("evaluated in the goroutine with ID %q, want first", id)
	}
	waitForResult := func(id string) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if r := e.lookup(clusterconditions.WithClusterID(ctx, id), updates)["R"]; r.Status == metav1.ConditionTrue {
				return
			}
		}
		t.Fatalf("no result for cluster %s", id)
	}
	waitForResult("first")
	if r := e.lookup(clusterconditions.WithClusterID(ctx, "second"), updates)["R"]; r.Status != metav1.ConditionUnknown {
		t.Errorf("with a new cluster ID: %+v, want Unknown until evaluated again", r)
	}
	// Evaluations kicked before may still report the first ID.
	for id := next(); id != "second"; id = next() {
		if id != "first" {
			t.Fatalf("evaluated with ID %q, want first, then second", id)
		}
	}
	waitForResult("second")
}
