package main

import (
	"context"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/payload-applier/payload-applier/pkg/crdcompat"
	"github.com/payload-applier/payload-applier/pkg/graph"
	"github.com/payload-applier/payload-applier/pkg/payload"
)

// scheduleWidgetsRemoval makes judgeCluster's widgets.example.com what a
// current release that removes v1alpha1 in 1.1 applied: v1alpha1
// deprecated, v1 the storage version, storedVersions as stored.
func scheduleWidgetsRemoval(t *testing.T, c *judgeCluster, stored ...string) {
	t.Helper()
	obj, err := c.dynamic.Tracker().Get(crdsGVR, "", "widgets.example.com")
	if err != nil {
		t.Fatal(err)
	}
	crd := obj.(*unstructured.Unstructured).DeepCopy()
	crd.SetAnnotations(map[string]string{crdcompat.RemovedInAnnotation("example.com"): "1.1"})
	if err := unstructured.SetNestedSlice(crd.Object, []any{
		map[string]any{"name": "v1alpha1", "served": false, "storage": false, "deprecated": true},
		map[string]any{"name": "v1", "served": true, "storage": true},
	}, "spec", "versions"); err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedStringSlice(crd.Object, stored, "status", "storedVersions"); err != nil {
		t.Fatal(err)
	}
	if err := c.dynamic.Tracker().Update(crdsGVR, crd, ""); err != nil {
		t.Fatal(err)
	}
}

// TestPlanJudgesCRDRemovalsLive: plan reads the pending removal from the
// cluster, whatever Upgradeable the operator last wrote: a minor update
// is refused while v1alpha1 is stored, a z-stream is not, and once
// storedVersions is trimmed a stale blocker no longer refuses.
func TestPlanJudgesCRDRemovalsLive(t *testing.T) {
	completed := []configv1.UpdateHistory{{State: configv1.CompletedUpdate, Version: "1.0.0"}}
	stale := configv1.ClusterOperatorStatusCondition{Type: configv1.OperatorUpgradeable, Status: configv1.ConditionFalse,
		Reason: crdcompat.ReasonVersionRemovalPending, Message: "Cluster minor or major version upgrades are not allowed while CustomResourceDefinition versions that the next minor or major release removes are still stored: widgets.example.com v1alpha1 (removed in 1.1; 3 objects, which may still be stored in it)"}
	want := "widgets.example.com v1alpha1 (removed in 1.1; 3 objects, which may still be stored in it)"
	for name, tc := range map[string]struct {
		target    string
		keepAlpha bool
		stored    []string
		written   []configv1.ClusterOperatorStatusCondition
		accepted  bool
		message   string
	}{
		"a minor update is refused while v1alpha1 is stored, before the operator said so": {
			target: "1.1.0", stored: []string{"v1alpha1", "v1"},
			message: "Precondition \"ClusterVersionUpgradeable\" failed because of \"" + crdcompat.ReasonVersionRemovalPending + "\"",
		},
		"a z-stream that keeps v1alpha1 is accepted meanwhile": {
			target: "1.0.1", keepAlpha: true, stored: []string{"v1alpha1", "v1"}, accepted: true,
			message: "an update from 1.0.0 to 1.0.1 would be accepted",
		},
		"a stale blocker no longer refuses once storedVersions is trimmed": {
			target: "1.1.0", stored: []string{"v1"}, written: []configv1.ClusterOperatorStatusCondition{stale}, accepted: true,
			message: "an update from 1.0.0 to 1.1.0 would be accepted",
		},
	} {
		t.Run(name, func(t *testing.T) {
			cv := &configv1.ClusterVersion{
				ObjectMeta: metav1.ObjectMeta{Name: "version"},
				Spec:       configv1.ClusterVersionSpec{ClusterID: "test", DesiredUpdate: &configv1.Update{Version: tc.target}},
				Status:     configv1.ClusterVersionStatus{Desired: configv1.Release{Version: "1.0.0"}, History: completed, Conditions: tc.written},
			}
			c := newJudgeCluster(t, []runtime.Object{cv}...)
			scheduleWidgetsRemoval(t, c, tc.stored...)
			versions := "  - {name: v1, served: true, storage: true}\n"
			if tc.keepAlpha {
				versions += "  - {name: v1alpha1, served: false, storage: false, deprecated: true}\n"
			}
			rel := &payload.Release{Version: tc.target, Manifests: []*payload.Manifest{widgetsCRD(t, versions)}}
			_, _, acceptance, err := judgeUpdate(context.Background(), c.kube, c.config, c.engine, rel, graph.ModeUpdate)
			if err != nil {
				t.Fatal(err)
			}
			if acceptance.Accepted != tc.accepted || !strings.Contains(acceptance.Message, tc.message) {
				t.Errorf("acceptance %+v, want accepted %t with %q", acceptance, tc.accepted, tc.message)
			}
			if !tc.accepted && !strings.Contains(acceptance.Message, want) {
				t.Errorf("the refusal must name the CRD, version and count: %q", acceptance.Message)
			}
		})
	}
}
