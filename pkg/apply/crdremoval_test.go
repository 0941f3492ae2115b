package apply

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/openshift/library-go/pkg/manifest"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/payload-applier/payload-applier/pkg/apply/deletion"
	"github.com/payload-applier/payload-applier/pkg/crdcompat"
	"github.com/payload-applier/payload-applier/pkg/payload"
)

// removalRelease is release version with widgets.example.com, v1beta1
// deprecated and, when removedIn is set, scheduled for removal then.
func removalRelease(version, removedIn string) *payload.Release {
	crd := liveCRD("widgets.example.com", "example.com", "widgets", "Widget", "Namespaced", "v1beta1", "v1")
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	versions[0].(map[string]any)["deprecated"] = true
	_ = unstructured.SetNestedSlice(crd.Object, versions, "spec", "versions")
	unstructured.RemoveNestedField(crd.Object, "status")
	if removedIn != "" {
		crd.SetAnnotations(map[string]string{crdcompat.RemovedInAnnotation("example.com"): removedIn})
	}
	m := &payload.Manifest{Manifest: manifest.Manifest{Obj: crd, GVK: payload.CRDGVK}}
	return &payload.Release{Version: version, Manifests: []*payload.Manifest{m}}
}

// removalEngine is an engine on a fake cluster with widgets.example.com
// storing stored and holding widgets Widgets; requests counts what it is
// asked, by verb and resource.
func removalEngine(t *testing.T, stored []string, widgets int) (*Engine, *dynamicfake.FakeDynamicClient, map[string]int) {
	t.Helper()
	crd := liveCRD("widgets.example.com", "example.com", "widgets", "Widget", "Namespaced", "v1beta1", "v1")
	_ = unstructured.SetNestedStringSlice(crd.Object, stored, "status", "storedVersions")
	objs := []runtime.Object{crd}
	for i := range widgets {
		objs = append(objs, unstructuredOf("example.com/v1", "Widget", "ns", string(rune('a'+i))))
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		widgetsGVR: "WidgetList", payload.CRDGVR: "CustomResourceDefinitionList",
	}, objs...)
	requests := map[string]int{}
	dyn.PrependReactor("*", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		requests[a.GetVerb()+" "+a.GetResource().Resource]++
		return false, nil, nil
	})
	e, err := New(Config{Dynamic: dyn, Mapper: resettable{meta.NewDefaultRESTMapper(nil)}, Ledger: &deletion.MemoryStore{}})
	if err != nil {
		t.Fatal(err)
	}
	return e, dyn, requests
}

func TestPendingCRDRemovals(t *testing.T) {
	ctx := context.Background()

	t.Run("a release without a schedule costs no request", func(t *testing.T) {
		e, _, requests := removalEngine(t, []string{"v1beta1", "v1"}, 2)
		if got := e.PendingCRDRemovals(ctx, removalRelease("1.0.0", "")); got != nil || len(requests) != 0 {
			t.Errorf("pending %v after requests %v, want none", got, requests)
		}
	})
	t.Run("a removal not due yet costs no request", func(t *testing.T) {
		e, _, requests := removalEngine(t, []string{"v1beta1", "v1"}, 2)
		if got := e.PendingCRDRemovals(ctx, removalRelease("1.0.0", "1.2")); got != nil || len(requests) != 0 {
			t.Errorf("pending %v after requests %v, want none", got, requests)
		}
	})
	t.Run("a due removal of a stored version counts the objects", func(t *testing.T) {
		e, _, requests := removalEngine(t, []string{"v1beta1", "v1"}, 3)
		got := e.PendingCRDRemovals(ctx, removalRelease("1.0.0", "1.1"))
		if len(got) != 1 || got[0].Version != "v1beta1" || got[0].Objects != 3 || got[0].Err != "" {
			t.Errorf("pending %+v, want v1beta1 with 3 objects", got)
		}
		if requests["get customresourcedefinitions"] != 1 || requests["list widgets"] != 1 {
			t.Errorf("requests %v, want one GET of the CRD and one LIST", requests)
		}
	})
	t.Run("a version no longer stored is not read further", func(t *testing.T) {
		e, _, requests := removalEngine(t, []string{"v1"}, 3)
		if got := e.PendingCRDRemovals(ctx, removalRelease("1.0.0", "1.1")); got != nil || requests["list widgets"] != 0 {
			t.Errorf("pending %v after requests %v, want none and no LIST", got, requests)
		}
	})
	t.Run("the apiserver's remainingItemCount counts without paging", func(t *testing.T) {
		e, dyn, _ := removalEngine(t, []string{"v1beta1", "v1"}, 0)
		dyn.PrependReactor("list", "widgets", func(clienttesting.Action) (bool, runtime.Object, error) {
			list := &unstructured.UnstructuredList{Items: []unstructured.Unstructured{*unstructuredOf("example.com/v1", "Widget", "ns", "a")}}
			list.SetContinue("next")
			list.SetRemainingItemCount(ptr.To[int64](41))
			return true, list, nil
		})
		if got := e.PendingCRDRemovals(ctx, removalRelease("1.0.0", "1.1")); len(got) != 1 || got[0].Objects != 42 {
			t.Errorf("pending %+v, want 42 objects", got)
		}
	})
	t.Run("objects that cannot be counted still block, saying why", func(t *testing.T) {
		e, dyn, _ := removalEngine(t, []string{"v1beta1", "v1"}, 1)
		dyn.PrependReactor("list", "widgets", func(clienttesting.Action) (bool, runtime.Object, error) {
			return true, nil, errors.New("etcd timeout")
		})
		got := e.PendingCRDRemovals(ctx, removalRelease("1.0.0", "1.1"))
		if len(got) != 1 || got[0].Objects != -1 || !strings.Contains(got[0].Err, "etcd timeout") {
			t.Errorf("pending %+v, want the removal with the error", got)
		}
	})
	t.Run("plan reads the schedule from the live CRD", func(t *testing.T) {
		e, dyn, _ := removalEngine(t, []string{"v1beta1", "v1"}, 2)
		live := removalRelease("1.0.0", "1.1").Manifests[0].Obj.DeepCopy()
		_ = unstructured.SetNestedStringSlice(live.Object, []string{"v1beta1", "v1"}, "status", "storedVersions")
		if err := dyn.Tracker().Update(payload.CRDGVR, live, ""); err != nil {
			t.Fatal(err)
		}
		got := e.LivePendingCRDRemovals(ctx, "1.0.5", []string{"widgets.example.com", "absent.example.com"})
		if len(got) != 1 || got[0].CRD != "widgets.example.com" || got[0].Objects != 2 {
			t.Errorf("pending %+v, want widgets.example.com with 2 objects", got)
		}
	})
}
