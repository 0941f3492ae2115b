package operator

import (
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/payload-applier/payload-applier/pkg/crdcompat"
	"github.com/payload-applier/payload-applier/pkg/payload"
	"github.com/payload-applier/payload-applier/pkg/payload/payloadtest"
)

// widgetsRemovalCRD marks v1alpha1 of widgets.example.com deprecated,
// removed in 1.1, with v1 as the storage version.
const widgetsRemovalCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
  annotations:
    include.release.openshift.io/self-managed-high-availability: "true"
    example.com/removed-in: "1.1"
spec:
  group: example.com
  scope: Namespaced
  names: {kind: Widget, plural: widgets}
  versions:
  - {name: v1alpha1, served: true, storage: false, deprecated: true}
  - {name: v1, served: true, storage: true}
`

// liveWidgetsCRD puts widgets.example.com in the fake cluster with stored
// as status.storedVersions.
func (c *fakeCluster) liveWidgetsCRD(t *testing.T, stored ...string) {
	t.Helper()
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON([]byte(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
		"metadata":{"name":"widgets.example.com"},
		"spec":{"group":"example.com","scope":"Namespaced","names":{"kind":"Widget","plural":"widgets"},
		"versions":[{"name":"v1alpha1","served":true,"storage":false},{"name":"v1","served":true,"storage":true}]}}`)); err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedStringSlice(obj.Object, stored, "status", "storedVersions"); err != nil {
		t.Fatal(err)
	}
	tracker := c.dynamic.Tracker()
	if _, err := tracker.Get(payload.CRDGVR, "", obj.GetName()); err == nil {
		if err := tracker.Update(payload.CRDGVR, obj, ""); err != nil {
			t.Fatal(err)
		}
		return
	}
	if err := tracker.Create(payload.CRDGVR, obj, ""); err != nil {
		t.Fatal(err)
	}
}

func (c *fakeCluster) widget(t *testing.T, name string) {
	t.Helper()
	w := &unstructured.Unstructured{}
	w.SetAPIVersion("example.com/v1")
	w.SetKind("Widget")
	w.SetNamespace(demoNamespace)
	w.SetName(name)
	if err := c.dynamic.Tracker().Create(widgets, w, demoNamespace); err != nil {
		t.Fatal(err)
	}
}

// TestUpgradeableBlocksWhileAScheduledCRDVersionIsStored decides Upgradeable
// on a cluster whose current release, 1.0.0, schedules v1alpha1's removal
// in 1.1: False while storedVersions lists it (with or without objects),
// True once it does not.
func TestUpgradeableBlocksWhileAScheduledCRDVersionIsStored(t *testing.T) {
	root := t.TempDir()
	payloadtest.WriteRelease(t, root, "1.0.0", nil, map[string]string{"0000_10_widgets_00_crd.yaml": widgetsRemovalCRD})
	c := newFakeCluster(t, &DirStore{Root: root}, "1.0.0")
	upgradeable := func() configv1.ClusterOperatorStatusCondition {
		t.Helper()
		cv := c.clusterVersion(t)
		cv.Status.Desired = configv1.Release{Version: "1.0.0"}
		return c.upgradeable(cv)
	}

	t.Log("nothing stored in v1alpha1 any more: no blocker")
	c.liveWidgetsCRD(t, "v1")
	c.widget(t, "a")
	if up := upgradeable(); up.Status != configv1.ConditionTrue {
		t.Fatalf("Upgradeable = %s/%s %q, want True", up.Status, up.Reason, up.Message)
	}

	t.Log("v1alpha1 still stored, with objects: blocked, naming the CRD, version and count")
	c.liveWidgetsCRD(t, "v1alpha1", "v1")
	c.widget(t, "b")
	c.widget(t, "c")
	up := upgradeable()
	want := "widgets.example.com v1alpha1 (removed in 1.1; 3 objects, which may still be stored in it)"
	if up.Status != configv1.ConditionFalse || up.Reason != crdcompat.ReasonVersionRemovalPending || !strings.Contains(up.Message, want) {
		t.Fatalf("Upgradeable = %s/%s %q, want False/%s containing %q", up.Status, up.Reason, up.Message, crdcompat.ReasonVersionRemovalPending, want)
	}

	t.Log("the objects gone but storedVersions still listing it: still blocked, with the count zero")
	for _, name := range []string{"a", "b", "c"} {
		if err := c.dynamic.Tracker().Delete(widgets, demoNamespace, name); err != nil {
			t.Fatal(err)
		}
	}
	if up := upgradeable(); up.Reason != crdcompat.ReasonVersionRemovalPending || !strings.Contains(up.Message, "no objects left, but status.storedVersions still lists it") {
		t.Fatalf("Upgradeable = %s/%s %q, want the blocker with no objects", up.Status, up.Reason, up.Message)
	}

	t.Log("a CRD the cluster lacks blocks nothing")
	if err := c.dynamic.Tracker().Delete(payload.CRDGVR, "", "widgets.example.com"); err != nil {
		t.Fatal(err)
	}
	if up := upgradeable(); up.Status != configv1.ConditionTrue {
		t.Fatalf("Upgradeable = %s/%s %q, want True", up.Status, up.Reason, up.Message)
	}
}

// TestUpgradeableJudgesLiveCRDsWithoutTheCurrentRelease: `apply` gives the
// operator only its target; the live CRDs the target ships then stand for
// the running release's, so the blocker is not lost.
func TestUpgradeableJudgesLiveCRDsWithoutTheCurrentRelease(t *testing.T) {
	dir := payloadtest.WriteRelease(t, t.TempDir(), "1.1.0", nil, map[string]string{"0000_10_widgets_00_crd.yaml": strings.Replace(widgetsRemovalCRD,
		"  - {name: v1alpha1, served: true, storage: false, deprecated: true}\n", "", 1)})
	target, err := payload.Load(dir, payload.DefaultLoadOptions())
	if err != nil {
		t.Fatal(err)
	}
	c := newFakeCluster(t, LoadedRelease{Release: target}, "1.1.0")
	c.liveWidgetsCRD(t, "v1alpha1", "v1")
	live, err := c.dynamic.Tracker().Get(payload.CRDGVR, "", "widgets.example.com")
	if err != nil {
		t.Fatal(err)
	}
	marked := live.(*unstructured.Unstructured)
	marked.SetAnnotations(map[string]string{"example.com/removed-in": "1.1"})
	versions, _, _ := unstructured.NestedSlice(marked.Object, "spec", "versions")
	versions[0].(map[string]any)["deprecated"] = true
	_ = unstructured.SetNestedSlice(marked.Object, versions, "spec", "versions")
	if err := c.dynamic.Tracker().Update(payload.CRDGVR, marked, ""); err != nil {
		t.Fatal(err)
	}
	c.widget(t, "a")

	cv := c.clusterVersion(t)
	cv.Status.Desired = configv1.Release{Version: "1.0.0"}
	if up := c.upgradeable(cv); up.Reason != crdcompat.ReasonVersionRemovalPending || !strings.Contains(up.Message, "widgets.example.com v1alpha1 (removed in 1.1; 1 object") {
		t.Fatalf("Upgradeable = %s/%s %q, want the blocker read from the live CRD", up.Status, up.Reason, up.Message)
	}
}
