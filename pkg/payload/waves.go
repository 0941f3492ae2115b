package payload

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// providerKinds provide what later manifests need: a place to live in, a
// type to be, an API to be served by.
var providerKinds = []schema.GroupKind{NamespaceKind, ProjectKind, CRDKind, APIServiceKind}

// barrierKinds end a wave and run alone: providers, admission changes and
// the kinds whose health the engine waits on.
var barrierKinds = kindSet(providerKinds, AdmissionKinds, HealthCheckedKinds)

// passiveKinds are the built-in kinds that neither provide, admit nor wait:
// objects of these kinds may be written in any order within a wave. A
// built-in kind not listed here (Pod, ResourceQuota, LimitRange,
// PriorityClass…) changes admission or is unknown to this rule, so it is a
// barrier.
var passiveKinds = kindSet(
	kindsOf("", "ConfigMap", "Secret", "ServiceAccount", "Service"),
	kindsOf("rbac.authorization.k8s.io", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"),
	kindsOf("policy", "PodDisruptionBudget"),
	kindsOf("networking.k8s.io", "NetworkPolicy"),
)

// WaveRule decides which manifests may share a wave: consecutive manifests
// of one component none of which can affect another, written concurrently.
// Every other manifest is a barrier: it runs alone, after the wave before
// it and before the one after it.
type WaveRule struct {
	// payloadCRDs are the kinds a CRD of this payload defines: the pass may
	// be creating or changing the type, so their objects are barriers.
	payloadCRDs map[schema.GroupKind]bool
	// repeats are the manifests that name an object an earlier manifest
	// names too: the later one wins only if it runs after, not beside.
	repeats map[*Manifest]bool
	served  func(schema.GroupVersionKind) bool
}

// NewWaveRule returns the rule for rel. served tells whether the cluster
// already serves a kind in a version, that is whether its CRD is
// established; nil means nothing is known to be served, as offline.
func NewWaveRule(rel *Release, served func(schema.GroupVersionKind) bool) *WaveRule {
	w := &WaveRule{payloadCRDs: map[schema.GroupKind]bool{}, repeats: map[*Manifest]bool{}, served: served}
	if rel == nil {
		return w
	}
	seen := make(map[ObjectID]bool, len(rel.Manifests))
	for _, m := range rel.Manifests {
		if m.Obj == nil {
			continue
		}
		id := m.ID()
		w.repeats[m] = seen[id]
		seen[id] = true
		if !m.IsCRD() {
			continue
		}
		group, _, _ := unstructured.NestedString(m.Obj.Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(m.Obj.Object, "spec", "names", "kind")
		w.payloadCRDs[schema.GroupKind{Group: group, Kind: kind}] = true
	}
	return w
}

// Passive reports whether m may share a wave with its neighbours. The safe
// answer is false: a custom resource is passive only when the cluster
// serves its kind already and no CRD of this payload defines it; a kind
// nobody knows is a barrier.
func (w *WaveRule) Passive(m *Manifest) bool {
	if w == nil || m == nil {
		return false
	}
	gk := m.GVK.GroupKind()
	switch {
	case barrierKinds[gk], isTokenSecret(m), w.repeats[m]:
		return false
	case passiveKinds[gk]:
		return true
	case builtinGroup(gk.Group), w.payloadCRDs[gk], w.served == nil:
		return false
	}
	return w.served(m.GVK)
}

// isTokenSecret reports whether m is a ServiceAccount token Secret: the
// token controller deletes one whose ServiceAccount it cannot find, so it
// must follow the ServiceAccount, not race it in a wave.
func isTokenSecret(m *Manifest) bool {
	if m.GVK.GroupKind() != (schema.GroupKind{Kind: "Secret"}) || m.Obj == nil {
		return false
	}
	t, _, _ := unstructured.NestedString(m.Obj.Object, "type")
	return t == "kubernetes.io/service-account-token"
}

// builtinGroup reports whether group belongs to Kubernetes itself, whose
// kinds not listed as passive are barriers. CRDs may claim such groups only
// by approval, so guessing built-in errs on the safe side.
func builtinGroup(group string) bool {
	return !strings.Contains(group, ".") || group == "k8s.io" || strings.HasSuffix(group, ".k8s.io")
}
