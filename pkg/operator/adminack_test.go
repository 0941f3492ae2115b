package operator

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/payload-applier/payload-applier/pkg/clusterversion"
	"github.com/payload-applier/payload-applier/pkg/payload/payloadtest"
	"github.com/payload-applier/payload-applier/pkg/precondition"
)

const (
	testGate     = "ack-1.0-read-the-notes"
	testGateText = "1.1 changes things: read https://example.com/notes before you update."
)

// adminConfigMapManifest is a payload manifest of an admin ConfigMap.
func adminConfigMapManifest(name types.NamespacedName, data map[string]string, annotations ...string) string {
	s := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\n  annotations:\n    include.release.openshift.io/self-managed-high-availability: \"true\"\n",
		name.Name, name.Namespace)
	for _, a := range annotations {
		s += "    " + a + "\n"
	}
	if len(data) > 0 {
		s += "data:\n"
		for k, v := range data {
			s += fmt.Sprintf("  %s: %q\n", k, v)
		}
	}
	return s
}

// adminAckStore is a release line whose 1.0.x releases ship the admin
// ConfigMaps (gates only when shipGates), and whose 1.1.0 is a minor.
func adminAckStore(t *testing.T, shipGates bool) *DirStore {
	root := t.TempDir()
	files := map[string]string{"0000_50_demo_00_keep.yaml": configMapManifest("keep")}
	if shipGates {
		files["0000_00_cvo_01_admingate.yaml"] = adminConfigMapManifest(precondition.DefaultAdminGates, map[string]string{testGate: testGateText})
		files["0000_00_cvo_01_adminack.yaml"] = adminConfigMapManifest(precondition.DefaultAdminAcks, nil, `release.openshift.io/create-only: "true"`)
	}
	payloadtest.WriteRelease(t, root, "1.0.0", nil, files)
	files["0000_60_more_00_z.yaml"] = configMapManifest("z-stream")
	payloadtest.WriteRelease(t, root, "1.0.1", []string{"1.0.0"}, files)
	payloadtest.WriteRelease(t, root, "1.1.0", []string{"1.0.1"}, map[string]string{
		"0000_50_demo_00_keep.yaml": configMapManifest("keep"), "0000_60_more_00_minor.yaml": configMapManifest("minor")})
	return &DirStore{Root: root}
}

func (c *fakeCluster) kube() *kubefake.Clientset { return c.op.kube.(*kubefake.Clientset) }

// putConfigMap creates or replaces a ConfigMap the operator reads.
func (c *fakeCluster) putConfigMap(t *testing.T, name types.NamespacedName, data map[string]string) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: name.Namespace, Name: name.Name}, Data: data}
	cms := c.kube().CoreV1().ConfigMaps(name.Namespace)
	if _, err := cms.Update(context.Background(), cm, metav1.UpdateOptions{}); apierrors.IsNotFound(err) {
		_, err = cms.Create(context.Background(), cm, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	} else if err != nil {
		t.Fatal(err)
	}
}

func TestSyncHoldsMinorUpdatesUntilTheAdminAcknowledges(t *testing.T) {
	c := newFakeCluster(t, adminAckStore(t, true), "1.0.0")
	c.putConfigMap(t, precondition.DefaultAdminGates, map[string]string{testGate: testGateText, "ack-0.9-old": "an older minor's gate"})
	c.putConfigMap(t, precondition.DefaultAdminAcks, nil)
	c.sync(t)
	cv := c.clusterVersion(t)
	wantHistory(t, cv, "1.0.0")
	wantCondition(t, cv, configv1.OperatorUpgradeable, configv1.ConditionFalse, precondition.ReasonAdminAckRequired)
	if c := clusterversion.FindCondition(cv.Status.Conditions, configv1.OperatorUpgradeable); c.Message != testGateText {
		t.Errorf("Upgradeable message %q, want the gate's text alone", c.Message)
	}

	t.Log("a minor update is refused with the gate's reason and text")
	c.request(t, "1.1.0")
	if out := c.sync(t); out.Refused == nil || c.exists("minor") {
		t.Fatalf("1.1.0 must be refused, got refused=%v", out.Refused)
	}
	wantCondition(t, c.clusterVersion(t), clusterversion.ConditionReleaseAccepted, configv1.ConditionFalse, clusterversion.ReasonPreconditionChecks,
		precondition.ReasonAdminAckRequired, "https://example.com/notes")

	t.Log("a z-stream goes ahead meanwhile, and the gate still holds")
	cv = c.acceptUpdate(t, "1.0.1", "z-stream")
	wantCondition(t, cv, configv1.OperatorUpgradeable, configv1.ConditionFalse, precondition.ReasonAdminAckRequired)
	if h := cv.Status.History[0]; h.AcceptedRisks != "" {
		t.Errorf("a z-stream under an admin gate accepts no risk, got %q", h.AcceptedRisks)
	}

	t.Log("an ack of anything but \"true\" does not count")
	c.putConfigMap(t, precondition.DefaultAdminAcks, map[string]string{testGate: "yes"})
	c.request(t, "1.1.0")
	if out := c.sync(t); out.Refused == nil {
		t.Fatal("1.1.0 must still be refused")
	}

	t.Log("acknowledged, the minor update is accepted")
	c.putConfigMap(t, precondition.DefaultAdminAcks, map[string]string{testGate: "true"})
	c.acceptUpdate(t, "1.1.0", "minor")
}

func TestAdminAckUpgradeable(t *testing.T) {
	forbidden := func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "admin-acks", fmt.Errorf("no"))
	}
	tests := map[string]struct {
		shipped     bool
		gates, acks map[string]string // nil: absent
		acksReactor func(clienttesting.Action) (bool, runtime.Object, error)
		overrides   bool
		want        string
		fragments   []string
	}{
		"nothing shipped, nothing there": {want: clusterversion.ReasonAsExpected},
		"gates not shipped but there apply, acks absent": {
			gates: map[string]string{testGate: testGateText}, want: precondition.ReasonAdminAckRequired, fragments: []string{testGateText}},
		"shipped gates absent: the CVO's not found": {
			shipped: true, acks: map[string]string{}, want: precondition.ReasonUnableToAccessAdminGatesConfigMap, fragments: []string{"admin-gates configmap not found."}},
		"shipped acks absent: the CVO's not found": {
			shipped: true, gates: map[string]string{}, want: precondition.ReasonUnableToAccessAdminAcksConfigMap, fragments: []string{"admin-acks configmap not found."}},
		"unreadable acks": {
			shipped: true, gates: map[string]string{}, acks: map[string]string{}, acksReactor: forbidden,
			want: precondition.ReasonUnableToAccessAdminAcksConfigMap, fragments: []string{"Unable to access configmap admin-acks", "forbidden"}},
		"a malformed gate": {
			shipped: true, gates: map[string]string{"ack-1.0": "x"}, acks: map[string]string{},
			want: precondition.ReasonAdminAckConfigMapGateNameError, fragments: []string{"ack-1.0 has invalid format"}},
		"an empty gate": {
			shipped: true, gates: map[string]string{testGate: ""}, acks: map[string]string{},
			want: precondition.ReasonAdminAckConfigMapGateValueError, fragments: []string{"must contain a non-empty value"}},
		"a gate beside another blocker: MultipleReasons": {
			shipped: true, gates: map[string]string{testGate: testGateText}, acks: map[string]string{}, overrides: true,
			want: clusterversion.ReasonMultipleReasons, fragments: []string{"* " + testGateText, "* " + precondition.OverridesMessage}},
		"acknowledged": {
			shipped: true, gates: map[string]string{testGate: testGateText}, acks: map[string]string{testGate: "true"}, want: clusterversion.ReasonAsExpected},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			c := newFakeCluster(t, adminAckStore(t, tt.shipped), "1.0.0")
			if tt.gates != nil {
				c.putConfigMap(t, precondition.DefaultAdminGates, tt.gates)
			}
			if tt.acks != nil {
				c.putConfigMap(t, precondition.DefaultAdminAcks, tt.acks)
			}
			if tt.acksReactor != nil {
				c.kube().PrependReactor("get", "configmaps", func(a clienttesting.Action) (bool, runtime.Object, error) {
					if a.(clienttesting.GetAction).GetName() == precondition.DefaultAdminAcks.Name {
						return tt.acksReactor(a)
					}
					return false, nil, nil
				})
			}
			if tt.overrides {
				cv := c.clusterVersion(t)
				cv.Spec.Overrides = []configv1.ComponentOverride{{Kind: "ConfigMap", Namespace: demoNamespace, Name: "keep", Unmanaged: true}}
				if _, err := c.config.ConfigV1().ClusterVersions().Update(context.Background(), cv, metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			out := c.sync(t)
			status := configv1.ConditionFalse
			if tt.want == clusterversion.ReasonAsExpected {
				status = configv1.ConditionTrue
			}
			if out.Upgradeable.Status != status || out.Upgradeable.Reason != tt.want {
				t.Fatalf("Upgradeable = %s/%s (%q), want %s/%s", out.Upgradeable.Status, out.Upgradeable.Reason, out.Upgradeable.Message, status, tt.want)
			}
			for _, f := range tt.fragments {
				if !strings.Contains(out.Upgradeable.Message, f) {
					t.Errorf("message %q lacks %q", out.Upgradeable.Message, f)
				}
			}
		})
	}
}

func TestAdminAcksBeforeAnyRelease(t *testing.T) {
	// No history: no version to match the gates against, as the CVO.
	c := newFakeCluster(t, adminAckStore(t, true), "1.0.0")
	c.putConfigMap(t, precondition.DefaultAdminGates, map[string]string{testGate: ""})
	c.kube().ClearActions()
	obs := c.op.observe.upgradeable(context.Background(), c.clusterVersion(t))
	if obs.AdminAckVersion != "" || len(c.kube().Actions()) != 0 {
		t.Errorf("admin ConfigMaps read before any release: version %q, %d reads", obs.AdminAckVersion, len(c.kube().Actions()))
	}
	if up := clusterversion.Upgradeable(obs, clusterversion.UpgradeablePass{}, nil); up.Status != configv1.ConditionTrue {
		t.Errorf("Upgradeable before any release = %s/%s %q", up.Status, up.Reason, up.Message)
	}
}

func TestWatchAdminAcksPokesOnTheirChangesOnly(t *testing.T) {
	gates := types.NamespacedName{Namespace: "gates-ns", Name: "gates"}
	acks := types.NamespacedName{Namespace: "acks-ns", Name: "acks"}
	kube := kubefake.NewClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: gates.Namespace, Name: gates.Name}, Data: map[string]string{testGate: "x"}})
	o := &observer{kube: kube, adminGates: gates, adminAcks: acks}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pokes := make(chan struct{}, 10)
	stop := o.watchAdminAcks(ctx, func() { pokes <- struct{}{} })
	// The informers end with ctx; Shutdown waits for them.
	defer func() { cancel(); stop() }()
	expect := func(what string, want bool) {
		t.Helper()
		select {
		case <-pokes:
			if !want {
				t.Errorf("%s: poked", what)
			}
		case <-time.After(300 * time.Millisecond):
			if want {
				t.Errorf("%s: no poke", what)
			}
		}
	}
	cms := func(n types.NamespacedName) interface {
		Create(context.Context, *corev1.ConfigMap, metav1.CreateOptions) (*corev1.ConfigMap, error)
		Update(context.Context, *corev1.ConfigMap, metav1.UpdateOptions) (*corev1.ConfigMap, error)
		Delete(context.Context, string, metav1.DeleteOptions) error
	} {
		return kube.CoreV1().ConfigMaps(n.Namespace)
	}
	cm := func(n types.NamespacedName, data map[string]string, labels map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: n.Namespace, Name: n.Name, Labels: labels}, Data: data}
	}
	expect("the first list", false)
	if _, err := cms(acks).Create(ctx, cm(acks, nil, nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("acks created", true)
	if _, err := cms(acks).Update(ctx, cm(acks, map[string]string{testGate: "true"}, nil), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("an ack written", true)
	if _, err := cms(acks).Update(ctx, cm(acks, map[string]string{testGate: "true"}, map[string]string{"a": "b"}), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("a label changed", false)
	other := types.NamespacedName{Namespace: acks.Namespace, Name: "other"}
	if _, err := cms(other).Create(ctx, cm(other, map[string]string{"k": "v"}, nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("another ConfigMap in the namespace", false)
	if err := cms(gates).Delete(ctx, gates.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("gates deleted", true)
}
