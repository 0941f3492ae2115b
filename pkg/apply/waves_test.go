package apply

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/payload-applier/payload-applier/pkg/apply/deletion"
	"github.com/payload-applier/payload-applier/pkg/graph"
	"github.com/payload-applier/payload-applier/pkg/payload"
)

// TestWaveRuleAsksTheClusterWhatItServes: a custom resource shares a wave
// only when discovery already serves its kind; one the cluster does not
// serve yet, a health-checked kind and a namespace are barriers.
func TestWaveRuleAsksTheClusterWhatItServes(t *testing.T) {
	rel := planRelease(t,
		planDoc{"0000_50_a_01_cm.yaml", cmYAML("cm", "v")},
		planDoc{"0000_50_a_02_sm.yaml", "apiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\nmetadata:\n  name: sm\n  namespace: ns\n"},
		planDoc{"0000_50_a_03_w.yaml", "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n"},
		planDoc{"0000_50_a_04_dep.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: dep\n  namespace: ns\n"},
		planDoc{"0000_50_a_05_ns.yaml", "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ns\n"},
	)
	rm, dyn := fakeConfigMaps()
	rm.Add(schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "ServiceMonitor"}, meta.RESTScopeNamespace)
	rm.Add(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, meta.RESTScopeNamespace)
	e, err := New(Config{Dynamic: dyn, Mapper: resettable{rm}, Ledger: &deletion.MemoryStore{}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"cm": true, "sm": true, "w": false, "dep": false, "ns": false}
	for _, task := range tasksFor(rel, e.waveRule(rel)) {
		name := rel.Manifests[task.Index].Obj.GetName()
		if task.Passive != want[name] {
			t.Errorf("%s: passive %v, want %v", name, task.Passive, want[name])
		}
	}
	// Offline, nothing is known to be served: the ServiceMonitor is a barrier.
	for _, task := range Tasks(rel) {
		if name := rel.Manifests[task.Index].Obj.GetName(); task.Passive != (name == "cm") {
			t.Errorf("offline %s: passive %v", name, task.Passive)
		}
	}
}

// TestHealthCheckedKindsListsEveryCheck: each kind CheckHealth can find
// unhealthy is in payload.HealthCheckedKinds, the list that makes it a
// barrier in a wave, and a kind outside the list is always healthy.
func TestHealthCheckedKindsListsEveryCheck(t *testing.T) {
	unhealthy := func(apiVersion, kind string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": apiVersion, "kind": kind,
			"metadata": map[string]interface{}{"name": "x", "namespace": "ns"}}}
		now := metav1.Now()
		u.SetDeletionTimestamp(&now) // terminating workloads are unhealthy
		return u
	}
	for _, tc := range []struct{ apiVersion, kind string }{
		{"apiextensions.k8s.io/v1", "CustomResourceDefinition"},
		{"apps/v1", "Deployment"},
		{"apps/v1", "DaemonSet"},
		{"batch/v1", "Job"},
		{"config.openshift.io/v1", "ClusterOperator"},
	} {
		live := unhealthy(tc.apiVersion, tc.kind)
		if CheckHealth(live, live, graph.ModeUpdate).Healthy() {
			t.Errorf("%s: no health rule found it unhealthy", tc.kind)
		}
		if gk := live.GroupVersionKind().GroupKind(); !slices.Contains(payload.HealthCheckedKinds, gk) {
			t.Errorf("%s has a health check but is not in payload.HealthCheckedKinds", gk)
		}
	}
	if len(payload.HealthCheckedKinds) != 5 {
		t.Errorf("payload.HealthCheckedKinds has %d kinds; this test checks 5", len(payload.HealthCheckedKinds))
	}
	for _, kind := range []string{"ConfigMap", "Secret", "Service"} {
		if live := unhealthy("v1", kind); !CheckHealth(live, live, graph.ModeUpdate).Healthy() {
			t.Errorf("%s is judged by a health check outside payload.HealthCheckedKinds", kind)
		}
	}
}
