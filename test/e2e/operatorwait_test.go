package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/payload-applier/payload-applier/pkg/apply"
	"github.com/payload-applier/payload-applier/pkg/operator"
)

// clusterOperatorYAML is a ClusterOperator manifest at version.
func clusterOperatorYAML(name, version string) string {
	return fmt.Sprintf(`
apiVersion: config.openshift.io/v1
kind: ClusterOperator
metadata:
  name: %s
  annotations:
    %s
status:
  versions:
  - name: operator
    version: %s
  relatedObjects:
  - group: ""
    resource: namespaces
    name: %s
  - group: ""
    resource: nodes
`, name, include, version, name)
}

// playOperator writes a ClusterOperator's status as its operator would:
// the version it runs and its conditions, each "Type=Status" with an
// optional ":Reason:Message".
func playOperator(t *testing.T, op *testOperator, name, version string, conditions ...string) {
	t.Helper()
	ctx := context.Background()
	co, err := op.config.ConfigV1().ClusterOperators().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	co.Status.Versions = []configv1.OperandVersion{{Name: "operator", Version: version}}
	co.Status.Conditions = nil
	for _, c := range conditions {
		typ, rest, _ := strings.Cut(c, "=")
		parts := strings.SplitN(rest, ":", 3)
		cond := configv1.ClusterOperatorStatusCondition{Type: configv1.ClusterStatusConditionType(typ),
			Status: configv1.ConditionStatus(parts[0]), LastTransitionTime: metav1.Now()}
		if len(parts) == 3 {
			cond.Reason, cond.Message = parts[1], parts[2]
		}
		co.Status.Conditions = append(co.Status.Conditions, cond)
	}
	if _, err := op.config.ConfigV1().ClusterOperators().UpdateStatus(ctx, co, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestClusterOperatorsAreReadAsTheCVOReadsThem walks an install and an
// update through the states operators go through, and checks at each
// step the ClusterVersion conditions the CVO's rules give (the table
// tests' cases: TestOperatorHealthAsTheCVO, TestCVOFailingAndProgressing).
// The operator's clock is a fake one, stepped where minutes must pass.
func TestClusterOperatorsAreReadAsTheCVOReadsThem(t *testing.T) {
	operatorWaitScenario(t, uniqueName(t, "cowait"), nil)
}

// operatorWaitScenario plays the scenario on ClusterVersion cvName;
// after, when set, sees the ClusterVersion after each step.
func operatorWaitScenario(t *testing.T, cvName string, after func(step string, cv *configv1.ClusterVersion)) {
	ns := testCluster.CreateNamespace(t)
	alpha, beta := uniqueName(t, "alpha"), uniqueName(t, "beta")
	release := func(version string) map[string]string {
		return map[string]string{
			"0000_10_alpha_00_clusteroperator.yaml": clusterOperatorYAML(alpha, version),
			"0000_20_beta_00_clusteroperator.yaml":  clusterOperatorYAML(beta, version),
			"0000_30_later_00_cm.yaml":              configMap(ns, "later-"+strings.ReplaceAll(version, ".", "-"), "x"),
		}
	}
	clock := clocktesting.NewFakeClock(time.Now())
	op := newOperatorOn(t, &operator.DirStore{Root: writeStore(t, map[string]map[string]string{"1.0.0": release("1.0.0"), "1.1.0": release("1.1.0")})},
		cvName, ns, nil, nil, func(c *operator.Config) { c.Clock = clock })
	t.Cleanup(func() {
		for _, name := range []string{alpha, beta} {
			_ = op.config.ConfigV1().ClusterOperators().Delete(context.Background(), name, metav1.DeleteOptions{})
		}
	})
	healthy := []string{"Available=True", "Degraded=False", "Progressing=False"}
	step := func(what string) *configv1.ClusterVersion {
		t.Helper()
		t.Log(what)
		op.sync(t)
		cv := op.clusterVersion(t)
		if after != nil {
			after(what, cv)
		}
		return cv
	}
	// want compares a condition; Failing's message up to the operators'
	// own words, which waitedOn checks.
	want := func(cv *configv1.ClusterVersion, ct configv1.ClusterStatusConditionType, status configv1.ConditionStatus, reason, message string) {
		t.Helper()
		c := condition(cv, ct)
		c.Message, _, _ = strings.Cut(c.Message, "\nWaited on:\n")
		if c.Status != status || c.Reason != reason || c.Message != message {
			t.Errorf("%s = %s/%s %q\nwant     %s/%s %q", ct, c.Status, c.Reason, c.Message, status, reason, message)
		}
	}
	waitedOn := func(cv *configv1.ClusterVersion, lines ...string) {
		t.Helper()
		_, got, _ := strings.Cut(condition(cv, "Failing").Message, "\nWaited on:\n")
		if want := strings.Join(lines, "\n"); got != want {
			t.Errorf("Failing says of the operators %q\nwant %q", got, want)
		}
	}
	completed := func(cv *configv1.ClusterVersion) bool {
		return len(cv.Status.History) > 0 && cv.Status.History[0].State == configv1.CompletedUpdate
	}

	op.request(t, "1.0.0", false)
	cv := step("install: neither operator has reported")
	for _, name := range []string{alpha, beta} {
		co, err := op.config.ConfigV1().ClusterOperators().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(co.Status.RelatedObjects) != 2 || co.Status.RelatedObjects[0].Name != name {
			t.Errorf("ClusterOperator %s: relatedObjects %+v: want it precreated with its manifest's", name, co.Status.RelatedObjects)
		}
	}
	want(cv, "Failing", configv1.ConditionTrue, "ClusterOperatorsNotAvailable", fmt.Sprintf("Cluster operators %s, %s are not available", alpha, beta))
	want(cv, configv1.OperatorProgressing, configv1.ConditionTrue, "ClusterOperatorsNotAvailable", "Unable to apply 1.0.0: some cluster operators are not available")

	playOperator(t, op, alpha, "0.9.0", "Available=True", "Degraded=True:Broken:the disk is full", "Progressing=True")
	playOperator(t, op, beta, "1.0.0", healthy...)
	cv = step("install: alpha is Degraded, at an older version: reported, nothing held back, not Completed")
	want(cv, "Failing", configv1.ConditionTrue, "ClusterOperatorDegraded", "Cluster operator "+alpha+" is degraded")
	want(cv, configv1.OperatorProgressing, configv1.ConditionTrue, "ClusterOperatorDegraded", "Unable to apply 1.0.0: Cluster operator "+alpha+" is degraded")
	if completed(cv) {
		t.Error("an install with a Degraded operator completed; the CVO withholds it")
	}
	if _, err := newClients(t).kube.CoreV1().ConfigMaps(ns).Get(context.Background(), "later-1-0-0", metav1.GetOptions{}); err != nil {
		t.Errorf("a Degraded operator held back a later run level of the install: %v", err)
	}

	playOperator(t, op, alpha, "0.9.0", healthy...)
	cv = step("install: alpha recovers, still at the older version, which an install allows")
	if !completed(cv) {
		t.Fatalf("history %+v, want 1.0.0 completed", cv.Status.History)
	}
	want(cv, "Failing", configv1.ConditionFalse, "", "")
	want(cv, configv1.OperatorProgressing, configv1.ConditionFalse, "", "Cluster version is 1.0.0")
	playOperator(t, op, alpha, "1.0.0", healthy...)

	start := clock.Now()
	op.request(t, "1.1.0", false)
	cv = step("update: alpha has not reached 1.1.0")
	want(cv, "Failing", configv1.ConditionFalse, "", "")
	want(cv, configv1.OperatorProgressing, configv1.ConditionTrue, "ClusterOperatorUpdating", "Working towards 1.1.0: waiting on "+alpha)

	clock.SetTime(start.Add(31 * time.Minute))
	cv = step("update: 31 minutes later alpha still has not")
	slow := "waiting on " + alpha + " over 30 minutes which is longer than expected"
	want(cv, "Failing", configv1.ConditionUnknown, "SlowClusterOperator", slow)
	want(cv, configv1.OperatorProgressing, configv1.ConditionTrue, "ClusterOperatorUpdating", "Working towards 1.1.0: "+slow)
	waitedOn(cv, "* cluster operator "+alpha+" is available and not degraded but has not finished updating to target version: operator from 1.0.0 to 1.1.0 (for 31m0s)")

	playOperator(t, op, alpha, "1.1.0", "Available=True", "Degraded=True:Broken:the disk is full")
	cv = step("update: alpha reaches 1.1.0, Degraded; its wait began when the update first checked it")
	want(cv, "Failing", configv1.ConditionFalse, "", "")
	want(cv, configv1.OperatorProgressing, configv1.ConditionTrue, "ClusterOperatorDegraded", "Working towards 1.1.0: waiting up to 40 minutes on "+alpha)

	clock.SetTime(start.Add(41 * time.Minute))
	cv = step("update: 41 minutes in, alpha is still Degraded")
	want(cv, "Failing", configv1.ConditionTrue, "ClusterOperatorDegraded", "Cluster operator "+alpha+" is degraded")
	want(cv, configv1.OperatorProgressing, configv1.ConditionTrue, "ClusterOperatorDegraded", "Unable to apply 1.1.0: wait has exceeded 40 minutes for these operators: "+alpha)
	waitedOn(cv, "* cluster operator "+alpha+" is Degraded=True: Broken, the disk is full (for 41m0s)")

	playOperator(t, op, alpha, "1.1.0", healthy...)
	playOperator(t, op, beta, "1.0.0", "Available=False:NoPods:no pods are running", "Degraded=False")
	cv = step("update: alpha recovers; beta is not Available")
	want(cv, "Failing", configv1.ConditionTrue, "ClusterOperatorNotAvailable", "Cluster operator "+beta+" is not available")
	want(cv, configv1.OperatorProgressing, configv1.ConditionTrue, "ClusterOperatorNotAvailable", "Unable to apply 1.1.0: the cluster operator "+beta+" is not available")
	waitedOn(cv, "* cluster operator "+beta+" is Available=False: NoPods: no pods are running")

	playOperator(t, op, beta, "1.1.0", healthy...)
	cv = step("update: beta reaches 1.1.0")
	if !completed(cv) || cv.Status.History[0].Version != "1.1.0" {
		t.Fatalf("history %+v, want 1.1.0 completed", cv.Status.History)
	}
	want(cv, "Failing", configv1.ConditionFalse, "", "")
	want(cv, configv1.OperatorProgressing, configv1.ConditionFalse, "", "Cluster version is 1.1.0")

	playOperator(t, op, alpha, "1.1.0", "Available=True", "Degraded=True:Broken:the disk is full")
	cv = step("reconcile: a Degraded operator fails at once, as the CVO's reconcile does")
	want(cv, "Failing", configv1.ConditionTrue, "ClusterOperatorDegraded", "Cluster operator "+alpha+" is degraded")
	want(cv, configv1.OperatorProgressing, configv1.ConditionFalse, "ClusterOperatorDegraded", "Error while reconciling 1.1.0: the cluster operator "+alpha+" is degraded")

	cv.Annotations = map[string]string{apply.DegradedPolicyAnnotation: string(apply.DegradedProceed)}
	if _, err := op.config.ConfigV1().ClusterVersions().Update(context.Background(), cv, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	cv = step("reconcile, the admin's degraded-operators=Proceed: a Degraded operator is only reported")
	want(cv, "Failing", configv1.ConditionFalse, "", "")
	want(cv, configv1.OperatorProgressing, configv1.ConditionFalse, "", "Cluster version is 1.1.0")
}
