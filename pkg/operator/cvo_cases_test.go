package operator

// The table cases below are the cluster-version-operator's own test cases,
// restated as specifications of this operator's pure ClusterVersion rules.
// Each case bears the CVO's case name so that a reader can find the
// original; CVO cases without a name are named after their test and index.
// They were read, not copied, from github.com/openshift/cluster-version-operator:
//
//   - commit 6e719331fb5863141397f35b1f47bed42148a6dd (HEAD, 2026-07-24):
//     pkg/cvo/status_test.go, pkg/cvo/status_history.go and
//     status_history_test.go, pkg/cvo/availableupdates_test.go,
//     lib/validation/validation_test.go;
//   - commit de31a3ff20e2b87afa71f5cfd7317dbf6e491183, the parent of
//     ea13ba611 ("pkg: Use risk.Source framework to feed Upgradeable"), the
//     last with pkg/cvo/upgradeable.go: TestOperator_upgradeableSync in
//     pkg/cvo/cvo_test.go, whose Upgradeable reasons this operator keeps.
//
// A case whose `differs` is set asserts this operator's behaviour where it
// deliberately or necessarily departs from the CVO's; `differs` says why.

import (
	"errors"
	"fmt"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/payload-applier/payload-applier/pkg/apply"
	"github.com/payload-applier/payload-applier/pkg/clusterversion"
	"github.com/payload-applier/payload-applier/pkg/graph"
	"github.com/payload-applier/payload-applier/pkg/payload"
	"github.com/payload-applier/payload-applier/pkg/precondition"
)

var cvoNow = metav1.Date(2026, 7, 24, 12, 0, 0, 0, time.UTC)

// cvoStarts are the operators' update start times of the CVO's case
// table, against cvoNow; an operator without one has a zero start, as in
// the CVO.
var cvoStarts = map[string]time.Time{
	"co-not-timeout":     cvoNow.Add(-time.Minute),
	"co-bar-not-timeout": cvoNow.Add(-time.Minute),
	"co-foo-not-timeout": cvoNow.Add(-time.Minute),
	"co-timeout":         cvoNow.Add(-60 * time.Minute),
	"co-bar-timeout":     cvoNow.Add(-60 * time.Minute),
}

// cvoCOError is the engine's error about ClusterOperator name, as the
// engine reports its health (apply.OperatorHealth's texts).
func cvoCOError(name string, reason apply.Reason, effect payload.Effect, message string) *apply.TaskError {
	plural := map[apply.Reason][2]string{
		apply.ReasonCONotAvailable: {string(apply.ReasonCOsNotAvailable), "Cluster operators %s are not available"},
		apply.ReasonCODegraded:     {string(apply.ReasonCOsDegraded), "Cluster operators %s are degraded"},
		apply.ReasonCOUpdating:     {string(apply.ReasonCOsUpdating), "Cluster operators %s are updating versions"},
	}[reason]
	return &apply.TaskError{
		Subject: payload.ObjectID{Group: "config.openshift.io", Kind: "ClusterOperator", Name: name},
		File:    name + ".yaml", Reason: reason, Effect: effect, Message: message,
		Operator: name, PluralReason: apply.Reason(plural[0]), PluralMessage: plural[1], Since: cvoStarts[name],
	}
}

// cvoCondition is a condition with only what the cases compare.
type cvoCondition struct {
	Status  configv1.ConditionStatus
	Reason  string
	Message string
}

func cvoConditionOf(c *configv1.ClusterOperatorStatusCondition) *cvoCondition {
	if c == nil {
		return nil
	}
	return &cvoCondition{c.Status, c.Reason, c.Message}
}

// TestCVOFailingAndProgressing: pkg/cvo/status_test.go,
// TestUpdateClusterVersionStatus_FilteringMultipleErrorsForFailingCondition,
// with the CVO's operator start times (cvoStarts; machine-config started
// 60 minutes before, or 120 in the cases named "timeout"). The CVO's
// cases run without reconciling and with history ("modified") and while
// reconciling ("not modified"); the first map to this operator's update
// mode, the second to its reconcile mode, as "<name>/reconciling". The
// errors go through the engine's path (passOf), so the CVO's condensing
// is part of what is tested: where a CVO case hands the status an error
// condensed by hand, the operators' names come sorted, as its
// condenseClusterOperators sorts them.
func TestCVOFailingAndProgressing(t *testing.T) {
	notAvailA := func() error {
		return cvoCOError("A", apply.ReasonCONotAvailable, payload.EffectFail, "Cluster operator A is not available")
	}
	notAvailB := func() error {
		return cvoCOError("B", apply.ReasonCONotAvailable, payload.EffectFail, "Cluster operator B is not available")
	}
	updatingB := func() error {
		return cvoCOError("B", apply.ReasonCOUpdating, payload.EffectNone, "Cluster operator B is updating versions")
	}
	degraded := func(name string) error {
		return cvoCOError(name, apply.ReasonCODegraded, payload.EffectFailAfterInterval, "Cluster operator "+name+" is degraded")
	}
	updating := func(names ...string) []error {
		var errs []error
		for _, n := range names {
			errs = append(errs, cvoCOError(n, apply.ReasonCOUpdating, payload.EffectNone, "Cluster operator A is updating"))
		}
		return errs
	}
	const sorted = "the CVO's case hands over a condensed error with its names unsorted; its condenseClusterOperators sorts them, as here"
	const waitsNeverFail = "a wait (effect None) is progress, never failure, in reconcile mode too"
	slowFailing := func(msg string) cvoCondition {
		return cvoCondition{configv1.ConditionUnknown, "SlowClusterOperator", msg}
	}
	working := func(reason, msg string) *cvoCondition {
		return &cvoCondition{configv1.ConditionTrue, reason, "Working towards 1.2.3: " + msg}
	}
	const slowCo = "waiting on co-timeout over 30 minutes which is longer than expected"
	tests := []struct {
		name        string
		mode        graph.Mode
		errs        []error
		done, total int
		mcTimeout   bool
		failing     cvoCondition
		progressing *cvoCondition // nil: not compared
		differs     string
	}{
		{
			name: "no errors are present", mode: graph.ModeUpdate, done: 3, total: 3,
			failing:     cvoCondition{Status: configv1.ConditionFalse},
			progressing: &cvoCondition{Status: configv1.ConditionFalse, Message: "Cluster version is 1.2.3"},
			differs:     "a complete pass ends Progressing; the CVO case's worker reports no progress, so it reads Working towards",
		},
		{
			name: "no errors are present/reconciling", mode: graph.ModeReconcile, done: 3, total: 3,
			failing:     cvoCondition{Status: configv1.ConditionFalse},
			progressing: &cvoCondition{Status: configv1.ConditionFalse, Message: "Cluster version is 1.2.3"},
		},
		{
			name: "single generic error", mode: graph.ModeUpdate, errs: []error{errors.New("error has happened")},
			failing:     cvoCondition{configv1.ConditionTrue, string(apply.ReasonFailed), "error has happened"},
			progressing: &cvoCondition{configv1.ConditionTrue, string(apply.ReasonFailed), "Unable to apply 1.2.3: the update could not be applied"},
			differs:     "an unclassified error gets reason UpdatePayloadFailed, and its summary, where the CVO leaves the reason empty and says \"an error occurred\"",
		},
		{
			name: "single UpdateEffectNone error", mode: graph.ModeUpdate, errs: updating("co-not-timeout"),
			failing:     cvoCondition{Status: configv1.ConditionFalse},
			progressing: working("ClusterOperatorUpdating", "waiting on co-not-timeout"),
		},
		{
			name: "single UpdateEffectNone error/reconciling", mode: graph.ModeReconcile, errs: updating("co-not-timeout"),
			failing:     cvoCondition{Status: configv1.ConditionFalse},
			progressing: &cvoCondition{configv1.ConditionFalse, "ClusterOperatorUpdating", "Error while reconciling 1.2.3: waiting on co-not-timeout"},
			differs:     waitsNeverFail + "; the CVO reads Failing=True ClusterOperatorUpdating \"Cluster operator A is updating\"",
		},
		{
			name: "single UpdateEffectNone error and timeout", mode: graph.ModeUpdate, errs: updating("co-timeout"),
			failing:     slowFailing(slowCo),
			progressing: working("ClusterOperatorUpdating", slowCo),
		},
		{
			name: "single UpdateEffectNone error and machine-config", mode: graph.ModeUpdate, errs: updating("machine-config"),
			failing:     cvoCondition{Status: configv1.ConditionFalse},
			progressing: working("ClusterOperatorUpdating", "waiting on machine-config"),
		},
		{
			name: "single UpdateEffectNone error and machine-config timeout", mode: graph.ModeUpdate, errs: updating("machine-config"), mcTimeout: true,
			failing:     slowFailing("waiting on machine-config over 90 minutes which is longer than expected"),
			progressing: working("ClusterOperatorUpdating", "waiting on machine-config over 90 minutes which is longer than expected"),
		},
		{
			name: "single condensed UpdateEffectFail UpdateError", mode: graph.ModeUpdate, errs: []error{notAvailA(), notAvailB()},
			failing:     cvoCondition{configv1.ConditionTrue, "ClusterOperatorsNotAvailable", "Cluster operators A, B are not available"},
			progressing: &cvoCondition{configv1.ConditionTrue, "ClusterOperatorsNotAvailable", "Unable to apply 1.2.3: some cluster operators are not available"},
			differs:     "the CVO's case hands over an error condensed by hand with the singular reason ClusterOperatorNotAvailable; its condenseClusterOperators gives the plural reason, as here",
		},
		{
			name: "MultipleErrors of UpdateEffectFail and UpdateEffectFailAfterInterval", mode: graph.ModeUpdate,
			errs:        []error{notAvailA(), degraded("B")},
			failing:     cvoCondition{configv1.ConditionTrue, clusterversion.ReasonMultipleErrors, "Multiple errors are preventing progress:\n* Cluster operator A is not available\n* Cluster operator B is degraded"},
			progressing: &cvoCondition{configv1.ConditionTrue, clusterversion.ReasonMultipleErrors, "Unable to apply 1.2.3: multiple errors are preventing progress"},
			differs:     "Progressing's summary of MultipleErrors: the CVO says \"an unknown error has occurred: MultipleErrors\"",
		},
		{
			name: "MultipleErrors of UpdateEffectFail and UpdateEffectNone", mode: graph.ModeUpdate, errs: []error{notAvailA(), updatingB()},
			failing:     cvoCondition{configv1.ConditionTrue, "ClusterOperatorNotAvailable", "Cluster operator A is not available"},
			progressing: &cvoCondition{configv1.ConditionTrue, "ClusterOperatorNotAvailable", "Unable to apply 1.2.3: the cluster operator A is not available"},
			differs:     "Progressing names what fails; the CVO's reads MultipleErrors \"an unknown error has occurred: MultipleErrors\"",
		},
		{
			name: "MultipleErrors of UpdateEffectFail and UpdateEffectNone/reconciling", mode: graph.ModeReconcile, errs: []error{notAvailA(), updatingB()},
			failing:     cvoCondition{configv1.ConditionTrue, "ClusterOperatorNotAvailable", "Cluster operator A is not available"},
			progressing: &cvoCondition{configv1.ConditionFalse, "ClusterOperatorNotAvailable", "Error while reconciling 1.2.3: the cluster operator A is not available"},
			differs:     waitsNeverFail + "; the CVO reads MultipleErrors with both messages",
		},
		{
			name: "MultipleErrors of UpdateEffectNone and UpdateEffectNone", mode: graph.ModeUpdate,
			errs:        []error{updating("A")[0], cvoCOError("B", "NewUpdateEffectNoneReason", payload.EffectNone, "Cluster operator B is getting conscious")},
			failing:     cvoCondition{Status: configv1.ConditionFalse},
			progressing: working(clusterversion.ReasonMultipleErrors, "waiting on A, B"),
			differs:     "waits alone read as waits; the CVO's Progressing reads \"Unable to apply 1.2.3: an unknown error has occurred: MultipleErrors\"",
		},
		{
			name: "MultipleErrors of UpdateEffectNone and UpdateEffectNone/reconciling", mode: graph.ModeReconcile,
			errs:    []error{updating("A")[0], cvoCOError("B", "NewUpdateEffectNoneReason", payload.EffectNone, "Cluster operator B is getting conscious")},
			failing: cvoCondition{Status: configv1.ConditionFalse},
			differs: waitsNeverFail + "; the CVO reads Failing=True MultipleErrors",
		},
		{
			name: "MultipleErrors of UpdateEffectFail, UpdateEffectFailAfterInterval, and UpdateEffectNone", mode: graph.ModeUpdate,
			errs:    []error{notAvailA(), updatingB(), degraded("C")},
			failing: cvoCondition{configv1.ConditionTrue, clusterversion.ReasonMultipleErrors, "Multiple errors are preventing progress:\n* Cluster operator A is not available\n* Cluster operator C is degraded"},
		},
		{
			name: "MultipleErrors: all updating and none slow", mode: graph.ModeUpdate,
			errs:        updating("co-not-timeout", "co-bar-not-timeout", "co-foo-not-timeout"),
			failing:     cvoCondition{Status: configv1.ConditionFalse},
			progressing: working("ClusterOperatorsUpdating", "waiting on co-bar-not-timeout, co-foo-not-timeout, co-not-timeout"),
			differs:     sorted,
		},
		{
			name: "MultipleErrors: all updating and one slow", mode: graph.ModeUpdate,
			errs:        updating("co-timeout", "co-bar-not-timeout", "co-foo-not-timeout"),
			failing:     slowFailing(slowCo),
			progressing: working("ClusterOperatorsUpdating", slowCo),
		},
		{
			name: "MultipleErrors: all updating and some slow", mode: graph.ModeUpdate,
			errs:        updating("co-timeout", "co-bar-timeout", "co-foo-not-timeout"),
			failing:     slowFailing("waiting on co-bar-timeout, co-timeout over 30 minutes which is longer than expected"),
			progressing: working("ClusterOperatorsUpdating", "waiting on co-bar-timeout, co-timeout over 30 minutes which is longer than expected"),
			differs:     sorted,
		},
		{
			name: "MultipleErrors: all updating and all slow", mode: graph.ModeUpdate, mcTimeout: true,
			errs:        updating("co-timeout", "co-bar-timeout", "machine-config"),
			failing:     slowFailing("waiting on co-bar-timeout, co-timeout over 30 minutes and machine-config over 90 minutes which is longer than expected"),
			progressing: working("ClusterOperatorsUpdating", "waiting on co-bar-timeout, co-timeout over 30 minutes and machine-config over 90 minutes which is longer than expected"),
			differs:     sorted,
		},
		// convertErrorToProgressing's FailAfterInterval and Report
		// branches, which the CVO's table leaves out.
		{
			name: "a Degraded operator within its grace", mode: graph.ModeUpdate, errs: []error{degraded("co-not-timeout")}, done: 1, total: 4,
			failing:     cvoCondition{Status: configv1.ConditionFalse},
			progressing: &cvoCondition{configv1.ConditionTrue, "ClusterOperatorDegraded", "Working towards 1.2.3: 1 of 4 done (25% complete), waiting up to 40 minutes on co-not-timeout"},
		},
		{
			name: "a Degraded operator past its grace", mode: graph.ModeUpdate, errs: []error{degraded("co-timeout")},
			failing:     cvoCondition{configv1.ConditionTrue, "ClusterOperatorDegraded", "Cluster operator co-timeout is degraded"},
			progressing: &cvoCondition{configv1.ConditionTrue, "ClusterOperatorDegraded", "Unable to apply 1.2.3: wait has exceeded 40 minutes for these operators: co-timeout"},
		},
		{
			name: "two Degraded operators, one past its grace", mode: graph.ModeUpdate, errs: []error{degraded("co-timeout"), degraded("co-not-timeout")},
			failing:     cvoCondition{configv1.ConditionTrue, "ClusterOperatorsDegraded", "Cluster operators co-not-timeout, co-timeout are degraded"},
			progressing: &cvoCondition{configv1.ConditionTrue, "ClusterOperatorsDegraded", "Unable to apply 1.2.3: wait has exceeded 40 minutes for these operators: co-timeout"},
		},
		{
			name: "a Degraded operator in an install is reported", mode: graph.ModeInstall,
			errs:        []error{cvoCOError("co-not-timeout", apply.ReasonCODegraded, payload.EffectReport, "Cluster operator co-not-timeout is degraded")},
			failing:     cvoCondition{configv1.ConditionTrue, "ClusterOperatorDegraded", "Cluster operator co-not-timeout is degraded"},
			progressing: &cvoCondition{configv1.ConditionTrue, "ClusterOperatorDegraded", "Unable to apply 1.2.3: Cluster operator co-not-timeout is degraded"},
		},
		{
			name: "a Degraded operator within its grace beside a failure", mode: graph.ModeUpdate, errs: []error{notAvailA(), degraded("co-not-timeout")},
			failing:     cvoCondition{configv1.ConditionTrue, "ClusterOperatorNotAvailable", "Cluster operator A is not available"},
			progressing: &cvoCondition{configv1.ConditionTrue, "ClusterOperatorNotAvailable", "Unable to apply 1.2.3: the cluster operator A is not available"},
			differs:     "a grace holds whatever else fails; the CVO's MultipleErrors fails the Degraded operator at once",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cvoStarts["machine-config"] = cvoNow.Add(-60 * time.Minute)
			if tt.mcTimeout {
				cvoStarts["machine-config"] = cvoNow.Add(-120 * time.Minute)
			}
			for _, err := range tt.errs {
				var te *apply.TaskError
				if errors.As(err, &te) && te.Operator == "machine-config" {
					te.Since = cvoStarts["machine-config"]
				}
			}
			status := &configv1.ClusterVersionStatus{
				Desired: configv1.Release{Version: "1.2.3"},
				History: []configv1.UpdateHistory{{State: configv1.PartialUpdate, Version: "1.2.3"}},
			}
			res := &apply.SyncResult{Release: "1.2.3", Mode: tt.mode, Errors: tt.errs, Done: tt.done, Total: tt.total}
			clusterversion.Progress(status, passOf(res), clusterversion.Patience{}, cvoNow)
			if got := cvoConditionOf(clusterversion.FindCondition(status.Conditions, clusterversion.ConditionFailing)); got == nil || *got != tt.failing {
				t.Errorf("Failing = %+v, want %+v", got, tt.failing)
			}
			if tt.progressing != nil {
				if got := cvoConditionOf(clusterversion.FindCondition(status.Conditions, configv1.OperatorProgressing)); got == nil || *got != *tt.progressing {
					t.Errorf("Progressing = %+v, want %+v", got, *tt.progressing)
				}
			}
		})
	}
}

// TestCVOUpgradeable: TestOperator_upgradeableSync of pkg/cvo/cvo_test.go
// at de31a3ff, through decideUpgradeable. The CVO's case "when version is
// missing, do nothing (other loops should create it)" has no counterpart:
// the rule is only judged for a ClusterVersion that exists.
func TestCVOUpgradeable(t *testing.T) {
	const overridesCVO = "Disabling ownership via cluster version overrides prevents upgrades between minor or major versions. Please remove overrides before requesting a minor or major version update."
	const allowed = "Minor and major version updates are allowed."
	const gate = "ack-4.8-kube-122-api-removals-in-4.9"
	unmanaged := []configv1.ComponentOverride{{Kind: "Deployment", Group: "apps", Namespace: "ns", Name: "x", Unmanaged: true}}
	managed := []configv1.ComponentOverride{{Kind: "Deployment", Group: "apps", Namespace: "ns", Name: "x", Unmanaged: false}}
	co := func(name string, conds ...configv1.ClusterOperatorStatusCondition) configv1.ClusterOperator {
		c := configv1.ClusterOperator{}
		c.Name = name
		c.Status.Conditions = conds
		return c
	}
	notUp := func(reason, message string) configv1.ClusterOperatorStatusCondition {
		return configv1.ClusterOperatorStatusCondition{Type: configv1.OperatorUpgradeable, Status: configv1.ConditionFalse, Reason: reason, Message: message}
	}
	up := configv1.ClusterOperatorStatusCondition{Type: configv1.OperatorUpgradeable, Status: configv1.ConditionTrue}
	const random = "some random reason why upgrades are not safe."
	const random2 = "some random reason 2 why upgrades are not safe."
	gates := func(data map[string]string) precondition.AdminConfigMap {
		return precondition.AdminConfigMap{Name: precondition.DefaultAdminGates, Data: data, Shipped: true}
	}
	acks := func(data map[string]string) precondition.AdminConfigMap {
		return precondition.AdminConfigMap{Name: precondition.DefaultAdminAcks, Data: data, Shipped: true}
	}
	absent := func(cm precondition.AdminConfigMap) precondition.AdminConfigMap { cm.Absent = true; return cm }
	acksAt48 := func(g map[string]string, a map[string]string) clusterversion.UpgradeableObservation {
		return clusterversion.UpgradeableObservation{AdminAckVersion: "4.8.0", AdminGates: gates(g), AdminAcks: acks(a)}
	}
	const oneOperator = "one reason for operators however many (the CVO passes a single operator's own reason; its HEAD uses the risk name instead), listed on one line"
	const asExpected = "the condition is written True AsExpected where the CVO leaves it unset (its HEAD removes it)"
	const bulleted = "several blockers are bulleted, one per reason, as the CVO's HEAD does, without the CVO's former list of reasons in the first line"

	tests := []struct {
		name      string
		obs       clusterversion.UpgradeableObservation
		overrides []configv1.ComponentOverride
		want      cvoCondition
		differs   string
	}{
		{
			name: "report error condition when overrides is set for version", overrides: unmanaged,
			want: cvoCondition{configv1.ConditionFalse, "ClusterVersionOverridesSet", overridesCVO},
		},
		{
			name: "report error condition when the single clusteroperator is not upgradeable",
			obs:  clusterversion.UpgradeableObservation{Operators: []configv1.ClusterOperator{co("default-operator-1", notUp("RandomReason", random))}},
			want: cvoCondition{configv1.ConditionFalse, clusterversion.ReasonOperatorsNotUpgrade,
				"Cluster operators are not upgradeable: default-operator-1 (RandomReason: " + random + ")"},
			differs: oneOperator,
		},
		{
			name: "report error condition when single clusteroperator is not upgradeable and another has no conditions",
			obs:  clusterversion.UpgradeableObservation{Operators: []configv1.ClusterOperator{co("default-operator-1", notUp("RandomReason", random)), co("default-operator-2")}},
			want: cvoCondition{configv1.ConditionFalse, clusterversion.ReasonOperatorsNotUpgrade,
				"Cluster operators are not upgradeable: default-operator-1 (RandomReason: " + random + ")"},
			differs: oneOperator,
		},
		{
			name: "report error condition when single clusteroperator is not upgradeable and another is upgradeable",
			obs:  clusterversion.UpgradeableObservation{Operators: []configv1.ClusterOperator{co("default-operator-1", notUp("RandomReason", random)), co("default-operator-2", up)}},
			want: cvoCondition{configv1.ConditionFalse, clusterversion.ReasonOperatorsNotUpgrade,
				"Cluster operators are not upgradeable: default-operator-1 (RandomReason: " + random + ")"},
			differs: oneOperator,
		},
		{
			name: "report error condition when two clusteroperators are not upgradeable",
			obs: clusterversion.UpgradeableObservation{Operators: []configv1.ClusterOperator{
				co("default-operator-1", notUp("RandomReason", random)), co("default-operator-2", notUp("RandomReason2", random2))}},
			want: cvoCondition{configv1.ConditionFalse, "ClusterOperatorsNotUpgradeable",
				"Cluster operators are not upgradeable: default-operator-1 (RandomReason: " + random + "); default-operator-2 (RandomReason2: " + random2 + ")"},
			differs: oneOperator,
		},
		{
			name: "report error condition when clusteroperators and version are not upgradeable", overrides: unmanaged,
			obs: clusterversion.UpgradeableObservation{Operators: []configv1.ClusterOperator{
				co("default-operator-1", notUp("RandomReason", random)), co("default-operator-2", notUp("RandomReason2", random2))}},
			want: cvoCondition{configv1.ConditionFalse, "MultipleReasons",
				"Cluster should not be upgraded between minor or major versions for multiple reasons:\n" +
					"* Cluster operators are not upgradeable: default-operator-1 (RandomReason: " + random + "); default-operator-2 (RandomReason2: " + random2 + ")\n" +
					"* " + overridesCVO},
			differs: bulleted + "; no Upgradeable<Source> sub-conditions (the CVO's HEAD removes them too)",
		},
		{
			name: "no error conditions",
			want: cvoCondition{configv1.ConditionTrue, clusterversion.ReasonAsExpected, allowed}, differs: asExpected,
		},
		{
			name: "no error conditions/with a managed override", overrides: managed,
			want: cvoCondition{configv1.ConditionTrue, clusterversion.ReasonAsExpected, allowed}, differs: asExpected,
		},
		{
			name: "no error conditions and admin ack gate does not apply to version",
			obs: clusterversion.UpgradeableObservation{AdminAckVersion: "4.9.0", Operators: []configv1.ClusterOperator{co("default-operator-1", up)},
				AdminGates: gates(map[string]string{gate: "Description."}), AdminAcks: acks(nil)},
			want: cvoCondition{configv1.ConditionTrue, clusterversion.ReasonAsExpected, allowed}, differs: asExpected,
		},
		{
			name: "admin-gates configmap gate does not have value",
			obs:  acksAt48(map[string]string{gate: ""}, nil),
			want: cvoCondition{configv1.ConditionFalse, "AdminAckConfigMapGateValueError", "admin-gates configmap gate " + gate + " must contain a non-empty value."},
		},
		{
			name: "admin ack required",
			obs:  acksAt48(map[string]string{gate: "Description."}, nil),
			want: cvoCondition{configv1.ConditionFalse, "AdminAckRequired", "Description."},
		},
		{
			name: "admin ack required and admin ack gate does not apply to version",
			obs:  acksAt48(map[string]string{gate: "Description.", "ack-4.9-kube-122-api-removals-in-4.9": "Description 2."}, nil),
			want: cvoCondition{configv1.ConditionFalse, "AdminAckRequired", "Description."},
		},
		{
			name: "admin ack required and configmap gate does not have value",
			obs:  acksAt48(map[string]string{gate: "Description.", "ack-4.8-foo": ""}, nil),
			want: cvoCondition{configv1.ConditionFalse, "MultipleReasons",
				"Cluster should not be upgraded between minor or major versions for multiple reasons:\n" +
					"* admin-gates configmap gate ack-4.8-foo must contain a non-empty value.\n* Description."},
			differs: bulleted + `; the CVO joined them with a space: "Description. admin-gates configmap gate ack-4.8-foo must contain a non-empty value."`,
		},
		{
			name:    "multiple admin acks required",
			obs:     acksAt48(map[string]string{gate: "Description 2.", "ack-4.8-foo": "Description 1.", "ack-4.8-bar": "Description 3."}, nil),
			want:    cvoCondition{configv1.ConditionFalse, "AdminAckRequired", "Description 3. Description 1. Description 2."},
			differs: `texts in gate key order, as the CVO's HEAD orders its admin-ack risks; the CVO then sorted texts: "Description 1. Description 2. Description 3."`,
		},
		{
			name: "admin ack found",
			obs:  acksAt48(map[string]string{gate: "Description."}, map[string]string{gate: "true"}),
			want: cvoCondition{configv1.ConditionTrue, clusterversion.ReasonAsExpected, allowed}, differs: asExpected,
		},
		{
			name: "admin ack 2 of 3 found",
			obs: acksAt48(map[string]string{gate: "Description.", "ack-4.8-foo": "Description foo.", "ack-4.8-bar": "Description bar."},
				map[string]string{gate: "true", "ack-4.8-bar": "true"}),
			want: cvoCondition{configv1.ConditionFalse, "AdminAckRequired", "Description foo."},
		},
		{
			name: "multiple admin acks found",
			obs: acksAt48(map[string]string{gate: "Description.", "ack-4.8-foo": "Description foo.", "ack-4.8-bar": "Description bar."},
				map[string]string{gate: "true", "ack-4.8-bar": "true", "ack-4.8-foo": "true"}),
			want: cvoCondition{configv1.ConditionTrue, clusterversion.ReasonAsExpected, allowed}, differs: asExpected,
		},
		{
			name: "admin-acks configmap not found",
			obs: clusterversion.UpgradeableObservation{AdminAckVersion: "4.8.0", AdminGates: gates(map[string]string{gate: "Description."}),
				AdminAcks: absent(acks(nil))},
			want: cvoCondition{configv1.ConditionFalse, "UnableToAccessAdminAcksConfigMap", "admin-acks configmap not found."},
		},
		{
			name: "admin-gates configmap not found",
			obs: clusterversion.UpgradeableObservation{AdminAckVersion: "4.8.0", AdminGates: absent(gates(nil)),
				AdminAcks: acks(map[string]string{gate: "true"})},
			want: cvoCondition{configv1.ConditionFalse, "UnableToAccessAdminGatesConfigMap", "admin-gates configmap not found."},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := clusterversion.Upgradeable(tt.obs, clusterversion.UpgradeablePass{}, tt.overrides)
			if c.Type != configv1.OperatorUpgradeable {
				t.Errorf("type = %s", c.Type)
			}
			if got := *cvoConditionOf(&c); got != tt.want {
				t.Errorf("Upgradeable = %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// TestCVORecommended: pkg/cvo/availableupdates_test.go,
// TestEvaluateConditionalUpdate, and the "nil available updates" case of
// pkg/cvo/status_test.go, Test_conditionalUpdateWithRiskNamesAndRiskConditions.
func TestCVORecommended(t *testing.T) {
	match := clusterversion.RiskResult{Status: metav1.ConditionTrue, Reason: clusterversion.ReasonMatch, Message: ""}
	noMatch := clusterversion.RiskResult{Status: metav1.ConditionFalse, Reason: clusterversion.ReasonNotMatch, Message: ""}
	failed := func(name, description, url string) clusterversion.RiskResult {
		return clusterversion.RiskResult{Status: metav1.ConditionUnknown, Reason: clusterversion.ReasonRiskEvaluationFailed, Message: fmt.Sprintf("Could not evaluate exposure to update risk %s (ERROR)\n  %s description: %s\n  %s URL: %s", name, name, description, name, url)}
	}
	tests := []struct {
		name    string
		risks   []configv1.ConditionalUpdateRisk
		results map[string]clusterversion.RiskResult
		accept  []string
		want    metav1.Condition
		differs string
	}{
		{
			name: "no risks",
			want: metav1.Condition{Type: "Recommended", Status: metav1.ConditionTrue, Reason: "NotExposedToRisks",
				Message: "The update is recommended, because none of the conditional update risks apply to this cluster."},
		},
		{
			name:    "one risk that does not match",
			risks:   []configv1.ConditionalUpdateRisk{{Name: "ShouldNotApply"}},
			results: map[string]clusterversion.RiskResult{"ShouldNotApply": noMatch},
			want: metav1.Condition{Type: "Recommended", Status: metav1.ConditionTrue, Reason: "NotExposedToRisks",
				Message: "The update is recommended, because none of the conditional update risks apply to this cluster."},
		},
		{
			name:    "one risk that matches",
			risks:   []configv1.ConditionalUpdateRisk{{URL: "https://match.es", Name: "RiskThatApplies", Message: "This is a risk!"}},
			results: map[string]clusterversion.RiskResult{"RiskThatApplies": match},
			want:    metav1.Condition{Type: "Recommended", Status: metav1.ConditionFalse, Reason: "RiskThatApplies", Message: "This is a risk! https://match.es"},
		},
		{
			name:    "one risk that matches and is accepted",
			risks:   []configv1.ConditionalUpdateRisk{{Name: "RiskThatApplies"}},
			results: map[string]clusterversion.RiskResult{"RiskThatApplies": match},
			accept:  []string{"RiskThatApplies", "not-important"},
			want: metav1.Condition{Type: "Recommended", Status: metav1.ConditionTrue, Reason: "AllExposedRisksAccepted",
				Message: "The update is recommended, because either risk does not apply to this cluster or it is accepted by cluster admins."},
		},
		{
			name: "matching risk with name that cannot be used as a condition reason",
			risks: []configv1.ConditionalUpdateRisk{{URL: "https://match.es", Name: "RISK-THAT-APPLIES", Message: "This is a risk!",
				MatchingRules: []configv1.ClusterCondition{{Type: "PromQL"}}}},
			results: map[string]clusterversion.RiskResult{"RISK-THAT-APPLIES": match},
			want:    metav1.Condition{Type: "Recommended", Status: metav1.ConditionFalse, Reason: "ExposedToRisks", Message: "This is a risk! https://match.es"},
		},
		{
			name: "two risks that match",
			risks: []configv1.ConditionalUpdateRisk{
				{URL: "https://match.es", Name: "RiskThatApplies", Message: "This is a risk!"},
				{URL: "https://doesnotmat.ch", Name: "ShouldNotApply", Message: "ShouldNotApply"},
				{URL: "https://match.es/too", Name: "RiskThatAppliesToo", Message: "This is a risk too!"},
			},
			results: map[string]clusterversion.RiskResult{"RiskThatApplies": match, "ShouldNotApply": noMatch, "RiskThatAppliesToo": match},
			want: metav1.Condition{Type: "Recommended", Status: metav1.ConditionFalse, Reason: "MultipleReasons",
				Message: "This is a risk! https://match.es\n\nThis is a risk too! https://match.es/too"},
		},
		{
			name: "first risk matches, second fails to evaluate",
			risks: []configv1.ConditionalUpdateRisk{
				{URL: "https://match.es", Name: "RiskThatApplies", Message: "This is a risk!"},
				{URL: "https://whokno.ws", Name: "RiskThatFailsToEvaluate", Message: "This is a risk too!"},
			},
			results: map[string]clusterversion.RiskResult{"RiskThatApplies": match,
				"RiskThatFailsToEvaluate": failed("RiskThatFailsToEvaluate", "This is a risk too!", "https://whokno.ws")},
			want: metav1.Condition{Type: "Recommended", Status: metav1.ConditionFalse, Reason: "MultipleReasons",
				Message: "This is a risk! https://match.es\n\n" +
					"Could not evaluate exposure to update risk RiskThatFailsToEvaluate (ERROR)\n" +
					"  RiskThatFailsToEvaluate description: This is a risk too!\n" +
					"  RiskThatFailsToEvaluate URL: https://whokno.ws"},
		},
		{
			name:    "one risk that fails to evaluate",
			risks:   []configv1.ConditionalUpdateRisk{{URL: "https://whokno.ws", Name: "RiskThatFailsToEvaluate", Message: "This is a risk!"}},
			results: map[string]clusterversion.RiskResult{"RiskThatFailsToEvaluate": failed("RiskThatFailsToEvaluate", "This is a risk!", "https://whokno.ws")},
			want: metav1.Condition{Type: "Recommended", Status: metav1.ConditionUnknown, Reason: "EvaluationFailed",
				Message: "Could not evaluate exposure to update risk RiskThatFailsToEvaluate (ERROR)\n" +
					"  RiskThatFailsToEvaluate description: This is a risk!\n" +
					"  RiskThatFailsToEvaluate URL: https://whokno.ws"},
		},
		{
			name:  "nil available updates",
			risks: []configv1.ConditionalUpdateRisk{{Name: "Risk1"}},
			want: metav1.Condition{Type: "Recommended", Status: metav1.ConditionUnknown, Reason: "EvaluationFailed",
				Message: "failed to find risk condition for risk Risk1"},
			differs: "the pinned API has no per-risk conditions: a risk without a result makes Recommended Unknown EvaluationFailed, where the CVO's risk reads Applies=Unknown InternalErrorFoundNoRiskCondition",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := clusterversion.Recommended(tt.risks, tt.results, tt.accept); got != tt.want {
				t.Errorf("Recommended = %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// TestCVOHistory: pkg/cvo/status_test.go, Test_mergeEqualVersions (its
// cases are unnamed, so they go by index), through startHistory: a merge
// keeps the one entry, a mismatch starts a new one; and
// pkg/cvo/status_history_test.go, Test_prune, scaled from its maxHistory
// of 10 to MaxHistory.
func TestCVOHistory(t *testing.T) {
	started := metav1.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC)
	const versionsOnly = "releases are matched by version alone: the image of a local payload is its directory, which may move"
	tests := []struct {
		name    string
		current configv1.UpdateHistory
		desired configv1.Release
		merged  bool
		differs string
	}{
		{name: "Test_mergeEqualVersions[0]", current: configv1.UpdateHistory{Image: "test:1", Version: "0.0.1"},
			desired: configv1.Release{Image: "test:1", Version: "0.0.1"}, merged: true},
		{name: "Test_mergeEqualVersions[1]", current: configv1.UpdateHistory{Image: "test:1"},
			desired: configv1.Release{Image: "test:1", Version: "0.0.1"}, merged: false,
			differs: versionsOnly + "; the CVO merges an entry without a version into one of the same image"},
		{name: "Test_mergeEqualVersions[2]", current: configv1.UpdateHistory{Image: "test:1", Version: "0.0.1"},
			desired: configv1.Release{Image: "test:1"}, merged: false,
			differs: versionsOnly + "; the CVO merges a desired release without a version into the same image"},
		{name: "Test_mergeEqualVersions[3]", current: configv1.UpdateHistory{Image: "test:1", Version: "0.0.1"},
			desired: configv1.Release{Version: "0.0.1"}, merged: true,
			differs: versionsOnly + "; the CVO does not merge, and records no history for a release without an image"},
		{name: "Test_mergeEqualVersions[4]", current: configv1.UpdateHistory{Image: "test:1", Version: "0.0.1"},
			desired: configv1.Release{Image: "test:2", Version: "0.0.1"}, merged: true,
			differs: versionsOnly + "; the CVO starts a new entry for another image"},
		{name: "Test_mergeEqualVersions[5]", current: configv1.UpdateHistory{Image: "test:1", Version: "0.0.1"},
			desired: configv1.Release{Image: "test:1", Version: "0.0.2"}, merged: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			current := tt.current
			current.State, current.StartedTime = configv1.PartialUpdate, started
			h := clusterversion.StartHistory([]configv1.UpdateHistory{current}, tt.desired, cvoNow, "")
			if tt.merged {
				if len(h) != 1 || h[0].StartedTime != started || h[0].CompletionTime != nil {
					t.Errorf("history = %+v, want the one entry kept", h)
				}
				return
			}
			if len(h) != 2 || h[0].Version != tt.desired.Version || h[0].Image != tt.desired.Image || h[0].State != configv1.PartialUpdate ||
				h[0].StartedTime != cvoNow || h[1].CompletionTime == nil || *h[1].CompletionTime != cvoNow {
				t.Errorf("history = %+v, want a new partial entry and the old one closed", h)
			}
		})
	}

	// "prune oldest not in mostImportantWeight set": a full history of
	// completed minors, newest first. The CVO ranks the initial entry as
	// most important and drops the oldest entry of less importance, the
	// second oldest; it drops the initial entry only when that is all it
	// can drop.
	t.Run("prune oldest not in mostImportantWeight set", func(t *testing.T) {
		var h []configv1.UpdateHistory
		for i := 0; i < clusterversion.MaxHistory; i++ {
			done := started
			h = append(h, configv1.UpdateHistory{State: configv1.CompletedUpdate, Version: fmt.Sprintf("4.%d.0", clusterversion.MaxHistory-i),
				StartedTime: started, CompletionTime: &done})
		}
		h = clusterversion.StartHistory(h, configv1.Release{Version: fmt.Sprintf("4.%d.0", clusterversion.MaxHistory+1)}, cvoNow, "")
		if len(h) != clusterversion.MaxHistory {
			t.Fatalf("%d entries, want %d", len(h), clusterversion.MaxHistory)
		}
		if got := []string{h[0].Version, h[clusterversion.MaxHistory-2].Version, h[clusterversion.MaxHistory-1].Version}; got[0] != "4.101.0" || got[1] != "4.3.0" || got[2] != "4.1.0" {
			t.Errorf("newest, second oldest and oldest = %v, want [4.101.0 4.3.0 4.1.0]", got)
		}
	})
}

// TestCVOValidate: lib/validation/validation_test.go,
// TestValidateClusterVersion, through checkSpec. Its cases that set
// spec.desiredUpdate.acceptRisks cannot be stated here: the pinned API has
// no such field, and this operator reads it untyped.
func TestCVOValidate(t *testing.T) {
	tests := []struct {
		name    string
		want    field.ErrorList
		message string
		differs string
	}{
		{
			name:    "empty desired update is not allowed if shouldReconcileAcceptRisks is false",
			want:    field.ErrorList{field.Required(field.NewPath("spec", "desiredUpdate"), "must specify architecture, version, or image")},
			message: "The cluster version is invalid: spec.desiredUpdate: Required value: must specify architecture, version, or image",
		},
		{
			name:    "empty desired update is not allowed if shouldReconcileAcceptRisks is true",
			want:    field.ErrorList{field.Required(field.NewPath("spec", "desiredUpdate"), "must specify architecture, version, or image")},
			message: "The cluster version is invalid: spec.desiredUpdate: Required value: must specify architecture, version, or image",
			differs: "acceptRisks is always honoured but not in the pinned API, so the message does not offer it (the CVO: \"architecture, version, image, or acceptRisks\")",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cv := &configv1.ClusterVersion{}
			cv.Name = "version"
			cv.Spec.DesiredUpdate = &configv1.Update{}
			errs := clusterversion.CheckSpec(cv, cvoNow)
			if len(errs) != len(tt.want) {
				t.Fatalf("errors = %v, want %v", errs, tt.want)
			}
			for i := range errs {
				if errs[i].Error() != tt.want[i].Error() {
					t.Errorf("error %d = %v, want %v", i, errs[i], tt.want[i])
				}
			}
			c := clusterversion.FindCondition(cv.Status.Conditions, clusterversion.ConditionInvalid)
			if got := cvoConditionOf(c); got == nil || *got != (cvoCondition{configv1.ConditionTrue, clusterversion.ReasonInvalidClusterVersion, tt.message}) {
				t.Errorf("Invalid = %+v", got)
			}
			if cv.Spec.DesiredUpdate != nil {
				t.Errorf("the invalid desiredUpdate was kept: %+v", cv.Spec.DesiredUpdate)
			}
		})
	}
}
