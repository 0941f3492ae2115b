package storagemigration

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/payload-applier/payload-applier/pkg/payload"
)

var widgetsV1 = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}

// cluster holds the CRD widgets.example.com, v1 its storage version and
// v1alpha1 still stored, and n Widgets.
func cluster(n int) *dynamicfake.FakeDynamicClient {
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "widgets.example.com"},
		"spec": map[string]any{"group": "example.com", "scope": "Namespaced",
			"names":    map[string]any{"kind": "Widget", "plural": "widgets"},
			"versions": []any{map[string]any{"name": "v1alpha1", "served": true, "storage": false}, map[string]any{"name": "v1", "served": true, "storage": true}}},
		"status": map[string]any{"storedVersions": []any{"v1alpha1", "v1"}},
	}}
	objs := []runtime.Object{crd}
	for i := range n {
		w := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget"}}
		w.SetNamespace("ns")
		w.SetName(fmt.Sprintf("w%d", i))
		objs = append(objs, w)
	}
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		widgetsV1: "WidgetList", payload.CRDGVR: "CustomResourceDefinitionList"}, objs...)
}

func storedVersions(t *testing.T, c *dynamicfake.FakeDynamicClient) string {
	t.Helper()
	obj, err := c.Tracker().Get(payload.CRDGVR, "", "widgets.example.com")
	if err != nil {
		t.Fatal(err)
	}
	v, _, _ := unstructured.NestedStringSlice(obj.(*unstructured.Unstructured).Object, "status", "storedVersions")
	return strings.Join(v, ",")
}

func TestMigrateRewritesEveryObjectThenStoredVersions(t *testing.T) {
	c := cluster(3)
	c.PrependReactor("update", "widgets", func(a clienttesting.Action) (bool, runtime.Object, error) {
		switch a.(clienttesting.UpdateAction).GetObject().(*unstructured.Unstructured).GetName() {
		case "w1":
			return true, nil, apierrors.NewConflict(widgetsV1.GroupResource(), "w1", errors.New("changed"))
		case "w2":
			return true, nil, apierrors.NewNotFound(widgetsV1.GroupResource(), "w2")
		}
		return false, nil, nil
	})
	res, err := Migrate(context.Background(), c, "widgets.example.com", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Rewritten != 1 || res.Changed != 1 || res.Gone != 1 || res.StorageVersion != "v1" {
		t.Fatalf("result %+v, want one each of rewritten, changed, gone in v1", res)
	}
	if got := storedVersions(t, c); got != "v1" {
		t.Fatalf("storedVersions %s, want v1", got)
	}
}

func TestMigrateStopsAtAnErrorAndKeepsStoredVersions(t *testing.T) {
	c := cluster(2)
	c.PrependReactor("update", "widgets", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(widgetsV1.GroupResource(), "w0", errors.New("no"))
	})
	if _, err := Migrate(context.Background(), c, "widgets.example.com", Options{}); err == nil || !strings.Contains(err.Error(), "ns/w0") {
		t.Fatalf("err %v, want one naming the object", err)
	}
	if got := storedVersions(t, c); got != "v1alpha1,v1" {
		t.Fatalf("storedVersions %s after a failure, want it unchanged", got)
	}
}

func TestMigrateDryRunWritesNothing(t *testing.T) {
	c := cluster(2)
	res, err := Migrate(context.Background(), c, "widgets.example.com", Options{DryRun: true})
	if err != nil || res.Rewritten != 2 {
		t.Fatalf("result %+v, err %v", res, err)
	}
	for _, a := range c.Actions() {
		if u, ok := a.(clienttesting.UpdateAction); ok && len(u.(clienttesting.UpdateActionImpl).GetSubresource()) > 0 {
			t.Errorf("a dry run updated the status")
		}
	}
	if got := storedVersions(t, c); got != "v1alpha1,v1" {
		t.Fatalf("storedVersions %s after a dry run, want it unchanged", got)
	}
}
