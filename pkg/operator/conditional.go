package operator

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/blang/semver/v4"
	configv1 "github.com/openshift/api/config/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/payload-applier/payload-applier/pkg/clusterconditions"
	"github.com/payload-applier/payload-applier/pkg/clusterversion"
	"github.com/payload-applier/payload-applier/pkg/precondition"
	"github.com/payload-applier/payload-applier/pkg/textwrap"
	"github.com/payload-applier/payload-applier/pkg/updategraph"
)

// Conditional updates (the CVO's pkg/cvo/availableupdates.go): each
// conditional edge leaving the cluster's version becomes a
// status.conditionalUpdates entry whose Recommended condition says whether
// its risks apply, and a recommended one is also an available update.

const (
	// defaultRiskEvaluationTimeout bounds the evaluation of every risk of
	// one sync together: a risk not evaluated by then is EvaluationFailed.
	defaultRiskEvaluationTimeout = 10 * time.Second
	// MaxEvaluatedRisks bounds the distinct risks evaluated in one sync,
	// and so the series of cluster_version_risk_conditions.
	MaxEvaluatedRisks = 500
)

// riskConditionTypes are the rule types the ClusterVersion CRD admits.
var riskConditionTypes = []string{clusterconditions.TypeAlways, "PromQL"}

// evaluateRisks evaluates each distinct risk of updates once, in order,
// all within timeout: a rule type may ask a slow Prometheus, and the sync
// that waits must not stall. A risk left when the time is up, or past
// MaxEvaluatedRisks, is Unknown.
func evaluateRisks(ctx context.Context, registry *clusterconditions.Registry, updates []updategraph.ConditionalUpdate, timeout time.Duration) map[string]clusterversion.RiskResult {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out := map[string]clusterversion.RiskResult{}
	for _, u := range updates {
		for _, risk := range u.Risks {
			if _, done := out[risk.Name]; done {
				continue
			}
			if len(out) >= MaxEvaluatedRisks {
				out[risk.Name] = clusterversion.RiskResult{Status: metav1.ConditionUnknown, Reason: clusterversion.ReasonRiskEvaluationFailed, Message: unknownExposureMessage(risk, fmt.Errorf("more than %d risks to evaluate", MaxEvaluatedRisks))}
				continue
			}
			out[risk.Name] = evaluateRisk(ctx, registry, risk, timeout)
		}
	}
	return out
}

func evaluateRisk(ctx context.Context, registry *clusterconditions.Registry, risk configv1.ConditionalUpdateRisk, timeout time.Duration) clusterversion.RiskResult {
	if ctx.Err() != nil {
		return clusterversion.RiskResult{Status: metav1.ConditionUnknown, Reason: clusterversion.ReasonRiskEvaluationFailed, Message: unknownExposureMessage(risk, fmt.Errorf("not evaluated within %s", timeout))}
	}
	// Rules are evaluated in a goroutine, so that one that ignores its
	// context still cannot hold the sync past the deadline.
	type answer struct {
		match bool
		err   error
	}
	done := make(chan answer, 1)
	go func() {
		match, err := registry.Match(ctx, risk.MatchingRules)
		done <- answer{match, err}
	}()
	var a answer
	select {
	case a = <-done:
	case <-ctx.Done():
		a.err = fmt.Errorf("not evaluated within %s", timeout)
	}
	switch {
	case a.err != nil:
		return clusterversion.RiskResult{Status: metav1.ConditionUnknown, Reason: clusterversion.ReasonRiskEvaluationFailed, Message: unknownExposureMessage(risk, a.err)}
	case a.match:
		return clusterversion.RiskResult{Status: metav1.ConditionTrue, Reason: clusterversion.ReasonMatch, Message: ""}
	default:
		return clusterversion.RiskResult{Status: metav1.ConditionFalse, Reason: clusterversion.ReasonNotMatch, Message: ""}
	}
}

// unknownExposureMessage is the CVO's message for a risk whose exposure
// is unknown.
func unknownExposureMessage(risk configv1.ConditionalUpdateRisk, err error) string {
	return fmt.Sprintf("Could not evaluate exposure to update risk %s (%v)\n  %s description: %s\n  %s URL: %s",
		risk.Name, err, risk.Name, risk.Message, risk.Name, risk.URL)
}

// setUpdates sets status.availableUpdates and status.conditionalUpdates
// from the channel's graph g: updates are version's unconditional updates.
// It returns the risk evaluations the conditional updates were judged by.
// An error is the graph's, an invalid response; both lists are then
// cleared.
func (ul *updateLister) setUpdates(ctx context.Context, cv *configv1.ClusterVersion, g *updategraph.Graph, updates []updategraph.Node, version string, now metav1.Time) (map[string]clusterversion.RiskResult, error) {
	status := &cv.Status
	conditional, entries, results, err := ul.conditionalEntries(ctx, cv, g, version, now)
	if err != nil {
		ul.clearUpdates(status)
		return nil, err
	}
	targets := map[string]bool{}
	for _, u := range conditional {
		targets[u.Release.Version] = true
	}
	// A target listed both ways is conditional, as the CVO prefers it.
	updates = slices.DeleteFunc(slices.Clone(updates), func(n updategraph.Node) bool { return targets[n.Version] })
	for i, e := range entries {
		if c := meta.FindStatusCondition(e.Conditions, precondition.ConditionRecommended); c != nil && c.Status == metav1.ConditionTrue {
			updates = append(updates, conditional[i].Release)
		}
	}
	sortReleases(updates)
	status.AvailableUpdates = releasesOf(updates)
	status.ConditionalUpdates = entries
	ul.metrics.observeConditionalUpdates(entries, results)
	return results, nil
}

// pendingConditional judges the conditional updates from version in the
// channel's graph g of an answer for another version, for acceptance
// alone; none when g is invalid.
func (ul *updateLister) pendingConditional(ctx context.Context, cv *configv1.ClusterVersion, g *updategraph.Graph, version string, now metav1.Time) []configv1.ConditionalUpdate {
	_, entries, _, err := ul.conditionalEntries(ctx, cv, g, version, now)
	if err != nil {
		return nil
	}
	return entries
}

// conditionalEntries reads the usable conditional updates from version in
// the channel's graph g, and judges each as status.conditionalUpdates
// holds it, keeping the conditions status already has for it; entries
// are nil when there are none.
func (ul *updateLister) conditionalEntries(ctx context.Context, cv *configv1.ClusterVersion, g *updategraph.Graph, version string, now metav1.Time) (
	conditional []updategraph.ConditionalUpdate, entries []configv1.ConditionalUpdate, results map[string]clusterversion.RiskResult, err error) {
	conditional, err = g.ConditionalUpdates(version)
	if err != nil {
		return nil, nil, nil, err
	}
	conditional = usableConditional(conditional)
	if len(conditional) > clusterversion.MaxConditionalUpdates {
		conditional = conditional[:clusterversion.MaxConditionalUpdates]
	}
	// PromQL rules fill the cluster's ID into their `_id=""` matchers.
	results = ul.risks.lookup(clusterconditions.WithClusterID(ctx, string(cv.Spec.ClusterID)), conditional)
	accept := ul.observe.acceptRisks(ctx, cv)
	previous := map[string][]metav1.Condition{}
	for _, u := range cv.Status.ConditionalUpdates {
		previous[u.Release.Version] = u.Conditions
	}
	entries = make([]configv1.ConditionalUpdate, 0, len(conditional))
	// The updates of one group share its risks: they are bounded, judged
	// and held once per group, not once per target.
	type judged struct {
		risks       []configv1.ConditionalUpdateRisk
		recommended metav1.Condition
	}
	groups := map[riskList]judged{}
	for _, u := range conditional {
		j, ok := groups[riskListOf(u.Risks)]
		if !ok {
			j = judged{statusRisks(u.Risks), clusterversion.Recommended(u.Risks, results, accept)}
			groups[riskListOf(u.Risks)] = j
		}
		entry := configv1.ConditionalUpdate{Release: releasesOf([]updategraph.Node{u.Release})[0], Risks: j.risks,
			Conditions: slices.Clone(previous[u.Release.Version])}
		c := j.recommended
		c.LastTransitionTime = now
		meta.SetStatusCondition(&entry.Conditions, c)
		entries = append(entries, entry)
	}
	if len(entries) == 0 {
		entries = nil
	}
	return conditional, entries, results, nil
}

// riskList names a list of risks by its backing array: the conditional
// updates of one group share their group's list.
type riskList struct {
	first *configv1.ConditionalUpdateRisk
	n     int
}

func riskListOf(risks []configv1.ConditionalUpdateRisk) riskList {
	if len(risks) == 0 {
		return riskList{}
	}
	return riskList{&risks[0], len(risks)}
}

// usableConditional drops what the ClusterVersion CRD would refuse, as the
// CVO prunes it: rules of types the CRD does not admit, and the updates
// whose risk is then left without rules, or has no message, or a URL that
// does not parse. Each drop is logged. A rule of an admitted type this
// operator does not evaluate (PromQL without a Prometheus) stays, and
// reads EvaluationFailed: pruning it could drop the update's only risk,
// and the update would then read as unknown rather than risky. The risks
// of a group are pruned once, and its updates share the result.
func usableConditional(updates []updategraph.ConditionalUpdate) []updategraph.ConditionalUpdate {
	type pruned struct {
		risks   []configv1.ConditionalUpdateRisk
		problem string
	}
	groups := map[riskList]pruned{}
	out := updates[:0:0]
	for _, u := range updates {
		p, ok := groups[riskListOf(u.Risks)]
		if !ok {
			p.risks, p.problem = usableRisks(u.Risks)
			groups[riskListOf(u.Risks)] = p
		}
		if p.problem != "" {
			klog.Background().Info("Dropping a conditional update the ClusterVersion cannot hold", "version", u.Release.Version, "problem", p.problem)
			continue
		}
		u.Risks = p.risks
		out = append(out, u)
	}
	return out
}

// usableRisks prunes the rules of risks the CRD does not admit, and says
// what makes the risks unusable, if anything.
func usableRisks(in []configv1.ConditionalUpdateRisk) (risks []configv1.ConditionalUpdateRisk, problem string) {
	risks = make([]configv1.ConditionalUpdateRisk, 0, len(in))
	for _, r := range in {
		r.MatchingRules = slices.DeleteFunc(slices.Clone(r.MatchingRules), func(c configv1.ClusterCondition) bool {
			return !slices.Contains(riskConditionTypes, c.Type)
		})
		_, urlErr := url.ParseRequestURI(r.URL) // as the apiserver checks format: uri
		switch {
		case len(r.MatchingRules) == 0:
			problem = fmt.Sprintf("risk %q has no rule of a known type (%s)", r.Name, strings.Join(riskConditionTypes, ", "))
		case r.Message == "" || r.URL == "" || urlErr != nil:
			problem = fmt.Sprintf("risk %q lacks a message or a valid URL", r.Name)
		}
		risks = append(risks, r)
	}
	return risks, problem
}

// statusRisks are the risks as status holds them, a copy with each text
// bounded as the status budget bounds it, so that the updates sharing
// them share bounded texts.
func statusRisks(risks []configv1.ConditionalUpdateRisk) []configv1.ConditionalUpdateRisk {
	out := make([]configv1.ConditionalUpdateRisk, len(risks))
	for i := range risks {
		r := &out[i]
		risks[i].DeepCopyInto(r)
		r.Message = textwrap.Bound(r.Message, clusterversion.MaxRiskMessageBytes)
		r.URL = textwrap.Bound(r.URL, updategraph.MaxRiskURLBytes)
		for k := range r.MatchingRules {
			if q := r.MatchingRules[k].PromQL; q != nil {
				q.PromQL = textwrap.Bound(q.PromQL, clusterversion.MaxMessageBytes)
			}
		}
	}
	return out
}

// clearUpdates empties both lists of updates, and their metrics.
func (ul *updateLister) clearUpdates(status *configv1.ClusterVersionStatus) {
	status.AvailableUpdates, status.ConditionalUpdates = nil, nil
	ul.metrics.observeConditionalUpdates(nil, nil)
}

func sortReleases(nodes []updategraph.Node) {
	slices.SortStableFunc(nodes, func(a, b updategraph.Node) int {
		va, _ := semver.Parse(a.Version)
		vb, _ := semver.Parse(b.Version)
		return vb.Compare(va)
	})
}

// ProjectUpdates sets cv's status.availableUpdates, conditionalUpdates
// and RetrievedUpdates as the operator's next pass would, reading the
// graph of cv's spec.upstream once, uncached and within the default budget,
// and evaluating risks with the Always type only; it returns the releases
// the graph deprecates, nil when there is none or it cannot be read. plan
// judges with it, so that it judges as the operator does.
func ProjectUpdates(ctx context.Context, cv *configv1.ClusterVersion, target string, dyn dynamic.Interface) map[string]string {
	c := clock.RealClock{}
	ul := &updateLister{cfg: &Config{}, clock: c, graphs: newGraphFetcher(c, defaultGraphRefresh, defaultGraphTimeout),
		risks: newRiskEvaluator(c, clusterconditions.New(nil), defaultRiskEvaluationTimeout), observe: &observer{dynamic: dyn, fields: &fieldCache{dynamic: dyn}}}
	return ul.refreshUpdates(ctx, cv, target, metav1.Now(), true).deprecated
}

// clusterVersionsResource is the ClusterVersion, read unstructured for the
// fields the pinned openshift/api lacks (riskstatus.go).
var clusterVersionsResource = schema.GroupVersionResource{Group: "config.openshift.io", Version: "v1", Resource: "clusterversions"}

// MaxAcceptRisks bounds the names read from acceptRisks, as the CRD does.
const MaxAcceptRisks = 1000

// acceptRisksOf reads spec.desiredUpdate.acceptRisks[].name; entries that
// are not objects with a string name are skipped. At most MaxAcceptRisks
// names, each bounded, are kept.
func acceptRisksOf(u *unstructured.Unstructured) []string {
	field, _, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "desiredUpdate", "acceptRisks")
	list, _ := field.([]any)
	var names []string
	for _, item := range list {
		m, ok := item.(map[string]any)
		if !ok {
			continue
		}
		if name, ok := m["name"].(string); ok && name != "" && !slices.Contains(names, name) {
			names = append(names, textwrap.Bound(name, updategraph.MaxRiskNameBytes))
		}
		if len(names) == MaxAcceptRisks {
			break
		}
	}
	return names
}
