package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/payload-applier/payload-applier/pkg/clusterversion"
	"github.com/payload-applier/payload-applier/pkg/operator"
)

// TestInvalidClusterVersion: an invalid spec gives Invalid, the running
// operator acts on none of it and keeps reconciling the current release,
// and Invalid goes once the spec is valid again.
func TestInvalidClusterVersion(t *testing.T) {
	c := newClients(t)
	ns := testCluster.CreateNamespace(t)
	store := writeStore(t, map[string]map[string]string{"1.0.0": {"0000_50_demo_00_a.yaml": configMap(ns, "a", "x")}})
	op := newOperator(t, store, uniqueName(t, "invalid"), ns, nil, nil)
	op.request(t, "1.0.0", false)
	if out := op.sync(t); out.Result == nil || !out.Result.Complete() {
		t.Fatalf("install: %+v", out)
	}

	running := runInBackground(t, op, operator.RunOptions{ResyncInterval: 10 * time.Minute})
	editSpec := func(edit func(*configv1.ClusterVersionSpec)) {
		t.Helper()
		cvs := op.config.ConfigV1().ClusterVersions()
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cv, err := cvs.Get(context.Background(), op.name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			edit(&cv.Spec)
			_, err = cvs.Update(context.Background(), cv, metav1.UpdateOptions{FieldValidation: "Ignore"})
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}

	t.Log("a desiredUpdate with neither version nor image, and a malformed clusterID")
	validID := op.clusterVersion(t).Spec.ClusterID
	editSpec(func(s *configv1.ClusterVersionSpec) {
		s.DesiredUpdate = &configv1.Update{Force: true}
		s.ClusterID = "not-a-uuid"
	})
	var invalid configv1.ClusterOperatorStatusCondition
	waitFor(t, "Invalid", time.Minute, func() bool {
		invalid = condition(op.clusterVersion(t), clusterversion.ConditionInvalid)
		return invalid.Status == configv1.ConditionTrue
	})
	if invalid.Reason != clusterversion.ReasonInvalidClusterVersion ||
		!strings.Contains(invalid.Message, "spec.desiredUpdate") || !strings.Contains(invalid.Message, "spec.clusterID") {
		t.Fatalf("Invalid = %s %q", invalid.Reason, invalid.Message)
	}

	t.Log("the current release is still reconciled")
	if err := c.kube.CoreV1().ConfigMaps(ns).Delete(context.Background(), "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	out := op.sync(t)
	if out.Applied != "1.0.0" || out.Result == nil || !out.Result.Complete() || len(out.Invalid) != 2 {
		t.Fatalf("reconcile while invalid: applied %q, invalid %v, result %+v", out.Applied, out.Invalid, out.Result)
	}
	if c.get(t, configMapGVK, ns, "a") == nil {
		t.Fatal("the current release's ConfigMap was not restored")
	}
	cv := op.clusterVersion(t)
	p := requireCondition(t, cv, configv1.OperatorProgressing, configv1.ConditionFalse, clusterversion.ReasonInvalidClusterVersion)
	if p.Message != "Stopped at 1.0.0: the cluster version is invalid" {
		t.Errorf("Progressing = %q", p.Message)
	}
	requireCondition(t, cv, clusterversion.ConditionFailing, configv1.ConditionFalse, "")
	if cv.Spec.ClusterID != "not-a-uuid" || cv.Spec.DesiredUpdate == nil {
		t.Errorf("the operator changed the admin's spec: %+v", cv.Spec)
	}

	t.Log("a version that is not semver is not loaded")
	editSpec(func(s *configv1.ClusterVersionSpec) { s.DesiredUpdate = &configv1.Update{Version: "latest"} })
	out = op.sync(t)
	if out.Applied != "1.0.0" || out.LoadErr != nil || out.Refused != nil {
		t.Fatalf("an invalid version was acted on: %+v", out)
	}
	if m := requireCondition(t, op.clusterVersion(t), clusterversion.ConditionInvalid, configv1.ConditionTrue, clusterversion.ReasonInvalidClusterVersion).Message; !strings.Contains(m, "spec.desiredUpdate.version") {
		t.Errorf("Invalid = %q", m)
	}

	t.Log("valid again: Invalid goes")
	editSpec(func(s *configv1.ClusterVersionSpec) {
		s.DesiredUpdate = &configv1.Update{Version: "1.0.0"}
		s.ClusterID = validID
	})
	waitFor(t, "Invalid to go", time.Minute, func() bool {
		return condition(op.clusterVersion(t), clusterversion.ConditionInvalid).Type == ""
	})
	requireCondition(t, op.clusterVersion(t), configv1.OperatorProgressing, configv1.ConditionFalse, "")

	running.stop(t)
}
