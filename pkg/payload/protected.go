package payload

import "cmp"

// protectedNamespaces are never deleted, whatever a payload says: losing one
// takes the cluster or the applier down with it (kube-node-lease holds the
// nodes' heartbeats).
var protectedNamespaces = []string{"kube-system", "kube-public", "kube-node-lease", "default"}

// protectedCRDs serve the applier's own state.
var protectedCRDs = []string{
	"clusterversions.config.openshift.io",
	"clusteroperators.config.openshift.io",
}

// Applier names the applier's own objects, which no payload may delete:
// the engine refuses such a DELETE and lint rejects the manifest
// (protected-delete).
type Applier struct {
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

// DefaultApplier returns the names the applier's own manifests use.
func DefaultApplier() Applier {
	return Applier{
		Namespace:      "openshift-cluster-version",
		Deployment:     "cluster-version-operator",
		Ledger:         "payload-applier-delete-ledger",
		ServiceAccount: "cluster-version-operator",
		Lease:          "payload-applier",
		PayloadStore:   "payload-applier-payloads",
		OperandCleanup: "payload-applier-operand-cleanup",
	}
}

// WithDefaults fills the fields s leaves empty from DefaultApplier.
func (s Applier) WithDefaults() Applier {
	def := DefaultApplier()
	s.Namespace = cmp.Or(s.Namespace, def.Namespace)
	s.Deployment = cmp.Or(s.Deployment, def.Deployment)
	s.Ledger = cmp.Or(s.Ledger, def.Ledger)
	s.ServiceAccount = cmp.Or(s.ServiceAccount, def.ServiceAccount)
	s.Lease = cmp.Or(s.Lease, def.Lease)
	s.PayloadStore = cmp.Or(s.PayloadStore, def.PayloadStore)
	s.OperandCleanup = cmp.Or(s.OperandCleanup, def.OperandCleanup)
	return s
}

// Protected lists every object no payload may delete, with why. A
// cluster-scoped object is listed without a namespace.
func (s Applier) Protected() map[ObjectID]string {
	set := map[ObjectID]string{}
	for _, ns := range append(append([]string(nil), protectedNamespaces...), s.Namespace) {
		set[objectID(NamespaceKind, "", ns)] = "a protected namespace"
		// An OpenShift Project is its namespace seen through another API.
		set[objectID(ProjectKind, "", ns)] = "a protected namespace"
	}
	for _, crd := range protectedCRDs {
		set[objectID(CRDKind, "", crd)] = "the CustomResourceDefinition behind the applier's own status"
	}
	set[objectID(DeploymentKind, s.Namespace, s.Deployment)] = "the applier's own Deployment"
	set[ObjectID{Kind: "ServiceAccount", Namespace: s.Namespace, Name: s.ServiceAccount}] = "the applier's own ServiceAccount"
	for _, kind := range []string{"Role", "RoleBinding"} {
		set[ObjectID{Group: "rbac.authorization.k8s.io", Kind: kind, Namespace: s.Namespace, Name: s.ServiceAccount}] = "the applier's own " + kind
	}
	set[ObjectID{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding", Name: s.ServiceAccount}] = "the applier's own ClusterRoleBinding"
	set[ObjectID{Group: "coordination.k8s.io", Kind: "Lease", Namespace: s.Namespace, Name: s.Lease}] = "the applier's leader-election Lease"
	set[ObjectID{Kind: "PersistentVolumeClaim", Namespace: s.Namespace, Name: s.PayloadStore}] = "the applier's payload store"
	set[ObjectID{Kind: "ConfigMap", Namespace: s.Namespace, Name: s.Ledger}] = "the applier's delete ledger"
	set[ObjectID{Kind: "ConfigMap", Namespace: s.Namespace, Name: s.OperandCleanup}] = "the applier's operand cleanup state"
	set[objectID(ClusterVersionKind, "", "version")] = "the ClusterVersion the applier reports on"
	return set
}

// ProtectedReason says why id, as a delete manifest names it, is in set.
// A namespace a manifest sets on a cluster-scoped kind is ignored, as the
// DELETE ignores it: protected cluster-scoped objects are listed without
// one, so they are looked up without one too.
func ProtectedReason(set map[ObjectID]string, id ObjectID) (string, bool) {
	if why, ok := set[id]; ok {
		return why, true
	}
	id.Namespace = ""
	why, ok := set[id]
	return why, ok
}

// defaultProtected is the protected set with the applier's default names,
// the one lint judges by.
var defaultProtected = DefaultApplier().Protected()

// checkProtectedDelete (protected-delete): a delete manifest for an
// object the engine refuses to delete. Release CI stops such a payload,
// and the operator rejects it whole at load.
func checkProtectedDelete(r *Release, m *Manifest) []Finding {
	if !m.Delete() {
		return nil
	}
	why, ok := ProtectedReason(defaultProtected, m.ID())
	if !ok {
		return nil
	}
	return []Finding{atKey(r, m, DeleteAnnotation, RuleProtectedDelete, SeverityError,
		"%s is %s: the applier never deletes it, whatever a payload says; remove this delete manifest", m.ID(), why)}
}
