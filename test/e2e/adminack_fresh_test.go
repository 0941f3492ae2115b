package e2e

import (
	"context"
	"fmt"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/payload-applier/payload-applier/pkg/precondition"
)

// TestApplyReportsTheAdminGateItShips: `apply` of a release whose payload
// ships a new admin gate ends with that gate in Upgradeable, judged from
// the gates the pass itself wrote, not from those it found.
func TestApplyReportsTheAdminGateItShips(t *testing.T) {
	bin, c, ns := newCLITest(t)
	useAdminConfigMaps(t, c)
	const gate = "ack-1.0-e2e-fresh"
	const text = "1.1 drops the demo: read https://example.com/e2e-fresh before you update."
	release := func(gateValue string) map[string]string {
		files := map[string]string{"0000_50_demo_00_keep.yaml": configMap(ns, "keep", "x")}
		if gateValue != "none" {
			files["0000_00_cvo_01_admingate.yaml"] = adminConfigMap(precondition.DefaultAdminGates, fmt.Sprintf("  %s: %q", gate, gateValue))
			files["0000_00_cvo_01_adminack.yaml"] = adminConfigMap(precondition.DefaultAdminAcks, "", `release.openshift.io/create-only: "true"`)
		}
		return files
	}
	dirs := map[string]string{
		"1.0.0": writePayload(t, "1.0.0", release("none")),
		"1.0.1": writePayload(t, "1.0.1", release("")),
		"1.0.2": writePayload(t, "1.0.2", release(text)),
	}
	apply := func(version string) configv1.ClusterOperatorStatusCondition {
		t.Helper()
		if code, stdout, stderr := runCLI(t, bin, "apply", "--payload", dirs[version]); code != 0 {
			t.Fatalf("apply %s: exit %d\n%s\n%s", version, code, stdout, stderr)
		}
		return condition(clusterVersion(t), configv1.OperatorUpgradeable)
	}
	want := func(version string, got configv1.ClusterOperatorStatusCondition, reason, message string) {
		t.Helper()
		if got.Status != configv1.ConditionFalse || got.Reason != reason || got.Message != message {
			t.Errorf("after apply %s: Upgradeable = %s/%s (%q), want False/%s (%q)", version, got.Status, got.Reason, got.Message, reason, message)
		}
	}

	if up := apply("1.0.0"); up.Status != configv1.ConditionTrue {
		t.Fatalf("1.0.0 ships no gate: Upgradeable = %s/%s (%q)", up.Status, up.Reason, up.Message)
	}
	t.Log("1.0.1 ships a gate for 1.0 with an empty value")
	want("1.0.1", apply("1.0.1"), precondition.ReasonAdminAckConfigMapGateValueError,
		fmt.Sprintf("admin-gates configmap gate %s must contain a non-empty value.", gate))
	t.Log("1.0.2 gives the gate its text, which no admin has acknowledged")
	want("1.0.2", apply("1.0.2"), precondition.ReasonAdminAckRequired, text)
}

// useAdminConfigMaps makes the namespaces of the CVO's admin ConfigMaps,
// which apply reads, and deletes the ConfigMaps at the end: the
// namespaces are shared by the tests.
func useAdminConfigMaps(t *testing.T, c *clients) {
	t.Helper()
	ctx := context.Background()
	for _, name := range []string{precondition.DefaultAdminGates.Namespace, precondition.DefaultAdminAcks.Namespace} {
		_, err := c.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, n := range []struct{ ns, name string }{
			{precondition.DefaultAdminGates.Namespace, precondition.DefaultAdminGates.Name},
			{precondition.DefaultAdminAcks.Namespace, precondition.DefaultAdminAcks.Name},
		} {
			if err := c.kube.CoreV1().ConfigMaps(n.ns).Delete(ctx, n.name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Error(err)
			}
		}
	})
}
