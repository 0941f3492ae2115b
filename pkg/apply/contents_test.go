package apply

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	"github.com/payload-applier/payload-applier/pkg/apply/deletion"
	"github.com/payload-applier/payload-applier/pkg/graph"
	"github.com/payload-applier/payload-applier/pkg/payload"
)

var widgetsGVR = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}

func unstructuredOf(apiVersion, kind, ns, name string) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion(apiVersion)
	obj.SetKind(kind)
	obj.SetNamespace(ns)
	obj.SetName(name)
	obj.SetUID(types.UID("uid-" + ns + "-" + name))
	return obj
}

// destructiveCluster is a fake cluster with namespace ns holding two
// ConfigMaps and a Secret, and the CRD widgets.example.com serving three
// Widgets; it counts the LISTs of secrets and widgets.
func destructiveCluster(t *testing.T) (*Engine, *record.FakeRecorder, *int) {
	t.Helper()
	rm := meta.NewDefaultRESTMapper([]schema.GroupVersion{{Version: "v1"}})
	rm.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	rm.Add(schema.GroupVersionKind{Version: "v1", Kind: "Secret"}, meta.RESTScopeNamespace)
	rm.Add(schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, meta.RESTScopeRoot)
	rm.Add(payload.CRDGVK, meta.RESTScopeRoot)
	crd := liveCRD("widgets.example.com", "example.com", "widgets", "Widget", "Namespaced", "v1beta1", "v1")
	objs := []runtime.Object{
		unstructuredOf("v1", "Namespace", "", "ns"), crd,
		unstructuredOf("v1", "ConfigMap", "ns", "a"), unstructuredOf("v1", "ConfigMap", "ns", "b"), unstructuredOf("v1", "Secret", "ns", "s"),
		unstructuredOf("v1", "ConfigMap", "other", "elsewhere"),
		unstructuredOf("example.com/v1", "Widget", "x", "w1"), unstructuredOf("example.com/v1", "Widget", "y", "w2"), unstructuredOf("example.com/v1", "Widget", "y", "w3"),
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		configMapsGVR: "ConfigMapList", {Version: "v1", Resource: "secrets"}: "SecretList", {Version: "v1", Resource: "events"}: "EventList",
		{Version: "v1", Resource: "namespaces"}: "NamespaceList", widgetsGVR: "WidgetList",
		{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}: "CustomResourceDefinitionList",
	}, objs...)
	lists := 0
	dyn.PrependReactor("list", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if r := a.GetResource().Resource; r == "secrets" || r == "widgets" {
			lists++
		}
		return false, nil, nil
	})
	dyn.PrependReactor("patch", "*", answerApplyPatches)
	disc := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{Resources: []*metav1.APIResourceList{{
		GroupVersion: "v1",
		APIResources: []metav1.APIResource{
			{Name: "configmaps", Kind: "ConfigMap", Namespaced: true, Verbs: []string{"list", "delete"}},
			{Name: "secrets", Kind: "Secret", Namespaced: true, Verbs: []string{"list"}},
			{Name: "events", Kind: "Event", Namespaced: true, Verbs: []string{"list"}},
			{Name: "configmaps/status", Kind: "ConfigMap", Namespaced: true, Verbs: []string{"get"}},
			{Name: "namespaces", Kind: "Namespace", Verbs: []string{"list"}},
		},
	}}}}
	recorder := record.NewFakeRecorder(20)
	e, err := New(Config{Dynamic: dyn, Mapper: resettable{rm}, Discovery: disc, Ledger: &deletion.MemoryStore{},
		Recorder: recorder, EventObject: &corev1.ObjectReference{Kind: "ClusterVersion", Name: "version"}})
	if err != nil {
		t.Fatal(err)
	}
	return e, recorder, &lists
}

const (
	deleteNamespaceYAML = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ns\n  annotations:\n    " + deleteAnn + "\n"
	deleteCRDYAML       = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\n  annotations:\n    " + deleteAnn + "\n"
)

// TestADestructiveDeleteNamesWhatItTakesBeforeTheDelete: a Namespace or
// CRD delete records an Event counting, per kind, the objects the payload
// does not name that go with it, listed in pages; plan says the same.
func TestADestructiveDeleteNamesWhatItTakesBeforeTheDelete(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       []string
	}{
		{"namespace", deleteNamespaceYAML, []string{"Deleting Namespace/ns (0000_50_c_02_gone.yaml:1) also deletes 2 objects the payload does not manage: 1 ConfigMap, 1 Secret", "ConfigMap/ns/a", "Secret/ns/s"}},
		{"crd", deleteCRDYAML, []string{"also deletes 3 objects the payload does not manage: 3 Widget", "Widget.example.com/x/w1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rel := planRelease(t, planDoc{"0000_50_c_01_b.yaml", cmYAML("b", "v")}, planDoc{"0000_50_c_02_gone.yaml", tc.yaml})
			rel.Version = "2"
			e, recorder, lists := destructiveCluster(t)

			plan, err := e.Plan(context.Background(), rel, PlanOptions{Mode: graph.ModeUpdate})
			if err != nil {
				t.Fatal(err)
			}
			a := actionsOf(plan)
			var planned PlannedAction
			for _, p := range a {
				if p.Manifest.File == "0000_50_c_02_gone.yaml" {
					planned = p
				}
			}
			if planned.Action != ActionDeleteRequested || !strings.Contains(planned.Reason, "takes with it "+strings.SplitN(tc.want[0], "also deletes ", 2)[1]) {
				t.Errorf("plan: %s (%s), want a delete that says what it takes", planned.Action, planned.Reason)
			}

			if _, err := e.Sync(context.Background(), rel, SyncOptions{Mode: graph.ModeUpdate}); err != nil {
				t.Fatal(err)
			}
			var found string
			for len(recorder.Events) > 0 {
				if ev := <-recorder.Events; strings.Contains(ev, ReasonDeleteTakesObjects) {
					found = ev
				}
			}
			for _, w := range tc.want {
				if !strings.Contains(found, w) {
					t.Errorf("Event %q lacks %q", found, w)
				}
			}
			// The fake drops the page size; the e2e test reads it from the audit log.
			if *lists == 0 {
				t.Error("the contents were not listed")
			}
		})
	}
}

func TestContentsString(t *testing.T) {
	c := Contents{ByKind: map[string]int{"Secret": 1, "ConfigMap": 3, "Pod": 3}, Named: []string{"a"}, Partial: true}
	if got, want := c.String(), "at least 7 objects the payload does not manage: 3 ConfigMap, 3 Pod, 1 Secret (a, …)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}
