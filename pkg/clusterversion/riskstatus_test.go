package clusterversion

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// newerStatus is the part of the status newer openshift/api types hold,
// as the test reads it back.
type newerStatus struct {
	ConditionalUpdateRisks []riskEntry `json:"conditionalUpdateRisks"`
	ConditionalUpdates     []struct {
		Release   configv1.Release `json:"release"`
		RiskNames []string         `json:"riskNames"`
		Risks     []riskEntry      `json:"risks"`
	} `json:"conditionalUpdates"`
}

// written lays applies over st as the writer does, and reads it back.
func written(t *testing.T, st configv1.ClusterVersionStatus, applies RiskApplies) newerStatus {
	t.Helper()
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&configv1.ClusterVersion{Status: st})
	if err != nil {
		t.Fatal(err)
	}
	if err := WithRiskStatus(obj, &st, applies); err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(obj["status"])
	if err != nil {
		t.Fatal(err)
	}
	var out newerStatus
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func applies(status metav1.ConditionStatus, reason, message string) []metav1.Condition {
	return []metav1.Condition{{Type: ConditionApplies, Status: status, Reason: reason, Message: message}}
}

// withoutTimes drops the transition times, as the CVO's cases ignore them.
func withoutTimes(entries []riskEntry) []riskEntry {
	out := make([]riskEntry, len(entries))
	for i, e := range entries {
		out[i] = riskEntry{ConditionalUpdateRisk: configv1.ConditionalUpdateRisk{Name: e.Name}}
		for _, c := range e.Conditions {
			c.LastTransitionTime = metav1.Time{}
			out[i].Conditions = append(out[i].Conditions, c)
		}
	}
	return out
}

// TestRiskStatusAsTheCVO ports the CVO's
// Test_conditionalUpdateWithRiskNamesAndRiskConditions and
// Test_conditionalUpdateRisks (pkg/cvo/status_test.go at 6e719331): each
// conditional update's riskNames and its risks' Applies conditions, and the
// distinct risks sorted by name. The CVO's case "nil available updates"
// is "no risk conditions" here: results are nil in both. Its names for the
// desired image feed a history text this applier words otherwise.
func TestRiskStatusAsTheCVO(t *testing.T) {
	t1 := metav1.NewTime(time.Date(2026, 3, 4, 0, 38, 19, 0, time.UTC))
	now := metav1.NewTime(t1.Add(time.Hour))
	cu1 := configv1.ConditionalUpdate{Release: configv1.Release{Version: "4.5.6", Image: "pullspec/4.5.6"},
		Risks: []configv1.ConditionalUpdateRisk{{Name: "Risk1"}}}
	cu2 := configv1.ConditionalUpdate{Release: configv1.Release{Version: "4.5.7", Image: "pullspec/4.5.7"},
		Risks: []configv1.ConditionalUpdateRisk{{Name: "Risk1"}, {Name: "Risk2"}}}
	cu3 := configv1.ConditionalUpdate{Release: configv1.Release{Version: "4.5.8", Image: "pullspec/4.5.8"},
		Risks: []configv1.ConditionalUpdateRisk{{Name: "Risk3"}, {Name: "Risk1"}}}
	alert := "critical alert TestAlert firing, suggesting significant cluster issues worth investigating. Test summary. The alert description is: Test description. <alert does not have a runbook_url annotation>"
	tests := []struct {
		name      string
		updates   []configv1.ConditionalUpdate
		results   map[string]RiskResult
		previous  RiskApplies
		wantNames [][]string
		// wantRisks are the distinct risks; each update's risks carry the
		// same conditions.
		wantRisks []riskEntry
	}{
		{
			name:      "no risk conditions",
			updates:   []configv1.ConditionalUpdate{cu1},
			wantNames: [][]string{{"Risk1"}},
			wantRisks: []riskEntry{{ConditionalUpdateRisk: configv1.ConditionalUpdateRisk{Name: "Risk1"},
				Conditions: applies(metav1.ConditionUnknown, ReasonNoRiskCondition, "failed to find risk condition for risk Risk1")}},
		},
		{
			name:    "basic case",
			updates: []configv1.ConditionalUpdate{cu1, cu2},
			results: map[string]RiskResult{
				"Risk1": {Status: metav1.ConditionTrue, Reason: ReasonMatch},
				"Risk2": {Status: metav1.ConditionFalse, Reason: ReasonNotMatch},
			},
			wantNames: [][]string{{"Risk1"}, {"Risk1", "Risk2"}},
			wantRisks: []riskEntry{
				{ConditionalUpdateRisk: configv1.ConditionalUpdateRisk{Name: "Risk1"}, Conditions: applies(metav1.ConditionTrue, ReasonMatch, "")},
				{ConditionalUpdateRisk: configv1.ConditionalUpdateRisk{Name: "Risk2"}, Conditions: applies(metav1.ConditionFalse, ReasonNotMatch, "")},
			},
		},
		{
			// Test_conditionalUpdateRisks' basic case: sorted by name.
			name:    "the distinct risks, sorted",
			updates: []configv1.ConditionalUpdate{cu3, cu2},
			results: map[string]RiskResult{
				"Risk1": {Status: metav1.ConditionTrue, Reason: ReasonMatch},
				"Risk2": {Status: metav1.ConditionFalse, Reason: ReasonNotMatch},
				"Risk3": {Status: metav1.ConditionTrue, Reason: ReasonMatch},
			},
			wantNames: [][]string{{"Risk1", "Risk3"}, {"Risk1", "Risk2"}},
			wantRisks: []riskEntry{
				{ConditionalUpdateRisk: configv1.ConditionalUpdateRisk{Name: "Risk1"}, Conditions: applies(metav1.ConditionTrue, ReasonMatch, "")},
				{ConditionalUpdateRisk: configv1.ConditionalUpdateRisk{Name: "Risk2"}, Conditions: applies(metav1.ConditionFalse, ReasonNotMatch, "")},
				{ConditionalUpdateRisk: configv1.ConditionalUpdateRisk{Name: "Risk3"}, Conditions: applies(metav1.ConditionTrue, ReasonMatch, "")},
			},
		},
		{
			// The CVO's "alert" case: a condition already held is kept,
			// with its transition time.
			name: "alert",
			updates: []configv1.ConditionalUpdate{
				{Release: configv1.Release{Version: "4.21.1"}, Risks: []configv1.ConditionalUpdateRisk{{Name: "TestAlert"}}},
				{Release: configv1.Release{Version: "4.21.2"}, Risks: []configv1.ConditionalUpdateRisk{{Name: "TestAlert"}}},
			},
			results:   map[string]RiskResult{"TestAlert": {Status: metav1.ConditionTrue, Reason: "Alert:firing", Message: alert}},
			previous:  RiskApplies{"TestAlert": {Type: ConditionApplies, Status: metav1.ConditionTrue, Reason: "Alert:firing", Message: alert, LastTransitionTime: t1}},
			wantNames: [][]string{{"TestAlert"}, {"TestAlert"}},
			wantRisks: []riskEntry{{ConditionalUpdateRisk: configv1.ConditionalUpdateRisk{Name: "TestAlert"},
				Conditions: applies(metav1.ConditionTrue, "Alert:firing", alert)}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ap := RiskStatus(tc.updates, tc.results, tc.previous, now)
			got := written(t, configv1.ClusterVersionStatus{ConditionalUpdates: tc.updates}, ap)
			if g := withoutTimes(got.ConditionalUpdateRisks); !reflect.DeepEqual(g, tc.wantRisks) {
				t.Errorf("conditionalUpdateRisks\n  %+v\nwant\n  %+v", g, tc.wantRisks)
			}
			for i, u := range got.ConditionalUpdates {
				if !reflect.DeepEqual(u.RiskNames, tc.wantNames[i]) {
					t.Errorf("conditionalUpdates[%d].riskNames %v, want %v", i, u.RiskNames, tc.wantNames[i])
				}
				for _, r := range withoutTimes(u.Risks) {
					for _, w := range tc.wantRisks {
						if w.Name == r.Name && !reflect.DeepEqual(r, w) {
							t.Errorf("conditionalUpdates[%d] risk %+v, want %+v", i, r, w)
						}
					}
				}
			}
			if c := ap[tc.updates[0].Risks[0].Name]; tc.previous != nil && !c.LastTransitionTime.Equal(&t1) {
				t.Errorf("transition time %v, want the one held, %v", c.LastTransitionTime, t1)
			}
		})
	}
}

// TestRiskStatusTransitions: a condition changes its transition time only
// when its status changes; an update kept from before keeps its risks'
// conditions; a risk with neither is Unknown; messages are bounded.
func TestRiskStatusTransitions(t *testing.T) {
	before := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	now := metav1.NewTime(before.Add(time.Hour))
	updates := []configv1.ConditionalUpdate{{Risks: []configv1.ConditionalUpdateRisk{{Name: "A"}, {Name: "B"}, {Name: "C"}, {Name: "D"}}}}
	previous := RiskApplies{
		"A": {Type: ConditionApplies, Status: metav1.ConditionFalse, Reason: ReasonNotMatch, LastTransitionTime: before},
		"B": {Type: ConditionApplies, Status: metav1.ConditionFalse, Reason: ReasonNotMatch, LastTransitionTime: before},
		"C": {Type: ConditionApplies, Status: metav1.ConditionTrue, Reason: ReasonMatch, LastTransitionTime: before},
	}
	results := map[string]RiskResult{
		"A": {Status: metav1.ConditionFalse, Reason: ReasonNotMatch},
		"B": {Status: metav1.ConditionUnknown, Reason: ReasonRiskEvaluationFailed, Message: strings.Repeat("m", 64<<10)},
	}
	got := RiskStatus(updates, results, previous, now)
	for name, want := range map[string]struct {
		status metav1.ConditionStatus
		at     metav1.Time
	}{"A": {metav1.ConditionFalse, before}, "B": {metav1.ConditionUnknown, now}, "C": {metav1.ConditionTrue, before}, "D": {metav1.ConditionUnknown, now}} {
		c := got[name]
		if c.Status != want.status || !c.LastTransitionTime.Equal(&want.at) {
			t.Errorf("%s: %s since %v, want %s since %v", name, c.Status, c.LastTransitionTime, want.status, want.at)
		}
	}
	if got["D"].Reason != ReasonNoRiskCondition {
		t.Errorf("D: reason %q, want %q", got["D"].Reason, ReasonNoRiskCondition)
	}
	if n := len(got["B"].Message); n > maxAppliesMessageBytes {
		t.Errorf("B: a message of %d bytes, over %d", n, maxAppliesMessageBytes)
	}
}

// TestRiskStatusIsReadBack: what WithRiskStatus writes, RiskAppliesOf
// reads; without conditional updates no risk status is written, and one
// held before is removed.
func TestRiskStatusIsReadBack(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	st := configv1.ClusterVersionStatus{ConditionalUpdates: []configv1.ConditionalUpdate{{Risks: []configv1.ConditionalUpdateRisk{{Name: "A"}}}}}
	ap := RiskApplies{"A": {Type: ConditionApplies, Status: metav1.ConditionTrue, Reason: ReasonMatch, LastTransitionTime: at}}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&configv1.ClusterVersion{Status: st})
	if err != nil {
		t.Fatal(err)
	}
	if err := WithRiskStatus(obj, &st, ap); err != nil {
		t.Fatal(err)
	}
	// Through JSON, as the apiserver answers.
	raw, _ := json.Marshal(obj)
	var back map[string]any
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if got := RiskAppliesOf(back); !equality.Semantic.DeepEqual(got, ap) {
		t.Errorf("read back %+v, want %+v", got, ap)
	}
	if err := WithRiskStatus(back, &configv1.ClusterVersionStatus{}, ap); err != nil {
		t.Fatal(err)
	}
	if _, held := back["status"].(map[string]any)["conditionalUpdateRisks"]; held {
		t.Error("conditionalUpdateRisks kept without conditional updates")
	}
	for _, bad := range []map[string]any{
		{},
		{"status": "x"},
		{"status": map[string]any{"conditionalUpdateRisks": []any{"x", map[string]any{"name": 3}, map[string]any{"name": "N"}}}},
	} {
		if got := RiskAppliesOf(bad); len(got) != 0 {
			t.Errorf("RiskAppliesOf(%v) = %v, want none", bad, got)
		}
	}
}

// TestTheBudgetCountsTheRiskStatus: a status that fits alone but not with
// its risk status is cut until both fit.
func TestTheBudgetCountsTheRiskStatus(t *testing.T) {
	var st configv1.ClusterVersionStatus
	ap := RiskApplies{}
	for i := range 200 {
		name := "Risk" + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + strings.Repeat("y", i/26)
		st.ConditionalUpdates = append(st.ConditionalUpdates, configv1.ConditionalUpdate{Release: configv1.Release{Version: "1.1.0"},
			Risks: []configv1.ConditionalUpdateRisk{{Name: name, URL: "https://x", Message: strings.Repeat("m", 500)}}})
		ap[name] = metav1.Condition{Type: ConditionApplies, Status: metav1.ConditionUnknown, Reason: ReasonRiskEvaluationFailed, Message: strings.Repeat("e", maxAppliesMessageBytes)}
	}
	if alone := StatusSize(&st, nil); alone > MaxStatusBytes {
		t.Fatalf("the case is %d bytes without the risk status; make it fit alone", alone)
	}
	Fit(&st, ap, metav1.Now())
	if size := StatusSize(&st, ap); size > MaxStatusBytes {
		t.Errorf("%d bytes with the risk status, over %d", size, MaxStatusBytes)
	}
	if len(st.ConditionalUpdates) == 200 || len(st.ConditionalUpdates) == 0 {
		t.Errorf("%d of 200 conditional updates kept; want some cut, some kept", len(st.ConditionalUpdates))
	}
	// The size counted is the size written.
	obj, _ := runtime.DefaultUnstructuredConverter.ToUnstructured(&configv1.ClusterVersion{Status: st})
	if err := WithRiskStatus(obj, &st, ap); err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(obj["status"])
	if counted := StatusSize(&st, ap); len(raw) > counted+64 || len(raw) < counted-64 {
		t.Errorf("counted %d bytes, written %d", counted, len(raw))
	}
}
