package payload

import "k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

// clusterScopedBuiltins are the built-in kinds a cluster serves without a
// namespace. Client-go's scheme knows types, not scopes, so the list is
// kept here; a kind it lacks is not judged.
var clusterScopedBuiltins = map[GroupKind]bool{
	{"", "Namespace"}: true, {"", "Node"}: true, {"", "PersistentVolume"}: true, {"", "ComponentStatus"}: true,
	{"rbac.authorization.k8s.io", "ClusterRole"}: true, {"rbac.authorization.k8s.io", "ClusterRoleBinding"}: true,
	{"apiextensions.k8s.io", "CustomResourceDefinition"}: true, {"apiregistration.k8s.io", "APIService"}: true,
	{"storage.k8s.io", "StorageClass"}: true, {"storage.k8s.io", "CSIDriver"}: true, {"storage.k8s.io", "CSINode"}: true,
	{"storage.k8s.io", "VolumeAttachment"}: true, {"storage.k8s.io", "VolumeAttributesClass"}: true,
	{"scheduling.k8s.io", "PriorityClass"}: true, {"node.k8s.io", "RuntimeClass"}: true,
	{"admissionregistration.k8s.io", "ValidatingWebhookConfiguration"}:   true,
	{"admissionregistration.k8s.io", "MutatingWebhookConfiguration"}:     true,
	{"admissionregistration.k8s.io", "ValidatingAdmissionPolicy"}:        true,
	{"admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding"}: true,
	{"certificates.k8s.io", "CertificateSigningRequest"}:                 true, {"networking.k8s.io", "IngressClass"}: true,
	{"flowcontrol.apiserver.k8s.io", "FlowSchema"}: true, {"flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"}: true,
	{"project.openshift.io", "Project"}: true, {"security.openshift.io", "SecurityContextConstraints"}: true,
	{"quota.openshift.io", "ClusterResourceQuota"}: true, {"user.openshift.io", "User"}: true,
	{"user.openshift.io", "Group"}: true, {"user.openshift.io", "Identity"}: true,
	{"oauth.openshift.io", "OAuthClient"}: true, {"image.openshift.io", "Image"}: true,
	{"authorization.openshift.io", "ClusterRole"}: true, {"authorization.openshift.io", "ClusterRoleBinding"}: true,
}

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
		if ns == "" || !idx.clusterScoped(groupKindOf(m)) {
			continue
		}
		findings = append(findings, atKey(idx.r, m, "namespace", RuleNamespaceOnClusterScoped, SeverityError,
			"%s is cluster-scoped, but the manifest sets metadata.namespace %q, which the API ignores; remove the namespace", groupKindOf(m), ns))
	}
	return findings
}

// clusterScoped reports whether gk is known to be cluster-scoped.
func (idx *releaseIndex) clusterScoped(gk GroupKind) bool {
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
