package apply

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/util/csaupgrade"

	"github.com/payload-applier/payload-applier/pkg/graph"
	"github.com/payload-applier/payload-applier/pkg/payload"
)

// applyTask is the graph task function for a create-or-update manifest.
func (p *pass) applyTask(ctx context.Context, t *graph.Task) error {
	m := p.taskManifest(t)
	res := p.results[t.Index]
	attempt := 0
	ns := m.Obj.GetNamespace()
	// A missing namespace is waited for, up to the patience the retries
	// would have spent on it, rather than retried into.
	patience := time.Now().Add(backoffTotal(*p.opts.Backoff))
	err := p.retry(ctx, func() error {
		p.awaitNamespace(ctx, ns, time.Until(patience))
		action, err := p.applyOnce(ctx, m, attempt)
		if namespaceMissing(err, ns) {
			p.watchNamespace(ctx, ns)
		}
		attempt++
		res.Action = action
		return err
	}, func(err error) <-chan struct{} {
		switch {
		case namespaceMissing(err, ns):
			return p.namespaceArrival(ns)
		case meta.IsNoMatchError(err):
			return p.e.mapper.arrival(m.Obj.GroupVersionKind())
		}
		return nil
	})
	if err != nil {
		te := taskError(m, "apply", err)
		if te.Effect == payload.EffectReport {
			// Applied; what its health reports keeps the pass from
			// completing but holds no later task back.
			res.Err, res.Message = te, te.Message
			p.record(ctx, t.Index, res)
			return nil
		}
		res.Action, res.Err, res.Message = ActionFailed, te, te.Message
		p.record(ctx, t.Index, res)
		if te.Effect == payload.EffectFail {
			p.e.warn(string(te.Reason), te.Error())
		}
		return te
	}
	p.record(ctx, t.Index, res)
	return nil
}

// applyOnce reads the object and writes it only when it is missing or has
// drifted from the manifest, then checks its health.
func (p *pass) applyOnce(ctx context.Context, m *payload.Manifest, attempt int) (Action, error) {
	rc, err := p.resourceFor(m)
	if err != nil {
		return ActionFailed, err
	}
	var live *unstructured.Unstructured
	switch {
	case attempt == 0 && p.current[m.ID()] && m.CreateOnly():
		return ActionSkipped, nil
	case attempt == 0 && p.current[m.ID()]:
		return ActionUnchanged, nil
	case attempt == 0 && p.createsUnread(m):
	case attempt == 0:
		live, err = p.get(ctx, m, rc)
	default:
		live, err = rc.read(ctx, m.Obj.GetName())
	}
	if err != nil {
		return ActionFailed, err
	}
	want := p.e.withoutUndeclared(m, desiredObject(m))
	var action Action
	switch {
	case live == nil:
		action = ActionCreated
		live, err = p.e.create(ctx, m, rc, want)
		if apierrors.IsAlreadyExists(err) && attempt == 0 {
			// Created since we looked: compare with it like any object.
			return p.applyOnce(ctx, m, attempt+1)
		}
	case m.CreateOnly():
		// Remembered as found, so that a resync reads it again only once
		// its watch sees it change.
		p.e.remember(m, rc, live, true)
		return ActionSkipped, nil
	case p.e.unchanged(m, want, live):
		action = ActionUnchanged
	case p.opts.Mode == graph.ModeReconcile && applyChangesNothing(ctx, rc, want, live):
		// The server drops or normalizes something the manifest sets.
		action = ActionUnchanged
	default:
		action = ActionConfigured
		if m.IsCRD() {
			if err := p.guardCRDUpdate(ctx, m, live); err != nil {
				return ActionFailed, err
			}
		}
		if err = p.e.adoptCreatedFields(ctx, rc, live); err == nil {
			live, err = p.e.write(ctx, m, rc, want, false)
		}
	}
	if err != nil {
		return ActionFailed, err
	}
	live, h := p.health(ctx, m, rc, live)
	p.e.remember(m, rc, live, h.Healthy())
	return action, p.healthError(m, h)
}

// createsUnread reports whether m's object is created without a read
// first: in an install, one this engine has never written. On a cluster
// being installed almost none exists, and one that does costs a refused
// create before the read, once.
func (p *pass) createsUnread(m *payload.Manifest) bool {
	return p.opts.Mode == graph.ModeInstall && !p.e.wrote(m)
}

// create makes a missing object with a POST, which costs the apiserver
// about a third less than a server-side apply. The fields it sets belong to
// the create until adoptCreatedFields hands them to the apply manager. As
// the CVO's typed clients, it lets the server drop the fields the schema
// does not declare (fieldValidation=Warn); the server's warnings name them,
// and they are reported and left out of the later applies, which would
// refuse them. A manifest the POST still rejects goes through write, and
// so does a custom resource whose CRD is so new that the server would hold
// its POST (CreateHeld).
func (e *Engine) create(ctx context.Context, m *payload.Manifest, rc resourceClient, want *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	gvk := want.GroupVersionKind()
	if e.createsTyped(gvk) {
		if created, typed, err := e.createTyped(ctx, rc, want); typed {
			return created, err
		}
	}
	if e.createHeld(gvk.GroupKind()) {
		return e.write(ctx, m, rc, want, true)
	}
	wctx, warned := collectWarnings(ctx)
	created, err := rc.ri.Create(wctx, want, metav1.CreateOptions{FieldManager: FieldManager, FieldValidation: metav1.FieldValidationWarn})
	if apierrors.IsInvalid(err) {
		// A field the Go type always sends is required (an empty spec, an
		// explicit null), which an apply cannot send either: create
		// through the type, as the CVO does, and so the kind from now on.
		if created, typed, terr := e.createTyped(ctx, rc, want); typed {
			if terr != nil {
				// The manifest as written is what to fix.
				return nil, err
			}
			e.rememberTypedCreate(gvk)
			return created, nil
		}
	}
	if apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) {
		return e.write(ctx, m, rc, want, true)
	}
	if dropped := warned.unknownFields(); err == nil && len(dropped) > 0 {
		e.undeclaredFields(m, dropped)
	}
	return created, err
}

func (e *Engine) createsTyped(gvk schema.GroupVersionKind) bool {
	e.appliedMu.Lock()
	defer e.appliedMu.Unlock()
	return e.typedCreates[gvk.GroupKind()]
}

func (e *Engine) rememberTypedCreate(gvk schema.GroupVersionKind) {
	e.appliedMu.Lock()
	defer e.appliedMu.Unlock()
	e.typedCreates[gvk.GroupKind()] = true
}

// undeclaredFields reports fields of m that its schema does not declare,
// which the server dropped, and leaves them out of m's later applies.
func (e *Engine) undeclaredFields(m *payload.Manifest, paths []string) {
	e.rememberUndeclared(m, paths)
	e.warn("UndeclaredFieldsDropped", fmt.Sprintf("%s (%s): dropped fields its schema does not declare: %s",
		m.ID(), m.Position(), strings.Join(paths, ", ")))
}

// adoptCreatedFields moves the fields our create owns to our apply manager
// before the first apply that changes the object. Left to the create, a
// field that a later manifest drops would never be removed: server-side
// apply prunes only what the applier itself owned. It is one write per
// object, and only for objects that change after their create.
func (e *Engine) adoptCreatedFields(ctx context.Context, rc resourceClient, live *unstructured.Unstructured) error {
	patch, err := csaupgrade.UpgradeManagedFieldsPatch(live, sets.New(FieldManager), FieldManager)
	if err != nil || patch == nil {
		return err
	}
	_, err = rc.ri.Patch(ctx, live.GetName(), types.JSONPatchType, patch, metav1.PatchOptions{FieldManager: FieldManager})
	return err
}

// write applies want. Fields the schema does not declare are dropped with
// a warning, and a create the apply path cannot express goes through the
// Go type, both as the CVO's typed clients would behave.
func (e *Engine) write(ctx context.Context, m *payload.Manifest, rc resourceClient, want *unstructured.Unstructured, creating bool) (*unstructured.Unstructured, error) {
	live, err := rc.apply(ctx, want, false)
	if dropped := dropUndeclared(want, err); len(dropped) > 0 {
		e.undeclaredFields(m, dropped)
		live, err = rc.apply(ctx, want, false)
	}
	if creating && apierrors.IsInvalid(err) {
		if created, typed, cerr := e.createTyped(ctx, rc, want); typed {
			return created, cerr
		}
	}
	return live, err
}

// applyChangesNothing asks the server, with a dry run, whether applying want
// would change live. The comparison cannot know every normalization: a CRD
// schema in ocp-real sets a keyword that the server drops, and comparing
// would call it drift, and rewrite it, on every resync. Only reconcile
// passes ask: there a difference is rarely a real drift, whereas an update
// expects to write what changed. The dry run costs one request, only when
// the comparison already found a difference; a real drift then costs two.
// When the dry run fails, the write path decides.
func applyChangesNothing(ctx context.Context, rc resourceClient, want, live *unstructured.Unstructured) bool {
	dry, err := rc.apply(ctx, want, true)
	if err != nil {
		return false
	}
	return equality.Semantic.DeepEqual(withoutServerFields(live.Object), withoutServerFields(dry.Object))
}

// withoutUndeclared removes the fields an earlier apply found undeclared, so
// that they neither fail the apply again nor look like drift.
func (e *Engine) withoutUndeclared(m *payload.Manifest, obj *unstructured.Unstructured) *unstructured.Unstructured {
	e.appliedMu.Lock()
	paths := e.undeclared[m.ID()]
	e.appliedMu.Unlock()
	for _, p := range paths {
		removePath(obj.Object, splitPath(p))
	}
	return obj
}

func (e *Engine) rememberUndeclared(m *payload.Manifest, paths []string) {
	e.appliedMu.Lock()
	defer e.appliedMu.Unlock()
	e.undeclared[m.ID()] = paths
}

// health judges live by the CVO's post-apply rules (CheckHealth), first
// waiting briefly for a new CRD to become Established, and returns the
// object as it last read it.
func (p *pass) health(ctx context.Context, m *payload.Manifest, rc resourceClient, live *unstructured.Unstructured) (*unstructured.Unstructured, Health) {
	h := CheckHealth(m.Obj, live, p.opts.Mode)
	if h.Reason == ReasonCRDNotEstablished {
		live, h = p.awaitEstablished(ctx, m, rc, live)
	}
	return live, h
}

// healthError is the task's error for h. Install skips all but the checks
// later tasks of the same pass depend on; with DegradedProceed, a Degraded
// operator is only reported.
func (p *pass) healthError(m *payload.Manifest, h Health) error {
	proceed := h.Reason == ReasonCODegraded && p.opts.Mode != graph.ModeInstall && p.opts.DegradedOperators == DegradedProceed
	var since time.Time
	if m.Obj.GroupVersionKind().GroupKind() == payload.ClusterOperatorKind {
		since = p.e.operatorWaits.observe(m.Obj.GetName(), h.Healthy() || proceed, p.e.clock.Now())
	}
	switch {
	case h.Healthy():
		return nil
	case p.opts.Mode == graph.ModeInstall && h.Operator == "" && h.Reason != ReasonCRDNotEstablished:
		return nil
	case proceed:
		p.e.warn(string(h.Reason), fmt.Sprintf("%s; the update proceeds past it (%s=%s): %s", h.Message, DegradedPolicyAnnotation, DegradedProceed, h.Detail))
		return nil
	}
	return &TaskError{Subject: m.ID(), File: m.Position(), Reason: h.Reason, Effect: h.Effect, Message: h.Message,
		Detail: h.Detail, Operator: h.Operator, PluralReason: h.PluralReason, PluralMessage: h.PluralMessage, Since: since}
}

// awaitEstablished waits briefly for a new CRD (WaitEstablished): it
// usually becomes Established in well under a second, and custom
// resources later in the pass need it, which then resolve from it.
func (p *pass) awaitEstablished(ctx context.Context, m *payload.Manifest, rc resourceClient, live *unstructured.Unstructured) (*unstructured.Unstructured, Health) {
	ctx, cancel := context.WithTimeout(ctx, p.opts.EstablishTimeout)
	defer cancel()
	established, err := WaitEstablished(ctx, rc.ri, m.Obj.GetName(), live.GetResourceVersion())
	if err != nil {
		return live, Health{Reason: ReasonCRDNotEstablished, Effect: payload.EffectNone,
			Message: "CustomResourceDefinition " + m.Obj.GetName() + " did not become Established in " + p.opts.EstablishTimeout.String()}
	}
	if !p.e.mapper.learn(established) {
		p.e.mapper.invalidate()
	}
	p.e.noteEstablished(established)
	return established, CheckHealth(m.Obj, established, p.opts.Mode)
}

// desiredObject is the manifest as sent to the server: without status and
// server-owned metadata.
func desiredObject(m *payload.Manifest) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: withoutServerFields(m.Obj.DeepCopy().Object)}
}

// unchanged reports whether live already holds everything the manifest sets.
func (e *Engine) unchanged(m *payload.Manifest, want, live *unstructured.Unstructured) bool {
	e.appliedMu.Lock()
	st, ok := e.applied[m.ID()]
	e.appliedMu.Unlock()
	if ok && st.hash == m.Hash() && st.resourceVersion == live.GetResourceVersion() {
		return true
	}
	cmp := want.Object
	if want.GetKind() == "Secret" && want.GroupVersionKind().Group == corev1.GroupName {
		cmp = secretStringData(cmp)
	}
	return contains(live.Object, cmp)
}

// wrote reports whether this engine wrote m's object, or found it as m
// wants it.
func (e *Engine) wrote(m *payload.Manifest) bool {
	e.appliedMu.Lock()
	defer e.appliedMu.Unlock()
	_, ok := e.applied[m.ID()]
	return ok
}

// remember records what the object looked like after this pass touched it,
// and whether it was healthy then.
func (e *Engine) remember(m *payload.Manifest, rc resourceClient, live *unstructured.Unstructured, healthy bool) {
	if live == nil {
		return
	}
	e.appliedMu.Lock()
	defer e.appliedMu.Unlock()
	e.applied[m.ID()] = appliedState{hash: m.Hash(), resourceVersion: live.GetResourceVersion(), gvr: rc.gvr, healthy: healthy}
}

// warn records a warning Event when a recorder is configured.
func (e *Engine) warn(reason, msg string) {
	if e.recorder != nil {
		e.recorder.Event(e.eventObj, corev1.EventTypeWarning, reason, msg)
	}
}

// note records a normal Event when a recorder is configured.
func (e *Engine) note(reason, msg string) {
	if e.recorder != nil {
		e.recorder.Event(e.eventObj, corev1.EventTypeNormal, reason, msg)
	}
}
