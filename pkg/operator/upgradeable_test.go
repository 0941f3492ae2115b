package operator

import (
	"context"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"

	"github.com/payload-applier/payload-applier/pkg/clusterversion"
	"github.com/payload-applier/payload-applier/pkg/payload/payloadtest"
	"github.com/payload-applier/payload-applier/pkg/precondition"
)

// oneConfigMapStore makes the operator's typed ConfigMap reads answer from
// the objects the engine applied, as one apiserver does.
func (c *fakeCluster) oneConfigMapStore(t *testing.T) {
	t.Helper()
	c.kube().PrependReactor("get", "configmaps", func(a clienttesting.Action) (bool, runtime.Object, error) {
		g := a.(clienttesting.GetAction)
		got, err := c.dynamic.Tracker().Get(configMaps, g.GetNamespace(), g.GetName())
		if err != nil {
			return true, nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, g.GetName())
		}
		cm := &corev1.ConfigMap{}
		return true, cm, runtime.DefaultUnstructuredConverter.FromUnstructured(got.(*unstructured.Unstructured).Object, cm)
	})
}

// TestSyncReportsTheAdminGateTheReleaseShips: the pass that applies a
// release shipping a new admin gate ends with that gate in Upgradeable,
// not one pass later.
func TestSyncReportsTheAdminGateTheReleaseShips(t *testing.T) {
	root := t.TempDir()
	payloadtest.WriteRelease(t, root, "1.0.0", nil, map[string]string{"0000_50_demo_00_keep.yaml": configMapManifest("keep")})
	withGate := func(text string) map[string]string {
		return map[string]string{
			"0000_50_demo_00_keep.yaml":     configMapManifest("keep"),
			"0000_00_cvo_01_admingate.yaml": adminConfigMapManifest(precondition.DefaultAdminGates, map[string]string{testGate: text}),
			"0000_00_cvo_01_adminack.yaml":  adminConfigMapManifest(precondition.DefaultAdminAcks, nil, `release.openshift.io/create-only: "true"`),
		}
	}
	payloadtest.WriteRelease(t, root, "1.0.1", []string{"1.0.0"}, withGate(""))
	payloadtest.WriteRelease(t, root, "1.0.2", []string{"1.0.1"}, withGate(testGateText))
	c := newFakeCluster(t, &DirStore{Root: root}, "1.0.0")
	c.oneConfigMapStore(t)
	if out := c.sync(t); out.Upgradeable.Status != configv1.ConditionTrue {
		t.Fatalf("1.0.0 ships no gate: Upgradeable = %s/%s %q", out.Upgradeable.Status, out.Upgradeable.Reason, out.Upgradeable.Message)
	}
	for _, step := range []struct{ version, reason, message string }{
		{"1.0.1", precondition.ReasonAdminAckConfigMapGateValueError, "admin-gates configmap gate " + testGate + " must contain a non-empty value."},
		{"1.0.2", precondition.ReasonAdminAckRequired, testGateText},
	} {
		c.request(t, step.version)
		c.sync(t)
		cv := c.clusterVersion(t)
		if h := cv.Status.History[0]; h.Version != step.version || h.State != configv1.CompletedUpdate {
			t.Fatalf("history[0] = %s %s, want %s Completed", h.Version, h.State, step.version)
		}
		up := clusterversion.FindCondition(cv.Status.Conditions, configv1.OperatorUpgradeable)
		if up == nil || up.Status != configv1.ConditionFalse || up.Reason != step.reason || up.Message != step.message {
			t.Fatalf("after the pass that applied %s: Upgradeable = %+v, want False/%s %q", step.version, up, step.reason, step.message)
		}
	}
}

// TestUpgradeableIsObservedOncePerMoment counts a pass's reads for
// Upgradeable: before acceptance only when a new target is judged, and
// once after the walk.
func TestUpgradeableIsObservedOncePerMoment(t *testing.T) {
	c := newFakeCluster(t, adminAckStore(t, true), "1.0.0")
	c.oneConfigMapStore(t)
	reads := func() (lists, gets int) {
		for _, a := range c.config.Actions() {
			if a.GetVerb() == "list" && a.GetResource().Resource == "clusteroperators" {
				lists++
			}
		}
		for _, a := range c.kube().Actions() {
			if a.GetVerb() == "get" && a.GetResource().Resource == "configmaps" {
				gets++
			}
		}
		c.config.ClearActions()
		c.kube().ClearActions()
		return lists, gets
	}
	for _, step := range []struct {
		what             string
		request          string
		lists, adminGets int
	}{
		// No release yet: the gates apply to nothing, so only the
		// observation after the walk reads them.
		{"install", "", 2, 2},
		{"resync", "", 1, 2},
		{"z-stream update", "1.0.1", 2, 4},
		{"resync after it", "", 1, 2},
	} {
		if step.request != "" {
			c.request(t, step.request)
		}
		reads()
		out := c.sync(t)
		if out.Result == nil || !out.Result.Complete() {
			t.Fatalf("%s: the pass did not complete", step.what)
		}
		if out.Upgradeable.Reason != precondition.ReasonAdminAckRequired {
			t.Errorf("%s: Upgradeable = %s/%s, want the shipped gate", step.what, out.Upgradeable.Status, out.Upgradeable.Reason)
		}
		if lists, gets := reads(); lists != step.lists || gets != step.adminGets {
			t.Errorf("%s: %d ClusterOperator LISTs and %d ConfigMap GETs, want %d and %d", step.what, lists, gets, step.lists, step.adminGets)
		}
	}
}

// TestUpgradeableWithoutTheCurrentRelease: a pass that can load neither
// the target nor the release it runs applies nothing, and still observes
// Upgradeable once.
func TestUpgradeableWithoutTheCurrentRelease(t *testing.T) {
	c := newFakeCluster(t, &DirStore{Root: t.TempDir()}, "1.0.0")
	cv := c.clusterVersion(t)
	done := metav1.Now()
	cv.Status.Desired = configv1.Release{Version: "1.0.0"}
	cv.Status.History = []configv1.UpdateHistory{{State: configv1.CompletedUpdate, Version: "1.0.0", StartedTime: done, CompletionTime: &done}}
	if _, err := c.config.ConfigV1().ClusterVersions().UpdateStatus(context.Background(), cv, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.putConfigMap(t, precondition.DefaultAdminGates, map[string]string{testGate: ""})
	c.config.ClearActions()
	out := c.sync(t)
	if out.Result != nil || out.CurrentErr == nil {
		t.Fatalf("nothing can be applied without the release: result %v, current release error %v", out.Result, out.CurrentErr)
	}
	if out.Upgradeable.Reason != precondition.ReasonAdminAckConfigMapGateValueError {
		t.Errorf("Upgradeable = %s/%s %q, want the empty gate", out.Upgradeable.Status, out.Upgradeable.Reason, out.Upgradeable.Message)
	}
	lists := 0
	for _, a := range c.config.Actions() {
		if a.GetVerb() == "list" && a.GetResource().Resource == "clusteroperators" {
			lists++
		}
	}
	if lists != 1 {
		t.Errorf("%d ClusterOperator LISTs, want 1", lists)
	}
}
