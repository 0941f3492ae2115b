package updategraph

import (
	"bytes"
	"errors"
	"fmt"
	"io"
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

// conditional reads conditionalEdges, each cap checked as soon as it can
// be passed, and keeps them as written for editors. A key given twice is
// refused as elsewhere; unknown fields are skipped, as the CVO ignores
// them, so that a newer update service's additions do not cost the whole
// graph.
func (p *parser) conditional(g *Graph) error {
	// The value starts where the decoder is; what it has read ahead is
	// the start of the recording.
	start := p.dec.InputOffset()
	ahead, _ := io.ReadAll(p.dec.Buffered())
	p.in.recorded, p.in.recording = ahead, true
	defer func() { p.in.recorded, p.in.recording = nil, false }()

	if ok, err := p.open('[', named("conditionalEdges")); err != nil || !ok {
		return err
	}
	groups := []ConditionalEdge{}
	edges := 0
	for p.dec.More() {
		i := len(groups)
		if i == MaxConditionalEdges {
			return overCap("MaxConditionalEdges", MaxConditionalEdges, "the graph has more than %d conditionalEdges", MaxConditionalEdges)
		}
		group, err := p.conditionalGroup(i, &edges)
		if err != nil {
			return err
		}
		groups = append(groups, group)
	}
	if err := p.close(); err != nil {
		return err
	}
	raw := p.in.recorded[:p.dec.InputOffset()-start]
	// A copy, so that the graph holds no spare capacity.
	g.ConditionalEdges = bytes.Clone(bytes.TrimLeft(raw, ": \t\r\n"))
	g.Conditional = groups
	return nil
}

// conditionalGroup reads group i; edges counts the edges of all groups.
func (p *parser) conditionalGroup(i int, edges *int) (ConditionalEdge, error) {
	var group ConditionalEdge
	where := func() string { return fmt.Sprintf("conditionalEdges[%d]", i) }
	if ok, err := p.open('{', where); err != nil {
		return group, err
	} else if !ok {
		return group, checkRisks(i, nil)
	}
	var haveEdges, haveRisks bool
	for p.dec.More() {
		key, err := p.key()
		if err != nil {
			return group, err
		}
		switch key {
		case "edges":
			if haveEdges {
				return group, p.malformed("%s: duplicate field %q", where(), key)
			}
			haveEdges = true
			group.Edges, err = p.versionEdges(i, edges)
		case "risks":
			if haveRisks {
				return group, p.malformed("%s: duplicate field %q", where(), key)
			}
			haveRisks = true
			group.Risks, err = p.risks(i)
		default:
			err = p.skip()
		}
		if err != nil {
			return group, err
		}
	}
	if err := p.close(); err != nil {
		return group, err
	}
	return group, checkRisks(i, group.Risks)
}

// versionEdges reads the edges of group i.
func (p *parser) versionEdges(i int, edges *int) ([]VersionEdge, error) {
	if ok, err := p.open('[', func() string { return fmt.Sprintf("conditionalEdges[%d].edges", i) }); err != nil || !ok {
		return nil, err
	}
	out := []VersionEdge{}
	for j := 0; p.dec.More(); j++ {
		if *edges == MaxConditionalEdgeEdges {
			return nil, overCap("MaxConditionalEdgeEdges", MaxConditionalEdgeEdges, "the graph's conditionalEdges have more than %d edges", MaxConditionalEdgeEdges)
		}
		*edges++
		where := func() string { return fmt.Sprintf("conditionalEdges[%d].edges[%d]", i, j) }
		e, err := p.versionEdge(where)
		if err != nil {
			return nil, err
		}
		if e.From == "" || e.To == "" {
			return nil, fmt.Errorf("%s lacks from or to", where())
		}
		if len(out) == cap(out) {
			out = slices.Grow(out, len(out)) // doubling, as for the recording
		}
		out = append(out, e)
	}
	return out, p.close()
}

// versionEdge reads one edge of a group. It is decoded whole, at a
// quarter of the cost of reading it token by token: its own fields are
// two versions.
func (p *parser) versionEdge(where func() string) (VersionEdge, error) {
	var e VersionEdge
	if err := p.decodeWhole(&p.raw); err != nil {
		if _, over := err.(*CapError); over {
			return e, err
		}
		return e, p.malformed("%s: %s", where(), excerpt(err.Error()))
	}
	strict, err := sigsjson.UnmarshalStrict(p.raw, &e, sigsjson.DisallowDuplicateFields)
	if err = errors.Join(append([]error{err}, strict...)...); err != nil {
		return e, p.malformed("%s: %v", where(), err)
	}
	if len(e.From) > MaxVersionBytes || len(e.To) > MaxVersionBytes {
		return e, overCap("MaxVersionBytes", MaxVersionBytes, "%s: a version is longer than %d bytes", where(), MaxVersionBytes)
	}
	return e, nil
}

// risks reads the risks of group i.
func (p *parser) risks(i int) ([]configv1.ConditionalUpdateRisk, error) {
	if ok, err := p.open('[', func() string { return fmt.Sprintf("conditionalEdges[%d].risks", i) }); err != nil || !ok {
		return nil, err
	}
	out := []configv1.ConditionalUpdateRisk{}
	for p.dec.More() {
		j := len(out)
		if j == MaxRisksPerEdge {
			return nil, overCap("MaxRisksPerEdge", MaxRisksPerEdge, "conditionalEdges[%d] has more than %d risks", i, MaxRisksPerEdge)
		}
		r, err := p.risk(fmt.Sprintf("conditionalEdges[%d].risks[%d]", i, j))
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, p.close()
}

// risk reads one risk, each string within its cap.
func (p *parser) risk(where string) (configv1.ConditionalUpdateRisk, error) {
	var r configv1.ConditionalUpdateRisk
	if ok, err := p.open('{', named(where)); err != nil || !ok {
		return r, err
	}
	// name says which risk, once its name is read.
	name := func() string {
		if r.Name == "" {
			return where
		}
		return fmt.Sprintf("%s (%s)", where, excerpt(r.Name))
	}
	seen := map[string]bool{}
	for p.dec.More() {
		key, err := p.key()
		if err != nil {
			return r, err
		}
		var field *string
		var limit int
		var cap string
		switch key {
		case "url":
			field, limit, cap = &r.URL, MaxRiskURLBytes, "MaxRiskURLBytes"
		case "name":
			field, limit, cap = &r.Name, MaxRiskNameBytes, "MaxRiskNameBytes"
		case "message":
			field, limit, cap = &r.Message, MaxRiskMessageBytes, "MaxRiskMessageBytes"
		case "matchingRules":
		default:
			if err := p.skip(); err != nil {
				return r, err
			}
			continue
		}
		if seen[key] {
			return r, p.malformed("%s: duplicate field %q", where, key)
		}
		seen[key] = true
		if field == nil {
			if r.MatchingRules, err = p.rules(name); err != nil {
				return r, err
			}
			continue
		}
		if *field, err = p.str(func() string { return where + "." + key }); err != nil {
			return r, err
		}
		if len(*field) > limit {
			return r, overCap(cap, limit, "%s: the %s is longer than %d bytes", name(), key, limit)
		}
	}
	return r, p.close()
}

// rules reads a risk's matchingRules.
func (p *parser) rules(risk func() string) ([]configv1.ClusterCondition, error) {
	if ok, err := p.open('[', func() string { return risk() + ".matchingRules" }); err != nil || !ok {
		return nil, err
	}
	out := []configv1.ClusterCondition{}
	for p.dec.More() {
		k := len(out)
		if k == MaxRulesPerRisk {
			return nil, overCap("MaxRulesPerRisk", MaxRulesPerRisk, "%s has more than %d matchingRules", risk(), MaxRulesPerRisk)
		}
		where := func() string { return fmt.Sprintf("%s.matchingRules[%d]", risk(), k) }
		rule, err := p.rule(where)
		if err != nil {
			return nil, err
		}
		out = append(out, rule)
	}
	return out, p.close()
}

// rule reads one matching rule; null reads as a rule of no type, as
// encoding/json reads it.
func (p *parser) rule(where func() string) (configv1.ClusterCondition, error) {
	var rule configv1.ClusterCondition
	if ok, err := p.open('{', where); err != nil || !ok {
		return rule, err
	}
	var haveType, havePromQL bool
	for p.dec.More() {
		key, err := p.key()
		if err != nil {
			return rule, err
		}
		switch key {
		case "type":
			if haveType {
				return rule, p.malformed("%s: duplicate field %q", where(), key)
			}
			haveType = true
			rule.Type, err = p.str(func() string { return where() + ".type" })
		case "promql":
			if havePromQL {
				return rule, p.malformed("%s: duplicate field %q", where(), key)
			}
			havePromQL = true
			rule.PromQL, err = p.promQL(where)
		default:
			err = p.skip()
		}
		if err != nil {
			return rule, err
		}
	}
	return rule, p.close()
}

// promQL reads a PromQL rule's query; null reads as none.
func (p *parser) promQL(where func() string) (*configv1.PromQLClusterCondition, error) {
	if ok, err := p.open('{', func() string { return where() + ".promql" }); err != nil || !ok {
		return nil, err
	}
	q := &configv1.PromQLClusterCondition{}
	haveQuery := false
	for p.dec.More() {
		key, err := p.key()
		if err != nil {
			return nil, err
		}
		if key != "promql" {
			if err := p.skip(); err != nil {
				return nil, err
			}
			continue
		}
		if haveQuery {
			return nil, p.malformed("%s.promql: duplicate field %q", where(), key)
		}
		haveQuery = true
		if q.PromQL, err = p.str(func() string { return where() + ".promql.promql" }); err != nil {
			return nil, err
		}
		if len(q.PromQL) > MaxPromQLBytes {
			return nil, overCap("MaxPromQLBytes", MaxPromQLBytes, "%s: the promql is longer than %d bytes", where(), MaxPromQLBytes)
		}
	}
	return q, p.close()
}

// checkRisks checks what only a whole group shows: at least one risk,
// each named and with at least one rule, no name twice. The caps were
// checked as the risks were read.
func checkRisks(i int, risks []configv1.ConditionalUpdateRisk) error {
	if len(risks) == 0 {
		return fmt.Errorf("conditionalEdges[%d] has no risks", i)
	}
	for j, r := range risks {
		where := fmt.Sprintf("conditionalEdges[%d].risks[%d]", i, j)
		switch {
		case r.Name == "":
			return fmt.Errorf("%s has no name", where)
		case len(r.MatchingRules) == 0:
			return fmt.Errorf("%s (%s) has no matchingRules", where, r.Name)
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
