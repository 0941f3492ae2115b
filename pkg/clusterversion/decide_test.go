package clusterversion

import (
	"errors"
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/payload-applier/payload-applier/pkg/apply/cleanup"
	"github.com/payload-applier/payload-applier/pkg/apply/deletion"
	"github.com/payload-applier/payload-applier/pkg/graph"
	"github.com/payload-applier/payload-applier/pkg/payload"
	"github.com/payload-applier/payload-applier/pkg/precondition"
)

// running is a cluster that completed version, with the Upgradeable its
// last pass wrote.
func running(version string, written configv1.ConditionStatus) *configv1.ClusterVersion {
	return &configv1.ClusterVersion{
		ObjectMeta: metav1.ObjectMeta{Name: "version", Generation: 7},
		Status: configv1.ClusterVersionStatus{
			Desired: configv1.Release{Version: version},
			History: []configv1.UpdateHistory{entry(version, configv1.CompletedUpdate)},
			Conditions: []configv1.ClusterOperatorStatusCondition{{Type: configv1.OperatorUpgradeable, Status: written,
				Reason: "AsWritten", LastTransitionTime: t0}},
		},
	}
}

// progressingCV is running whose ClusterVersion says an update is under way.
func progressingCV(version string) *configv1.ClusterVersion {
	cv := running(version, configv1.ConditionTrue)
	cv.Status.Conditions = append(cv.Status.Conditions, configv1.ClusterOperatorStatusCondition{Type: configv1.OperatorProgressing,
		Status: configv1.ConditionTrue, Message: "Working towards " + version, LastTransitionTime: t0})
	return cv
}

func notUpgradeable(name string) configv1.ClusterOperator {
	return configv1.ClusterOperator{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: configv1.ClusterOperatorStatus{
		Conditions: []configv1.ClusterOperatorStatusCondition{{Type: configv1.OperatorUpgradeable, Status: configv1.ConditionFalse, Reason: "Busy", Message: "rebooting"}}}}
}

func target(version string) *TargetObservation {
	return &TargetObservation{Version: version, Release: &payload.Release{Version: version}}
}

func TestDecide(t *testing.T) {
	busy := UpgradeableObservation{Operators: []configv1.ClusterOperator{notUpgradeable("network")}}
	calm := UpgradeableObservation{}
	recommended := func(version string, status metav1.ConditionStatus) []configv1.ConditionalUpdate {
		return []configv1.ConditionalUpdate{{Release: configv1.Release{Version: version},
			Risks: []configv1.ConditionalUpdateRisk{{Name: "Bad", URL: "https://example.com/bad", Message: "breaks things",
				MatchingRules: []configv1.ClusterCondition{{Type: "Always"}}}},
			Conditions: []metav1.Condition{{Type: precondition.ConditionRecommended, Status: status, Reason: "Bad", Message: "breaks things"}}}}
	}
	for _, tc := range []struct {
		name string
		obs  Observed
		// upgradeable is the decided Upgradeable's status, "" for none.
		upgradeable configv1.ConditionStatus
		reason      string
		checked     bool
		blocking    bool
		message     string
	}{
		{name: "nothing observed, nothing decided",
			obs: Observed{CV: running("1.0.0", configv1.ConditionTrue)}},
		{name: "Upgradeable from what the cluster says now",
			obs:         Observed{CV: running("1.0.0", configv1.ConditionTrue), Upgradeable: &busy},
			upgradeable: configv1.ConditionFalse, reason: ReasonOperatorsNotUpgrade},
		{name: "a minor judged by the Upgradeable decided now, not the one written",
			obs:         Observed{CV: running("1.0.0", configv1.ConditionTrue), Upgradeable: &busy, Target: target("1.1.0")},
			upgradeable: configv1.ConditionFalse, reason: ReasonOperatorsNotUpgrade, checked: true, blocking: true, message: "network"},
		{name: "a minor accepted once the cluster is calm, whatever was written",
			obs:         Observed{CV: running("1.0.0", configv1.ConditionFalse), Upgradeable: &calm, Target: target("1.1.0")},
			upgradeable: configv1.ConditionTrue, reason: ReasonAsExpected, checked: true},
		{name: "a patch goes ahead while Upgradeable is False",
			obs:         Observed{CV: running("1.0.0", configv1.ConditionTrue), Upgradeable: &busy, Target: target("1.0.1")},
			upgradeable: configv1.ConditionFalse, reason: ReasonOperatorsNotUpgrade, checked: true},
		{name: "without Upgradeable observed, the written one judges",
			obs:     Observed{CV: running("1.0.0", configv1.ConditionFalse), Target: target("1.1.0")},
			checked: true, blocking: true},
		{name: "a target the graph's pending answer makes conditional is judged by its risks",
			obs:     Observed{CV: running("1.0.0", configv1.ConditionTrue), Target: target("1.0.1"), Pending: recommended("1.0.1", metav1.ConditionFalse)},
			checked: true, blocking: true, message: "is not recommended"},
		{name: "an answer for the cluster's version outranks the pending one",
			obs: Observed{CV: func() *configv1.ClusterVersion {
				cv := running("1.0.0", configv1.ConditionTrue)
				cv.Status.ConditionalUpdates = recommended("1.0.1", metav1.ConditionTrue)
				return cv
			}(), Target: target("1.0.1"), Pending: recommended("1.0.1", metav1.ConditionFalse)},
			checked: true},
		{name: "forced through a blocking Upgradeable",
			obs: Observed{CV: running("1.0.0", configv1.ConditionTrue), Upgradeable: &busy,
				Target: &TargetObservation{Version: "1.1.0", Release: &payload.Release{Version: "1.1.0"}, Force: true}},
			upgradeable: configv1.ConditionFalse, reason: ReasonOperatorsNotUpgrade, checked: true, message: "Forced through blocking failures"},
		{name: "an unreadable ledger refuses a minor",
			obs: Observed{CV: running("1.0.0", configv1.ConditionTrue),
				Target: &TargetObservation{Version: "1.1.0", Release: &payload.Release{Version: "1.1.0"}, CarriedErr: errors.New("garbled")}},
			checked: true, blocking: true, message: "garbled"},
		// The CVO's pkg/risk/updating Test_New at 6e719331: no risk without
		// Progressing=True, ClusterVersionUpdating with it, for minor and
		// major targets only.
		{name: "an update under way holds a minor retarget",
			obs:         Observed{CV: progressingCV("1.0.0"), Upgradeable: &calm, Target: target("1.1.0")},
			upgradeable: configv1.ConditionFalse, reason: ReasonUpdating, checked: true, blocking: true,
			message: "An update is already in progress and the details are in the Progressing condition."},
		{name: "an update under way lets a patch retarget go ahead",
			obs:         Observed{CV: progressingCV("1.0.0"), Upgradeable: &calm, Target: target("1.0.1")},
			upgradeable: configv1.ConditionFalse, reason: ReasonUpdating, checked: true},
		{name: "an update under way beside a ClusterOperator: both named",
			obs:         Observed{CV: progressingCV("1.0.0"), Upgradeable: &busy, Target: target("2.0.0")},
			upgradeable: configv1.ConditionFalse, reason: ReasonMultipleReasons, checked: true, blocking: true, message: "* An update is already in progress"},
		{name: "already the target: not judged again",
			obs:     Observed{CV: running("1.0.0", configv1.ConditionFalse), Target: target("1.0.0")},
			checked: false},
		{name: "no ClusterVersion: an install, not judged",
			obs:     Observed{Target: target("1.0.0")},
			checked: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before []configv1.ClusterOperatorStatusCondition
			if tc.obs.CV != nil {
				before = append(before, tc.obs.CV.Status.Conditions...)
			}
			d := Decide(tc.obs, t0)
			if d.Upgradeable.Status != tc.upgradeable || d.Upgradeable.Reason != tc.reason {
				t.Errorf("Upgradeable %s/%s, want %s/%s", d.Upgradeable.Status, d.Upgradeable.Reason, tc.upgradeable, tc.reason)
			}
			v := d.Verdict
			if v.Checked != tc.checked || v.Blocking != tc.blocking || !strings.Contains(v.Message, tc.message) {
				t.Errorf("verdict checked=%v blocking=%v %q, want checked=%v blocking=%v with %q", v.Checked, v.Blocking, v.Message, tc.checked, tc.blocking, tc.message)
			}
			if tc.obs.CV != nil && !equalConditions(before, tc.obs.CV.Status.Conditions) {
				t.Errorf("Decide changed what it observed: %+v, was %+v", tc.obs.CV.Status.Conditions, before)
			}
		})
	}
}

func equalConditions(a, b []configv1.ClusterOperatorStatusCondition) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestStatus(t *testing.T) {
	updating := func() *configv1.ClusterVersion {
		cv := running("1.0.0", configv1.ConditionTrue)
		cv.Status.Desired = configv1.Release{Version: "1.0.1"}
		cv.Status.History = append([]configv1.UpdateHistory{entry("1.0.1", configv1.PartialUpdate)}, cv.Status.History...)
		return cv
	}
	rel := &payload.Release{Version: "1.0.1"}
	complete := &Pass{Mode: graph.ModeUpdate, Done: 3, Total: 3, Complete: true}
	now := metav1.NewTime(t0.Add(time.Hour))
	for _, tc := range []struct {
		name      string
		obs       Observed
		pass      *Pass
		completed bool
		// want are condition type → "Status/Reason"; a message fragment
		// after a second slash.
		want map[configv1.ClusterStatusConditionType]string
		// absent are condition types that must not be there.
		absent []configv1.ClusterStatusConditionType
	}{
		{name: "an update whose applies all succeeded completes",
			obs: Observed{CV: updating(), Upgradeable: &UpgradeableObservation{}}, pass: complete, completed: true,
			want: map[configv1.ClusterStatusConditionType]string{
				configv1.OperatorProgressing: "False//Cluster version is 1.0.1",
				configv1.OperatorAvailable:   "True//Done applying 1.0.1",
				ConditionFailing:             "False/",
				configv1.OperatorUpgradeable: "True/AsExpected"},
			absent: []configv1.ClusterStatusConditionType{ConditionOperandCleanup}},
		{name: "an update whose ledger cannot be read stays in progress",
			obs:  Observed{CV: updating(), Upgradeable: &UpgradeableObservation{}, Deletes: UpgradeablePass{LedgerErr: errors.New("garbled")}},
			pass: &Pass{Mode: graph.ModeUpdate, Done: 3, Total: 3, Complete: true, LedgerErr: errors.New("garbled")},
			want: map[configv1.ClusterStatusConditionType]string{
				ConditionFailing:             "True/" + ReasonDeleteLedgerUnreadable,
				configv1.OperatorUpgradeable: "False/" + ReasonDeleteLedgerUnreadable,
				configv1.OperatorAvailable:   "True//Done applying 1.0.0"}},
		{name: "a failed apply keeps the update in progress and says why",
			obs: Observed{CV: updating()},
			pass: &Pass{Mode: graph.ModeUpdate, Done: 2, Total: 3, Failures: []Failure{{Reason: "ResourceApplyFailed", Message: "ConfigMap/ns/a (a.yaml): forbidden", Subject: "ConfigMap/ns/a"},
				{Reason: "ClusterOperatorUpdating", Message: "updating", Subject: "ClusterOperator/x", Effect: payload.EffectNone}}},
			want: map[configv1.ClusterStatusConditionType]string{
				ConditionFailing:             "True/ResourceApplyFailed/forbidden",
				configv1.OperatorProgressing: "True/ResourceApplyFailed/Unable to apply 1.0.1: an unknown error has occurred: ResourceApplyFailed",
				configv1.OperatorUpgradeable: "True/AsWritten"}},
		{name: "an update still under way holds minor updates",
			obs:  Observed{CV: updating(), Upgradeable: &UpgradeableObservation{}},
			pass: &Pass{Mode: graph.ModeUpdate, Done: 2, Total: 3},
			want: map[configv1.ClusterStatusConditionType]string{
				configv1.OperatorProgressing: "True/",
				configv1.OperatorUpgradeable: "False/" + ReasonUpdating + "/An update is already in progress"}},
		{name: "Upgradeable is decided from what was observed after the pass",
			obs:  Observed{CV: updating(), Upgradeable: &UpgradeableObservation{Operators: []configv1.ClusterOperator{notUpgradeable("etcd")}}},
			pass: complete, completed: true,
			want: map[configv1.ClusterStatusConditionType]string{configv1.OperatorUpgradeable: "False/" + ReasonOperatorsNotUpgrade + "/etcd"}},
		{name: "an invalid spec: Progressing says the operator stopped acting on it",
			obs: Observed{CV: running("1.0.1", configv1.ConditionTrue), Invalid: true}, pass: &Pass{Mode: graph.ModeReconcile, Done: 3, Total: 3, Complete: true},
			want: map[configv1.ClusterStatusConditionType]string{configv1.OperatorProgressing: "False/" + ReasonInvalidClusterVersion + "/Stopped at 1.0.1"}},
		{name: "a running cleanup is reported, and holds minor updates",
			obs: Observed{CV: updating(), Upgradeable: &UpgradeableObservation{}, CleanupStallAfter: time.Hour},
			pass: &Pass{Mode: graph.ModeUpdate, Done: 3, Total: 3, Complete: true,
				Cleanups: []cleanup.Record{{Component: "widgets", State: cleanup.Running, StartedAt: &now, ProgressAt: &now, Remaining: map[string]int{"Widget": 1}}}},
			completed: true,
			want: map[configv1.ClusterStatusConditionType]string{
				ConditionOperandCleanup:      "True/" + cleanup.ReasonWaiting,
				configv1.OperatorUpgradeable: "False/" + cleanup.ReasonInProgress}},
		{name: "a pending delete holds minor updates, not the update",
			obs: Observed{CV: updating(), Upgradeable: &UpgradeableObservation{}},
			pass: &Pass{Mode: graph.ModeUpdate, Done: 3, Total: 3, Complete: true,
				Deletes: deletion.Summary{InProgress: []deletion.Record{{ID: payload.ObjectID{Kind: "ConfigMap", Namespace: "ns", Name: "old"}, State: deletion.InProgress}}}},
			completed: true,
			want: map[configv1.ClusterStatusConditionType]string{
				configv1.OperatorProgressing: "False//Cluster version is 1.0.1",
				configv1.OperatorUpgradeable: "False/" + ReasonDeletionInProgress + "/ConfigMap/ns/old"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			observed := tc.obs.CV.DeepCopy()
			status, completed := Status(tc.obs, rel, tc.pass, now)
			if completed != tc.completed {
				t.Errorf("completed %v, want %v", completed, tc.completed)
			}
			if completed && (status.History[0].State != configv1.CompletedUpdate || !status.History[0].CompletionTime.Equal(&now)) {
				t.Errorf("history[0] %+v, want Completed at %s", status.History[0], now)
			}
			for typ, want := range tc.want {
				parts := strings.SplitN(want, "/", 3)
				c := FindCondition(status.Conditions, typ)
				switch {
				case c == nil:
					t.Errorf("%s missing", typ)
				case string(c.Status) != parts[0] || c.Reason != parts[1] || (len(parts) == 3 && !strings.Contains(c.Message, parts[2])):
					t.Errorf("%s = %s/%s %q, want %s", typ, c.Status, c.Reason, c.Message, want)
				}
			}
			for _, typ := range tc.absent {
				if FindCondition(status.Conditions, typ) != nil {
					t.Errorf("%s present", typ)
				}
			}
			if status.ObservedGeneration != 7 || status.VersionHash != VersionHash(rel) {
				t.Errorf("observedGeneration %d, versionHash %q", status.ObservedGeneration, status.VersionHash)
			}
			if !equalConditions(observed.Status.Conditions, tc.obs.CV.Status.Conditions) || observed.Status.History[0].State != tc.obs.CV.Status.History[0].State {
				t.Error("Status changed the status it observed")
			}
		})
	}
}
