package cleanup

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// observation is the usual observation of kind k in an update whose
// admin policy is Delete: one CRD to clean, the operator available, two
// operands left after the deletes.
func observation(k Kind) Observation {
	return Observation{Kind: k, Now: t0, Component: "widgets", Release: "2.0.0", Policy: PolicyDelete, Update: true,
		Cleanable: 1, Count: count(2, "Widget"), Why: "list widgets: boom"}
}

func recordIn(s State) *Record {
	if s == "" {
		return nil
	}
	start := metav1.NewTime(t0.Add(-time.Hour))
	return &Record{Component: "widgets", Release: "2.0.0", State: s, StartedAt: &start, ProgressAt: &start, Remaining: map[string]int{"Widget": 3}}
}

// TestNextCoversEveryStateAndObservation: each stored state (none
// included) meets each kind of observation, and each pair has a decided
// outcome and next state.
func TestNextCoversEveryStateAndObservation(t *testing.T) {
	type want struct {
		outcome Outcome
		state   State // "" when nothing is saved
		event   string
	}
	final := want{OutcomeOpen, "", ""} // the state is kept as it is
	table := map[State]map[Kind]want{
		"": {
			Begin:   {OutcomeJudge, "", ""},
			Judged:  {OutcomeDelete, "", ""},
			Counted: {OutcomeWait, Running, ReasonStarted},
			Failed:  {OutcomeWait, Waiting, ""},
		},
		Waiting: {
			Begin:   {OutcomeJudge, Waiting, ""},
			Judged:  {OutcomeDelete, Waiting, ""},
			Counted: {OutcomeWait, Running, ReasonStarted},
			Failed:  {OutcomeWait, Waiting, ""},
		},
		Running: {
			Begin:   {OutcomeJudge, Running, ""},
			Judged:  {OutcomeDelete, Running, ""},
			Counted: {OutcomeWait, Running, ""},
			Failed:  {OutcomeWait, Running, ""},
		},
		Completed: {Begin: final, Judged: final, Counted: final, Failed: final},
		Aborted:   {Begin: final, Judged: final, Counted: final, Failed: final},
		Skipped:   {Begin: final, Judged: final, Counted: final, Failed: final},
		Blocked:   {Begin: final, Judged: final, Counted: final, Failed: final},
	}
	for _, state := range append([]State{""}, States...) {
		for _, kind := range Kinds {
			w, ok := table[state][kind]
			if !ok {
				t.Errorf("no case for state %q and observation %s", state, kind)
				continue
			}
			prev := recordIn(state)
			step := Next(prev, observation(kind))
			wantState := w.state
			if w == final {
				wantState = state
			}
			if step.Outcome != w.outcome || step.Record.State != wantState || step.Save != (wantState != "") {
				t.Errorf("%q + %s: outcome %s, state %q, save %v; want %s, %q", state, kind, step.Outcome, step.Record.State, step.Save, w.outcome, wantState)
			}
			if w == final && !equalRecords(*prev, step.Record) {
				t.Errorf("%q + %s changed a final record: %+v", state, kind, step.Record)
			}
			var reasons []string
			for _, ev := range step.Events {
				reasons = append(reasons, ev.Reason)
			}
			if got := strings.Join(reasons, ","); got != w.event {
				t.Errorf("%q + %s: events %q, want %q", state, kind, got, w.event)
			}
		}
	}
}

func equalRecords(a, b Record) bool { return fmt.Sprintf("%+v", a) == fmt.Sprintf("%+v", b) }

func TestNextStartsOnlyInAnUpdateOfADeletePolicy(t *testing.T) {
	for _, tc := range []struct {
		name string
		obs  func(*Observation)
	}{
		{"a reconcile", func(o *Observation) { o.Update = false }},
		{"the Orphan policy", func(o *Observation) { o.Policy = PolicyOrphan }},
		{"no policy", func(o *Observation) { o.Policy = "" }},
	} {
		obs := observation(Begin)
		tc.obs(&obs)
		if step := Next(nil, obs); step.Outcome != OutcomeOpen || step.Save {
			t.Errorf("%s: %+v, want the gate open and no record", tc.name, step)
		}
	}
	obs := observation(Begin)
	obs.Update = false
	if step := Next(recordIn(Running), obs); step.Outcome != OutcomeJudge {
		t.Errorf("a later pass of any mode carries a running cleanup on: %+v", step)
	}
	obs.Pending = true
	if step := Next(nil, obs); step.Outcome != OutcomeJudge {
		t.Errorf("a reconcile carries on a cleanup whose record was lost before its gate opened: %+v", step)
	}
}

func TestNextAbortsWhenThePolicyIsNoLongerDelete(t *testing.T) {
	for _, state := range []State{Waiting, Running} {
		obs := observation(Begin)
		obs.Policy = PolicyOrphan
		step := Next(recordIn(state), obs)
		if step.Record.State != Aborted || step.Outcome != OutcomeOpen || len(step.Events) != 1 || step.Events[0].Reason != ReasonAborted ||
			!strings.Contains(step.Record.Message, "3 CRs are left in place") {
			t.Errorf("%s: %+v, want aborted, open, one Event naming what is left", state, step)
		}
	}
}

func TestNextSkipsARollback(t *testing.T) {
	obs := observation(Begin)
	obs.Rollback = true
	step := Next(nil, obs)
	if step.Record.State != Skipped || step.Outcome != OutcomeOpen || !strings.Contains(step.Record.SkipSummary(), "rule 4 (NotReplaced): the update is a rollback") {
		t.Errorf("%+v, want skipped naming rule 4", step)
	}
}

func TestNextJudged(t *testing.T) {
	skip := Note{CRD: "gadgets.example.com", Rule: RuleSingleOwner, Message: "component other also ships it"}
	recreated := Note{CRD: "widgets.example.com", Message: "its delete completed and it was created again"}
	shadow := Note{CRD: "leases.coordination.k8s.io", Blocked: true, Message: "coordination.k8s.io/leases is a built-in Kubernetes API"}

	obs := observation(Judged)
	obs.Cleanable, obs.Excluded = 0, []Note{skip, recreated}
	step := Next(nil, obs)
	if step.Record.State != Skipped || step.Outcome != OutcomeOpen || len(step.Events) != 1 || step.Events[0].Reason != ReasonSkipped ||
		!strings.Contains(step.Events[0].Message, "widgets.example.com: its delete completed") {
		t.Errorf("every CRD left alone: %+v, want Skipped with one Event naming each", step)
	}
	if again := Next(&step.Record, obs); len(again.Events) != 0 {
		t.Errorf("the same skip is reported once: %+v", again.Events)
	}

	obs.Excluded = []Note{skip, shadow}
	step = Next(nil, obs)
	if step.Record.State != Blocked || step.Record.BlockedCRDs != 1 || step.Events[0].Reason != ReasonBlocked || !step.Record.State.Open() {
		t.Errorf("a CRD whose API is another's: %+v, want Blocked, the gate open", step)
	}

	obs = observation(Judged)
	obs.Unavailable = "the operator of component widgets is not ready"
	step = Next(nil, obs)
	if step.Record.State != Waiting || step.Outcome != OutcomeWait || step.Record.Message != obs.Unavailable {
		t.Errorf("rule 1 fails: %+v, want Waiting with why", step)
	}

	obs = observation(Counted)
	obs.Count = Count{}
	step = Next(recordIn(Running), obs)
	if step.Record.State != Completed || step.Outcome != OutcomeOpen || step.Events[0].Reason != ReasonCompleted {
		t.Errorf("no operand left: %+v, want Completed and open", step)
	}
}

// TestNotesAreBounded: a component with 20,000 CRDs left alone keeps ten
// notes and a count, and no note is longer than maxNoteLen.
func TestNotesAreBounded(t *testing.T) {
	obs := observation(Judged)
	obs.Cleanable = 0
	for i := range 20000 {
		obs.Excluded = append(obs.Excluded, Note{CRD: fmt.Sprintf("c%05d.example.com", i), Rule: RuleAPIUnused, Message: strings.Repeat("é", 2000)})
	}
	step := Next(nil, obs)
	rec := step.Record
	if len(rec.Skips) != maxNotes || rec.MoreSkips != 20000-maxNotes {
		t.Fatalf("%d notes kept and %d counted, want %d and %d", len(rec.Skips), rec.MoreSkips, maxNotes, 20000-maxNotes)
	}
	for _, n := range rec.Skips {
		if len(n) > maxNoteLen || !utf8.ValidString(n) || !strings.HasSuffix(n, " bytes cut)") {
			t.Fatalf("note of %d bytes (valid UTF-8: %v): %.60q…", len(n), utf8.ValidString(n), n)
		}
	}
	if msg := step.Events[0].Message; len(msg) > 8<<10 || !strings.Contains(msg, "and 19990 more CRDs") {
		t.Errorf("Event of %d bytes, want a bounded one that counts the rest", len(msg))
	}
}
