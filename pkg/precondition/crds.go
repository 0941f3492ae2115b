package precondition

import (
	"context"
	"fmt"
	"strings"

	"github.com/payload-applier/payload-applier/pkg/crdcompat"
)

// NameCRDCompatibility names the CustomResourceDefinitionCompatibility check.
const NameCRDCompatibility = "CustomResourceDefinitionCompatibility"

// CRDCompatibility refuses a target whose CRD updates would break what the
// cluster stores or its clients: rc.CRDFindings, judged by pkg/crdcompat
// against the live CRDs and their objects. force accepts every finding but
// a removed stored version; a finding that is only a warning (a conversion
// webhook may fix the objects) is recorded as a risk without blocking.
type CRDCompatibility struct{}

var _ Precondition = CRDCompatibility{}

// Name returns NameCRDCompatibility.
func (CRDCompatibility) Name() string { return NameCRDCompatibility }

// Run reports every finding in one message; its reason is the first
// blocking finding's rule, or the first warning's.
func (c CRDCompatibility) Run(_ context.Context, rc ReleaseContext) error {
	if len(rc.CRDFindings) == 0 {
		return nil
	}
	blocking := crdcompat.Blocking(rc.CRDFindings)
	first := rc.CRDFindings[0]
	if len(blocking) > 0 {
		first = blocking[0]
	}
	lines := make([]string, len(rc.CRDFindings))
	unforceable := false
	for i, f := range rc.CRDFindings {
		lines[i] = fmt.Sprintf("%s: %s", f.Rule, f.Message)
		unforceable = unforceable || (!f.Warning && !f.Forceable())
	}
	return &Error{Name: c.Name(), Reason: string(first.Rule), Message: strings.Join(lines, "; "),
		NonBlockingWarning: len(blocking) == 0, Unforceable: unforceable}
}
