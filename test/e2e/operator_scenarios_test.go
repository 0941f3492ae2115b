package e2e

import (
	"context"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/payload-applier/payload-applier/pkg/clusterversion"
	"github.com/payload-applier/payload-applier/pkg/graph"
)

// TestOperatorScenarios follows the CVO's scenario tests: a ClusterVersion
// with no desired release, then errors while reconciling.
func TestOperatorScenarios(t *testing.T) {
	c := newClients(t)
	ns := testCluster.CreateNamespace(t)
	doomedA, doomedB := testCluster.CreateNamespace(t), testCluster.CreateNamespace(t)
	files := map[string]string{
		"0000_50_demo_00_a.yaml":  configMap(ns, "a", "x"),
		"0000_60_one_00_b.yaml":   configMap(doomedA, "b", "x"),
		"0000_60_other_00_c.yaml": configMap(doomedB, "c", "x"),
	}
	op := newOperator(t, writeStore(t, map[string]map[string]string{"1.0.0": files}), uniqueName(t, "scenario"), ns, nil, nil)

	t.Log("no desired release")
	op.sync(t)
	requireCondition(t, op.clusterVersion(t), clusterversion.ConditionFailing, configv1.ConditionTrue, clusterversion.ReasonNoDesiredUpdate)

	op.request(t, "1.0.0", false)
	if out := op.sync(t); out.Mode != graph.ModeInstall || !out.Result.Complete() {
		t.Fatalf("install: %+v", out)
	}
	requireCondition(t, op.clusterVersion(t), clusterversion.ConditionFailing, configv1.ConditionFalse, "")

	t.Log("an error while reconciling")
	if err := c.kube.CoreV1().Namespaces().Delete(context.Background(), doomedA, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	c.waitGone(t, namespaceGVK, "", doomedA)
	out := op.sync(t)
	if out.Mode != graph.ModeReconcile || out.Result.Complete() {
		t.Fatalf("reconcile must fail: mode %s", out.Mode)
	}
	cv := op.clusterVersion(t)
	f := requireCondition(t, cv, clusterversion.ConditionFailing, configv1.ConditionTrue, "UpdatePayloadResourceNotFound")
	if !strings.Contains(f.Message, "ConfigMap/"+doomedA+"/b") {
		t.Errorf("failing must name the object: %q", f.Message)
	}
	p := requireCondition(t, cv, configv1.OperatorProgressing, configv1.ConditionFalse, "")
	if !strings.HasPrefix(p.Message, "Error while reconciling 1.0.0: ") {
		t.Errorf("progressing = %q", p.Message)
	}
	requireCondition(t, cv, configv1.OperatorAvailable, configv1.ConditionTrue, "")

	t.Log("several errors give MultipleErrors")
	if err := c.kube.CoreV1().Namespaces().Delete(context.Background(), doomedB, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	c.waitGone(t, namespaceGVK, "", doomedB)
	op.sync(t)
	f = requireCondition(t, op.clusterVersion(t), clusterversion.ConditionFailing, configv1.ConditionTrue, clusterversion.ReasonMultipleErrors)
	if !strings.Contains(f.Message, "ConfigMap/"+doomedA+"/b") || !strings.Contains(f.Message, "ConfigMap/"+doomedB+"/c") {
		t.Errorf("MultipleErrors must keep every message: %q", f.Message)
	}
}
