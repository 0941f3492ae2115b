package apply

import (
	"context"
	"errors"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/payload-applier/payload-applier/pkg/apply/cleanup"
	"github.com/payload-applier/payload-applier/pkg/apply/deletion"
	"github.com/payload-applier/payload-applier/pkg/graph"
	"github.com/payload-applier/payload-applier/pkg/payload"
)

// Cleanups returns the operand cleanups the engine knows, for status.
func (e *Engine) Cleanups(ctx context.Context) ([]cleanup.Record, error) {
	if err := e.cleanups.Load(ctx); err != nil {
		return nil, err
	}
	return e.cleanups.All(), nil
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

// runGate walks one component's cleanup through cleanup.Next for this
// pass: it reads and deletes only what the transition asks for, and
// stores every record the transition returns.
func (p *pass) runGate(ctx context.Context, cand cleanup.Candidate) (bool, cleanup.Record) {
	if p.cleanupErr != nil {
		// Without its state a cleanup cannot tell a start from a restart,
		// nor save what it did: nothing of the component is deleted.
		return false, cleanup.Record{Component: cand.Component, State: cleanup.Waiting,
			Message: "the operand cleanup state cannot be read: " + p.cleanupErr.Error()}
	}
	obs := cleanup.Observation{Component: cand.Component, Release: p.rel.Version, Now: p.e.clock.Now()}
	begin := obs
	begin.Kind, begin.Policy, begin.Update, begin.Rollback = cleanup.Begin, p.opts.OperandCleanup, p.opts.Mode == graph.ModeUpdate, p.opts.Rollback
	begin.Pending = p.gateNeverOpened(cand)
	step := p.e.takeCleanup(begin)
	if step.Outcome != cleanup.OutcomeJudge {
		return step.Outcome == cleanup.OutcomeOpen, step.Record
	}
	crds, notes, err := p.judgeCleanup(ctx, cand)
	obs.Excluded, obs.Cleanable = notes, len(crds)
	if err != nil {
		obs.Kind, obs.Why = cleanup.Failed, err.Error()
		step = p.e.takeCleanup(obs)
		return false, step.Record
	}
	judged := obs
	judged.Kind = cleanup.Judged
	if len(crds) > 0 {
		judged.Unavailable = p.operatorUnavailable(ctx, cand)
	}
	step = p.e.takeCleanup(judged)
	if step.Outcome != cleanup.OutcomeDelete {
		return step.Outcome == cleanup.OutcomeOpen, step.Record
	}
	count, err := p.deleteOperands(ctx, crds)
	if err != nil {
		klog.FromContext(ctx).Info("Operand cleanup failed", "component", cand.Component, "err", err)
		obs.Kind, obs.Why = cleanup.Failed, err.Error()
	} else {
		obs.Kind, obs.Count = cleanup.Counted, count
	}
	step = p.e.takeCleanup(obs)
	return step.Outcome == cleanup.OutcomeOpen, step.Record
}

// gateNeverOpened reports whether an update claimed the deletes of cand's
// component and none was issued: the gate heads the chain, so its cleanup
// never ended. A cleanup whose record was lost is carried on then, and
// only then: once the removal went on without it, its operator may be
// gone, and a cleanup could only wait for it.
func (p *pass) gateNeverOpened(cand cleanup.Candidate) bool {
	claimed := false
	for _, m := range p.rel.Manifests {
		if !m.Delete() || m.Component != cand.Component {
			continue
		}
		rec, ok := p.e.ledger.Get(p.e.identity(m))
		if !ok || rec.State != deletion.Pending {
			return false
		}
		claimed = true
	}
	return claimed
}

// takeCleanup runs the cleanup transition on the stored record, stores
// what it decided and records its Events. It is how every cleanup record
// change is made.
func (e *Engine) takeCleanup(obs cleanup.Observation) cleanup.Step {
	var prev *cleanup.Record
	if r, ok := e.cleanups.Get(obs.Component); ok {
		prev = &r
	}
	step := cleanup.Next(prev, obs)
	if step.Save {
		e.cleanups.Set(step.Record)
	}
	e.emit(step.Events)
	return step
}

// cleanupCRD is a CRD whose operands this pass deletes: the live CRD the
// update's delete claimed, by UID, and the API it serves itself.
type cleanupCRD struct {
	cleanup.CRD
	uid types.UID
	api crdAPI
}

// crdID is the identity of the CRD named name, as the ledger keys it.
func crdID(name string) payload.ObjectID {
	return payload.ObjectID{Group: payload.CRDKind.Group, Kind: payload.CRDKind.Kind, Name: name}
}

// judgeCleanup reads each candidate CRD and keeps those whose operands
// may go; notes says why each other one is left alone. A CRD qualifies
// when the release's rules (2, 4, 5) pass, it is not protected, it is the
// very object the update's delete claimed (by UID) and that delete is not
// over, it serves its API itself, and the release keeps no object of its
// kind (rule 3). An error is a read that failed: the gate waits.
func (p *pass) judgeCleanup(ctx context.Context, cand cleanup.Candidate) ([]cleanupCRD, []cleanup.Note, error) {
	var crds []cleanupCRD
	var notes []cleanup.Note
	rc, err := p.e.resolve(payload.CRDGVK, "", false)
	if err != nil {
		return nil, nil, fmt.Errorf("CustomResourceDefinitions cannot be read: %w", err)
	}
	for _, crd := range cand.CRDs {
		note := func(rule cleanup.Rule, blocked bool, format string, args ...any) {
			notes = append(notes, cleanup.Note{CRD: crd.Name, Rule: rule, Blocked: blocked, Message: fmt.Sprintf(format, args...)})
		}
		if crd.Skip != nil {
			notes = append(notes, *crd.Skip)
			continue
		}
		id := crdID(crd.Name)
		if why, ok := p.e.protectedReason(id); ok {
			note(0, true, "it is %s; its objects are never deleted", why)
			continue
		}
		live, err := rc.read(ctx, crd.Name)
		if err != nil {
			return nil, nil, fmt.Errorf("read CustomResourceDefinition %s: %w", crd.Name, err)
		}
		if live == nil {
			note(0, false, "it is gone already, and its objects with it")
			continue
		}
		if why := p.notClaimed(id, live.GetUID()); why != "" {
			note(0, false, "%s", why)
			continue
		}
		api, why, err := p.e.ownAPI(ctx, live)
		if err != nil {
			return nil, nil, err
		}
		if why != "" {
			note(0, true, "%s", why)
			continue
		}
		if user := cleanup.APIUser(p.rel, api.gvr.Group, api.kind); user != nil {
			note(cleanup.RuleAPIUnused, false, "%s (%s) still uses kind %s", user.ID(), user.Position(), api.kind)
			continue
		}
		crds = append(crds, cleanupCRD{CRD: crd, uid: live.GetUID(), api: api})
	}
	return crds, notes, nil
}

// notClaimed says why the CRD id with uid is not the one whose delete an
// update claimed and has not finished, or "": a cleanup acts only for the
// object the ledger names, never for one re-created or replaced under its
// name. The judge and the delete gate both ask it.
func (p *pass) notClaimed(id payload.ObjectID, uid types.UID) string {
	rec, ok := p.e.ledger.Get(id)
	switch {
	case !ok:
		return "no update claimed its delete"
	case rec.Done():
		return fmt.Sprintf("its delete completed at %s and it was created again (uid %s); the new one is not deleted, nor its objects", deletion.FormatTime(rec.CompletedAt), uid)
	case rec.State != deletion.Pending && rec.State != deletion.InProgress:
		return fmt.Sprintf("its delete is %s, not in progress", rec.State)
	case rec.UID == "":
		return "the update's claim recorded no UID for it, so the CRD it meant cannot be told from another"
	case rec.UID != uid:
		return fmt.Sprintf("it was replaced since the update claimed its delete (uid %s, claimed %s)", uid, rec.UID)
	}
	return ""
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
		if id.GroupKind() == payload.ClusterOperatorKind {
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
	switch obj.GroupVersionKind().GroupKind() {
	case payload.ClusterOperatorKind:
		if s, _, _ := condition(obj, "Available"); s != "True" {
			return "is not Available"
		}
		if s, _, _ := condition(obj, "Degraded"); s == "True" {
			return "is Degraded"
		}
	case payload.DaemonSetKind:
		want, _, _ := unstructured.NestedInt64(obj.Object, "status", "desiredNumberScheduled")
		have, _, _ := unstructured.NestedInt64(obj.Object, "status", "numberAvailable")
		if have < want {
			return fmt.Sprintf("has %d of %d pods available", have, want)
		}
	default:
		if s, _, _ := condition(obj, "Available"); s != "True" {
			return "is not Available"
		}
	}
	return ""
}

// deleteOperands lists the operands of crds in scope, page by page, asks
// the one delete path to remove each one not yet terminating, and counts
// what is left. It never touches a finalizer.
func (p *pass) deleteOperands(ctx context.Context, crds []cleanupCRD) (cleanup.Count, error) {
	var count cleanup.Count
	for _, crd := range crds {
		var items []*unstructured.Unstructured
		err := p.e.clientFor(crd.api.gvr, "").list(ctx, func(obj *unstructured.Unstructured) {
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

// deleteOperand sends one operand's DELETE through the delete path; gone
// reports whether it vanished at once (no finalizer held it).
func (p *pass) deleteOperand(ctx context.Context, crd cleanupCRD, obj *unstructured.Unstructured) (bool, error) {
	gvk := obj.GroupVersionKind()
	req := deleteRequest{
		id:      payload.ObjectID{Group: gvk.Group, Kind: gvk.Kind, Namespace: obj.GetNamespace(), Name: obj.GetName()},
		rc:      p.e.clientFor(crd.api.gvr, obj.GetNamespace()),
		uid:     obj.GetUID(),
		operand: &crd,
	}
	answer, _, err := p.send(ctx, req)
	rec := deletion.Record{ID: req.id, File: crd.File, Release: p.rel.Version, UID: req.uid}
	switch {
	case apierrors.IsNotFound(err):
		return true, nil
	case apierrors.IsConflict(err):
		// Another object took the name: not the one the list showed.
		return false, nil
	case err != nil:
		p.e.count(deletion.TransitionFailed, rec)
		var te *TaskError
		if errors.As(err, &te) && te.Reason == ReasonDeletionRefused {
			te.File = crd.File // the CRD delete manifest that asked for it
			p.e.warn(string(te.Reason), te.Message)
			return false, te
		}
		return false, fmt.Errorf("delete %s: %w", req.id, err)
	}
	p.e.count(deletion.TransitionRequested, rec)
	switch answer {
	case answerGone:
		return true, nil
	case answerTerminating:
		return false, nil
	}
	return len(obj.GetFinalizers()) == 0, nil
}
