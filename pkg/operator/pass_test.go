package operator

import (
	"errors"
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/payload-applier/payload-applier/pkg/apply"
	"github.com/payload-applier/payload-applier/pkg/clusterversion"
	"github.com/payload-applier/payload-applier/pkg/graph"
	"github.com/payload-applier/payload-applier/pkg/payload"
)

func TestProgressConditions(t *testing.T) {
	status := &configv1.ClusterVersionStatus{Desired: configv1.Release{Version: "1.0.1"},
		History: []configv1.UpdateHistory{historyEntry("1.0.1", configv1.PartialUpdate), historyEntry("1.0.0", configv1.CompletedUpdate)}}
	fail := &apply.TaskError{Subject: payload.ObjectID{Kind: "ConfigMap", Namespace: "a", Name: "b"}, Reason: apply.ReasonForbidden, Effect: payload.EffectFail, Message: "forbidden"}
	wait := &apply.TaskError{Subject: payload.ObjectID{Group: "config.openshift.io", Kind: "ClusterOperator", Name: "x"}, Reason: apply.ReasonCOUpdating, Effect: payload.EffectNone, Message: "updating"}
	clusterversion.Progress(status, passOf(&apply.SyncResult{Mode: graph.ModeUpdate, Done: 3, Total: 4, Errors: []error{wait}}), clusterversion.Patience{}, t0)
	p := clusterversion.FindCondition(status.Conditions, configv1.OperatorProgressing)
	if p.Status != configv1.ConditionTrue || p.Message != "Working towards 1.0.1: 3 of 4 done (75% complete), waiting on ClusterOperator.config.openshift.io/x" {
		t.Errorf("progressing = %+v", p)
	}
	if f := clusterversion.FindCondition(status.Conditions, clusterversion.ConditionFailing); f.Status != configv1.ConditionFalse {
		t.Errorf("a wait is not a failure: %+v", f)
	}
	if a := clusterversion.FindCondition(status.Conditions, configv1.OperatorAvailable); a.Message != "Done applying 1.0.0" {
		t.Errorf("available = %+v", a)
	}
	clusterversion.Progress(status, passOf(&apply.SyncResult{Mode: graph.ModeUpdate, Done: 2, Total: 4, Errors: []error{fail, errors.New("boom")}}), clusterversion.Patience{}, t0)
	if f := clusterversion.FindCondition(status.Conditions, clusterversion.ConditionFailing); f.Status != configv1.ConditionTrue || f.Reason != clusterversion.ReasonMultipleErrors || !strings.Contains(f.Message, "boom") || !strings.Contains(f.Message, "forbidden") {
		t.Errorf("failing = %+v", f)
	}
	status.History = clusterversion.CompleteHistory(status.History, t0)
	clusterversion.Progress(status, passOf(&apply.SyncResult{Mode: graph.ModeUpdate, Done: 4, Total: 4}), clusterversion.Patience{}, t0)
	if p := clusterversion.FindCondition(status.Conditions, configv1.OperatorProgressing); p.Status != configv1.ConditionFalse || p.Message != "Cluster version is 1.0.1" {
		t.Errorf("progressing after completion = %+v", p)
	}
}

var t0 = metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))

func historyEntry(version string, state configv1.UpdateState) configv1.UpdateHistory {
	return configv1.UpdateHistory{Version: version, State: state, StartedTime: t0}
}
