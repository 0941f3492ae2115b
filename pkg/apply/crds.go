package apply

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/payload-applier/payload-applier/pkg/crdcompat"
	"github.com/payload-applier/payload-applier/pkg/graph"
	"github.com/payload-applier/payload-applier/pkg/payload"
)

// ReasonCRDUpdateBlocked fails the task of a CRD whose update crdcompat
// refuses; the CRD is left as it is.
const ReasonCRDUpdateBlocked Reason = "CustomResourceDefinitionUpdateBlocked"

// Event reasons of CRD updates that go ahead despite findings.
const (
	reasonCRDCompatibilityWarning = "CustomResourceDefinitionCompatibilityWarning"
	reasonCRDUpdateForced         = "CustomResourceDefinitionUpdateForced"
)

// CRDCompatibility judges, for acceptance, every CRD that rel would update
// against the live CRD and the objects it serves: CheckCRDs' findings.
func (e *Engine) CRDCompatibility(ctx context.Context, rel *payload.Release) []crdcompat.Finding {
	return e.CheckCRDs(ctx, rel).Findings
}

// CRDChecks is what CheckCRDs found for the CRDs of one release.
type CRDChecks struct {
	// Findings holds every finding, in payload order.
	Findings []crdcompat.Finding
	// judged names the CRDs compared with their live object and objects.
	judged map[string]bool
}

// Of returns the findings about the CRD named name, and whether it was
// judged against its live object; nil checks judged nothing.
func (c *CRDChecks) Of(name string) ([]crdcompat.Finding, bool) {
	if c == nil || !c.judged[name] {
		return nil, false
	}
	var out []crdcompat.Finding
	for _, f := range c.Findings {
		if f.CRD == name {
			out = append(out, f)
		}
	}
	return out, true
}

// CheckCRDs judges every CRD that rel would update against the live CRD
// and the objects it serves. A CRD the cluster lacks is created, not
// updated, and a terminating one is left to the apply, which waits for it;
// neither is judged. A CRD that cannot be read is a CompatibilityCheckError,
// and not judged.
func (e *Engine) CheckCRDs(ctx context.Context, rel *payload.Release) *CRDChecks {
	rc := e.clientFor(payload.CRDGVR, "")
	// A payload ships a hundred CRDs or more, some of a few MB: read and
	// judge them a few at a time, as plan reads, keeping payload order.
	perManifest := make([][]crdcompat.Finding, len(rel.Manifests))
	judged := make([]bool, len(rel.Manifests))
	graph.Run(ctx, graph.Unordered(Tasks(rel)), graph.RunOptions{Parallelism: planParallelism}, func(ctx context.Context, t *graph.Task) error {
		m := rel.Manifests[t.Index]
		if !m.IsCRD() || m.Delete() || m.CreateOnly() {
			return nil
		}
		live, err := rc.read(ctx, m.Obj.GetName())
		switch {
		case err != nil:
			perManifest[t.Index] = []crdcompat.Finding{{CRD: m.Obj.GetName(), Rule: crdcompat.CompatibilityCheckError,
				Message: fmt.Sprintf("CustomResourceDefinition %s: could not read it: %v", m.Obj.GetName(), err)}}
		case live != nil && live.GetDeletionTimestamp() == nil:
			perManifest[t.Index] = e.crdFindings(ctx, m, live)
			judged[t.Index] = true
		}
		return nil
	})
	c := &CRDChecks{Findings: slices.Concat(perManifest...), judged: map[string]bool{}}
	for i, ok := range judged {
		if ok {
			c.judged[rel.Manifests[i].Obj.GetName()] = true
		}
	}
	return c
}

// crdFindings compares the manifest of a CRD with its live object. A
// manifest that does not decode is left to the apiserver, whose refusal
// names the field.
func (e *Engine) crdFindings(ctx context.Context, m *payload.Manifest, live *unstructured.Unstructured) []crdcompat.Finding {
	next, err := crdcompat.Decode(m.Obj.Object)
	if err != nil {
		return nil
	}
	current, err := crdcompat.Decode(live.Object)
	if err != nil {
		return []crdcompat.Finding{{CRD: m.Obj.GetName(), Rule: crdcompat.CompatibilityCheckError,
			Message: fmt.Sprintf("CustomResourceDefinition %s: the live object does not read as a CRD: %v", m.Obj.GetName(), err)}}
	}
	return crdcompat.Check(ctx, e.listObjects, current, next, crdcompat.Options{})
}

// listObjects pages through every object of gvr for crdcompat.
func (e *Engine) listObjects(ctx context.Context, gvr schema.GroupVersionResource, each func(map[string]any)) error {
	return e.clientFor(gvr, "").list(ctx, func(u *unstructured.Unstructured) { each(u.Object) })
}

// guardCRDUpdate runs right before a CRD is updated, as the objects may
// have changed since acceptance. Warnings, and in a forced update the
// findings force overrides, are Events; anything else fails the task and
// leaves the CRD untouched.
func (p *pass) guardCRDUpdate(ctx context.Context, m *payload.Manifest, live *unstructured.Unstructured) error {
	var blocking, forced []crdcompat.Finding
	for _, f := range p.e.crdFindings(ctx, m, live) {
		switch {
		case f.Warning:
			p.e.warn(reasonCRDCompatibilityWarning, f.Message)
		case p.opts.Force && f.Forceable():
			forced = append(forced, f)
		default:
			blocking = append(blocking, f)
		}
	}
	if len(blocking) > 0 {
		return &TaskError{Subject: m.ID(), File: m.Position(), Reason: ReasonCRDUpdateBlocked, Effect: payload.EffectFail,
			Message: "update refused, the CustomResourceDefinition is left as it is: " + crdcompat.Summary(blocking)}
	}
	if len(forced) > 0 {
		p.e.warn(reasonCRDUpdateForced, fmt.Sprintf("%s (%s): updated although %s", m.ID(), m.Position(), crdcompat.Summary(forced)))
	}
	return nil
}

// crdPlanNote says, for plan, whether a CRD update would pass the checks:
// those of known when it judged the CRD, so its objects are listed once.
func (p *pass) crdPlanNote(ctx context.Context, m *payload.Manifest, live *unstructured.Unstructured, known *CRDChecks) string {
	findings, ok := known.Of(m.Obj.GetName())
	if !ok {
		findings = p.e.crdFindings(ctx, m, live)
	}
	switch blocking := crdcompat.Blocking(findings); {
	case len(findings) == 0:
		return "compatible with the live CRD and its objects"
	case len(blocking) == 0:
		return "compatible, with warnings: " + crdcompat.Summary(findings)
	default:
		return "blocked (" + string(ReasonCRDUpdateBlocked) + "): " + crdcompat.Summary(blocking)
	}
}
