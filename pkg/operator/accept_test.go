package operator

import (
	"context"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"

	"github.com/payload-applier/payload-applier/pkg/apply"
	"github.com/payload-applier/payload-applier/pkg/clusterversion"
	"github.com/payload-applier/payload-applier/pkg/payload"
)

func TestJudgeTakesForceOnlyForTheRequestedTarget(t *testing.T) {
	c := newFakeCluster(t, LoadedRelease{Release: &payload.Release{Version: "1.1.0"}}, "1.1.0")
	cv := &configv1.ClusterVersion{
		Spec: configv1.ClusterVersionSpec{DesiredUpdate: &configv1.Update{Version: "1.1.0", Force: true}},
		Status: configv1.ClusterVersionStatus{
			Desired:    configv1.Release{Version: "1.0.0"},
			History:    []configv1.UpdateHistory{{State: configv1.CompletedUpdate, Version: "1.0.0"}},
			Conditions: []configv1.ClusterOperatorStatusCondition{{Type: configv1.OperatorUpgradeable, Status: configv1.ConditionFalse, Reason: "Reboot", Message: "pending"}},
		},
	}
	ctx := context.Background()

	judge := func(version string) (clusterversion.Verdict, *apply.CRDChecks) {
		target, crds := c.op.observe.targetChecks(ctx, cv, &payload.Release{Version: version}, forces(cv, version), nil)
		return clusterversion.Judge(cv, target), crds
	}
	requested, requestedCRDs := judge("1.1.0")
	if !requested.Checked || !requested.Force || requested.Blocking || !strings.HasPrefix(requested.Message, "Forced through blocking failures: ") {
		t.Errorf("the requested minor: %+v, want it forced through", requested)
	}
	other, otherCRDs := judge("1.2.0")
	if !other.Checked || other.Force || !other.Blocking || !other.Forceable || !strings.Contains(other.Message, "pending") {
		t.Errorf("another minor: %+v, want it refused: the force was asked for 1.1.0", other)
	}
	if v := clusterversion.Judge(nil, clusterversion.TargetObservation{Version: "1.1.0"}); v.Checked || !strings.Contains(v.NotChecked, "no ClusterVersion") {
		t.Errorf("without a ClusterVersion: %+v, want it not checked", v)
	}
	if requestedCRDs == nil || otherCRDs == nil {
		t.Error("an update's checks made no CRD checks")
	}
}
