package clusterversion

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestFitStatusCutsInOrder: over budget once each value is bounded, a
// status loses availableUpdates, then history beyond keptHistory, then
// message length, the other conditions' first, and last the other
// conditions; desired, the essential conditions and the newest history
// entry stay.
func TestFitStatusCutsInOrder(t *testing.T) {
	long := func(n int) string { return strings.Repeat("m", n) }
	// Bounded, a condition is about 8.3 KB, a history entry 4 KB, an
	// available update 1 KB.
	status := func(updates, history, otherConditions int) configv1.ClusterVersionStatus {
		st := configv1.ClusterVersionStatus{Desired: configv1.Release{Version: "2.0.0", Image: long(900), Channels: []string{"stable-2"}}}
		types := append([]configv1.ClusterStatusConditionType(nil), essentialConditions...)
		for i := range otherConditions {
			types = append(types, configv1.ClusterStatusConditionType(fmt.Sprintf("Other%03d", i)))
		}
		for _, t := range types {
			st.Conditions = append(st.Conditions, configv1.ClusterOperatorStatusCondition{Type: t, Status: configv1.ConditionTrue, Message: long(9000)})
		}
		for i := range history {
			st.History = append(st.History, configv1.UpdateHistory{State: configv1.CompletedUpdate, Version: fmt.Sprintf("1.%d.0", history-i),
				Image: long(900), AcceptedRisks: long(3000)})
		}
		for i := range updates {
			st.AvailableUpdates = append(st.AvailableUpdates, configv1.Release{Version: fmt.Sprintf("2.1.%d", updates-i), Image: long(900)})
		}
		return st
	}
	// messages returns the length of the longest essential and other
	// condition message, and how many other conditions are left.
	messages := func(st configv1.ClusterVersionStatus) (essential, other, others int) {
		for _, c := range st.Conditions {
			switch {
			case c.Type == ConditionStatusTruncated:
			case slices.Contains(essentialConditions, c.Type):
				essential = max(essential, len(c.Message))
			default:
				other, others = max(other, len(c.Message)), others+1
			}
		}
		return essential, other, others
	}
	bounded := MaxMessageBytes - 32 // a message only its own limit cut
	cases := []struct {
		name  string
		st    configv1.ClusterVersionStatus
		check func(t *testing.T, st configv1.ClusterVersionStatus)
	}{
		{"availableUpdates go first, from the oldest", status(300, 20, 3), func(t *testing.T, st configv1.ClusterVersionStatus) {
			if n := len(st.AvailableUpdates); n == 0 || n == 300 || st.AvailableUpdates[0].Version != "2.1.300" || len(st.History) != 20 {
				t.Errorf("%d updates, %d history entries: want some updates, the newest first, and the whole history", n, len(st.History))
			}
		}},
		{"then history beyond the newest ten", status(300, 100, 3), func(t *testing.T, st configv1.ClusterVersionStatus) {
			if n := len(st.History); len(st.AvailableUpdates) != 0 || n <= keptHistory || n == 100 {
				t.Errorf("%d updates, %d history entries: want no update and more than %d entries", len(st.AvailableUpdates), n, keptHistory)
			}
			if essential, other, _ := messages(st); essential < bounded || other < bounded {
				t.Errorf("messages cut to %d and %d: nothing needed it", essential, other)
			}
		}},
		{"then the other conditions' messages", status(0, 100, 30), func(t *testing.T, st configv1.ClusterVersionStatus) {
			essential, other, others := messages(st)
			if len(st.History) != keptHistory || others != 30 || other >= bounded || other < minCutTextBytes || essential < bounded {
				t.Errorf("%d history entries, %d other conditions, messages of %d (others) and %d: want %d entries, every condition, only the others' messages cut, to at least %d",
					len(st.History), others, other, essential, keptHistory, minCutTextBytes)
			}
		}},
		{"then the essential messages, then the other conditions", status(0, 100, 300), func(t *testing.T, st configv1.ClusterVersionStatus) {
			essential, other, others := messages(st)
			if others == 0 || others == 300 || essential >= bounded || essential < minCutTextBytes || other > minCutTextBytes {
				t.Errorf("%d other conditions, messages of %d (others) and %d: want some conditions dropped, every message cut as far as it goes", others, other, essential)
			}
		}},
	}
	now := metav1.Now()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			again := *tc.st.DeepCopy()
			newest := tc.st.History[0]
			cuts := Fit(&tc.st, nil, now)
			if size := StatusSize(&tc.st, nil); size > MaxStatusBytes {
				t.Fatalf("%d bytes, over budget", size)
			}
			second := Fit(&again, nil, now)
			if !equality.Semantic.DeepEqual(tc.st, again) || cuts.Message() != second.Message() {
				t.Error("two fits of one status differ")
			}
			tc.check(t, tc.st)
			st := tc.st
			for _, ct := range essentialConditions {
				if FindCondition(st.Conditions, ct) == nil {
					t.Errorf("%s was dropped", ct)
				}
			}
			if st.Desired.Version != "2.0.0" || len(st.Desired.Image) != 900 || len(st.History) == 0 || st.History[0].Version != newest.Version {
				t.Errorf("desired %s, newest history entry %v: both must stay", st.Desired.Version, st.History[:min(1, len(st.History))])
			}
			wantCondition(t, &configv1.ClusterVersion{Status: st}, ConditionStatusTruncated, configv1.ConditionTrue, ReasonStatusLimits, "The status was cut")
		})
	}
}

// TestFitStatusKeepsEveryConditionalUpdateThatFits: conditional updates
// past the budget are dropped before they are read, and still the status
// keeps as many of the first as fit, as when every one was measured.
func TestFitStatusKeepsEveryConditionalUpdateThatFits(t *testing.T) {
	risks := []configv1.ConditionalUpdateRisk{{Name: "R", URL: "https://x/<&>", Message: strings.Repeat("m", MaxRiskMessageBytes),
		MatchingRules: []configv1.ClusterCondition{{Type: "PromQL", PromQL: &configv1.PromQLClusterCondition{PromQL: strings.Repeat("q", 20<<10)}}}}}
	var st configv1.ClusterVersionStatus
	for i := range 400 {
		// The entries share their risks, as those of one group do.
		st.ConditionalUpdates = append(st.ConditionalUpdates, configv1.ConditionalUpdate{
			Release: configv1.Release{Version: fmt.Sprintf("1.1.%d", i)}, Risks: risks})
	}
	// Each risk's Applies condition counts too.
	applies := RiskApplies{"R": {Type: ConditionApplies, Status: metav1.ConditionUnknown, Reason: ReasonRiskEvaluationFailed, Message: strings.Repeat("a", maxAppliesMessageBytes)}}
	Fit(&st, applies, metav1.Now())
	kept := len(st.ConditionalUpdates)
	t.Logf("%d of 400 entries kept", kept)
	if size := StatusSize(&st, applies); kept == 0 || size > MaxStatusBytes {
		t.Fatalf("%d entries kept in %d bytes; want some, within %d", kept, size, MaxStatusBytes)
	}
	if q := st.ConditionalUpdates[0].Risks[0].MatchingRules[0].PromQL.PromQL; len(q) > MaxMessageBytes {
		t.Errorf("a query of %d bytes, want it cut to %d", len(q), MaxMessageBytes)
	}
	// One more entry would not have fit.
	more := st.DeepCopy()
	more.ConditionalUpdates = append(more.ConditionalUpdates, more.ConditionalUpdates[kept-1])
	if size := StatusSize(more, applies); size <= MaxStatusBytes-maxCutsNoteBytes-512 {
		t.Errorf("%d of 400 entries kept, but one more fits (%d bytes)", kept, size)
	}
	wantNote := fmt.Sprintf("conditionalUpdates keeps the first %d of 400 entries", kept)
	if c := FindCondition(st.Conditions, ConditionStatusTruncated); c == nil || !strings.Contains(c.Message, wantNote) {
		t.Errorf("StatusTruncated %+v, want %q", c, wantNote)
	}
}

func TestJSONSizeIsTheMarshalledSize(t *testing.T) {
	st := &configv1.ClusterVersionStatus{
		Conditions:         []configv1.ClusterOperatorStatusCondition{{Type: "A", Message: "<script> & \u2028 \xff"}},
		ConditionalUpdates: []configv1.ConditionalUpdate{{Release: configv1.Release{Version: "1.0.0"}}},
	}
	for _, v := range []any{st, &st.ConditionalUpdates[0], &configv1.ClusterVersionStatus{}} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if got := JSONSize(v); got != len(b) {
			t.Errorf("jsonSize %d, json.Marshal wrote %d bytes: %s", got, len(b), b)
		}
	}
}

// wantCondition checks cv's condition ct and that its message holds each
// fragment.
func wantCondition(t *testing.T, cv *configv1.ClusterVersion, ct configv1.ClusterStatusConditionType, status configv1.ConditionStatus, reason string, fragments ...string) {
	t.Helper()
	c := FindCondition(cv.Status.Conditions, ct)
	if c == nil {
		t.Fatalf("no %s condition in %+v", ct, cv.Status.Conditions)
	}
	if c.Status != status || c.Reason != reason {
		t.Errorf("%s = %s/%s (%q), want %s/%s", ct, c.Status, c.Reason, c.Message, status, reason)
	}
	for _, f := range fragments {
		if !strings.Contains(c.Message, f) {
			t.Errorf("%s message %q lacks %q", ct, c.Message, f)
		}
	}
}
