package precondition

import (
	"context"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestRecommendedUpdate(t *testing.T) {
	entry := func(version string, status metav1.ConditionStatus, reason, message string, risks ...string) configv1.ConditionalUpdate {
		u := configv1.ConditionalUpdate{Release: configv1.Release{Version: version}}
		for _, r := range risks {
			u.Risks = append(u.Risks, configv1.ConditionalUpdateRisk{Name: r})
		}
		if status != "" {
			u.Conditions = []metav1.Condition{{Type: ConditionRecommended, Status: status, Reason: reason, Message: message}}
		}
		return u
	}
	retrieved := func(s configv1.ConditionStatus) []configv1.ClusterOperatorStatusCondition {
		return []configv1.ClusterOperatorStatusCondition{{Type: configv1.RetrievedUpdates, Status: s, Reason: "R"}}
	}
	for _, tc := range []struct {
		name       string
		channel    string
		conditions []configv1.ClusterOperatorStatusCondition
		available  []string
		entries    []configv1.ConditionalUpdate
		accept     []string
		// reason "" passes; blocking tells a refusal from a warning.
		reason, message string
		blocking        bool
	}{
		{name: "no graph in use", channel: ""},
		{name: "recommended", channel: "c", conditions: retrieved(configv1.ConditionTrue), available: []string{"1.0.1"}},
		{name: "no channel", conditions: retrieved(configv1.ConditionFalse), reason: ReasonNoChannel, message: "Configured channel is unset"},
		{name: "not in the graph", channel: "c", conditions: retrieved(configv1.ConditionTrue), available: []string{"1.0.2"},
			reason: ReasonUnknownUpdate, message: "RetrievedUpdates=True (R), so the update from 1.0.0 to 1.0.1 is probably neither recommended nor supported."},
		{name: "graph unreadable", channel: "c", conditions: retrieved(configv1.ConditionFalse), reason: ReasonUnknownUpdate, message: "is unknown"},
		{name: "conditional, not exposed", channel: "c", conditions: retrieved(configv1.ConditionTrue),
			entries: []configv1.ConditionalUpdate{entry("1.0.1", metav1.ConditionTrue, ReasonNotExposedToRisks, "ok", "A")}},
		{name: "exposed: refused naming the risk", channel: "c", conditions: retrieved(configv1.ConditionTrue),
			entries: []configv1.ConditionalUpdate{entry("1.0.2", metav1.ConditionTrue, ReasonNotExposedToRisks, "", "B"), entry("1.0.1", metav1.ConditionFalse, "BadDisk", "disks fail https://x", "BadDisk", "Other")},
			accept:  []string{"Other"}, reason: "BadDisk", message: "Update from 1.0.0 to 1.0.1 is not recommended, and spec.desiredUpdate.acceptRisks does not name its risks BadDisk:\n\ndisks fail https://x", blocking: true},
		{name: "all accepted: a warning naming them", channel: "c", conditions: retrieved(configv1.ConditionTrue), available: []string{"1.0.1"},
			entries: []configv1.ConditionalUpdate{entry("1.0.1", metav1.ConditionTrue, ReasonAllExposedRisksAccepted, "", "BadDisk", "Other")},
			accept:  []string{"BadDisk", "Other", "Unrelated"}, reason: ReasonAllExposedRisksAccepted, message: "accepted in spec.desiredUpdate.acceptRisks: BadDisk, Other"},
		{name: "unknown: refused while a risk is not accepted", channel: "c", conditions: retrieved(configv1.ConditionTrue),
			entries: []configv1.ConditionalUpdate{entry("1.0.1", metav1.ConditionUnknown, ReasonEvaluationFailed, "no prometheus", "A", "B")}, accept: []string{"B"},
			reason: ReasonEvaluationFailed, message: "is Recommended=Unknown: EvaluationFailed: no prometheus\n\nRefused until its risks can be evaluated, or spec.desiredUpdate.acceptRisks names A.", blocking: true},
		{name: "unknown, every risk accepted: a warning", channel: "c", conditions: retrieved(configv1.ConditionTrue),
			entries: []configv1.ConditionalUpdate{entry("1.0.1", metav1.ConditionUnknown, ReasonEvaluationFailed, "no prometheus", "A")}, accept: []string{"A"},
			reason: ReasonEvaluationFailed, message: "is Recommended=Unknown: EvaluationFailed: no prometheus"},
		{name: "no Recommended condition", channel: "c", conditions: retrieved(configv1.ConditionTrue),
			entries: []configv1.ConditionalUpdate{entry("1.0.1", "", "", "", "A")}, reason: ReasonUnknownConditionType},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cv := &configv1.ClusterVersion{Spec: configv1.ClusterVersionSpec{Channel: tc.channel},
				Status: configv1.ClusterVersionStatus{Desired: configv1.Release{Version: "1.0.0"}, Conditions: tc.conditions, ConditionalUpdates: tc.entries}}
			for _, v := range tc.available {
				cv.Status.AvailableUpdates = append(cv.Status.AvailableUpdates, configv1.Release{Version: v})
			}
			err := RecommendedUpdate{}.Run(context.Background(), ReleaseContext{DesiredVersion: "1.0.1", ClusterVersion: cv, AcceptRisks: tc.accept})
			if tc.reason == "" {
				if err != nil {
					t.Fatalf("got %v, want a pass", err)
				}
				return
			}
			pErr, ok := err.(*Error)
			if !ok || pErr.Reason != tc.reason || !strings.Contains(pErr.Message, tc.message) || IsBlocking(err) != tc.blocking || pErr.Name != NameClusterVersionRecommendedUpdate {
				t.Fatalf("got %#v, want reason %s, blocking %v, message with %q", err, tc.reason, tc.blocking, tc.message)
			}
			if tc.blocking {
				if blocking, summary := Summarize([]error{err}, true); blocking || !strings.Contains(summary.Error(), tc.reason) {
					t.Errorf("force must accept it, naming the risk: %v", summary)
				}
			}
		})
	}
}
