package payload

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// clusterScopedBuiltins are the built-in kinds a cluster serves without a
// namespace. Client-go's scheme knows types, not scopes, so the list is
// kept here; a kind it lacks is not judged.
var clusterScopedBuiltins = kindSet(
	[]schema.GroupKind{NamespaceKind, CRDKind, APIServiceKind, ProjectKind},
	kindsOf("", "Node", "PersistentVolume", "ComponentStatus"),
	kindsOf("rbac.authorization.k8s.io", "ClusterRole", "ClusterRoleBinding"),
	kindsOf("storage.k8s.io", "StorageClass", "CSIDriver", "CSINode", "VolumeAttachment", "VolumeAttributesClass"),
	kindsOf("scheduling.k8s.io", "PriorityClass"),
	kindsOf("node.k8s.io", "RuntimeClass"),
	AdmissionKinds, // all cluster-scoped
	kindsOf("certificates.k8s.io", "CertificateSigningRequest"),
	kindsOf("networking.k8s.io", "IngressClass"),
	kindsOf("flowcontrol.apiserver.k8s.io", "FlowSchema", "PriorityLevelConfiguration"),
	kindsOf("security.openshift.io", "SecurityContextConstraints"),
	kindsOf("quota.openshift.io", "ClusterResourceQuota"),
	kindsOf("user.openshift.io", "User", "Group", "Identity"),
	kindsOf("oauth.openshift.io", "OAuthClient"),
	kindsOf("image.openshift.io", "Image"),
	kindsOf("authorization.openshift.io", "ClusterRole", "ClusterRoleBinding"),
)

// clusterScopedGroups serve only cluster-scoped kinds.
var clusterScopedGroups = map[string]bool{"config.openshift.io": true}

// checkNamespaceScope (namespace-on-cluster-scoped): metadata.namespace on
// a cluster-scoped kind. The API ignores it, so the object is not where
// the manifest says, and a delete manifest written this way looks like it
// names another object than the one it deletes. The scope comes from the
// built-in list above or from the payload's own CRD.
func checkNamespaceScope(idx *releaseIndex, _ *Release) []Finding {
	var findings []Finding
	for _, m := range idx.r.Manifests {
		ns := m.Obj.GetNamespace()
		if ns == "" || !idx.clusterScoped(m.GVK.GroupKind()) {
			continue
		}
		findings = append(findings, atKey(idx.r, m, "namespace", RuleNamespaceOnClusterScoped, SeverityError,
			"%s is cluster-scoped, but the manifest sets metadata.namespace %q, which the API ignores; remove the namespace", m.GVK.GroupKind(), ns))
	}
	return findings
}

// clusterScoped reports whether gk is known to be cluster-scoped.
func (idx *releaseIndex) clusterScoped(gk schema.GroupKind) bool {
	if clusterScopedBuiltins[gk] || clusterScopedGroups[gk.Group] {
		return true
	}
	crd, ok := idx.crdByKind[gk]
	if !ok {
		return false
	}
	scope, _, _ := unstructured.NestedString(crd.Manifest.Obj.Object, "spec", "scope")
	return scope == "Cluster"
}
