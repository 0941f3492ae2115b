package apply

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/payload-applier/payload-applier/pkg/apply/cleanup"
	"github.com/payload-applier/payload-applier/pkg/graph"
	"github.com/payload-applier/payload-applier/pkg/payload"
)

// Event reasons of operand cleanup.
const (
	ReasonOperandCleanupStarted   = "OperandCleanupStarted"
	ReasonOperandCleanupCompleted = "OperandCleanupCompleted"
	ReasonOperandCleanupSkipped   = "OperandCleanupSkipped"
	ReasonOperandCleanupAborted   = "OperandCleanupAborted"
)

var crdGVK = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}

// cleanups is the engine's memory of operand cleanups, loaded once from
// its store and saved at the end of a pass that changed it.
type cleanups struct {
	store  cleanup.Store
	mu     sync.Mutex
	loaded bool
	dirty  bool
	recs   map[string]cleanup.Record
}

func (c *cleanups) load(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.loaded {
		return nil
	}
	recs, err := c.store.Load(ctx)
	if err != nil {
		return fmt.Errorf("load operand cleanups: %w", err)
	}
	c.recs = map[string]cleanup.Record{}
	for _, r := range recs {
		c.recs[r.Component] = r
	}
	c.loaded = true
	return nil
}

func (c *cleanups) get(component string) (cleanup.Record, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.recs[component]
	return r, ok
}

func (c *cleanups) set(r cleanup.Record) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.recs[r.Component] = r
	c.dirty = true
}

// keepOnly forgets the cleanups of components the release no longer
// removes: a retarget away from a removal stops its cleanup.
func (c *cleanups) keepOnly(components map[string]cleanup.Candidate) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for name := range c.recs {
		if _, ok := components[name]; !ok {
			delete(c.recs, name)
			c.dirty = true
		}
	}
}

func (c *cleanups) all() []cleanup.Record {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]cleanup.Record, 0, len(c.recs))
	for _, r := range c.recs {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Component < out[j].Component })
	return out
}

func (c *cleanups) flush(ctx context.Context) error {
	c.mu.Lock()
	if !c.dirty {
		c.mu.Unlock()
		return nil
	}
	recs := make([]cleanup.Record, 0, len(c.recs))
	for _, r := range c.recs {
		recs = append(recs, r)
	}
	c.dirty = false
	c.mu.Unlock()
	if err := c.store.Save(ctx, recs); err != nil {
		c.mu.Lock()
		c.dirty = true
		c.mu.Unlock()
		return err
	}
	return nil
}

// Cleanups returns the operand cleanups the engine knows, for status.
func (e *Engine) Cleanups(ctx context.Context) ([]cleanup.Record, error) {
	if err := e.cleanups.load(ctx); err != nil {
		return nil, err
	}
	return e.cleanups.all(), nil
}

// gate is one component's cleanup gate in a pass, decided once.
type gate struct {
	once sync.Once
	open bool
	rec  cleanup.Record
}

// gateFor decides, once per pass, whether m's component may start its
// deletes: true when it removes no CRD marked for operand cleanup, or its
// cleanup is over. While closed, it issues the operand DELETEs.
func (p *pass) gateFor(ctx context.Context, m *payload.Manifest) (bool, cleanup.Record) {
	cand, ok := p.candidates[m.Component]
	if !ok {
		return true, cleanup.Record{}
	}
	g := p.gates[m.Component]
	g.once.Do(func() { g.open, g.rec = p.runGate(ctx, cand) })
	return g.open, g.rec
}

// runGate is the cleanup of one component in this pass. It returns whether
// the component's deletes may go ahead.
func (p *pass) runGate(ctx context.Context, cand cleanup.Candidate) (bool, cleanup.Record) {
	e, now := p.e, p.e.clock.Now()
	prev, hasPrev := e.cleanups.get(cand.Component)
	running := hasPrev && (prev.State == cleanup.Running || prev.State == cleanup.Waiting)
	if p.opts.OperandCleanup != cleanup.PolicyDelete {
		if running {
			rec := prev
			rec.State = cleanup.Aborted
			rec.Message = fmt.Sprintf("the operand cleanup policy is no longer Delete: %d CRs are left in place, with no guarantee that what their finalizers guard is released", prev.Total())
			e.cleanups.set(rec)
			e.warn(ReasonOperandCleanupAborted, fmt.Sprintf("Operand cleanup of component %s aborted: %s.", cand.Component, rec.Message))
			return true, rec
		}
		return true, prev
	}
	if hasPrev && prev.State.Open() {
		return true, prev
	}
	if !hasPrev && p.opts.Mode != graph.ModeUpdate {
		// A cleanup starts only in an update; later passes carry it on.
		return true, cleanup.Record{}
	}
	crds, skips := p.cleanupScope(ctx, cand)
	if p.opts.Rollback {
		// Reported, so that an admin who asked for Delete learns why not.
		skips = append(skips, cleanup.Skip{Rule: cleanup.RuleNotReplaced, Message: "the update is a rollback"}.String())
		crds = nil
	}
	if len(crds) == 0 {
		rec := cleanup.Record{Component: cand.Component, Release: p.rel.Version, State: cleanup.Skipped, Skips: skips}
		if !hasPrev || prev.State != cleanup.Skipped || !slices.Equal(prev.Skips, skips) {
			e.warn(ReasonOperandCleanupSkipped, fmt.Sprintf("Operand cleanup of component %s skipped, its operands are left in place: %s.", cand.Component, strings.Join(skips, "; ")))
		}
		e.cleanups.set(rec)
		return true, rec
	}
	if why := p.operatorUnavailable(ctx, cand); why != "" {
		rec := cleanup.Wait(ptrIf(prev, hasPrev), cand.Component, p.rel.Version, why, now)
		rec.Skips = skips
		e.cleanups.set(rec)
		return false, rec
	}
	count, err := p.deleteOperands(ctx, cand, crds)
	if err != nil {
		rec := cleanup.Wait(ptrIf(prev, hasPrev), cand.Component, p.rel.Version, "deleting operands failed: "+err.Error(), now)
		rec.Skips = skips
		e.cleanups.set(rec)
		klog.FromContext(ctx).Info("Operand cleanup failed", "component", cand.Component, "err", err)
		return false, rec
	}
	rec := cleanup.Progress(ptrIf(prev, hasPrev), cand.Component, p.rel.Version, count, now)
	rec.Skips = skips
	e.cleanups.set(rec)
	switch {
	case rec.State == cleanup.Completed:
		e.note(ReasonOperandCleanupCompleted, fmt.Sprintf("Operand cleanup of component %s completed; its removal goes ahead.", cand.Component))
		return true, rec
	case !running:
		e.note(ReasonOperandCleanupStarted, fmt.Sprintf("Deleting the operands of component %s before removing it: %s.", cand.Component, rec.Describe()))
	}
	return false, rec
}

func ptrIf(r cleanup.Record, ok bool) *cleanup.Record {
	if !ok {
		return nil
	}
	return &r
}

// cleanupCRD is a CRD whose operands this pass deletes.
type cleanupCRD struct {
	cleanup.CRD
	api crdAPI
}

// cleanupScope reads each candidate CRD and keeps those whose operands
// may go: rules 2, 4 and 5 from the release, rule 3 from the CRD's kind.
// A CRD already gone took its operands with it.
func (p *pass) cleanupScope(ctx context.Context, cand cleanup.Candidate) ([]cleanupCRD, []string) {
	var crds []cleanupCRD
	var skips []string
	rc, err := p.e.resolve(crdGVK, "", false)
	if err != nil {
		return nil, []string{"CustomResourceDefinitions cannot be read: " + err.Error()}
	}
	for _, crd := range cand.CRDs {
		if crd.Skip != nil {
			skips = append(skips, fmt.Sprintf("%s: %s", crd.Name, crd.Skip))
			continue
		}
		live, err := rc.read(ctx, crd.Name)
		if err != nil || live == nil {
			continue
		}
		api, ok := servedBy(live)
		if !ok {
			continue
		}
		if user := cleanup.APIUser(p.rel, api.gvr.Group, api.kind); user != nil {
			skip := cleanup.Skip{Rule: cleanup.RuleAPIUnused, Message: fmt.Sprintf("%s (%s) still uses kind %s", user.ID(), user.Position(), api.kind)}
			skips = append(skips, fmt.Sprintf("%s: %s", crd.Name, skip))
			continue
		}
		crds = append(crds, cleanupCRD{CRD: crd, api: api})
	}
	return crds, skips
}

// operatorUnavailable says why rule 1 fails, or "" when it holds: the
// release is applied in full, and the component's ClusterOperator is
// Available and not Degraded, or else its workloads are Available.
func (p *pass) operatorUnavailable(ctx context.Context, cand cleanup.Candidate) string {
	for _, r := range p.results {
		if !r.Delete && r.Err != nil {
			return fmt.Sprintf("release %s is not completely applied (%s failed)", p.rel.Version, r.ID)
		}
	}
	var operators, workloads []payload.ObjectID
	for _, id := range cand.Operators {
		if id.Kind == "ClusterOperator" {
			operators = append(operators, id)
		} else {
			workloads = append(workloads, id)
		}
	}
	check := workloads
	if len(operators) > 0 {
		check = operators
	}
	for _, id := range check {
		rc, err := p.e.resolve(schema.GroupVersionKind{Group: id.Group, Kind: id.Kind}, id.Namespace, false)
		if err != nil {
			return fmt.Sprintf("%s cannot be read: %v", id, err)
		}
		live, err := rc.read(ctx, id.Name)
		if err != nil {
			return fmt.Sprintf("%s cannot be read: %v", id, err)
		}
		if live == nil {
			return fmt.Sprintf("the operator of component %s is not running: %s is gone", cand.Component, id)
		}
		if why := notAvailable(live); why != "" {
			return fmt.Sprintf("the operator of component %s is not ready: %s %s", cand.Component, id, why)
		}
	}
	return ""
}

// notAvailable says why a ClusterOperator, Deployment or DaemonSet is not
// Available, or "".
func notAvailable(obj *unstructured.Unstructured) string {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	status := func(t string) string {
		for _, c := range conds {
			cm, _ := c.(map[string]any)
			if cm["type"] == t {
				s, _ := cm["status"].(string)
				return s
			}
		}
		return ""
	}
	switch obj.GetKind() {
	case "ClusterOperator":
		if status("Available") != "True" {
			return "is not Available"
		}
		if status("Degraded") == "True" {
			return "is Degraded"
		}
	case "DaemonSet":
		want, _, _ := unstructured.NestedInt64(obj.Object, "status", "desiredNumberScheduled")
		have, _, _ := unstructured.NestedInt64(obj.Object, "status", "numberAvailable")
		if have < want {
			return fmt.Sprintf("has %d of %d pods available", have, want)
		}
	default:
		if status("Available") != "True" {
			return "is not Available"
		}
	}
	return ""
}

// deleteOperands lists the operands of crds in scope, page by page, sends
// a DELETE with a UID precondition for each one not yet terminating, and
// counts what is left. It never touches a finalizer.
func (p *pass) deleteOperands(ctx context.Context, cand cleanup.Candidate, crds []cleanupCRD) (cleanup.Count, error) {
	var count cleanup.Count
	for _, crd := range crds {
		rc := p.e.clientFor(crd.api.gvr, "")
		var items []*unstructured.Unstructured
		err := rc.list(ctx, func(obj *unstructured.Unstructured) {
			if crd.InScope(obj.GetNamespace()) {
				items = append(items, obj.DeepCopy())
			}
		})
		if apierrors.IsNotFound(err) {
			continue // the CRD went meanwhile, and its operands with it
		}
		if err != nil {
			return count, fmt.Errorf("list %s: %w", crd.api.gvr.GroupResource(), err)
		}
		for _, obj := range items {
			op := cleanup.Operand{Kind: crd.api.kind, Namespace: obj.GetNamespace(), Name: obj.GetName()}
			if obj.GetDeletionTimestamp() != nil {
				count.Add(op)
				continue
			}
			gone, err := p.deleteOperand(ctx, crd, obj)
			if err != nil {
				return count, err
			}
			if !gone {
				count.Add(op)
			}
		}
	}
	return count, nil
}

// deleteOperand deletes one operand through the safety gate; gone reports
// whether it vanished at once (no finalizer held it).
func (p *pass) deleteOperand(ctx context.Context, crd cleanupCRD, obj *unstructured.Unstructured) (bool, error) {
	id := payload.ObjectID{Group: crd.api.gvr.Group, Kind: crd.api.kind, Namespace: obj.GetNamespace(), Name: obj.GetName()}
	if err := p.e.checkOperandDeletable(p.marked, p.opts.OperandCleanup, crd.CRD, crd.api.gvr.Group, crd.api.kind, id); err != nil {
		return false, err
	}
	uid := obj.GetUID()
	ri := p.e.dynamic.Resource(crd.api.gvr).Namespace(obj.GetNamespace())
	err := ri.Delete(ctx, obj.GetName(), metav1.DeleteOptions{
		PropagationPolicy: ptr.To(metav1.DeletePropagationBackground),
		Preconditions:     &metav1.Preconditions{UID: &uid},
	})
	switch {
	case apierrors.IsNotFound(err):
		return true, nil
	case apierrors.IsConflict(err):
		// Another object took the name: not the one the list showed.
		return false, nil
	case err != nil:
		return false, fmt.Errorf("delete %s: %w", id, err)
	}
	return len(obj.GetFinalizers()) == 0, nil
}
