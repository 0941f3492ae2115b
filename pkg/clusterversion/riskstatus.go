package clusterversion

import (
	"fmt"
	"slices"
	"strings"

	configv1 "github.com/openshift/api/config/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/payload-applier/payload-applier/pkg/textwrap"
)

// Newer openshift/api (feature gate ClusterUpdateAcceptRisks) adds to the
// status what the pinned module lacks: status.conditionalUpdateRisks, each
// distinct risk of the conditional updates with its Applies condition;
// each conditional update's riskNames; and the Applies condition on each
// of its risks. The operator writes them as unstructured fields beside the
// typed status (WithRiskStatus), and our ClusterVersion CRD keeps them.

const (
	// ReasonNoRiskCondition is the CVO's Applies reason for a risk that
	// has no evaluation ("this should never happen").
	ReasonNoRiskCondition = "InternalErrorFoundNoRiskCondition"
	// MaxConditionalUpdateRisks bounds status.conditionalUpdateRisks, as
	// the CRD does.
	MaxConditionalUpdateRisks = 500
	// maxAppliesMessageBytes bounds an Applies message: an unknown
	// exposure quotes the risk's message, which status bounds to
	// MaxRiskMessageBytes, and the error.
	maxAppliesMessageBytes = 2 * MaxRiskMessageBytes
	// MaxRiskNameBytes bounds a risk's name: the update graph's own bound
	// (updategraph.MaxRiskNameBytes), which a test keeps equal.
	MaxRiskNameBytes = 256
)

// RiskApplies is each risk's Applies condition, by the risk's name.
type RiskApplies map[string]metav1.Condition

// RiskStatus is the Applies condition of each risk of updates: from its
// evaluation in results when there is one, else as previous holds it (an
// update kept from before this process keeps its risks' conditions), else
// Unknown, as the CVO words a risk it has no evaluation of. A condition
// whose status did not change keeps its transition time.
func RiskStatus(updates []configv1.ConditionalUpdate, results map[string]RiskResult, previous RiskApplies, now metav1.Time) RiskApplies {
	out := RiskApplies{}
	for _, u := range updates {
		for _, risk := range u.Risks {
			if _, done := out[risk.Name]; done {
				continue
			}
			r, evaluated := results[risk.Name]
			old, had := previous[risk.Name]
			switch {
			case !evaluated && had:
				out[risk.Name] = old
				continue
			case !evaluated:
				r = RiskResult{Status: metav1.ConditionUnknown, Reason: ReasonNoRiskCondition, Message: fmt.Sprintf("failed to find risk condition for risk %s", risk.Name)}
			}
			c := metav1.Condition{Type: ConditionApplies, Status: r.Status, Reason: r.Reason,
				Message: textwrap.Bound(r.Message, maxAppliesMessageBytes), LastTransitionTime: now}
			if had && old.Status == c.Status {
				c.LastTransitionTime = old.LastTransitionTime
			}
			out[risk.Name] = c
		}
	}
	return out
}

// riskStatus is status.conditionalUpdateRisks and the fields the pinned
// API lacks in each conditional update, as they are written.
type riskStatus struct {
	risks   []riskEntry
	updates []updateRisks
}

type riskEntry struct {
	configv1.ConditionalUpdateRisk `json:",inline"`
	Conditions                     []metav1.Condition `json:"conditions,omitempty"`
}

type updateRisks struct {
	names []string
	risks []riskEntry
}

// riskStatusOf lays out applies over st's conditional updates: the
// distinct risks sorted by name, at most MaxConditionalUpdateRisks, and
// each update's risk names, sorted.
func riskStatusOf(st *configv1.ClusterVersionStatus, applies RiskApplies) riskStatus {
	var rs riskStatus
	seen := map[string]bool{}
	entry := func(r configv1.ConditionalUpdateRisk) riskEntry {
		e := riskEntry{ConditionalUpdateRisk: r}
		if c, ok := applies[r.Name]; ok {
			e.Conditions = []metav1.Condition{c}
		}
		return e
	}
	for _, u := range st.ConditionalUpdates {
		var ur updateRisks
		for _, r := range u.Risks {
			ur.risks = append(ur.risks, entry(r))
			if !slices.Contains(ur.names, r.Name) {
				ur.names = append(ur.names, r.Name)
			}
			if !seen[r.Name] {
				seen[r.Name] = true
				rs.risks = append(rs.risks, entry(r))
			}
		}
		slices.Sort(ur.names)
		rs.updates = append(rs.updates, ur)
	}
	slices.SortFunc(rs.risks, func(a, b riskEntry) int { return strings.Compare(a.Name, b.Name) })
	rs.risks = rs.risks[:min(len(rs.risks), MaxConditionalUpdateRisks)]
	return rs
}

// riskStatusSize is how many bytes of JSON the fields of applies add to
// st: the risk list, and in each update its names and its risks'
// conditions.
func riskStatusSize(st *configv1.ClusterVersionStatus, applies RiskApplies) int {
	if len(st.ConditionalUpdates) == 0 {
		return 0
	}
	rs := riskStatusOf(st, applies)
	n := len(`,"conditionalUpdateRisks":`) + JSONSize(rs.risks)
	for _, u := range rs.updates {
		if len(u.names) > 0 {
			n += len(`,"riskNames":`) + JSONSize(u.names)
		}
		for _, r := range u.risks {
			if len(r.Conditions) > 0 {
				n += len(`,"conditions":`) + JSONSize(r.Conditions)
			}
		}
	}
	return n
}

// entryRiskSize bounds from above what the fields of applies add to st
// for conditional update u: its names, its risks' conditions, and the
// risks that seen does not hold yet, which it then holds, once more with
// their conditions in the risk list.
func entryRiskSize(u *configv1.ConditionalUpdate, applies RiskApplies, seen map[string]bool) int {
	if len(u.Risks) == 0 {
		return 0
	}
	n := len(`,"riskNames":[]`)
	for i := range u.Risks {
		r := &u.Risks[i]
		cond := 0
		if c, ok := applies[r.Name]; ok {
			cond = len(`,"conditions":[]`) + JSONSize(&c)
		}
		n += len(r.Name) + 3 + cond
		if !seen[r.Name] {
			seen[r.Name] = true
			n += JSONSize(r) + 1 + cond
		}
	}
	return n
}

// WithRiskStatus sets, in obj (a ClusterVersion as unstructured, converted
// from the typed one), status.conditionalUpdateRisks and each conditional
// update's riskNames and risks' conditions from applies; without
// conditional updates, none of them.
func WithRiskStatus(obj map[string]any, st *configv1.ClusterVersionStatus, applies RiskApplies) error {
	status, _ := obj["status"].(map[string]any)
	if status == nil {
		return nil
	}
	delete(status, "conditionalUpdateRisks")
	if len(st.ConditionalUpdates) == 0 {
		return nil
	}
	rs := riskStatusOf(st, applies)
	updates, _ := status["conditionalUpdates"].([]any)
	if len(updates) != len(rs.updates) {
		return fmt.Errorf("status.conditionalUpdates has %d entries, the typed status %d", len(updates), len(rs.updates))
	}
	for i, raw := range updates {
		u, _ := raw.(map[string]any)
		risks, _ := u["risks"].([]any)
		if u == nil || len(risks) != len(rs.updates[i].risks) {
			return fmt.Errorf("status.conditionalUpdates[%d] does not match the typed status", i)
		}
		delete(u, "riskNames")
		if names := rs.updates[i].names; len(names) > 0 {
			u["riskNames"] = toAny(names)
		}
		for j, rr := range risks {
			r, _ := rr.(map[string]any)
			if r == nil {
				return fmt.Errorf("status.conditionalUpdates[%d].risks[%d] is not an object", i, j)
			}
			delete(r, "conditions")
			if c := rs.updates[i].risks[j].Conditions; len(c) > 0 {
				conds, err := toUnstructuredList(c)
				if err != nil {
					return err
				}
				r["conditions"] = conds
			}
		}
	}
	list, err := toUnstructuredList(rs.risks)
	if err != nil {
		return err
	}
	status["conditionalUpdateRisks"] = list
	return nil
}

// RiskAppliesOf reads the Applies conditions of
// status.conditionalUpdateRisks in obj, a ClusterVersion as unstructured:
// at most MaxConditionalUpdateRisks, each bounded; entries that do not
// parse are skipped.
func RiskAppliesOf(obj map[string]any) RiskApplies {
	status, _ := obj["status"].(map[string]any)
	list, _ := status["conditionalUpdateRisks"].([]any)
	out := RiskApplies{}
	for _, raw := range list {
		if len(out) == MaxConditionalUpdateRisks {
			break
		}
		m, ok := raw.(map[string]any)
		if !ok {
			continue
		}
		var e riskEntry
		if runtime.DefaultUnstructuredConverter.FromUnstructured(m, &e) != nil || e.Name == "" {
			continue
		}
		if c := meta.FindStatusCondition(e.Conditions, ConditionApplies); c != nil {
			c.Message = textwrap.Bound(c.Message, maxAppliesMessageBytes)
			out[textwrap.Bound(e.Name, MaxRiskNameBytes)] = *c
		}
	}
	return out
}

func toAny(names []string) []any {
	out := make([]any, len(names))
	for i, n := range names {
		out[i] = n
	}
	return out
}

func toUnstructuredList[T any](items []T) ([]any, error) {
	out := make([]any, 0, len(items))
	for i := range items {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&items[i])
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}
