package operator

import (
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/payload-applier/payload-applier/pkg/payload"
)

// A ClusterOperator there at start starts no pass of its own (the first
// pass reads it); one that appears later, or changes as the CVO reacts
// to, does.
func TestClusterOperatorEventsPokeOnlyForNewsAfterStart(t *testing.T) {
	c := newFakeCluster(t, LoadedRelease{Release: &payload.Release{Version: "1.0.0"}}, "1.0.0")
	pokes := 0
	h := c.op.clusterOperatorEvents(func() { pokes++ })
	co := func(available configv1.ConditionStatus) *configv1.ClusterOperator {
		return &configv1.ClusterOperator{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Status: configv1.ClusterOperatorStatus{
			Conditions: []configv1.ClusterOperatorStatusCondition{{Type: configv1.OperatorAvailable, Status: available}}}}
	}
	h.OnAdd(co(configv1.ConditionTrue), true)
	if pokes != 0 {
		t.Fatalf("%d pokes for a ClusterOperator listed at start", pokes)
	}
	h.OnAdd(co(configv1.ConditionTrue), false)
	if pokes != 1 {
		t.Fatalf("%d pokes after one ClusterOperator appeared", pokes)
	}
	h.OnUpdate(co(configv1.ConditionTrue), co(configv1.ConditionTrue))
	if pokes != 1 {
		t.Fatalf("%d pokes after an update that changed nothing the CVO reacts to", pokes)
	}
	h.OnUpdate(co(configv1.ConditionTrue), co(configv1.ConditionFalse))
	if pokes != 2 {
		t.Fatalf("%d pokes after Available changed", pokes)
	}
}
