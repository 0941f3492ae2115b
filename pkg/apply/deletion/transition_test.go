package deletion

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/payload-applier/payload-applier/pkg/payload"
)

var (
	testID   = payload.ObjectID{Kind: "ConfigMap", Namespace: "ns", Name: "x"}
	earlier  = metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	testNow  = time.Date(2026, 1, 1, 0, 20, 0, 0, time.UTC)
	stuckFor = 10 * time.Minute
)

// object is the live object under the record's name: uid tells one object
// from another that took its name; terminating objects carry a finalizer.
func object(uid string, terminating bool) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion("v1")
	obj.SetKind("ConfigMap")
	obj.SetNamespace("ns")
	obj.SetName("x")
	obj.SetUID(types.UID(uid))
	if terminating {
		obj.SetDeletionTimestamp(&earlier)
		obj.SetFinalizers([]string{"example.com/hold"})
	}
	return obj
}

// record is the ledger's record in state, from release, for the object uid.
func record(state State, release, uid string) *Record {
	r := &Record{ID: testID, File: "0000_50_a_01_x.yaml:1", Release: release, State: state, UID: types.UID(uid)}
	if state == InProgress {
		r.RequestedAt = &earlier
	}
	if state == Completed || state == Absent {
		r.CompletedAt = &earlier
	}
	if state == Refused {
		r.LastError = refusal
	}
	return r
}

const refusal = "refusing to delete ConfigMap/ns/x: it is protected"

// obs is an observation of kind by a pass of release 2.
func obs(kind Kind, update bool, live *unstructured.Unstructured) Observation {
	detail := ""
	if kind == Refuse {
		detail = refusal
	}
	return Observation{Detail: detail, Kind: kind, Now: testNow, ID: testID, File: "0000_50_a_01_x.yaml:1", Release: "2",
		Update: update, Live: live, Reason: "ResourceDeletionFailed", Message: testID.String() + ": delete failed: forbidden", StuckAfter: stuckFor}
}

// want is what a step must show; State "" means no record is saved.
type want struct {
	State       State
	Outcome     Outcome
	Transitions []Transition
	Events      []string
}

const update, reconcile = true, false

var (
	present     = object("u1", false)
	terminating = object("u1", true)
	another     = object("u2", false)
)

// transitionCases are every (record state, observation kind) pair the
// engine can meet, and the odd ones it should not, named as sentences.
var transitionCases = []struct {
	name string
	prev *Record
	obs  Observation
	want want
}{
	// Claim
	{"an update claims a delete it has no record of", nil, obs(Claim, update, nil), want{Pending, OutcomeUnchanged, nil, nil}},
	{"a claim records the UID of the object the update saw", nil, obs(Claim, update, present), want{Pending, OutcomeUnchanged, nil, nil}},
	{"a claim leaves a pending record alone", record(Pending, "1", ""), obs(Claim, update, nil), want{Pending, OutcomeUnchanged, nil, nil}},
	{"a claim leaves an issued delete alone", record(InProgress, "1", "u1"), obs(Claim, update, nil), want{InProgress, OutcomeUnchanged, nil, nil}},
	{"a claim leaves a completed delete to the walk", record(Completed, "1", "u1"), obs(Claim, update, nil), want{Completed, OutcomeUnchanged, nil, nil}},
	{"a claim leaves an absent record to the walk", record(Absent, "1", ""), obs(Claim, update, nil), want{Absent, OutcomeUnchanged, nil, nil}},
	{"a claim leaves an abandoned record to the walk", record(Abandoned, "1", ""), obs(Claim, update, nil), want{Abandoned, OutcomeUnchanged, nil, nil}},

	// Look
	{"an update issues the delete of a present object", nil, obs(Look, update, present), want{Pending, OutcomeIssue, nil, nil}},
	{"install and reconcile start no delete and record nothing", nil, obs(Look, reconcile, present), want{"", OutcomeNotDeleting, nil, nil}},
	{"an object not found at first look is absent", nil, obs(Look, update, nil), want{Absent, OutcomeAbsent, []Transition{TransitionAlreadyDeleted}, nil}},
	{"a terminating object is never deleted again, only followed", nil, obs(Look, update, terminating), want{InProgress, OutcomeOngoing, nil, nil}},
	{"a reconcile issues a delete an update claimed but pacing held back", record(Pending, "2", ""), obs(Look, reconcile, present), want{Pending, OutcomeIssue, nil, nil}},
	{"a claimed delete whose object is gone is absent", record(Pending, "2", ""), obs(Look, reconcile, nil), want{Absent, OutcomeAbsent, []Transition{TransitionAlreadyDeleted}, nil}},
	{"an in-progress delete stays ongoing while its object terminates", record(InProgress, "2", "u1"), obs(Look, reconcile, terminating), want{InProgress, OutcomeOngoing, nil, nil}},
	{"an in-progress delete whose object is gone completes", record(InProgress, "2", "u1"), obs(Look, reconcile, nil), want{Completed, OutcomeCompleted, []Transition{TransitionCompleted}, []string{ReasonCompleted}}},
	{"an in-progress delete whose name another object took completes, and the newcomer is reported", record(InProgress, "2", "u1"), obs(Look, reconcile, another),
		want{Completed, OutcomeReappeared, []Transition{TransitionReappeared}, []string{ReasonReappeared}}},
	{"a completed delete stays done while its object stays gone", record(Completed, "2", "u1"), obs(Look, reconcile, nil), want{Completed, OutcomeDone, nil, nil}},
	{"an object back after its delete completed is reported, not deleted", record(Completed, "2", "u1"), obs(Look, reconcile, another),
		want{Completed, OutcomeReappeared, []Transition{TransitionReappeared}, []string{ReasonReappeared}}},
	{"an object back within the update that deleted it is reported, not deleted", record(Completed, "2", "u1"), obs(Look, update, another),
		want{Completed, OutcomeReappeared, []Transition{TransitionReappeared}, []string{ReasonReappeared}}},
	{"a later release that still carries the delete reports the object back, never deletes it", record(Completed, "1", "u1"), obs(Look, update, another),
		want{Completed, OutcomeReappeared, []Transition{TransitionReappeared}, []string{ReasonReappeared}}},
	{"an object re-created under a claimed name is reported, not deleted", record(Pending, "2", "u1"), obs(Look, reconcile, another),
		want{Completed, OutcomeReappeared, []Transition{TransitionReappeared}, []string{ReasonReappeared}}},
	{"a claimed object is issued while it is the one the update saw", record(Pending, "2", "u1"), obs(Look, update, present), want{Pending, OutcomeIssue, nil, nil}},
	{"an abandoned delete asked again is not issued for an object re-created since", record(Abandoned, "1", "u2"), obs(Look, update, present),
		want{Completed, OutcomeReappeared, []Transition{TransitionReappeared}, []string{ReasonReappeared}}},
	{"an absent object stays done", record(Absent, "2", ""), obs(Look, reconcile, nil), want{Absent, OutcomeDone, nil, nil}},
	{"an object that shows up after it was found absent is reported", record(Absent, "2", ""), obs(Look, reconcile, present),
		want{Absent, OutcomeReappeared, []Transition{TransitionReappeared}, []string{ReasonReappeared}}},
	{"an abandoned delete asked for again by an update is issued", record(Abandoned, "1", ""), obs(Look, update, present), want{Pending, OutcomeIssue, nil, nil}},
	{"an abandoned delete is not issued by a reconcile", record(Abandoned, "1", ""), obs(Look, reconcile, present), want{Abandoned, OutcomeNotDeleting, nil, nil}},
	{"an abandoned delete whose object is gone is absent", record(Abandoned, "1", ""), obs(Look, reconcile, nil), want{Absent, OutcomeAbsent, []Transition{TransitionAlreadyDeleted}, nil}},

	// Refuse
	{"a refused delete with no record is recorded refused, and reported", nil, obs(Refuse, update, nil), want{Refused, OutcomeRefused, []Transition{TransitionFailed}, []string{"ResourceDeletionFailed"}}},
	{"a refused delete is recorded refused with its reason, and reported", record(Pending, "2", "u1"), obs(Refuse, update, nil), want{Refused, OutcomeRefused, []Transition{TransitionFailed}, []string{"ResourceDeletionFailed"}}},
	{"a refusal of an issued delete is recorded", record(InProgress, "2", "u1"), obs(Refuse, update, nil), want{Refused, OutcomeRefused, []Transition{TransitionFailed}, []string{"ResourceDeletionFailed"}}},
	{"a refusal of a completed delete is recorded", record(Completed, "2", "u1"), obs(Refuse, update, nil), want{Refused, OutcomeRefused, []Transition{TransitionFailed}, []string{"ResourceDeletionFailed"}}},
	{"a refusal of an absent record is recorded", record(Absent, "2", ""), obs(Refuse, update, nil), want{Refused, OutcomeRefused, []Transition{TransitionFailed}, []string{"ResourceDeletionFailed"}}},
	{"a refusal of an abandoned record is recorded", record(Abandoned, "2", ""), obs(Refuse, update, nil), want{Refused, OutcomeRefused, []Transition{TransitionFailed}, []string{"ResourceDeletionFailed"}}},
	{"a refusal repeated by a later pass is not reported again", record(Refused, "2", "u1"), obs(Refuse, update, nil), want{Refused, OutcomeRefused, nil, nil}},

	// A refused record meets every other observation
	{"a claim leaves a refused record alone", record(Refused, "1", "u1"), obs(Claim, update, nil), want{Refused, OutcomeUnchanged, nil, nil}},
	{"an update looks at the gate again for a refused delete", record(Refused, "2", "u1"), obs(Look, update, present), want{Refused, OutcomeIssue, nil, nil}},
	{"a reconcile leaves a refused delete alone", record(Refused, "2", "u1"), obs(Look, reconcile, present), want{Refused, OutcomeNotDeleting, nil, nil}},
	{"a refused delete whose object is gone is absent", record(Refused, "2", "u1"), obs(Look, reconcile, nil), want{Absent, OutcomeAbsent, []Transition{TransitionAlreadyDeleted}, nil}},
	{"a DELETE accepted after a refusal is in progress", record(Refused, "2", "u1"), obs(Accept, update, nil), want{InProgress, OutcomeRequested, []Transition{TransitionRequested}, []string{ReasonRequested}}},
	{"a replaced object keeps a refused record", record(Refused, "2", "u1"), obs(Replace, update, nil), want{Refused, OutcomeReplaced, nil, nil}},
	{"a failed DELETE of a refused record keeps its state", record(Refused, "2", "u1"), obs(Fail, update, nil), want{Refused, OutcomeFailed, []Transition{TransitionFailed}, []string{"ResourceDeletionFailed"}}},
	{"a settle on a refused record with the object gone completes it", record(Refused, "2", "u1"), obs(Settle, update, nil), want{Completed, OutcomeCompleted, []Transition{TransitionCompleted}, []string{ReasonCompleted}}},
	{"a poll leaves a refused record alone", record(Refused, "2", "u1"), obs(Poll, reconcile, nil), want{Refused, OutcomeUnchanged, nil, nil}},
	{"a drop leaves a refused record to the ledger's pruning", record(Refused, "2", "u1"), obs(Drop, reconcile, nil), want{Refused, OutcomeUnchanged, nil, nil}},
	{"a refused delete is never stuck", record(Refused, "2", "u1"), obs(Age, reconcile, nil), want{Refused, OutcomeUnchanged, nil, nil}},

	// Fail
	{"a failed DELETE with no record is pending and failed", nil, obs(Fail, update, nil), want{Pending, OutcomeFailed, []Transition{TransitionFailed}, []string{"ResourceDeletionFailed"}}},
	{"a failed DELETE stays pending and fails its chain", record(Pending, "2", "u1"), obs(Fail, update, nil), want{Pending, OutcomeFailed, []Transition{TransitionFailed}, []string{"ResourceDeletionFailed"}}},
	{"a failed DELETE of an issued delete keeps its state", record(InProgress, "2", "u1"), obs(Fail, update, nil), want{InProgress, OutcomeFailed, []Transition{TransitionFailed}, []string{"ResourceDeletionFailed"}}},
	{"a failed DELETE of a completed delete keeps its state", record(Completed, "2", "u1"), obs(Fail, update, nil), want{Completed, OutcomeFailed, []Transition{TransitionFailed}, []string{"ResourceDeletionFailed"}}},
	{"a failed DELETE of an absent record keeps its state", record(Absent, "2", ""), obs(Fail, update, nil), want{Absent, OutcomeFailed, []Transition{TransitionFailed}, []string{"ResourceDeletionFailed"}}},
	{"a failed DELETE of an abandoned record keeps its state", record(Abandoned, "2", ""), obs(Fail, update, nil), want{Abandoned, OutcomeFailed, []Transition{TransitionFailed}, []string{"ResourceDeletionFailed"}}},

	// Accept
	{"an accepted DELETE with no record is in progress", nil, obs(Accept, update, nil), want{InProgress, OutcomeRequested, []Transition{TransitionRequested}, []string{ReasonRequested}}},
	{"an accepted DELETE puts the delete in progress", record(Pending, "2", "u1"), obs(Accept, update, nil), want{InProgress, OutcomeRequested, []Transition{TransitionRequested}, []string{ReasonRequested}}},
	{"an accepted DELETE of an in-progress delete stays in progress", record(InProgress, "2", "u1"), obs(Accept, update, nil), want{InProgress, OutcomeRequested, []Transition{TransitionRequested}, []string{ReasonRequested}}},
	{"an accepted DELETE of a completed delete is in progress again", record(Completed, "2", "u1"), obs(Accept, update, nil), want{InProgress, OutcomeRequested, []Transition{TransitionRequested}, []string{ReasonRequested}}},
	{"an accepted DELETE of an absent record is in progress", record(Absent, "2", ""), obs(Accept, update, nil), want{InProgress, OutcomeRequested, []Transition{TransitionRequested}, []string{ReasonRequested}}},
	{"an accepted DELETE of an abandoned record is in progress", record(Abandoned, "2", ""), obs(Accept, update, nil), want{InProgress, OutcomeRequested, []Transition{TransitionRequested}, []string{ReasonRequested}}},

	// Replace
	{"a replaced object with no record records nothing", nil, obs(Replace, update, nil), want{"", OutcomeReplaced, nil, nil}},
	{"a replaced object keeps the delete pending for the next pass", record(Pending, "2", "u1"), obs(Replace, update, nil), want{Pending, OutcomeReplaced, nil, nil}},
	{"a replaced object keeps an in-progress record", record(InProgress, "2", "u1"), obs(Replace, update, nil), want{InProgress, OutcomeReplaced, nil, nil}},
	{"a replaced object keeps a completed record", record(Completed, "2", "u1"), obs(Replace, update, nil), want{Completed, OutcomeReplaced, nil, nil}},
	{"a replaced object keeps an absent record", record(Absent, "2", ""), obs(Replace, update, nil), want{Absent, OutcomeReplaced, nil, nil}},
	{"a replaced object keeps an abandoned record", record(Abandoned, "2", ""), obs(Replace, update, nil), want{Abandoned, OutcomeReplaced, nil, nil}},

	// Settle
	{"an object gone after the DELETE with no record is completed", nil, obs(Settle, update, nil), want{Completed, OutcomeCompleted, []Transition{TransitionCompleted}, []string{ReasonCompleted}}},
	{"an object gone between the read and the DELETE is completed", record(Pending, "2", "u1"), obs(Settle, update, nil), want{Completed, OutcomeCompleted, []Transition{TransitionCompleted}, []string{ReasonCompleted}}},
	{"an object gone soon after the DELETE is completed", record(InProgress, "2", "u1"), obs(Settle, update, nil), want{Completed, OutcomeCompleted, []Transition{TransitionCompleted}, []string{ReasonCompleted}}},
	{"an object a finalizer holds after the DELETE is in progress", record(InProgress, "2", "u1"), obs(Settle, update, terminating), want{InProgress, OutcomeRequested, nil, nil}},
	{"a settle on a completed record completes it again", record(Completed, "2", "u1"), obs(Settle, update, nil), want{Completed, OutcomeCompleted, []Transition{TransitionCompleted}, []string{ReasonCompleted}}},
	{"a settle on an absent record with the object held puts it in progress", record(Absent, "2", ""), obs(Settle, update, terminating), want{InProgress, OutcomeRequested, nil, nil}},
	{"a settle on an abandoned record with the object gone completes it", record(Abandoned, "2", ""), obs(Settle, update, nil), want{Completed, OutcomeCompleted, []Transition{TransitionCompleted}, []string{ReasonCompleted}}},

	// Poll
	{"a poll without a record records nothing", nil, obs(Poll, reconcile, nil), want{"", OutcomeUnchanged, nil, nil}},
	{"a poll finds a pending delete's object gone: absent", record(Pending, "2", ""), obs(Poll, reconcile, nil), want{Absent, OutcomeAbsent, []Transition{TransitionAlreadyDeleted}, nil}},
	{"a poll leaves a pending delete whose object is present to the walk", record(Pending, "2", ""), obs(Poll, reconcile, present), want{Pending, OutcomeUnchanged, nil, nil}},
	{"a poll finds a pending delete's object terminating: its DELETE went out unsaved", record(Pending, "2", ""), obs(Poll, reconcile, terminating), want{InProgress, OutcomeOngoing, nil, nil}},
	{"a poll finds an in-progress delete's object gone: completed", record(InProgress, "2", "u1"), obs(Poll, reconcile, nil), want{Completed, OutcomeCompleted, []Transition{TransitionCompleted}, []string{ReasonCompleted}}},
	{"a poll finds another object under an in-progress delete's name: completed", record(InProgress, "2", "u1"), obs(Poll, reconcile, another), want{Completed, OutcomeCompleted, []Transition{TransitionCompleted}, []string{ReasonCompleted}}},
	{"a poll follows an in-progress delete's finalizers", record(InProgress, "2", "u1"), obs(Poll, reconcile, terminating), want{InProgress, OutcomeOngoing, nil, nil}},
	{"a poll leaves a completed delete alone", record(Completed, "2", "u1"), obs(Poll, reconcile, another), want{Completed, OutcomeUnchanged, nil, nil}},
	{"a poll leaves an absent record alone", record(Absent, "2", ""), obs(Poll, reconcile, present), want{Absent, OutcomeUnchanged, nil, nil}},
	{"a poll leaves an abandoned record alone", record(Abandoned, "2", ""), obs(Poll, reconcile, nil), want{Abandoned, OutcomeUnchanged, nil, nil}},

	// Drop
	{"a dropped delete without a record records nothing", nil, obs(Drop, reconcile, nil), want{"", OutcomeUnchanged, nil, nil}},
	{"a held-back delete the release no longer asks for is abandoned", record(Pending, "1", ""), obs(Drop, reconcile, nil), want{Abandoned, OutcomeAbandoned, nil, []string{ReasonAbandoned}}},
	{"an issued delete is not abandoned: it is followed to the end", record(InProgress, "1", "u1"), obs(Drop, reconcile, nil), want{InProgress, OutcomeUnchanged, nil, nil}},
	{"a completed delete is not abandoned", record(Completed, "1", "u1"), obs(Drop, reconcile, nil), want{Completed, OutcomeUnchanged, nil, nil}},
	{"an absent record is not abandoned", record(Absent, "1", ""), obs(Drop, reconcile, nil), want{Absent, OutcomeUnchanged, nil, nil}},
	{"an abandoned record stays abandoned without a new Event", record(Abandoned, "1", ""), obs(Drop, reconcile, nil), want{Abandoned, OutcomeUnchanged, nil, nil}},

	// Age
	{"time passing without a record records nothing", nil, obs(Age, reconcile, nil), want{"", OutcomeUnchanged, nil, nil}},
	{"a pending delete is never stuck: it was not issued", record(Pending, "2", ""), obs(Age, reconcile, nil), want{Pending, OutcomeUnchanged, nil, nil}},
	{"an issued delete older than the threshold is stuck", record(InProgress, "2", "u1"), obs(Age, reconcile, nil), want{InProgress, OutcomeStuck, nil, []string{ReasonStuck}}},
	{"a completed delete is never stuck", record(Completed, "2", "u1"), obs(Age, reconcile, nil), want{Completed, OutcomeUnchanged, nil, nil}},
	{"an absent record is never stuck", record(Absent, "2", ""), obs(Age, reconcile, nil), want{Absent, OutcomeUnchanged, nil, nil}},
	{"an abandoned record is never stuck", record(Abandoned, "2", ""), obs(Age, reconcile, nil), want{Abandoned, OutcomeUnchanged, nil, nil}},
}

func TestNext(t *testing.T) {
	for _, tc := range transitionCases {
		t.Run(tc.name, func(t *testing.T) {
			var before Record
			if tc.prev != nil {
				before = *tc.prev
			}
			step := Next(tc.prev, tc.obs)
			if tc.prev != nil && !reflect.DeepEqual(*tc.prev, before) {
				t.Fatalf("Next changed the record it was given: %+v", *tc.prev)
			}
			got := want{Outcome: step.Outcome, Transitions: step.Transitions}
			if step.Save {
				got.State = step.Record.State
			}
			for _, ev := range step.Events {
				got.Events = append(got.Events, ev.Reason)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v\nwant %+v", got, tc.want)
			}
			if tc.prev == nil && !step.Save && tc.obs.Kind == Look && step.Outcome == OutcomeIssue {
				t.Fatal("an issued delete must be recorded before the DELETE")
			}
			checkRecord(t, tc.prev, tc.obs, step)
		})
	}
}

// checkRecord asserts the fields each outcome must leave in the record.
func checkRecord(t *testing.T, prev *Record, o Observation, step Step) {
	t.Helper()
	r := step.Record
	if r.ID != testID {
		t.Errorf("the record names %s, want %s", r.ID, testID)
	}
	if o.Kind == Claim && prev == nil && o.Live != nil && step.Record.UID != o.Live.GetUID() {
		t.Errorf("a claim records the UID of the object seen, got %q", step.Record.UID)
	}
	switch step.Outcome {
	case OutcomeIssue:
		if r.RequestedAt == nil || r.UID != o.Live.GetUID() || (r.LastError != "") != (r.State == Refused) || r.Release != o.Release {
			t.Errorf("an issued delete records when, which UID and which release, and clears the last error: %+v", r)
		}
	case OutcomeOngoing:
		if r.DeletionTimestamp == nil || len(r.Finalizers) == 0 || r.UID == "" || r.RequestedAt == nil {
			t.Errorf("an ongoing delete records its object, deletionTimestamp and finalizers: %+v", r)
		}
	case OutcomeRequested:
		if o.Live != nil && (r.DeletionTimestamp == nil || len(r.Finalizers) == 0) {
			t.Errorf("a held object's deletionTimestamp and finalizers are recorded: %+v", r)
		}
	case OutcomeCompleted, OutcomeAbsent:
		if r.CompletedAt == nil || len(r.Finalizers) != 0 && step.Outcome == OutcomeCompleted {
			t.Errorf("a finished delete records when, and nothing holds it: %+v", r)
		}
	case OutcomeReappeared:
		if r.ReappearedAt == nil || r.UID != o.Live.GetUID() {
			t.Errorf("a reappeared object is recorded with its UID: %+v", r)
		}
	case OutcomeFailed:
		if r.LastError != o.Message && prev != nil && prev.State != Refused {
			t.Errorf("a failure records its message, got %q", r.LastError)
		}
	case OutcomeRefused:
		if r.LastError != refusal {
			t.Errorf("a refusal records its reason alone, got %q", r.LastError)
		}
	}
	for _, ev := range step.Events {
		if !strings.Contains(ev.Message, testID.String()) {
			t.Errorf("Event %s does not name the object: %q", ev.Reason, ev.Message)
		}
	}
	if prev != nil && step.Outcome == OutcomeUnchanged && step.Save && !reflect.DeepEqual(*prev, r) {
		t.Errorf("an unchanged outcome changed the record:\n%+v\n%+v", *prev, r)
	}
}

// TestNextCoversEveryPair fails when a state or a kind is added without a
// case for each pair.
func TestNextCoversEveryPair(t *testing.T) {
	covered := map[string]bool{}
	for _, tc := range transitionCases {
		state := State("none")
		if tc.prev != nil {
			state = tc.prev.State
		}
		covered[fmt.Sprintf("%s/%s", state, tc.obs.Kind)] = true
	}
	for _, state := range append([]State{"none"}, States...) {
		for _, kind := range Kinds {
			if !covered[fmt.Sprintf("%s/%s", state, kind)] {
				t.Errorf("no case for a %s observation of a %s record", kind, state)
			}
		}
	}
}

func TestNextKeepsTheFirstSightingOfAReappearedObject(t *testing.T) {
	prev := record(Completed, "2", "u2")
	prev.ReappearedAt = &earlier
	step := Next(prev, obs(Look, reconcile, another))
	if !step.Record.ReappearedAt.Equal(&earlier) || len(step.Events) != 0 || len(step.Transitions) != 0 {
		t.Errorf("the same reappeared object must keep its first sighting and not be reported again: %+v", step)
	}
}

func TestNextFailureDetailIsWhatTheRecordKeeps(t *testing.T) {
	o := obs(Fail, update, nil)
	o.Detail = "forbidden"
	step := Next(record(Pending, "2", "u1"), o)
	if step.Record.LastError != "forbidden" || step.Events[0].Message != o.Message {
		t.Errorf("LastError %q and Event %q: want the detail kept and the message reported", step.Record.LastError, step.Events[0].Message)
	}
}

func TestNextNeverIssuesForATerminatingOrFinishedObject(t *testing.T) {
	for _, prev := range append([]*Record{nil}, record(Pending, "2", ""), record(InProgress, "2", "u1"), record(Completed, "2", "u1"),
		record(Absent, "2", ""), record(Abandoned, "2", "")) {
		for _, update := range []bool{true, false} {
			if s := Next(prev, obs(Look, update, terminating)); s.Outcome == OutcomeIssue {
				t.Errorf("issued a DELETE of a terminating object from %+v", prev)
			}
			if prev != nil && prev.Done() {
				if s := Next(prev, obs(Look, update, another)); s.Outcome == OutcomeIssue {
					t.Errorf("issued a DELETE of an object back within the release that deleted it, from %+v", prev)
				}
			}
		}
	}
}

func TestSummarize(t *testing.T) {
	now := time.Date(2026, 2, 1, 1, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *metav1.Time { t := metav1.NewTime(now.Add(-d)); return &t }
	recs := []Record{
		{ID: payload.ObjectID{Kind: "A", Name: "fresh"}, State: InProgress, RequestedAt: at(time.Minute)},
		{ID: payload.ObjectID{Kind: "A", Name: "old"}, State: InProgress, RequestedAt: at(20 * time.Minute)},
		{ID: payload.ObjectID{Kind: "A", Name: "failed"}, State: Pending, LastError: "forbidden"},
		{ID: payload.ObjectID{Kind: "A", Name: "done"}, State: Completed},
		{ID: payload.ObjectID{Kind: "A", Name: "back"}, State: Completed, ReappearedAt: at(0)},
		{ID: payload.ObjectID{Kind: "A", Name: "given-up"}, State: Abandoned},
		{ID: payload.ObjectID{Kind: "A", Name: "refused"}, State: Refused, LastError: refusal},
	}
	s := Summarize(recs, now, 10*time.Minute)
	if len(s.InProgress) != 3 || len(s.Stuck) != 1 || s.Stuck[0].ID.Name != "old" || len(s.Failed) != 2 || len(s.Reappeared) != 1 {
		t.Fatalf("unexpected summary: %+v", s)
	}
	if len(s.Refused) != 1 || s.Refused[0].ID.Name != "refused" {
		t.Errorf("a refused delete is listed as refused and failed, never in progress: %+v", s)
	}
	if s.OldestPending != 20*time.Minute {
		t.Errorf("oldest pending = %s, want 20m", s.OldestPending)
	}
	if !s.Blocking() {
		t.Error("pending deletes must block minor updates")
	}
	if (Summary{Reappeared: s.Reappeared}).Blocking() {
		t.Error("a reappeared object alone must not block")
	}
}

// TestCarriedBy: a walk's Look records that its release carried the
// delete manifest; Drop, Poll and Claim do not, and a walk that saves no
// record remembers nothing.
func TestCarriedBy(t *testing.T) {
	prev := record(Completed, "1", "")
	prev.CarriedBy = []string{"1.1.0", "1.1.1"}
	for _, tc := range []struct {
		name string
		prev *Record
		obs  Observation
		want []string
	}{
		{"a first look starts the list", nil, obs(Look, update, nil), []string{"2"}},
		{"a later release is added last", prev, obs(Look, reconcile, nil), []string{"1.1.0", "1.1.1", "2"}},
		{"a drop is not carrying", prev, obs(Drop, update, nil), []string{"1.1.0", "1.1.1"}},
		{"a poll is not carrying", prev, obs(Poll, reconcile, nil), []string{"1.1.0", "1.1.1"}},
		{"a claim leaves it to the walk", prev, obs(Claim, update, nil), []string{"1.1.0", "1.1.1"}},
		{"a walk that saves nothing remembers nothing", nil, obs(Look, reconcile, present), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			step := Next(tc.prev, tc.obs)
			if !reflect.DeepEqual(step.Record.CarriedBy, tc.want) {
				t.Errorf("CarriedBy = %v, want %v", step.Record.CarriedBy, tc.want)
			}
		})
	}
	if !reflect.DeepEqual(prev.CarriedBy, []string{"1.1.0", "1.1.1"}) {
		t.Errorf("Next changed the previous record's CarriedBy: %v", prev.CarriedBy)
	}
}

func TestCarryKeepsTheLastFourDistinctReleases(t *testing.T) {
	var got []string
	for _, r := range []string{"1", "2", "2", "3", "1", "4", "5"} {
		got = carry(got, r)
	}
	if want := []string{"3", "1", "4", "5"}; !reflect.DeepEqual(got, want) {
		t.Errorf("carry = %v, want %v", got, want)
	}
}

func TestCarriersFallsBackToTheClaimingRelease(t *testing.T) {
	old := *record(Absent, "1.1.0", "")
	current := *record(Completed, "1.1.0", "")
	current.ID.Name = "y"
	current.CarriedBy = []string{"1.1.1"}
	got := Carriers([]Record{old, current})
	want := map[payload.ObjectID][]string{old.ID: {"1.1.0"}, current.ID: {"1.1.1"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Carriers = %v, want %v", got, want)
	}
}
