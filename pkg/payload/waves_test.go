package payload

import (
	"testing"

	"github.com/openshift/library-go/pkg/manifest"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func waveManifest(apiVersion, kind string, fields map[string]interface{}) *Manifest {
	obj := map[string]interface{}{"apiVersion": apiVersion, "kind": kind, "metadata": map[string]interface{}{"name": "x"}}
	for k, v := range fields {
		obj[k] = v
	}
	u := &unstructured.Unstructured{Object: obj}
	return &Manifest{Manifest: manifest.Manifest{GVK: u.GroupVersionKind(), Obj: u}}
}

func TestWaveRulePassive(t *testing.T) {
	widgetCRD := waveManifest("apiextensions.k8s.io/v1", "CustomResourceDefinition", map[string]interface{}{
		"spec": map[string]interface{}{"group": "example.com", "names": map[string]interface{}{"kind": "Widget"}},
	})
	rel := &Release{Manifests: []*Manifest{widgetCRD}}
	served := func(gvk schema.GroupVersionKind) bool {
		gk := gvk.GroupKind()
		return gk.Group == "monitoring.coreos.com" || gk.Group == "example.com" || gk.Group == "apps" || gk.Group == "config.openshift.io"
	}
	rule := NewWaveRule(rel, served)
	offline := NewWaveRule(rel, nil)
	for _, tc := range []struct {
		apiVersion, kind string
		want, offline    bool
	}{
		// Passive built-ins share a wave, online or offline.
		{"v1", "ConfigMap", true, true},
		{"v1", "Secret", true, true},
		{"v1", "ServiceAccount", true, true},
		{"v1", "Service", true, true},
		{"rbac.authorization.k8s.io/v1", "ClusterRoleBinding", true, true},
		{"policy/v1", "PodDisruptionBudget", true, true},
		{"networking.k8s.io/v1", "NetworkPolicy", true, true},
		// Providers.
		{"v1", "Namespace", false, false},
		{"apiextensions.k8s.io/v1", "CustomResourceDefinition", false, false},
		{"apiregistration.k8s.io/v1", "APIService", false, false},
		// Admission.
		{"admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration", false, false},
		{"admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration", false, false},
		{"admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy", false, false},
		{"admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding", false, false},
		// Health checks the engine waits on, even when served.
		{"apps/v1", "Deployment", false, false},
		{"apps/v1", "DaemonSet", false, false},
		{"batch/v1", "Job", false, false},
		{"config.openshift.io/v1", "ClusterOperator", false, false},
		// Built-ins not known passive: served or not, a barrier.
		{"apps/v1", "StatefulSet", false, false},
		{"v1", "ResourceQuota", false, false},
		{"scheduling.k8s.io/v1", "PriorityClass", false, false},
		{"gateway.networking.k8s.io/v1", "Gateway", false, false},
		// Custom resources: passive only when served and not defined here.
		{"monitoring.coreos.com/v1", "ServiceMonitor", true, false},
		{"config.openshift.io/v1", "FeatureGate", true, false},
		{"example.com/v1", "Widget", false, false},
		{"unknown.example.org/v1", "Thing", false, false},
	} {
		m := waveManifest(tc.apiVersion, tc.kind, nil)
		if got := rule.Passive(m); got != tc.want {
			t.Errorf("%s %s: Passive = %t, want %t", tc.apiVersion, tc.kind, got, tc.want)
		}
		if got := offline.Passive(m); got != tc.offline {
			t.Errorf("%s %s offline: Passive = %t, want %t", tc.apiVersion, tc.kind, got, tc.offline)
		}
	}
	token := waveManifest("v1", "Secret", map[string]interface{}{"type": "kubernetes.io/service-account-token"})
	if rule.Passive(token) {
		t.Error("a ServiceAccount token Secret is passive: it would race its ServiceAccount")
	}
	// The second manifest of one object runs after the first, so that the
	// later one wins as in the CVO.
	first, second := waveManifest("v1", "ConfigMap", nil), waveManifest("v1", "ConfigMap", nil)
	twice := NewWaveRule(&Release{Manifests: []*Manifest{first, second}}, nil)
	if !twice.Passive(first) || twice.Passive(second) {
		t.Errorf("an object named twice: passive %v then %v, want true then false", twice.Passive(first), twice.Passive(second))
	}
	var nilRule *WaveRule
	if nilRule.Passive(waveManifest("v1", "ConfigMap", nil)) || rule.Passive(nil) {
		t.Error("a nil rule or manifest must be a barrier")
	}
}

// TestHealthCheckedKindsAreBarriers: every kind the engine waits on ends a
// wave, whatever else the rule says.
func TestHealthCheckedKindsAreBarriers(t *testing.T) {
	rule := NewWaveRule(nil, func(schema.GroupVersionKind) bool { return true })
	for _, gk := range append(append([]schema.GroupKind{}, HealthCheckedKinds...), AdmissionKinds...) {
		m := waveManifest(schema.GroupVersion{Group: gk.Group, Version: "v1"}.String(), gk.Kind, nil)
		if rule.Passive(m) {
			t.Errorf("%s is passive", gk)
		}
	}
}
