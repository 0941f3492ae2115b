package payload

import "k8s.io/apimachinery/pkg/runtime/schema"

// The kinds the applier reasons about by name, declared once for every
// package: compare with m.GVK.GroupKind() or id.GroupKind().
var (
	CRDKind             = schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}
	APIServiceKind      = schema.GroupKind{Group: "apiregistration.k8s.io", Kind: "APIService"}
	NamespaceKind       = schema.GroupKind{Kind: "Namespace"}
	DeploymentKind      = schema.GroupKind{Group: "apps", Kind: "Deployment"}
	DaemonSetKind       = schema.GroupKind{Group: "apps", Kind: "DaemonSet"}
	JobKind             = schema.GroupKind{Group: "batch", Kind: "Job"}
	ClusterVersionKind  = schema.GroupKind{Group: "config.openshift.io", Kind: "ClusterVersion"}
	ClusterOperatorKind = schema.GroupKind{Group: "config.openshift.io", Kind: "ClusterOperator"}
	FeatureGateKind     = schema.GroupKind{Group: "config.openshift.io", Kind: "FeatureGate"}
	SCCKind             = schema.GroupKind{Group: "security.openshift.io", Kind: "SecurityContextConstraints"}
	// ProjectKind is an OpenShift Project: a Namespace seen through another API.
	ProjectKind = schema.GroupKind{Group: "project.openshift.io", Kind: "Project"}
)

// BulkDataKinds hold data, often much of it, and share their namespaces
// with many objects no payload names: reading them by LIST costs more.
var BulkDataKinds = []schema.GroupKind{{Kind: "ConfigMap"}, {Kind: "Secret"}}

// TypedCreateKinds are created through their Go types from the first, as
// the CVO's typed clients create them: their schemas require fields that
// the types always send and manifests leave out (a ClusterOperator's
// empty spec; the nullable fields of SecurityContextConstraints), so the
// manifest as written would be refused.
var TypedCreateKinds = []schema.GroupKind{ClusterOperatorKind, SCCKind}

// HealthCheckedKinds are the kinds whose live state the engine judges
// (apply.CheckHealth) and waits on; a health check is a barrier in a wave.
var HealthCheckedKinds = []schema.GroupKind{CRDKind, DeploymentKind, DaemonSetKind, JobKind, ClusterOperatorKind}

// AdmissionKinds change what the apiserver admits.
var AdmissionKinds = kindsOf("admissionregistration.k8s.io",
	"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration",
	"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
	"MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding")

// CRDGVK and CRDGVR are the version of CustomResourceDefinition the
// applier reads and writes, apiextensions.k8s.io/v1.
var (
	CRDGVK = CRDKind.WithVersion("v1")
	CRDGVR = CRDGVK.GroupVersion().WithResource("customresourcedefinitions")
)

// IsCRD reports whether the manifest is a CustomResourceDefinition, in
// any version.
func (m *Manifest) IsCRD() bool {
	return m.GVK.GroupKind() == CRDKind
}

// GroupKind returns the API type of the object, without its version.
func (id ObjectID) GroupKind() schema.GroupKind {
	return schema.GroupKind{Group: id.Group, Kind: id.Kind}
}

// objectID names the object of kind gk in namespace ("" when cluster-scoped).
func objectID(gk schema.GroupKind, namespace, name string) ObjectID {
	return ObjectID{Group: gk.Group, Kind: gk.Kind, Namespace: namespace, Name: name}
}

// kindsOf lists kinds of one group.
func kindsOf(group string, kinds ...string) []schema.GroupKind {
	out := make([]schema.GroupKind, 0, len(kinds))
	for _, k := range kinds {
		out = append(out, schema.GroupKind{Group: group, Kind: k})
	}
	return out
}

// kindSet gathers lists of kinds into a set.
func kindSet(lists ...[]schema.GroupKind) map[schema.GroupKind]bool {
	set := map[schema.GroupKind]bool{}
	for _, list := range lists {
		for _, gk := range list {
			set[gk] = true
		}
	}
	return set
}
