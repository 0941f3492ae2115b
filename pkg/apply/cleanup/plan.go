// Package cleanup decides operand cleanup: when a release removes a
// component whose CRDs its author marked
// `release.openshift.io/operand-cleanup: "Supported"`, and the cluster
// admin set the ClusterVersion's `payload-applier.io/operand-cleanup:
// "Delete"`, the custom resources of those CRDs are deleted, while the
// component's operator still runs to finish their finalizers, before
// anything of the component is deleted.
//
// The package decides; it sends nothing to the cluster. pkg/apply reads
// the CRDs and lists the operands, sends each operand DELETE through its
// one delete path (whose gate admits it), and stores the Record that Next,
// the one transition, returns; the records persist through recordstore,
// in the applier's own ConfigMap, as the delete ledger does.
package cleanup

import (
	"fmt"
	"slices"
	"strings"

	"github.com/payload-applier/payload-applier/pkg/payload"
)

// PolicyAnnotation on the ClusterVersion is the admin's half of the opt-in.
const PolicyAnnotation = "payload-applier.io/operand-cleanup"

// Policy is the admin's choice for the operands of removed components.
type Policy string

const (
	// PolicyOrphan leaves operands in place: the default.
	PolicyOrphan Policy = "Orphan"
	// PolicyDelete deletes them before their component is removed.
	PolicyDelete Policy = "Delete"
)

// PolicyOf reads the policy from the ClusterVersion's annotations.
func PolicyOf(annotations map[string]string) Policy {
	if Policy(annotations[PolicyAnnotation]) == PolicyDelete {
		return PolicyDelete
	}
	return PolicyOrphan
}

// Rule is one of the safety rules of the gate, numbered as docs/design.md
// numbers them. A failed rule 1 makes the gate wait; rules 2 to 5 skip
// the cleanup of a CRD, whose operands are then orphaned.
type Rule int

const (
	// RuleOperatorAvailable: the current release is completely applied and
	// the component's operator is Available.
	RuleOperatorAvailable Rule = 1
	// RuleSingleOwner: no other component ships the CRD.
	RuleSingleOwner Rule = 2
	// RuleAPIUnused: no manifest the release keeps has a kind the CRD serves.
	RuleAPIUnused Rule = 3
	// RuleNotReplaced: the release does not ship the CRD again, and the
	// update is not a rollback.
	RuleNotReplaced Rule = 4
	// RuleOwned: only CRDs of the removed component, never ones it uses.
	RuleOwned Rule = 5
)

var ruleNames = map[Rule]string{
	RuleOperatorAvailable: "OperatorAvailable",
	RuleSingleOwner:       "SingleOwner",
	RuleAPIUnused:         "APIUnused",
	RuleNotReplaced:       "NotReplaced",
	RuleOwned:             "Owned",
}

func (r Rule) String() string { return fmt.Sprintf("rule %d (%s)", int(r), ruleNames[r]) }

// CRD is a CustomResourceDefinition whose operands a removal may clean up.
type CRD struct {
	// Name is the CRD's name, <plural>.<group>.
	Name string
	// File is the delete manifest, as file:line.
	File string
	// Namespaces is the scope; nil means every namespace.
	Namespaces []string
	// Skip is set when a rule the release alone decides fails.
	Skip *Note
}

// Group is the API group the CRD's name ends with.
func (c CRD) Group() string {
	_, group, _ := strings.Cut(c.Name, ".")
	return group
}

// InScope reports whether an operand in namespace ns is in the CRD's
// scope; a cluster-scoped operand has ns "".
func (c CRD) InScope(ns string) bool {
	return c.Namespaces == nil || ns == "" || slices.Contains(c.Namespaces, ns)
}

// Candidate is a component the release removes with at least one CRD
// marked for operand cleanup.
type Candidate struct {
	Component string
	CRDs      []CRD
	// Operators are the component's workloads the release deletes
	// (Deployments, DaemonSets) and ClusterOperators: what tells whether
	// its operator is Available.
	Operators []payload.ObjectID
}

// Candidates lists, in payload order, the components rel removes with
// CRDs whose delete manifests say "Supported", and judges the rules the
// release alone decides: 2 (single owner), 4 (not shipped again) and 5
// (only the component's own CRDs, by construction: a CRD belongs to the
// component of its manifest's file name).
func Candidates(rel *payload.Release) []Candidate {
	byComponent := map[string]*Candidate{}
	var order []string
	ships := shippedCRDs(rel)
	for _, m := range rel.Manifests {
		// The kind first: reading annotations copies them.
		if !m.IsCRD() || m.Component == "" || !m.Delete() ||
			m.Obj.GetAnnotations()[payload.OperandCleanupAnnotation] != payload.OperandCleanupSupported {
			continue
		}
		id := m.ID()
		c, ok := byComponent[m.Component]
		if !ok {
			c = &Candidate{Component: m.Component}
			byComponent[m.Component] = c
			order = append(order, m.Component)
		}
		crd := CRD{Name: id.Name, File: m.Position(), Namespaces: namespaces(m)}
		crd.Skip = ships[id].skip(m)
		c.CRDs = append(c.CRDs, crd)
	}
	for _, m := range rel.Manifests {
		c, ok := byComponent[m.Component]
		if !ok || !m.Delete() {
			continue
		}
		id := m.ID()
		switch id.GroupKind() {
		case payload.DeploymentKind, payload.DaemonSetKind, payload.ClusterOperatorKind:
			c.Operators = append(c.Operators, id)
		}
	}
	out := make([]Candidate, 0, len(order))
	for _, name := range order {
		out = append(out, *byComponent[name])
	}
	return out
}

// namespaces parses the scope annotation; empty entries are dropped.
func namespaces(m *payload.Manifest) []string {
	v, ok := m.Obj.GetAnnotations()[payload.OperandNamespacesAnnotation]
	if !ok {
		return nil
	}
	out := []string{}
	for _, ns := range strings.Split(v, ",") {
		if ns = strings.TrimSpace(ns); ns != "" && !slices.Contains(out, ns) {
			out = append(out, ns)
		}
	}
	return out
}

// crdShips is what a release does with one CRD, enough to judge rules 2
// and 4 for any of its manifests: the first manifest naming it, the first
// of another component than that one, and the first that keeps it.
type crdShips struct {
	first, otherComponent, kept shipped
}

// shipped is a manifest with its position in the release; m is nil for none.
type shipped struct {
	m  *payload.Manifest
	at int
}

// shippedCRDs indexes the CRD manifests of rel by the CRD they name, once,
// so that judging each CRD does not scan the whole release again.
func shippedCRDs(rel *payload.Release) map[payload.ObjectID]*crdShips {
	out := map[payload.ObjectID]*crdShips{}
	for i, m := range rel.Manifests {
		if !m.IsCRD() {
			continue
		}
		id := m.ID()
		s := out[id]
		if s == nil {
			s = &crdShips{first: shipped{m, i}}
			out[id] = s
		}
		if s.otherComponent.m == nil && m.Component != s.first.m.Component {
			s.otherComponent = shipped{m, i}
		}
		if s.kept.m == nil && !m.Delete() {
			s.kept = shipped{m, i}
		}
	}
	return out
}

// skip judges rules 2 and 4 for the CRD that m, one of its delete
// manifests, deletes: the first manifest of another component, or that
// keeps the CRD, decides, as a scan of the release in payload order would.
func (s *crdShips) skip(m *payload.Manifest) *Note {
	other := s.otherComponent
	if s.first.m.Component != m.Component {
		other = s.first
	}
	if s.kept.m != nil && (other.m == nil || s.kept.at < other.at) {
		other = s.kept
	}
	if other.m == nil {
		return nil
	}
	name := m.ID().Name
	if other.m.Component != m.Component {
		return &Note{CRD: name, Rule: RuleSingleOwner, Message: fmt.Sprintf("component %s (%s) also ships %s", other.m.Component, other.m.Position(), name)}
	}
	return &Note{CRD: name, Rule: RuleNotReplaced, Message: fmt.Sprintf("the release ships %s again (%s)", name, other.m.Position())}
}

// APIUser returns a manifest rel keeps (does not delete) whose kind the
// CRD serves, if any: rule 3. group and kind come from the live CRD.
func APIUser(rel *payload.Release, group, kind string) *payload.Manifest {
	for _, m := range rel.Manifests {
		if !m.Delete() && m.GVK.Group == group && m.GVK.Kind == kind {
			return m
		}
	}
	return nil
}
