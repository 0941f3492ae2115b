package apply

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/payload-applier/payload-applier/pkg/apply/cleanup"
	"github.com/payload-applier/payload-applier/pkg/payload"
)

// Self names the applier's own objects, which it refuses to delete; the
// set is defined once, in pkg/payload, so that lint refuses the same.
type Self = payload.Applier

// DefaultSelf returns the names the applier's own manifests use.
func DefaultSelf() Self { return payload.DefaultApplier() }

// deleteRequest is one DELETE the engine may send. Every DELETE of a
// payload's object goes through send, which admits it or refuses it.
type deleteRequest struct {
	// id is the object as the API sees it.
	id  payload.ObjectID
	rc  resourceClient
	uid types.UID
	// operand is set when an operand cleanup asks: the CRD, claimed by
	// UID, whose custom resource id is.
	operand *cleanupCRD
	// beforeSend, when set, runs once the DELETE is admitted, before it
	// goes out.
	beforeSend func(context.Context)
}

// send admits req and sends its DELETE: background propagation, and a
// UID precondition so that an object re-created under the name is never
// the one removed. A refusal is a *TaskError with ReasonDeletionRefused.
func (p *pass) send(ctx context.Context, req deleteRequest) (deleteAnswer, *unstructured.Unstructured, error) {
	if err := p.admit(req); err != nil {
		return answerUnknown, nil, err
	}
	if req.beforeSend != nil {
		req.beforeSend(ctx)
	}
	uid := req.uid
	return p.deleteObject(ctx, req.rc, req.id.Name, metav1.DeleteOptions{
		PropagationPolicy: ptr.To(metav1.DeletePropagationBackground),
		Preconditions:     &metav1.Preconditions{UID: &uid},
	})
}

// admit is the one safety gate, checked right before every DELETE the
// engine sends. A protected object is refused whatever asks. Otherwise a
// delete manifest of the release must name exactly this object; the one
// widening is an operand cleanup's DELETE, admitted by admitOperand.
func (p *pass) admit(req deleteRequest) error {
	if why, ok := p.e.protectedReason(req.id); ok {
		return refusal(req.id, "it is "+why)
	}
	if req.operand != nil {
		return p.admitOperand(req.id, *req.operand)
	}
	if !p.marked[req.id] {
		return refusal(req.id, fmt.Sprintf("release %s has no delete manifest for it", p.rel.Version))
	}
	return nil
}

// admitOperand admits the DELETE of id as an operand of crd: the admin's
// policy is Delete; the release deletes crd, which is not protected; the
// ledger holds that delete in progress for the very CRD, by UID, that the
// cleanup read; id is of the kind crd serves, in its group, and not of a
// built-in API; and id is in crd's scope.
func (p *pass) admitOperand(id payload.ObjectID, crd cleanupCRD) error {
	crdID := crdID(crd.Name)
	_, builtin := payload.BuiltinResource(crd.api.gvr.Group, crd.api.gvr.Resource)
	switch {
	case p.opts.OperandCleanup != cleanup.PolicyDelete:
		return refusal(id, "the operand cleanup policy is not Delete")
	case !p.marked[crdID]:
		return refusal(id, fmt.Sprintf("release %s does not delete its CRD %s", p.rel.Version, crd.Name))
	}
	if why, ok := p.e.protectedReason(crdID); ok {
		return refusal(id, fmt.Sprintf("its CRD %s is %s", crd.Name, why))
	}
	if why := p.notClaimed(crdID, crd.uid); why != "" {
		return refusal(id, fmt.Sprintf("its CRD %s (uid %s) is not the one release %s deletes: %s", crd.Name, crd.uid, p.rel.Version, why))
	}
	switch {
	case builtin:
		return refusal(id, fmt.Sprintf("%s is a built-in API, not served by %s", crd.api.gvr.GroupResource(), crd.Name))
	case crd.Name != crd.api.gvr.Resource+"."+crd.api.gvr.Group || id.Group != crd.api.gvr.Group || id.Kind != crd.api.kind:
		return refusal(id, fmt.Sprintf("it is not of kind %s, which %s serves", crd.api.kind, crd.Name))
	case !crd.InScope(id.Namespace):
		return refusal(id, fmt.Sprintf("namespace %s is outside the cleanup scope of %s", id.Namespace, crd.Name))
	}
	return nil
}

func refusal(id payload.ObjectID, why string) error {
	return &TaskError{Subject: id, Reason: ReasonDeletionRefused, Effect: payload.EffectFail,
		Message: fmt.Sprintf("refusing to delete %s: %s", id, why)}
}

// protectedReason says why id may not be deleted.
func (e *Engine) protectedReason(id payload.ObjectID) (string, bool) {
	return payload.ProtectedReason(e.protected, id)
}

// markedFor is the set of objects rel's delete manifests name, as identity
// gives them, built once per pass: a look-up per delete keeps the gate
// linear in the payload.
func markedFor(rel *payload.Release, identity func(*payload.Manifest) payload.ObjectID) map[payload.ObjectID]bool {
	marked := map[payload.ObjectID]bool{}
	for _, m := range rel.Manifests {
		if m.Delete() {
			marked[identity(m)] = true
		}
	}
	return marked
}

// identity is the object m names as the API sees it: a namespace that a
// manifest sets on a cluster-scoped kind is dropped, as the DELETE drops
// it, so that the ledger, the marked set and the safety gate share one
// identity whatever the manifest says. A kind the cluster does not serve
// keeps the manifest's identity.
func (e *Engine) identity(m *payload.Manifest) payload.ObjectID {
	id := m.ID()
	if id.Namespace == "" {
		return id
	}
	mapping, err := e.mapper.known(m.GVK.GroupKind(), m.GVK.Version)
	if err == nil && mapping.Scope.Name() != meta.RESTScopeNameNamespace {
		id.Namespace = ""
	}
	return id
}
