package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/payload-applier/payload-applier/pkg/clusterversion"
	"github.com/payload-applier/payload-applier/pkg/operator"
	"github.com/payload-applier/payload-applier/pkg/updategraph/updategraphtest"
)

func TestABlackHoledUpstreamHoldsNoPassOfTheRunningOperator(t *testing.T) {
	ns := testCluster.CreateNamespace(t)
	store := writeStore(t, map[string]map[string]string{
		"1.0.0": {"0000_50_demo_00_a.yaml": configMap(ns, "a", "1")},
		"1.0.1": {"0000_50_demo_00_a.yaml": configMap(ns, "a", "2")},
	})
	hole := updategraphtest.NewBlackHole(t)
	cvName := uniqueName(t, "blackhole")
	// The read outlasts the test: only its three 30s tries could end it.
	op := newOperatorOn(t, &operator.DirStore{Root: store}, cvName, ns, nil, nil,
		func(c *operator.Config) { c.UpdateGraphTimeout = time.Hour })
	cv := op.clusterVersion(t)
	cv.Spec.Upstream, cv.Spec.Channel = configv1.URL(hole.URL), "stable-1"
	cv.Spec.DesiredUpdate = &configv1.Update{Version: "1.0.0"}
	if _, err := op.config.ConfigV1().ClusterVersions().Update(context.Background(), cv, metav1.UpdateOptions{FieldValidation: "Ignore"}); err != nil {
		t.Fatal(err)
	}

	op.run(t, operator.RunOptions{ResyncInterval: 10 * time.Minute})
	completed := func(version string) func() bool {
		return func() bool {
			h := op.clusterVersion(t).Status.History
			return len(h) > 0 && h[0].Version == version && h[0].State == configv1.CompletedUpdate
		}
	}

	t.Log("the upstream is asked and never answers; the install and an update go through beside it")
	select {
	case <-hole.Asked:
	case <-time.After(time.Minute):
		t.Fatal("the operator never asked the upstream")
	}
	waitFor(t, "the install of 1.0.0", time.Minute, completed("1.0.0"))
	began := time.Now()
	op.request(t, "1.0.1", false)
	waitFor(t, "the update to 1.0.1", time.Minute, completed("1.0.1"))
	t.Logf("the update completed %s after it was asked for, the upstream still silent", time.Since(began).Round(time.Millisecond))
	if cm := newClients(t).get(t, configMapGVK, ns, "a"); cm == nil || cm.Object["data"].(map[string]interface{})["key"] != "2" {
		t.Fatalf("ConfigMap a = %v, want the update's data", cm)
	}
	cv = op.clusterVersion(t)
	// A read ends no sooner than its three 30s tries; nothing has come back.
	if c := findCondition(cv, configv1.RetrievedUpdates); c == nil || c.Status != configv1.ConditionUnknown || c.Reason != clusterversion.ReasonRetrieving {
		t.Fatalf("RetrievedUpdates = %+v while the upstream is silent, want Unknown Retrieving", c)
	}
	requireCondition(t, cv, "Failing", configv1.ConditionFalse, "")

	t.Log("the upstream hangs up: the failure is reported at once, not at the next resync (10m)")
	hole.HangUp()
	waitFor(t, "RetrievedUpdates=False RemoteFailed", time.Minute, func() bool {
		c := findCondition(op.clusterVersion(t), configv1.RetrievedUpdates)
		return c != nil && c.Status == configv1.ConditionFalse && c.Reason == "RemoteFailed" &&
			strings.Contains(c.Message, "Unable to retrieve available updates from "+hole.URL)
	})
}
