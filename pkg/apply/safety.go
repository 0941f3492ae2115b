package apply

import (
	"cmp"
	"fmt"

	"github.com/payload-applier/payload-applier/pkg/apply/cleanup"
	"github.com/payload-applier/payload-applier/pkg/payload"
)

// protectedNamespaces are never deleted, whatever a payload says: losing one
// takes the cluster or the applier down with it (kube-node-lease holds the
// nodes' heartbeats).
var protectedNamespaces = []string{"kube-system", "kube-public", "kube-node-lease", "default"}

// protectedCRDs serve the applier's own state.
var protectedCRDs = []string{
	"clusterversions.config.openshift.io",
	"clusteroperators.config.openshift.io",
}

// Self names the applier's own objects, which it refuses to delete.
type Self struct {
	// Namespace is the applier's namespace; default openshift-cluster-version.
	Namespace string
	// Deployment is the applier's Deployment in Namespace; default cluster-version-operator.
	Deployment string
	// Ledger is the name of the ledger ConfigMap in Namespace.
	Ledger string
	// ServiceAccount runs the Deployment; its Role, RoleBinding and
	// ClusterRoleBinding share its name.
	ServiceAccount string
	// Lease is the leader-election Lease in Namespace.
	Lease string
	// PayloadStore is the PersistentVolumeClaim in Namespace that holds
	// the release payloads.
	PayloadStore string
	// OperandCleanup is the ConfigMap in Namespace that keeps the operand
	// cleanups, beside the delete ledger.
	OperandCleanup string
}

// DefaultSelf returns the names the applier's own manifests use.
func DefaultSelf() Self {
	return Self{
		Namespace:      "openshift-cluster-version",
		Deployment:     "cluster-version-operator",
		Ledger:         "payload-applier-delete-ledger",
		ServiceAccount: "cluster-version-operator",
		Lease:          "payload-applier",
		PayloadStore:   "payload-applier-payloads",
		OperandCleanup: "payload-applier-operand-cleanup",
	}
}

// withDefaults fills the fields s leaves empty from DefaultSelf.
func (s Self) withDefaults() Self {
	def := DefaultSelf()
	s.Namespace = cmp.Or(s.Namespace, def.Namespace)
	s.Deployment = cmp.Or(s.Deployment, def.Deployment)
	s.Ledger = cmp.Or(s.Ledger, def.Ledger)
	s.ServiceAccount = cmp.Or(s.ServiceAccount, def.ServiceAccount)
	s.Lease = cmp.Or(s.Lease, def.Lease)
	s.PayloadStore = cmp.Or(s.PayloadStore, def.PayloadStore)
	s.OperandCleanup = cmp.Or(s.OperandCleanup, def.OperandCleanup)
	return s
}

// protectedSet lists every object the engine refuses to delete. A
// cluster-scoped object is listed without a namespace.
func (s Self) protectedSet() map[payload.ObjectID]string {
	set := map[payload.ObjectID]string{}
	for _, ns := range append(append([]string(nil), protectedNamespaces...), s.Namespace) {
		set[payload.ObjectID{Kind: "Namespace", Name: ns}] = "a protected namespace"
		// An OpenShift Project is its namespace seen through another API.
		set[payload.ObjectID{Group: "project.openshift.io", Kind: "Project", Name: ns}] = "a protected namespace"
	}
	for _, crd := range protectedCRDs {
		set[payload.ObjectID{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition", Name: crd}] =
			"the CustomResourceDefinition behind the applier's own status"
	}
	set[payload.ObjectID{Group: "apps", Kind: "Deployment", Namespace: s.Namespace, Name: s.Deployment}] = "the applier's own Deployment"
	set[payload.ObjectID{Kind: "ServiceAccount", Namespace: s.Namespace, Name: s.ServiceAccount}] = "the applier's own ServiceAccount"
	for _, kind := range []string{"Role", "RoleBinding"} {
		set[payload.ObjectID{Group: "rbac.authorization.k8s.io", Kind: kind, Namespace: s.Namespace, Name: s.ServiceAccount}] = "the applier's own " + kind
	}
	set[payload.ObjectID{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding", Name: s.ServiceAccount}] = "the applier's own ClusterRoleBinding"
	set[payload.ObjectID{Group: "coordination.k8s.io", Kind: "Lease", Namespace: s.Namespace, Name: s.Lease}] = "the applier's leader-election Lease"
	set[payload.ObjectID{Kind: "PersistentVolumeClaim", Namespace: s.Namespace, Name: s.PayloadStore}] = "the applier's payload store"
	set[payload.ObjectID{Kind: "ConfigMap", Namespace: s.Namespace, Name: s.Ledger}] = "the applier's delete ledger"
	set[payload.ObjectID{Kind: "ConfigMap", Namespace: s.Namespace, Name: s.OperandCleanup}] = "the applier's operand cleanup state"
	set[payload.ObjectID{Group: "config.openshift.io", Kind: "ClusterVersion", Name: "version"}] = "the ClusterVersion the applier reports on"
	return set
}

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

// protectedReason says why id may not be deleted. A namespace a manifest
// sets on a cluster-scoped kind is ignored, as the DELETE ignores it:
// protected cluster-scoped objects are listed without one, so they are
// looked up without one too.
func (e *Engine) protectedReason(id payload.ObjectID) (string, bool) {
	if why, ok := e.protected[id]; ok {
		return why, true
	}
	id.Namespace = ""
	why, ok := e.protected[id]
	return why, ok
}

// markedFor is the set of objects rel's delete manifests name, built once
// per pass: a look-up per delete keeps the gate linear in the payload.
func markedFor(rel *payload.Release) map[payload.ObjectID]bool {
	marked := map[payload.ObjectID]bool{}
	for _, m := range rel.Manifests {
		if m.Delete() {
			marked[m.ID()] = true
		}
	}
	return marked
}
