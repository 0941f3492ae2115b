package clusterversion

import (
	"fmt"
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/payload-applier/payload-applier/pkg/graph"
	"github.com/payload-applier/payload-applier/pkg/payload"
)

// Beyond the CVO: a stuck update says what each operator it waits on says
// of itself, and for how long it has waited; bounded.
func TestAStuckUpdateSaysWhatEachOperatorSays(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	degraded := func(name string, since time.Duration, detail string) Failure {
		return Failure{Reason: "ClusterOperatorDegraded", Message: "Cluster operator " + name + " is degraded", Effect: payload.EffectFailAfterInterval,
			Operator: name, Since: now.Add(-since), Detail: detail,
			PluralReason: "ClusterOperatorsDegraded", PluralMessage: "Cluster operators %s are degraded"}
	}
	run := func(fs ...Failure) configv1.ClusterOperatorStatusCondition {
		status := &configv1.ClusterVersionStatus{Desired: configv1.Release{Version: "1.1.0"}}
		Progress(status, &Pass{Mode: graph.ModeUpdate, Failures: fs}, Patience{}, metav1.NewTime(now))
		return *FindCondition(status.Conditions, ConditionFailing)
	}

	got := run(degraded("alpha", 41*time.Minute, "cluster operator alpha is Degraded=True: Broken, the disk is full"))
	if want := "Cluster operator alpha is degraded\nWaited on:\n* cluster operator alpha is Degraded=True: Broken, the disk is full (for 41m0s)"; got.Message != want {
		t.Errorf("message %q\nwant    %q", got.Message, want)
	}

	got = run(degraded("alpha", time.Minute, "alpha's own words"))
	if got.Status != configv1.ConditionFalse || got.Message != "" {
		t.Errorf("within its grace: %+v, want Failing=False without a message", got)
	}

	var many []Failure
	for i := range 12 {
		many = append(many, degraded(fmt.Sprintf("op%02d", i), time.Hour, strings.Repeat("x", 2000)))
	}
	got = run(many...)
	lines := strings.Split(got.Message, "\n")
	if len(lines) != 2+maxNamedObjectsInCondition+1 || lines[len(lines)-1] != "* and 2 more" {
		t.Errorf("%d lines, last %q: want %d operators and the rest counted", len(lines), lines[len(lines)-1], maxNamedObjectsInCondition)
	}
	for _, l := range lines {
		if len(l) > maxDetailBytes {
			t.Errorf("a line of %d bytes, over %d", len(l), maxDetailBytes)
		}
	}
}

// The CVO names every operator; past ten, the rest are counted.
func TestAWaitOnManyNamesTenAndCountsTheRest(t *testing.T) {
	var fs []Failure
	for i := range 12 {
		fs = append(fs, Failure{Reason: "CustomResourceDefinitionNotEstablished", Message: "not established", Effect: payload.EffectNone, Subject: fmt.Sprintf("crd%02d", i)})
	}
	status := &configv1.ClusterVersionStatus{Desired: configv1.Release{Version: "1.1.0"}}
	Progress(status, &Pass{Mode: graph.ModeUpdate, Failures: fs}, Patience{}, metav1.Now())
	got := FindCondition(status.Conditions, configv1.OperatorProgressing).Message
	if want := "Working towards 1.1.0: waiting on crd00, crd01, crd02, crd03, crd04, crd05, crd06, crd07, crd08, crd09 and 2 more"; got != want {
		t.Errorf("Progressing %q\nwant        %q", got, want)
	}
}
