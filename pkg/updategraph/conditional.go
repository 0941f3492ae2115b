package updategraph

import (
	"bytes"
	"errors"
	"fmt"
	"slices"

	"github.com/blang/semver/v4"
	configv1 "github.com/openshift/api/config/v1"
	sigsjson "sigs.k8s.io/json"
)

// Caps on a graph's conditionalEdges, beside those of parse.go. A real
// graph has a few hundred conditional edges and a few dozen risks, each
// with one or two rules; these keep a hostile graph from filling the
// ClusterVersion or the risk evaluator. docs/operations.md lists them.
const (
	// MaxConditionalEdges bounds the groups of conditionalEdges.
	MaxConditionalEdges = 10_000
	// MaxConditionalEdgeEdges bounds the edges of all groups together.
	MaxConditionalEdgeEdges = 200_000
	// MaxRisksPerEdge bounds the risks of one group.
	MaxRisksPerEdge = 32
	// MaxRulesPerRisk bounds the matchingRules of one risk.
	MaxRulesPerRisk = 16
	// MaxRiskNameBytes bounds a risk's name.
	MaxRiskNameBytes = 256
	// MaxRiskURLBytes bounds a risk's URL.
	MaxRiskURLBytes = 2048
	// MaxRiskMessageBytes bounds a risk's message.
	MaxRiskMessageBytes = 16 << 10
	// MaxPromQLBytes bounds one PromQL rule's query.
	MaxPromQLBytes = 16 << 10
)

// ConditionalEdge is one group of conditionalEdges: edges that carry the
// same risks.
type ConditionalEdge struct {
	Edges []VersionEdge                    `json:"edges"`
	Risks []configv1.ConditionalUpdateRisk `json:"risks"`
}

// VersionEdge is an edge named by versions, as conditionalEdges name them.
type VersionEdge struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// ConditionalUpdate is an update that is recommended only where none of
// its risks applies.
type ConditionalUpdate struct {
	Release Node
	Risks   []configv1.ConditionalUpdateRisk
}

// parseConditional decodes conditionalEdges as read. A key given twice is
// refused as elsewhere; unknown fields are ignored, as the CVO ignores
// them, so that a newer update service's additions do not cost the whole
// graph.
func parseConditional(raw []byte) ([]ConditionalEdge, error) {
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	var groups []ConditionalEdge
	strict, err := sigsjson.UnmarshalStrict(raw, &groups, sigsjson.DisallowDuplicateFields)
	if err = errors.Join(append([]error{err}, strict...)...); err != nil {
		return nil, fmt.Errorf("not a Cincinnati graph: conditionalEdges: %v", err)
	}
	if len(groups) > MaxConditionalEdges {
		return nil, overCap("MaxConditionalEdges", MaxConditionalEdges, "the graph has more than %d conditionalEdges", MaxConditionalEdges)
	}
	edges := 0
	for i, g := range groups {
		if edges += len(g.Edges); edges > MaxConditionalEdgeEdges {
			return nil, overCap("MaxConditionalEdgeEdges", MaxConditionalEdgeEdges, "the graph's conditionalEdges have more than %d edges", MaxConditionalEdgeEdges)
		}
		for j, e := range g.Edges {
			if len(e.From) > MaxVersionBytes || len(e.To) > MaxVersionBytes {
				return nil, overCap("MaxVersionBytes", MaxVersionBytes, "conditionalEdges[%d].edges[%d]: a version is longer than %d bytes", i, j, MaxVersionBytes)
			}
			if e.From == "" || e.To == "" {
				return nil, fmt.Errorf("conditionalEdges[%d].edges[%d] lacks from or to", i, j)
			}
		}
		if err := checkRisks(i, g.Risks); err != nil {
			return nil, err
		}
	}
	return groups, nil
}

// checkRisks checks the risks of group i: at least one, each named, with
// a URL, a message and at least one rule, all within the caps, no name
// twice.
func checkRisks(i int, risks []configv1.ConditionalUpdateRisk) error {
	if len(risks) == 0 {
		return fmt.Errorf("conditionalEdges[%d] has no risks", i)
	}
	if len(risks) > MaxRisksPerEdge {
		return overCap("MaxRisksPerEdge", MaxRisksPerEdge, "conditionalEdges[%d] has more than %d risks", i, MaxRisksPerEdge)
	}
	for j, r := range risks {
		where := fmt.Sprintf("conditionalEdges[%d].risks[%d]", i, j)
		switch {
		case r.Name == "":
			return fmt.Errorf("%s has no name", where)
		case len(r.Name) > MaxRiskNameBytes:
			return overCap("MaxRiskNameBytes", MaxRiskNameBytes, "%s: the name %q is longer than %d bytes", where, excerpt(r.Name), MaxRiskNameBytes)
		case len(r.URL) > MaxRiskURLBytes:
			return overCap("MaxRiskURLBytes", MaxRiskURLBytes, "%s (%s): the url is longer than %d bytes", where, r.Name, MaxRiskURLBytes)
		case len(r.Message) > MaxRiskMessageBytes:
			return overCap("MaxRiskMessageBytes", MaxRiskMessageBytes, "%s (%s): the message is longer than %d bytes", where, r.Name, MaxRiskMessageBytes)
		case len(r.MatchingRules) == 0:
			return fmt.Errorf("%s (%s) has no matchingRules", where, r.Name)
		case len(r.MatchingRules) > MaxRulesPerRisk:
			return overCap("MaxRulesPerRisk", MaxRulesPerRisk, "%s (%s) has more than %d matchingRules", where, r.Name, MaxRulesPerRisk)
		}
		for k, rule := range r.MatchingRules {
			if rule.PromQL != nil && len(rule.PromQL.PromQL) > MaxPromQLBytes {
				return overCap("MaxPromQLBytes", MaxPromQLBytes, "%s (%s).matchingRules[%d]: the promql is longer than %d bytes", where, r.Name, k, MaxPromQLBytes)
			}
		}
		for _, other := range risks[:j] {
			if other.Name == r.Name {
				return fmt.Errorf("%s: the risk %q is listed twice", where, excerpt(r.Name))
			}
		}
	}
	return nil
}

// ConditionalUpdates lists the conditional updates from version, newest
// first, as the CVO reads them: a target missing from the nodes is an
// invalid response (ReasonResponseInvalid); a deprecated target is left
// out as from Updates; a target listed by several groups is dropped, as
// which risks apply to it would be ambiguous.
func (g *Graph) ConditionalUpdates(version string) ([]ConditionalUpdate, error) {
	type update struct {
		version semver.Version
		u       ConditionalUpdate
	}
	var out []update
	count := map[string]int{}
	index := g.index()
	for _, group := range g.Conditional {
		for _, e := range group.Edges {
			if e.From != version {
				continue
			}
			i, ok := index[e.To]
			if !ok {
				return nil, &Error{Reason: ReasonResponseInvalid, Err: fmt.Errorf("no node for conditional update %s", excerpt(e.To))}
			}
			if _, deprecated := g.Nodes[i].Deprecation(); deprecated {
				continue
			}
			count[e.To]++
			v, _ := semver.Parse(e.To)
			out = append(out, update{v, ConditionalUpdate{Release: g.Nodes[i], Risks: group.Risks}})
		}
	}
	out = slices.DeleteFunc(out, func(u update) bool { return count[u.u.Release.Version] > 1 })
	slices.SortStableFunc(out, func(a, b update) int { return b.version.Compare(a.version) })
	updates := make([]ConditionalUpdate, len(out))
	for i, u := range out {
		updates[i] = u.u
	}
	return updates, nil
}

// index maps each version to its node.
func (g *Graph) index() map[string]int {
	index := make(map[string]int, len(g.Nodes))
	for i, n := range g.Nodes {
		index[n.Version] = i
	}
	return index
}

// conditionalInChannel keeps the conditional edges whose ends are both in
// the channel; an edge to a release the graph lacks altogether is kept, so
// that it still reads as an invalid response.
func (g *Graph) conditionalInChannel(inChannel func(version string) bool) []ConditionalEdge {
	var out []ConditionalEdge
	index := g.index()
	for _, group := range g.Conditional {
		kept := ConditionalEdge{Risks: group.Risks}
		for _, e := range group.Edges {
			keep := func(v string) bool {
				_, known := index[v]
				return inChannel(v) || !known
			}
			if keep(e.From) && keep(e.To) {
				kept.Edges = append(kept.Edges, e)
			}
		}
		if len(kept.Edges) > 0 {
			out = append(out, kept)
		}
	}
	return out
}
