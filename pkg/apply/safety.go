package apply

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/payload-applier/payload-applier/pkg/apply/cleanup"
	"github.com/payload-applier/payload-applier/pkg/payload"
)

// Self names the applier's own objects, which it refuses to delete; the
// set is defined once, in pkg/payload, so that lint refuses the same.
type Self = payload.Applier

// DefaultSelf returns the names the applier's own manifests use.
func DefaultSelf() Self { return payload.DefaultApplier() }

// checkDeletable refuses a delete unless the release being applied, whose
// delete manifests name the objects in marked, has one naming exactly this
// object, and the object is not protected. It is the last gate before every
// DELETE the engine sends.
func (e *Engine) checkDeletable(marked map[payload.ObjectID]bool, release string, id payload.ObjectID) error {
	if why, ok := e.protectedReason(id); ok {
		return &TaskError{Subject: id, Reason: ReasonDeletionRefused, Effect: EffectFail,
			Message: fmt.Sprintf("refusing to delete %s: it is %s", id, why)}
	}
	if marked[id] {
		return nil
	}
	return &TaskError{Subject: id, Reason: ReasonDeletionRefused, Effect: EffectFail,
		Message: fmt.Sprintf("refusing to delete %s: release %s has no delete manifest for it", id, release)}
}

// checkOperandDeletable is the gate before every operand DELETE of an
// operand cleanup, the one widening of "only what a delete manifest
// names": id must be a custom resource of crd, in its scope, while the
// release marks crd itself for deletion and the admin's policy is Delete.
func (e *Engine) checkOperandDeletable(marked map[payload.ObjectID]bool, policy cleanup.Policy, crd cleanup.CRD, group, kind string, id payload.ObjectID) error {
	refuse := func(why string) error {
		return &TaskError{Subject: id, Reason: ReasonDeletionRefused, Effect: EffectFail,
			Message: fmt.Sprintf("refusing to delete %s: %s", id, why)}
	}
	if why, ok := e.protectedReason(id); ok {
		return refuse("it is " + why)
	}
	switch {
	case policy != cleanup.PolicyDelete:
		return refuse("the operand cleanup policy is not Delete")
	case !marked[payload.ObjectID{Group: crdGVK.Group, Kind: crdGVK.Kind, Name: crd.Name}]:
		return refuse(fmt.Sprintf("the release does not delete its CRD %s", crd.Name))
	case id.Group != group || id.Kind != kind || id.Group != crd.Group():
		return refuse(fmt.Sprintf("it is not served by %s", crd.Name))
	case !crd.InScope(id.Namespace):
		return refuse(fmt.Sprintf("namespace %s is outside the cleanup scope of %s", id.Namespace, crd.Name))
	}
	return nil
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
	mapping, err := e.mapper.m.RESTMapping(m.GVK.GroupKind(), m.GVK.Version)
	if err == nil && mapping.Scope.Name() != meta.RESTScopeNameNamespace {
		id.Namespace = ""
	}
	return id
}
