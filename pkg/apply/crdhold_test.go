package apply

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/payload-applier/payload-applier/pkg/apply/deletion"
	"github.com/payload-applier/payload-applier/pkg/graph"
)

func TestCreateHeld(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 10, 0, time.UTC)
	crd := func(status, ltt string) *unstructured.Unstructured {
		c := map[string]interface{}{"type": "Established", "status": status}
		if ltt != "" {
			c["lastTransitionTime"] = ltt
		}
		return &unstructured.Unstructured{Object: map[string]interface{}{"status": map[string]interface{}{"conditions": []interface{}{c}}}}
	}
	for _, tc := range []struct {
		name string
		crd  *unstructured.Unstructured
		want bool
	}{
		{"established this second", crd("True", "2026-01-01T00:00:10Z"), true},
		{"established 2 s ago, whole seconds", crd("True", "2026-01-01T00:00:08Z"), true},
		{"established 3 s ago", crd("True", "2026-01-01T00:00:07Z"), false},
		{"not established", crd("False", "2026-01-01T00:00:10Z"), false},
		{"no time", crd("True", ""), false},
		{"no conditions", &unstructured.Unstructured{Object: map[string]interface{}{}}, false},
	} {
		if got := CreateHeld(tc.crd, now); got != tc.want {
			t.Errorf("%s: CreateHeld = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A custom resource whose CRD the pass saw become Established just now is
// created by server-side apply, which the apiserver does not hold; once
// the hold is over, by a POST.
func TestACustomResourceOfANewCRDIsCreatedByApply(t *testing.T) {
	widgetsGVR := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	for name, age := range map[string]time.Duration{"new CRD": 0, "older CRD": 5 * time.Second} {
		t.Run(name, func(t *testing.T) {
			clock := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 10, 0, time.UTC))
			rm := meta.NewDefaultRESTMapper(nil)
			rm.Add(schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}, meta.RESTScopeNamespace)
			dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{widgetsGVR: "WidgetList"})
			verbs := map[string]int{}
			dyn.PrependReactor("*", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
				verbs[a.GetVerb()]++
				return answerApplyPatches(a)
			})
			e, err := New(Config{Dynamic: dyn, Mapper: resettable{rm}, Ledger: &deletion.MemoryStore{}, Clock: clock})
			if err != nil {
				t.Fatal(err)
			}
			e.noteEstablished(&unstructured.Unstructured{Object: map[string]interface{}{
				"spec": map[string]interface{}{"group": "example.com", "names": map[string]interface{}{"kind": "Widget"}},
				"status": map[string]interface{}{"conditions": []interface{}{map[string]interface{}{
					"type": "Established", "status": "True", "lastTransitionTime": clock.Now().Add(-age).Format(time.RFC3339)}}},
			}})
			rel := planRelease(t, planDoc{"0000_50_a_01_w.yaml", "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n  namespace: ns\nspec:\n  size: 1\n"})
			if res, err := e.Sync(context.Background(), rel, SyncOptions{Mode: graph.ModeInstall}); err != nil || !res.Complete() {
				t.Fatalf("sync: %v %v", err, res)
			}
			want := map[string]int{"create": 1}
			if age == 0 {
				want = map[string]int{"patch": 1}
			}
			if verbs["create"] != want["create"] || verbs["patch"] != want["patch"] {
				t.Errorf("requests %v; want %v", verbs, want)
			}
		})
	}
}
