package operator

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/payload-applier/payload-applier/pkg/clusterconditions"
	"github.com/payload-applier/payload-applier/pkg/clusterversion"
	"github.com/payload-applier/payload-applier/pkg/updategraph"
)

// defaultRiskRefresh is how long a risk's evaluation is reused by the
// running operator before it is evaluated again.
const defaultRiskRefresh = time.Minute

// riskEvaluator evaluates conditional update risks for the operator.
// Started (by the run loop), it evaluates in its own goroutine, so that a
// sync never waits on a slow rule type such as PromQL: a sync takes the
// results at hand, asks for the risks it lacks, and is woken when they
// change. Not started (apply, tests that call Sync alone), a sync
// evaluates them itself, within the bound.
type riskEvaluator struct {
	clock    clock.Clock
	registry *clusterconditions.Registry
	timeout  time.Duration
	refresh  time.Duration
	bg       *background

	mu sync.Mutex
	// wanted are the distinct risks the last sync listed, and the
	// cluster's ID it carried for their rules.
	wanted    []configv1.ConditionalUpdateRisk
	clusterID *string
	// known is each risk's last evaluation, with the risk as evaluated.
	known map[string]evaluatedRisk
}

type evaluatedRisk struct {
	risk      configv1.ConditionalUpdateRisk
	clusterID *string
	result    clusterversion.RiskResult
	at        time.Time
}

func newRiskEvaluator(clk clock.Clock, registry *clusterconditions.Registry, timeout time.Duration) *riskEvaluator {
	return &riskEvaluator{clock: clk, registry: registry, timeout: timeout, refresh: defaultRiskRefresh,
		bg: newBackground(clk), known: map[string]evaluatedRisk{}}
}

// start evaluates in the background until ctx ends; wake is called when a
// result changes.
func (e *riskEvaluator) start(ctx context.Context, wake func()) {
	e.bg.start(ctx, wake, e.step)
}

// lookup returns what is known of each risk of updates. Started, a risk
// not yet evaluated, or whose rules or cluster ID (ctx's, see
// clusterconditions.WithClusterID) changed, reads EvaluationFailed until
// the goroutine has evaluated it.
func (e *riskEvaluator) lookup(ctx context.Context, updates []updategraph.ConditionalUpdate) map[string]clusterversion.RiskResult {
	if e.bg.started() == nil {
		return evaluateRisks(ctx, e.registry, updates, e.timeout)
	}
	var wanted []configv1.ConditionalUpdateRisk
	seen := map[string]bool{}
	for _, u := range updates {
		for _, r := range u.Risks {
			if !seen[r.Name] {
				seen[r.Name] = true
				wanted = append(wanted, r)
			}
		}
	}
	var clusterID *string
	if id, ok := clusterconditions.ClusterIDFrom(ctx); ok {
		clusterID = &id
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.wanted, e.clusterID = wanted, clusterID
	out := make(map[string]clusterversion.RiskResult, len(wanted))
	missing := false
	for _, r := range wanted {
		k, ok := e.known[r.Name]
		if !ok || !reflect.DeepEqual(k.risk, r) || !reflect.DeepEqual(k.clusterID, clusterID) {
			missing = true
			out[r.Name] = clusterversion.RiskResult{Status: metav1.ConditionUnknown, Reason: clusterversion.ReasonRiskEvaluationFailed, Message: unknownExposureMessage(r, fmt.Errorf("not evaluated yet"))}
			continue
		}
		out[r.Name] = k.result
	}
	if missing {
		e.bg.request()
	}
	return out
}

// step evaluates the wanted risks; the next step is due after the
// refresh, or when a sync lacks a risk.
func (e *riskEvaluator) step(ctx context.Context) time.Duration {
	e.mu.Lock()
	wanted, clusterID := e.wanted, e.clusterID
	e.mu.Unlock()
	if len(wanted) > 0 {
		e.evaluate(ctx, wanted, clusterID)
	}
	return e.refresh
}

// evaluate evaluates risks for the cluster clusterID (nil: none known),
// within the bound, and wakes the loop when a result differs from the
// last.
func (e *riskEvaluator) evaluate(ctx context.Context, risks []configv1.ConditionalUpdateRisk, clusterID *string) {
	evalCtx := ctx
	if clusterID != nil {
		evalCtx = clusterconditions.WithClusterID(ctx, *clusterID)
	}
	results := evaluateRisks(evalCtx, e.registry, []updategraph.ConditionalUpdate{{Risks: risks}}, e.timeout)
	if ctx.Err() != nil {
		return
	}
	now := e.clock.Now()
	e.mu.Lock()
	changed := false
	for _, r := range risks {
		res := results[r.Name]
		if k, ok := e.known[r.Name]; !ok || k.result != res || !reflect.DeepEqual(k.risk, r) {
			changed = true
		}
		e.known[r.Name] = evaluatedRisk{risk: r, clusterID: clusterID, result: res, at: now}
	}
	// Forget risks no longer wanted, so that the map follows the graph.
	wanted := map[string]bool{}
	for _, r := range e.wanted {
		wanted[r.Name] = true
	}
	for name := range e.known {
		if !wanted[name] {
			delete(e.known, name)
		}
	}
	e.mu.Unlock()
	if changed {
		e.bg.wake()
	}
}
