package apply

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/payload-applier/payload-applier/pkg/graph"
	"github.com/payload-applier/payload-applier/pkg/payload"
)

// operatorRelease is a ClusterOperator at run level 10 and a ConfigMap
// at run level 20, which an update applies only once the operator is
// healthy.
func operatorRelease(t *testing.T) *payload.Release {
	return planRelease(t,
		planDoc{"0000_10_widgets_00_clusteroperator.yaml", "apiVersion: config.openshift.io/v1\nkind: ClusterOperator\nmetadata:\n  name: widgets\nstatus:\n  versions:\n  - name: operator\n    version: 1.0.0\n"},
		planDoc{"0000_20_later_00_cm.yaml", cmYAML("later", "v")})
}

// setOperator writes the live operator's conditions: Available, and
// Degraded as given.
func (c *operandCluster) setOperator(t *testing.T, degraded string) {
	t.Helper()
	co := unstructuredOf("config.openshift.io/v1", "ClusterOperator", "", "widgets")
	_ = unstructured.SetNestedSlice(co.Object, []any{
		map[string]any{"type": "Available", "status": "True"},
		map[string]any{"type": "Degraded", "status": degraded, "reason": "Broken", "message": "it broke"},
	}, "status", "conditions")
	_ = unstructured.SetNestedSlice(co.Object, []any{map[string]any{"name": "operator", "version": "1.0.0"}}, "status", "versions")
	if err := c.dyn.Tracker().Add(co); err != nil {
		if err := c.dyn.Tracker().Update(clusterOperatorGVR, co, ""); err != nil {
			t.Fatal(err)
		}
	}
}

func (c *operandCluster) pass(t *testing.T, rel *payload.Release, mode graph.Mode) *SyncResult {
	t.Helper()
	res, err := c.engine.Sync(context.Background(), rel, SyncOptions{Mode: mode, Backoff: &wait.Backoff{Steps: 1}, DeleteSettle: 1})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func operatorError(t *testing.T, res *SyncResult) *TaskError {
	t.Helper()
	if len(res.Errors) != 1 {
		t.Fatalf("errors %v, want the operator's alone", res.Errors)
	}
	var te *TaskError
	if !errors.As(res.Errors[0], &te) || te.Operator != "widgets" {
		t.Fatalf("error %v, want the operator's", res.Errors[0])
	}
	return te
}

// As the CVO's InitializingMode: a Degraded operator is reported, holds
// no later task back, and keeps the install from completing.
func TestAnInstallReportsADegradedOperatorAndGoesOn(t *testing.T) {
	c := newOperandClusterOf(t, true)
	c.setOperator(t, "True")
	res := c.pass(t, operatorRelease(t), graph.ModeInstall)
	te := operatorError(t, res)
	if te.Effect != payload.EffectReport || te.Message != "Cluster operator widgets is degraded" {
		t.Errorf("got %s %q, want a report of the CVO's text", te.Effect, te.Message)
	}
	if !c.exists(configMapsGVR, "ns", "later") {
		t.Error("the later run level was held back")
	}
	if res.Complete() || res.Done != res.Total {
		t.Errorf("done %d of %d, complete %v: want every task done, the pass not complete", res.Done, res.Total, res.Complete())
	}
}

func TestAnUpdateWaitsOnADegradedOperatorAndTimesTheWait(t *testing.T) {
	c := newOperandClusterOf(t, true)
	clock := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	c.engine.clock = clock
	start := clock.Now()
	c.setOperator(t, "True")
	rel := operatorRelease(t)

	te := operatorError(t, c.pass(t, rel, graph.ModeUpdate))
	if te.Effect != payload.EffectFailAfterInterval || !te.Since.Equal(start) {
		t.Fatalf("got %s since %s, want a grace counted from %s", te.Effect, te.Since, start)
	}
	if c.exists(configMapsGVR, "ns", "later") {
		t.Error("an update went past a Degraded operator")
	}
	clock.Step(5 * time.Minute)
	if te := operatorError(t, c.pass(t, rel, graph.ModeUpdate)); !te.Since.Equal(start) {
		t.Errorf("the wait restarted at %s; it began at %s", te.Since, start)
	}

	c.setOperator(t, "False")
	if res := c.pass(t, rel, graph.ModeUpdate); !res.Complete() {
		t.Fatalf("errors %v with a healthy operator", res.Errors)
	}
	clock.Step(time.Minute)
	c.setOperator(t, "True")
	if te := operatorError(t, c.pass(t, rel, graph.ModeUpdate)); !te.Since.Equal(clock.Now()) {
		t.Errorf("since %s: a healthy check ends the wait, the next begins at %s", te.Since, clock.Now())
	}

	next := operatorRelease(t)
	next.Version = "2.0.0"
	clock.Step(time.Minute)
	if te := operatorError(t, c.pass(t, next, graph.ModeUpdate)); !te.Since.Equal(clock.Now()) {
		t.Errorf("since %s: another release times its own wait from %s", te.Since, clock.Now())
	}
}

// With the admin's DegradedProceed, an update goes past a Degraded
// operator and completes; the operator is reported in a Warning Event.
func TestAnUpdateProceedsPastADegradedOperatorWhenTheAdminSaysSo(t *testing.T) {
	c := newOperandClusterOf(t, true)
	recorder := record.NewFakeRecorder(10)
	c.engine.recorder, c.engine.eventObj = recorder, &corev1.ObjectReference{Kind: "ClusterVersion", Name: "version"}
	c.setOperator(t, "True")
	res, err := c.engine.Sync(context.Background(), operatorRelease(t), SyncOptions{Mode: graph.ModeUpdate, Backoff: &wait.Backoff{Steps: 1},
		DeleteSettle: 1, DegradedOperators: DegradedPolicyOf(map[string]string{DegradedPolicyAnnotation: "Proceed"})})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Complete() || !c.exists(configMapsGVR, "ns", "later") {
		t.Fatalf("errors %v: the update must go on and complete", res.Errors)
	}
	select {
	case ev := <-recorder.Events:
		if !strings.Contains(ev, "Warning ClusterOperatorDegraded Cluster operator widgets is degraded; the update proceeds past it") || !strings.Contains(ev, "it broke") {
			t.Errorf("event %q", ev)
		}
	default:
		t.Error("no Event reported the Degraded operator")
	}
	if DegradedPolicyOf(map[string]string{DegradedPolicyAnnotation: "proceed"}) != DegradedBlock || DegradedPolicyOf(nil) != DegradedBlock {
		t.Error("anything but Proceed must keep the CVO's Block")
	}
}
