package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	configclient "github.com/openshift/client-go/config/clientset/versioned"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/payload-applier/payload-applier/pkg/precondition"
)

// TestPlanAndApplyJudgeAlike: on a real cluster whose state changes
// between updates (a ClusterOperator that stops being upgradeable, an
// admin gate the running release shipped, the admin's ack), `plan -o json`
// says an update would be accepted exactly when `apply` accepts it, and
// names what refuses it. plan decides from what the cluster holds now,
// not from the Upgradeable the last pass wrote.
func TestPlanAndApplyJudgeAlike(t *testing.T) {
	bin, c, ns := newCLITest(t)
	ctx := context.Background()
	useAdminConfigMaps(t, c)
	cc, err := configclient.NewForConfig(testCluster.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	operatorName := ns + "-judge"
	t.Cleanup(func() {
		if err := cc.ConfigV1().ClusterOperators().Delete(ctx, operatorName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Error(err)
		}
	})
	const gate = "ack-1.0-e2e-judge"
	const text = "1.1 changes the demo: read https://example.com/e2e-judge first."
	release := func(version string, gated bool) string {
		files := map[string]string{"0000_50_demo_00_" + strings.ReplaceAll(version, ".", "-") + ".yaml": configMap(ns, "v"+strings.ReplaceAll(version, ".", "-"), "x")}
		if gated {
			files["0000_00_cvo_01_admingate.yaml"] = adminConfigMap(precondition.DefaultAdminGates, fmt.Sprintf("  %s: %q", gate, text))
			files["0000_00_cvo_01_adminack.yaml"] = adminConfigMap(precondition.DefaultAdminAcks, "", `release.openshift.io/create-only: "true"`)
		}
		return writePayload(t, version, files)
	}
	dirs := map[string]string{
		"1.0.0": release("1.0.0", false),
		"1.0.1": release("1.0.1", false),
		"1.0.2": release("1.0.2", true),
		"1.1.0": release("1.1.0", false),
	}
	upgradeable := func(status configv1.ConditionStatus) {
		t.Helper()
		co, err := cc.ConfigV1().ClusterOperators().Get(ctx, operatorName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			co, err = cc.ConfigV1().ClusterOperators().Create(ctx, &configv1.ClusterOperator{ObjectMeta: metav1.ObjectMeta{Name: operatorName}}, metav1.CreateOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
		co.Status.Conditions = []configv1.ClusterOperatorStatusCondition{{Type: configv1.OperatorUpgradeable, Status: status,
			Reason: "Rebooting", Message: "nodes are rebooting", LastTransitionTime: metav1.Now()}}
		if _, err := cc.ConfigV1().ClusterOperators().UpdateStatus(ctx, co, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// judge asks plan, then apply, about version: both accept or both
	// refuse, and a refusal names want.
	judge := func(version string, accepted bool, want string) {
		t.Helper()
		code, stdout, stderr := runCLI(t, bin, "plan", "--payload", dirs[version], "-o", "json")
		if code != 0 {
			t.Fatalf("plan %s: exit %d\n%s", version, code, stderr)
		}
		var doc struct {
			Acceptance struct {
				Checked, Accepted bool
				Message           string
			}
		}
		if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
			t.Fatalf("plan %s -o json: %v", version, err)
		}
		a := doc.Acceptance
		if !a.Checked || a.Accepted != accepted || !strings.Contains(a.Message, want) {
			t.Errorf("plan %s: checked %v, accepted %v, %q; want accepted %v naming %q", version, a.Checked, a.Accepted, a.Message, accepted, want)
		}
		wantCode := 0
		if !accepted {
			wantCode = 3
		}
		code, stdout, stderr = runCLI(t, bin, "apply", "--payload", dirs[version])
		if code != wantCode || !strings.Contains(stdout+stderr, want) {
			t.Errorf("apply %s: exit %d, want %d naming %q\n%s\n%s", version, code, wantCode, want, stdout, stderr)
		}
	}

	if code, _, stderr := runCLI(t, bin, "apply", "--payload", dirs["1.0.0"]); code != 0 {
		t.Fatalf("install 1.0.0: exit %d\n%s", code, stderr)
	}
	t.Log("an operator stops being upgradeable after the last pass: the minor is refused by both, the z-stream accepted")
	upgradeable(configv1.ConditionFalse)
	judge("1.1.0", false, operatorName)
	judge("1.0.1", true, "")
	t.Log("the operator is upgradeable again, but the running release ships an admin gate")
	upgradeable(configv1.ConditionTrue)
	judge("1.0.2", true, "")
	judge("1.1.0", false, text)
	t.Log("the admin acknowledges it: both accept the minor")
	acks := c.kube.CoreV1().ConfigMaps(precondition.DefaultAdminAcks.Namespace)
	ack, err := acks.Get(ctx, precondition.DefaultAdminAcks.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ack.Data = map[string]string{gate: "true"}
	if _, err := acks.Update(ctx, ack, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	judge("1.1.0", true, "")
}
