package clusterversion

import (
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/payload-applier/payload-applier/pkg/apply"
	"github.com/payload-applier/payload-applier/pkg/apply/cleanup"
	"github.com/payload-applier/payload-applier/pkg/apply/deletion"
	"github.com/payload-applier/payload-applier/pkg/graph"
	"github.com/payload-applier/payload-applier/pkg/payload"
	"github.com/payload-applier/payload-applier/pkg/precondition"
)

var t0 = metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))

func entry(version string, state configv1.UpdateState) configv1.UpdateHistory {
	return configv1.UpdateHistory{Version: version, State: state, StartedTime: t0}
}

func TestModeFor(t *testing.T) {
	tests := []struct {
		name    string
		history []configv1.UpdateHistory
		desired string
		want    graph.Mode
	}{
		{"no history is an install", nil, "1.0.0", graph.ModeInstall},
		{"a partial first release is still an install", []configv1.UpdateHistory{entry("1.0.0", configv1.PartialUpdate)}, "1.0.0", graph.ModeInstall},
		{"the completed desired release is reconciled", []configv1.UpdateHistory{entry("1.0.0", configv1.CompletedUpdate)}, "1.0.0", graph.ModeReconcile},
		{"a new release after a completed one is an update", []configv1.UpdateHistory{entry("1.0.0", configv1.CompletedUpdate)}, "1.0.1", graph.ModeUpdate},
		{"a partial update stays an update after a restart", []configv1.UpdateHistory{entry("1.0.1", configv1.PartialUpdate), entry("1.0.0", configv1.CompletedUpdate)}, "1.0.1", graph.ModeUpdate},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ModeFor(tt.history, configv1.Release{Version: tt.desired}); got != tt.want {
				t.Errorf("modeFor = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestHistory(t *testing.T) {
	h := StartHistory(nil, configv1.Release{Version: "1.0.0"}, t0, "")
	if len(h) != 1 || h[0].State != configv1.PartialUpdate || h[0].CompletionTime != nil {
		t.Fatalf("a new release starts one partial entry: %+v", h)
	}
	h = StartHistory(h, configv1.Release{Version: "1.0.0"}, t0, "")
	if len(h) != 1 {
		t.Fatalf("the same release must not add an entry: %+v", h)
	}
	h = CompleteHistory(h, t0)
	if h[0].State != configv1.CompletedUpdate || h[0].CompletionTime == nil {
		t.Fatalf("completion must mark the entry Completed with a time: %+v", h[0])
	}
	h = StartHistory(h, configv1.Release{Version: "1.0.1"}, t0, "forced")
	if len(h) != 2 || h[0].Version != "1.0.1" || h[0].AcceptedRisks != "forced" || precondition.LastCompletedVersion(h) != "1.0.0" {
		t.Fatalf("an update adds a newest entry with its risks: %+v", h)
	}
	h = StartHistory(h, configv1.Release{Version: "1.0.2"}, t0, "")
	if h[1].State != configv1.PartialUpdate || h[1].CompletionTime == nil {
		t.Fatalf("an abandoned update is closed as partial: %+v", h[1])
	}
	for i := 0; i < 2*MaxHistory; i++ {
		h = StartHistory(h, configv1.Release{Version: "1.0." + string(rune('a'+i%26)) + strings.Repeat("x", i)}, t0, "")
	}
	if len(h) != MaxHistory {
		t.Fatalf("history must be bounded to %d entries, got %d", MaxHistory, len(h))
	}
}

func rec(name string, state deletion.State, lastErr string, finalizers ...string) deletion.Record {
	return deletion.Record{ID: payload.ObjectID{Kind: "ConfigMap", Namespace: "ns", Name: name}, State: state, LastError: lastErr, Finalizers: finalizers}
}

func TestUpgradeable(t *testing.T) {
	coNotUpgradeable := configv1.ClusterOperator{ObjectMeta: metav1.ObjectMeta{Name: "etcd"},
		Status: configv1.ClusterOperatorStatus{Conditions: []configv1.ClusterOperatorStatusCondition{
			{Type: configv1.OperatorUpgradeable, Status: configv1.ConditionFalse, Reason: "Busy", Message: "defragmenting"}}}}
	many := deletion.Summary{}
	for i := 0; i < 12; i++ {
		many.InProgress = append(many.InProgress, rec(string(rune('a'+i)), deletion.InProgress, ""))
	}
	tests := []struct {
		name      string
		deletes   deletion.Summary
		operators []configv1.ClusterOperator
		overrides []configv1.ComponentOverride
		status    configv1.ConditionStatus
		reason    string
		contains  []string
	}{
		{"nothing pending allows minor updates", deletion.Summary{}, nil, nil, configv1.ConditionTrue, ReasonAsExpected, nil},
		{"a pending delete blocks with its finalizers", deletion.Summary{InProgress: []deletion.Record{rec("x", deletion.InProgress, "", "example.com/hold")}},
			nil, nil, configv1.ConditionFalse, ReasonDeletionInProgress, []string{"ConfigMap/ns/x", "example.com/hold"}},
		{"a failed delete gives ResourceDeletionFailed", deletion.Summary{InProgress: []deletion.Record{rec("x", deletion.Pending, "forbidden")}, Failed: []deletion.Record{rec("x", deletion.Pending, "forbidden")}},
			nil, nil, configv1.ConditionFalse, string(apply.ReasonDeletionFailed), []string{"forbidden"}},
		{"a stuck delete gives ResourceDeletionFailed", deletion.Summary{InProgress: []deletion.Record{rec("x", deletion.InProgress, "")}, Stuck: []deletion.Record{rec("x", deletion.InProgress, "")}},
			nil, nil, configv1.ConditionFalse, string(apply.ReasonDeletionFailed), []string{"stuck"}},
		{"more than ten objects are counted", many, nil, nil, configv1.ConditionFalse, ReasonDeletionInProgress, []string{"and 2 more"}},
		{"deletes paced behind an issued one are named apart", deletion.Summary{InProgress: []deletion.Record{rec("held", deletion.InProgress, "", "f"), rec("next", deletion.Pending, "")}},
			nil, nil, configv1.ConditionFalse, ReasonDeletionInProgress, []string{"ConfigMap/ns/held (finalizers: f); waiting behind them: ConfigMap/ns/next"}},
		{"a ClusterOperator with Upgradeable=False blocks", deletion.Summary{}, []configv1.ClusterOperator{coNotUpgradeable}, nil,
			configv1.ConditionFalse, ReasonOperatorsNotUpgrade, []string{"etcd", "defragmenting"}},
		{"unmanaged overrides block", deletion.Summary{}, nil, []configv1.ComponentOverride{{Kind: "Deployment", Name: "x", Unmanaged: true}},
			configv1.ConditionFalse, precondition.ReasonClusterVersionOverridesSet, []string{"Please remove overrides before requesting a minor or major version update."}},
		{"a reappeared object blocks nothing, and is warned of", deletion.Summary{Reappeared: []deletion.Record{rec("back", deletion.Completed, "")}}, nil, nil,
			configv1.ConditionTrue, ReasonAsExpected, []string{"Minor and major version updates are allowed.", "Warning: reappeared after their delete, left in place and never deleted again: ConfigMap/ns/back"}},
		{"several sources give MultipleReasons", deletion.Summary{InProgress: []deletion.Record{rec("x", deletion.InProgress, "")}}, []configv1.ClusterOperator{coNotUpgradeable}, nil,
			configv1.ConditionFalse, ReasonMultipleReasons, []string{"in progress", "etcd"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := upgradeableCondition(upgradeableBlockers(tt.deletes, nil, tt.operators, tt.overrides), tt.deletes.Reappeared)
			if c.Status != tt.status || c.Reason != tt.reason {
				t.Fatalf("got %s/%s (%s), want %s/%s", c.Status, c.Reason, c.Message, tt.status, tt.reason)
			}
			for _, s := range tt.contains {
				if !strings.Contains(c.Message, s) {
					t.Errorf("message %q lacks %q", c.Message, s)
				}
			}
		})
	}
}

func TestSetConditionKeepsTransitionTime(t *testing.T) {
	later := metav1.NewTime(t0.Add(time.Hour))
	conds := SetCondition(nil, configv1.ClusterOperatorStatusCondition{Type: "A", Status: configv1.ConditionTrue}, t0)
	conds = SetCondition(conds, configv1.ClusterOperatorStatusCondition{Type: "A", Status: configv1.ConditionTrue, Message: "m"}, later)
	if !conds[0].LastTransitionTime.Equal(&t0) {
		t.Errorf("an unchanged status must keep its transition time")
	}
	conds = SetCondition(conds, configv1.ClusterOperatorStatusCondition{Type: "A", Status: configv1.ConditionFalse}, later)
	if !conds[0].LastTransitionTime.Equal(&later) {
		t.Errorf("a changed status must take the new transition time")
	}
}

func TestCleanupConditionAndUpgradeable(t *testing.T) {
	now := time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *metav1.Time { ts := metav1.NewTime(now.Add(-d)); return &ts }
	running := cleanup.Record{Component: "widgets", State: cleanup.Running, StartedAt: at(time.Minute), ProgressAt: at(time.Minute),
		Remaining: map[string]int{"Widget": 2}, Named: []cleanup.Operand{{Kind: "Widget", Namespace: "a", Name: "w1"}}}
	stalled := running
	stalled.ProgressAt = at(11 * time.Minute)
	waiting := cleanup.Record{Component: "widgets", State: cleanup.Waiting, StartedAt: at(11 * time.Minute), Message: "the operator is not Available"}
	for _, tc := range []struct {
		name    string
		recs    []cleanup.Record
		status  configv1.ConditionStatus
		reason  string
		message string
		blocks  bool
	}{
		{"running", []cleanup.Record{running}, configv1.ConditionTrue, cleanup.ReasonWaiting, "waiting for operator to finish cleanup for 2 CRs of component widgets; remaining 2 Widget: Widget/a/w1 and 1 more", true},
		{"stalled", []cleanup.Record{stalled}, configv1.ConditionTrue, cleanup.ReasonStalled, "no progress for 10m0s", true},
		{"blocked", []cleanup.Record{waiting}, configv1.ConditionTrue, cleanup.ReasonBlocked, "cannot start: the operator is not Available", true},
		{"aborted", []cleanup.Record{{Component: "widgets", State: cleanup.Aborted, Message: "no guarantee"}}, configv1.ConditionFalse, cleanup.ReasonAborted, "no guarantee", false},
		{"skipped", []cleanup.Record{{Component: "widgets", State: cleanup.Skipped, Skips: []string{"rule 3 (APIUnused): in use"}}}, configv1.ConditionFalse, cleanup.ReasonSkipped, "rule 3", false},
		{"blocked by another API", []cleanup.Record{{Component: "widgets", State: cleanup.Blocked, BlockedCRDs: 1, Skips: []string{"leases.coordination.k8s.io: coordination.k8s.io/leases is a built-in Kubernetes API (kind Lease)"}, MoreSkips: 2}},
			configv1.ConditionFalse, cleanup.ReasonBlocked, "blocked, its operands are left in place: leases.coordination.k8s.io: coordination.k8s.io/leases is a built-in Kubernetes API (kind Lease); and 2 more CRDs", false},
		{"the most pressing wins", []cleanup.Record{{Component: "a", State: cleanup.Completed}, stalled}, configv1.ConditionTrue, cleanup.ReasonStalled, "completed", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, ok := CleanupCondition(tc.recs, now, 10*time.Minute)
			if !ok || c.Status != tc.status || c.Reason != tc.reason || !strings.Contains(c.Message, tc.message) {
				t.Errorf("got %s/%s %q, want %s/%s with %q", c.Status, c.Reason, c.Message, tc.status, tc.reason, tc.message)
			}
			u := upgradeableCondition(upgradeableBlockers(deletion.Summary{}, tc.recs, nil, nil), nil)
			if blocked := u.Status == configv1.ConditionFalse && u.Reason == cleanup.ReasonInProgress; blocked != tc.blocks {
				t.Errorf("Upgradeable = %s/%s, want blocked=%v", u.Status, u.Reason, tc.blocks)
			}
		})
	}
	if _, ok := CleanupCondition(nil, now, time.Minute); ok {
		t.Error("no cleanup, no condition")
	}
}
