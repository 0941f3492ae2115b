package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/payload-applier/payload-applier/pkg/clusterversion"
	"github.com/payload-applier/payload-applier/pkg/operator"
	"github.com/payload-applier/payload-applier/pkg/precondition"
)

const (
	e2eGate     = "ack-1.0-e2e-notes"
	e2eGateText = "1.1 changes the demo: read https://example.com/e2e-notes before you update."
)

// adminConfigMap is a release's admin ConfigMap manifest.
func adminConfigMap(name types.NamespacedName, data string, annotations ...string) string {
	m := configMap(name.Namespace, name.Name, "x", annotations...)
	if data == "" {
		return strings.Replace(m, "data:\n  key: \"x\"\n", "", 1)
	}
	return strings.Replace(m, "data:\n  key: \"x\"", "data:\n"+data, 1)
}

// TestAdminAckHoldsMinorUpdates: a release whose admin gate is not
// acknowledged refuses a minor update and lets a z-stream through; the
// admin's ack wakes the running operator, which then accepts the minor.
func TestAdminAckHoldsMinorUpdates(t *testing.T) {
	ns := testCluster.CreateNamespace(t)
	gates := types.NamespacedName{Namespace: testCluster.CreateNamespace(t), Name: "admin-gates"}
	acks := types.NamespacedName{Namespace: testCluster.CreateNamespace(t), Name: "admin-acks"}
	v100 := map[string]string{
		"0000_00_cvo_01_admingate.yaml": adminConfigMap(gates, fmt.Sprintf("  %s: %q", e2eGate, e2eGateText)),
		"0000_00_cvo_01_adminack.yaml":  adminConfigMap(acks, "", `release.openshift.io/create-only: "true"`),
		"0000_50_demo_00_keep.yaml":     configMap(ns, "keep", "x"),
	}
	v101 := map[string]string{"0000_60_more_00_z.yaml": configMap(ns, "z-stream", "x")}
	for k, v := range v100 {
		v101[k] = v
	}
	v110 := map[string]string{"0000_50_demo_00_keep.yaml": configMap(ns, "keep", "x"), "0000_60_more_00_minor.yaml": configMap(ns, "minor", "x")}
	store := writeStore(t, map[string]map[string]string{"1.0.0": v100, "1.0.1": v101, "1.1.0": v110})
	op := newOperatorOn(t, &operator.DirStore{Root: store}, uniqueName(t, "adminack"), ns, nil, nil,
		func(c *operator.Config) { c.AdminGates, c.AdminAcks = gates, acks })

	op.request(t, "1.0.0", false)
	if out := op.sync(t); !out.Result.Complete() {
		t.Fatalf("install: %v", out.Result.Errors)
	}
	cv := op.clusterVersion(t)
	if up := requireCondition(t, cv, configv1.OperatorUpgradeable, configv1.ConditionFalse, precondition.ReasonAdminAckRequired); up.Message != e2eGateText {
		t.Errorf("Upgradeable message %q, want the gate's text", up.Message)
	}

	t.Log("a minor update is refused")
	op.request(t, "1.1.0", false)
	if out := op.sync(t); out.Refused == nil || !strings.Contains(out.Refused.Error(), precondition.ReasonAdminAckRequired) {
		t.Fatalf("1.1.0 must be refused by the admin gate, got %v", out.Refused)
	}
	accepted := requireCondition(t, op.clusterVersion(t), clusterversion.ConditionReleaseAccepted, configv1.ConditionFalse, clusterversion.ReasonPreconditionChecks)
	if !strings.Contains(accepted.Message, "https://example.com/e2e-notes") {
		t.Errorf("the refusal must carry the gate's text: %q", accepted.Message)
	}

	t.Log("a z-stream goes ahead meanwhile")
	op.request(t, "1.0.1", false)
	if out := op.sync(t); out.Refused != nil || !out.Result.Complete() {
		t.Fatalf("1.0.1 must be accepted and applied: refused %v", out.Refused)
	}
	cv = op.clusterVersion(t)
	requireCondition(t, cv, configv1.OperatorUpgradeable, configv1.ConditionFalse, precondition.ReasonAdminAckRequired)
	if cv.Status.History[0].Version != "1.0.1" || cv.Status.History[0].State != configv1.CompletedUpdate {
		t.Fatalf("history[0] = %s %s, want 1.0.1 Completed", cv.Status.History[0].Version, cv.Status.History[0].State)
	}

	// Resyncs ten minutes apart: only the ack's change can wake the loop.
	op.run(t, operator.RunOptions{ResyncInterval: 10 * time.Minute})
	t.Log("asked again under Run, the minor is refused again")
	op.request(t, "1.1.0", false)
	waitFor(t, "the refusal of 1.1.0", time.Minute, func() bool {
		c := condition(op.clusterVersion(t), clusterversion.ConditionReleaseAccepted)
		return c.Status == configv1.ConditionFalse && strings.Contains(c.Message, `version="1.1.0"`)
	})

	t.Log("the admin acknowledges; the operator wakes and accepts the minor")
	admin := newClients(t).kube
	acked := time.Now()
	patch := fmt.Sprintf(`{"data":{%q:"true"}}`, e2eGate)
	if _, err := admin.CoreV1().ConfigMaps(acks.Namespace).Patch(context.Background(), acks.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the update to 1.1.0", time.Minute, func() bool {
		h := op.clusterVersion(t).Status.History
		return len(h) > 0 && h[0].Version == "1.1.0" && h[0].State == configv1.CompletedUpdate
	})
	t.Logf("1.1.0 completed %s after the ack", time.Since(acked).Round(time.Millisecond))
	cv = op.clusterVersion(t)
	if h := cv.Status.History[0]; h.AcceptedRisks != "" {
		t.Errorf("an acknowledged minor accepts no risk, got %q", h.AcceptedRisks)
	}
	requireCondition(t, cv, configv1.OperatorUpgradeable, configv1.ConditionTrue, "")
	got, err := admin.CoreV1().ConfigMaps(acks.Namespace).Get(context.Background(), acks.Name, metav1.GetOptions{})
	if err != nil || got.Data[e2eGate] != "true" {
		t.Errorf("the admin's ack must stay as written (create-only): %v, %v", got.Data, err)
	}
}
