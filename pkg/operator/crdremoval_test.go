package operator

import (
	"context"
	"fmt"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/payload-applier/payload-applier/pkg/apply/deletion"
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

// TestUpgradeableBlocksWhileAScheduledCRDVersionIsStored runs setUpgradeable
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
		out := &Outcome{}
		c.op.setUpgradeable(context.Background(), cv, deletion.Summary{}, nil, out, metav1.Now())
		return out.Upgradeable
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

func TestCRDRemovalMessage(t *testing.T) {
	pending := func(crd string, objects int, err string) crdcompat.PendingRemoval {
		return crdcompat.PendingRemoval{Removal: crdcompat.Removal{CRD: crd, Version: "v1alpha1", RemovedIn: crdcompat.MinorVersion{Major: 1, Minor: 1}}, Objects: objects, Err: err}
	}
	msg := crdRemovalMessage([]crdcompat.PendingRemoval{pending("b.example.com", 1, ""), pending("a.example.com", -1, "could not count its objects: boom\nsecond line")})
	for _, want := range []string{
		crdRemovalMessagePrefix + "a.example.com v1alpha1 (removed in 1.1; objects not counted: could not count its objects: boom second line), b.example.com v1alpha1 (removed in 1.1; 1 object, which may still be stored in it)",
		"run 'payload-applier crd migrate-storage NAME'",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}

	var many []crdcompat.PendingRemoval
	for i := range 13 {
		many = append(many, pending(fmt.Sprintf("c%02d.example.com", i), i, ""))
	}
	msg = crdRemovalMessage(many)
	if !strings.Contains(msg, "c09.example.com v1alpha1") || strings.Contains(msg, "c10.example.com") || !strings.Contains(msg, ", and 3 more;") {
		t.Errorf("message names other than ten then counts the rest: %q", msg)
	}

	long := pending(strings.Repeat("x", 20000)+".example.com", 1, "")
	if msg := crdRemovalMessage([]crdcompat.PendingRemoval{long}); len(msg) > maxCRDRemovalMessageBytes || !strings.Contains(msg, "bytes cut") {
		t.Errorf("an outsized message is %d bytes, want at most %d with a cut marker", len(msg), maxCRDRemovalMessageBytes)
	}
	if blockers := crdRemovalBlocker(nil); blockers != nil {
		t.Errorf("no pending removal must give no blocker: %v", blockers)
	}
}

func TestWithCRDRemovals(t *testing.T) {
	ours := crdRemovalBlocker([]crdcompat.PendingRemoval{{Removal: crdcompat.Removal{CRD: "w.example.com", Version: "v1alpha1"}, Objects: 2}})
	other := upgradeableBlocker{Reason: ReasonDeletionInProgress, Message: "deletes in progress"}
	third := upgradeableBlocker{Reason: ReasonOperatorsNotUpgrade, Message: "operators not upgradeable"}
	for name, tc := range map[string]struct {
		written  configv1.ClusterOperatorStatusCondition
		blockers []upgradeableBlocker
		reason   string
		has      []string
		lacks    []string
	}{
		"True, now pending: False with the reason": {
			written: foldBlockers(nil), blockers: ours, reason: crdcompat.ReasonVersionRemovalPending, has: []string{"w.example.com v1alpha1"},
		},
		"ours alone, now cleared: True": {
			written: foldBlockers(ours), reason: ReasonAsExpected, lacks: []string{"w.example.com"},
		},
		"another blocker, now pending too: both": {
			written: foldBlockers([]upgradeableBlocker{other}), blockers: ours, reason: ReasonMultipleReasons,
			has: []string{"* deletes in progress", "* " + crdRemovalMessagePrefix},
		},
		"another blocker and ours, now cleared: the other stays": {
			written: foldBlockers([]upgradeableBlocker{other, ours[0]}), reason: ReasonMultipleReasons,
			has: []string{"deletes in progress"}, lacks: []string{crdRemovalMessagePrefix},
		},
		"two others and ours, still pending: replaced, not repeated": {
			written: foldBlockers([]upgradeableBlocker{other, ours[0], third}), blockers: ours, reason: ReasonMultipleReasons,
			has: []string{"* deletes in progress", "* operators not upgradeable", "* " + crdRemovalMessagePrefix},
		},
		"another blocker alone, nothing pending: unchanged": {
			written: foldBlockers([]upgradeableBlocker{other}), reason: ReasonDeletionInProgress, has: []string{"deletes in progress"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			got := withCRDRemovals(tc.written, tc.blockers)
			if got.Reason != tc.reason {
				t.Errorf("reason = %s, want %s (%q)", got.Reason, tc.reason, got.Message)
			}
			for _, s := range tc.has {
				if !strings.Contains(got.Message, s) {
					t.Errorf("message %q lacks %q", got.Message, s)
				}
			}
			for _, s := range tc.lacks {
				if strings.Contains(got.Message, s) {
					t.Errorf("message %q holds %q", got.Message, s)
				}
			}
			if n := strings.Count(got.Message, crdRemovalMessagePrefix); n > 1 {
				t.Errorf("the blocker is named %d times: %q", n, got.Message)
			}
		})
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
	out := &Outcome{}
	c.op.setUpgradeable(context.Background(), cv, deletion.Summary{}, nil, out, metav1.Now())
	if up := out.Upgradeable; up.Reason != crdcompat.ReasonVersionRemovalPending || !strings.Contains(up.Message, "widgets.example.com v1alpha1 (removed in 1.1; 1 object") {
		t.Fatalf("Upgradeable = %s/%s %q, want the blocker read from the live CRD", up.Status, up.Reason, up.Message)
	}
}
