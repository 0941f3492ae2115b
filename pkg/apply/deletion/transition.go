package deletion

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/payload-applier/payload-applier/pkg/payload"
)

// Kind is what the engine saw, or did, that may change a record.
type Kind string

const (
	// Claim: an update claims the delete before its walk starts, so that a
	// delete pacing holds back still belongs to it.
	Claim Kind = "Claim"
	// Look: a pass's delete walk read the object; Live is nil when it is
	// not found or its kind is no longer served.
	Look Kind = "Look"
	// Refuse: the safety gate refused the delete Look asked for.
	Refuse Kind = "Refuse"
	// Accept: the apiserver accepted the DELETE.
	Accept Kind = "Accept"
	// Replace: the DELETE's UID precondition failed: another object took
	// the name since the walk read it.
	Replace Kind = "Replace"
	// Fail: the DELETE failed.
	Fail Kind = "Fail"
	// Settle: the watch after a DELETE ended; Live is the object still
	// there, or nil when it is gone (also when the DELETE found nothing).
	Settle Kind = "Settle"
	// Poll: a read outside the walk, which never issues a delete: between
	// passes, and for the deletes the walk left open. Live as for Look.
	Poll Kind = "Poll"
	// Drop: the release a pass applies no longer carries the delete manifest.
	Drop Kind = "Drop"
	// Age: time passed; an issued delete may have become stuck.
	Age Kind = "Age"
)

// Kinds lists every kind, for tests that must cover them all.
var Kinds = []Kind{Claim, Look, Refuse, Accept, Replace, Fail, Settle, Poll, Drop, Age}

// Observation is one thing the engine saw or did.
type Observation struct {
	Kind Kind
	Now  time.Time
	// ID and File name the delete manifest; Release is the version of the
	// release the pass applies. A new record takes all three.
	ID      payload.ObjectID
	File    string
	Release string
	// Update marks a pass in update mode, the one mode that starts deletes
	// no update claimed.
	Update bool
	// Live is the object as read, nil when gone (Look, Settle, Poll).
	Live *unstructured.Unstructured
	// Reason and Message describe a Fail or Refuse for its Event; Detail,
	// when set, is what the record keeps as LastError instead of Message
	// (a Refuse always sets it: the reason alone, on one line).
	Reason, Message, Detail string
	// StuckAfter is how long an issued delete may wait before it is stuck (Age).
	StuckAfter time.Duration
}

// Outcome is what the engine must do after a step.
type Outcome string

const (
	// OutcomeIssue: send the DELETE now, with the record's UID as precondition.
	OutcomeIssue Outcome = "issue"
	// OutcomeRequested: the DELETE went out and the object is still there.
	OutcomeRequested Outcome = "requested"
	// OutcomeOngoing: the object is terminating; wait for it.
	OutcomeOngoing Outcome = "ongoing"
	// OutcomeReplaced: another object took the name; look again next pass.
	OutcomeReplaced Outcome = "replaced"
	// OutcomeCompleted: the object is gone after the delete.
	OutcomeCompleted Outcome = "completed"
	// OutcomeAbsent: the object was not there at first look.
	OutcomeAbsent Outcome = "absent"
	// OutcomeDone: already recorded as gone, still gone.
	OutcomeDone Outcome = "done"
	// OutcomeReappeared: recorded as gone, but an object is there again. It
	// is reported and never deleted by this release.
	OutcomeReappeared Outcome = "reappeared"
	// OutcomeNotDeleting: the object exists and this pass starts no delete.
	OutcomeNotDeleting Outcome = "not-deleting"
	// OutcomeFailed: the delete failed; its chain waits.
	OutcomeFailed Outcome = "failed"
	// OutcomeRefused: the safety gate refused the delete. The object stays,
	// and the rest of its chain goes on: a refusal blocks nothing else.
	OutcomeRefused Outcome = "refused"
	// OutcomeAbandoned: a held-back delete is given up.
	OutcomeAbandoned Outcome = "abandoned"
	// OutcomeStuck: an issued delete has waited past the stuck threshold.
	OutcomeStuck Outcome = "stuck"
	// OutcomeUnchanged: nothing to do or report.
	OutcomeUnchanged Outcome = "unchanged"
)

// Holds reports whether the outcome keeps the rest of the delete's chain
// waiting: the object is still there, or the delete failed.
func (o Outcome) Holds() bool {
	switch o {
	case OutcomeIssue, OutcomeRequested, OutcomeOngoing, OutcomeReplaced, OutcomeFailed:
		return true
	}
	return false
}

// Transition names a change the ledger records, for metrics.
type Transition string

const (
	TransitionRequested      Transition = "requested"
	TransitionCompleted      Transition = "completed"
	TransitionAlreadyDeleted Transition = "already_deleted"
	TransitionFailed         Transition = "failed"
	TransitionReappeared     Transition = "reappeared"
)

// Event reasons, as Kubernetes Events on the ClusterVersion show them.
const (
	ReasonRequested  = "DeleteRequested"
	ReasonCompleted  = "DeleteCompleted"
	ReasonReappeared = "DeletedObjectReappeared"
	ReasonAbandoned  = "DeleteAbandoned"
	ReasonStuck      = "DeleteStuck"
)

// Event is a Kubernetes Event a step asks the engine to record.
type Event struct {
	Warning         bool
	Reason, Message string
}

// Step is what Next decided.
type Step struct {
	// Record is the record after the observation.
	Record Record
	// Save is false when the ledger must not hold a record for this
	// observation: it had none and the observation gives none a state. A
	// pass that starts no delete records nothing about an object it leaves
	// alone, or a record would read as a delete in progress.
	Save    bool
	Outcome Outcome
	// Transitions and Events are to be reported, in order.
	Transitions []Transition
	Events      []Event
}

// Next is the one transition of a delete: from the ledger's record (nil
// when there is none) and an observation, it decides the next record and
// what the engine does. It never issues a DELETE for an object that is
// terminating or recorded as gone in this release, and only issues one in
// an update or for a delete an update claimed.
//
// States move: (none) → Pending on Claim, with the UID of the object the
// update saw, or when Look issues; Pending → InProgress once the DELETE is
// accepted or the object is seen terminating; InProgress → Completed once
// gone; (none), Pending or Abandoned → Absent when gone at first look;
// Pending → Abandoned on Drop; any state → Refused when the safety gate
// refuses. A recorded UID that differs from the live
// object's means the object it names is gone (Completed). Completed and
// Absent are final: an object there again sets ReappearedAt and is
// reported, never deleted again, by any pass or later release.
//
// Nothing here retries within a pass: a Fail holds the chain until the
// next pass's Look issues again, and a Poll (RefreshDeletes between
// passes) follows only InProgress records, never issuing. Applies, by
// contrast, retry inside a pass with its Backoff.
func Next(prev *Record, obs Observation) Step {
	rec := Record{ID: obs.ID, File: obs.File, Release: obs.Release}
	if prev != nil {
		rec = *prev
	}
	s := &Step{Record: rec, Outcome: OutcomeUnchanged}
	s.observe(prev, obs)
	s.Save = prev != nil || s.Record.State != ""
	if s.Save && obs.Kind == Look && obs.Release != "" {
		// Every walk of a delete manifest starts with a Look: the pass's
		// release carries the manifest.
		s.Record.CarriedBy = carry(s.Record.CarriedBy, obs.Release)
	}
	return *s
}

// observe applies one observation to the step's record.
func (s *Step) observe(prev *Record, obs Observation) {
	rec := s.Record
	now := metav1.NewTime(obs.Now)
	switch obs.Kind {
	case Claim:
		if prev != nil {
			return
		}
		s.Record.State = Pending
		if obs.Live != nil {
			s.Record.UID = obs.Live.GetUID()
		}
	case Look:
		s.look(prev, obs, now)
	case Refuse:
		s.Record.State, s.Record.LastError = Refused, obs.Detail
		s.Outcome = OutcomeRefused
		if prev == nil || prev.State != Refused || prev.LastError != obs.Detail {
			// Reported once: every update checks the gate again.
			s.Transitions = []Transition{TransitionFailed}
			s.Events = []Event{{Warning: true, Reason: obs.Reason, Message: obs.Message}}
		}
	case Fail:
		if prev == nil {
			// A delete that failed before anything recorded it is still asked for.
			s.Record.State = Pending
		}
		switch {
		case obs.Detail != "":
			s.Record.LastError = obs.Detail
		case s.Record.LastError == "":
			s.Record.LastError = obs.Message
		}
		s.Outcome = OutcomeFailed
		s.Transitions = []Transition{TransitionFailed}
		s.Events = []Event{{Warning: true, Reason: obs.Reason, Message: obs.Message}}
	case Accept:
		s.Record.State = InProgress
		s.Outcome = OutcomeRequested
		s.Transitions = []Transition{TransitionRequested}
		s.Events = []Event{{Reason: ReasonRequested, Message: fmt.Sprintf("Delete requested for %s (%s).", rec.ID, obs.File)}}
	case Replace:
		s.Outcome = OutcomeReplaced
	case Settle:
		if obs.Live == nil {
			s.complete(now)
			return
		}
		s.Record.State = InProgress
		s.Record.DeletionTimestamp = obs.Live.GetDeletionTimestamp()
		s.Record.Finalizers = FinalizersOf(obs.Live)
		s.Outcome = OutcomeRequested
	case Poll:
		s.poll(obs, now)
	case Drop:
		if rec.State != Pending {
			return
		}
		s.Record.State = Abandoned
		s.Outcome = OutcomeAbandoned
		s.Events = []Event{{Warning: true, Reason: ReasonAbandoned, Message: fmt.Sprintf(
			"Release %s asked to delete %s (%s), but the delete was still waiting and release %s no longer asks for it; the object is left in place.",
			rec.Release, rec.ID, rec.File, obs.Release)}}
	case Age:
		if rec.stuck(obs.Now, obs.StuckAfter) {
			s.Outcome = OutcomeStuck
			s.Events = []Event{{Warning: true, Reason: ReasonStuck, Message: fmt.Sprintf(
				"Delete of %s has been pending since %s; %s", rec.ID, FormatTime(rec.RequestedAt), rec.Progress())}}
		}
	}
}

// look decides what a walk does with the object it read.
func (s *Step) look(prev *Record, obs Observation, now metav1.Time) {
	rec := &s.Record
	live := obs.Live
	if live == nil {
		switch {
		case prev == nil || rec.State == Pending || rec.State == Abandoned || rec.State == Refused:
			rec.State, rec.CompletedAt = Absent, &now
			s.Outcome = OutcomeAbsent
			s.Transitions = []Transition{TransitionAlreadyDeleted}
		case rec.State == InProgress:
			s.complete(now)
		default:
			s.Outcome = OutcomeDone
		}
		return
	}

	if rec.Done() {
		// An object back after its delete is reported and never deleted
		// again, by this release or a later one that still carries the
		// delete manifest, as the CVO treats it.
		s.reappear(prev, live, now)
		return
	}
	if rec.UID != "" && rec.UID != live.GetUID() {
		// The object the delete was claimed or issued for is gone, and
		// another took its name.
		rec.State, rec.CompletedAt = Completed, &now
		s.reappear(prev, live, now)
		return
	}
	if rec.State == Abandoned && obs.Update {
		// A release asks again for a delete an earlier one gave up.
		*rec = Record{ID: rec.ID, File: obs.File, Release: obs.Release, UID: rec.UID}
	}
	if ts := live.GetDeletionTimestamp(); ts != nil {
		rec.State, rec.UID = InProgress, live.GetUID()
		rec.DeletionTimestamp, rec.Finalizers = ts, FinalizersOf(live)
		if rec.RequestedAt == nil {
			rec.RequestedAt = &now
		}
		s.Outcome = OutcomeOngoing
		return
	}
	claimed := prev != nil && (rec.State == Pending || rec.State == InProgress)
	if !obs.Update && !claimed {
		s.Outcome = OutcomeNotDeleting
		return
	}
	// The intent is recorded before the DELETE: the claim is already
	// stored, and after a crash the object itself shows what happened. A
	// refused delete stays Refused while the gate looks again, so that a
	// refusal it repeats is not reported anew.
	if rec.State != Refused {
		rec.State, rec.LastError = Pending, ""
	}
	rec.UID, rec.RequestedAt = live.GetUID(), &now
	s.Outcome = OutcomeIssue
}

// reappear records an object seen again after its delete completed,
// reporting it the first time this object is seen.
func (s *Step) reappear(prev *Record, live *unstructured.Unstructured, now metav1.Time) {
	rec := &s.Record
	if rec.ReappearedAt == nil || rec.UID != live.GetUID() {
		rec.ReappearedAt, rec.UID = &now, live.GetUID()
	}
	s.Outcome = OutcomeReappeared
	if prev == nil || prev.ReappearedAt == nil || !prev.ReappearedAt.Equal(rec.ReappearedAt) {
		s.Transitions = []Transition{TransitionReappeared}
		s.Events = []Event{{Warning: true, Reason: ReasonReappeared, Message: fmt.Sprintf(
			"%s has reappeared after having been deleted at %s; it is not deleted again.", rec.ID, FormatTime(rec.CompletedAt))}}
	}
}

// complete records the object gone after the delete.
func (s *Step) complete(now metav1.Time) {
	rec := &s.Record
	rec.State, rec.CompletedAt, rec.Finalizers = Completed, &now, nil
	s.Outcome = OutcomeCompleted
	s.Transitions = []Transition{TransitionCompleted}
	s.Events = []Event{{Reason: ReasonCompleted, Message: fmt.Sprintf("Delete of %s completed.", rec.ID)}}
}

// poll follows a pending or in-progress delete outside the walk. A pending
// delete whose object exists is left to the walk, which alone issues.
func (s *Step) poll(obs Observation, now metav1.Time) {
	rec := &s.Record
	if rec.State != Pending && rec.State != InProgress {
		return
	}
	live := obs.Live
	gone := live == nil || (rec.UID != "" && live.GetUID() != rec.UID)
	switch {
	case gone && rec.State == Pending:
		rec.State, rec.CompletedAt, rec.Finalizers = Absent, &now, nil
		s.Outcome = OutcomeAbsent
		s.Transitions = []Transition{TransitionAlreadyDeleted}
	case gone:
		s.complete(now)
	case rec.State == Pending && live.GetDeletionTimestamp() == nil:
	default:
		// A pending delete whose object is terminating was issued by a pass
		// whose outcome was never saved, or by someone else.
		if rec.State == Pending {
			rec.State, rec.UID, rec.RequestedAt = InProgress, live.GetUID(), &now
		}
		rec.DeletionTimestamp, rec.Finalizers = live.GetDeletionTimestamp(), FinalizersOf(live)
		s.Outcome = OutcomeOngoing
	}
}

// FinalizersOf lists what holds a terminating object: its finalizers and,
// for a Namespace, the spec.finalizers its controller works through.
func FinalizersOf(obj *unstructured.Unstructured) []string {
	out := append([]string(nil), obj.GetFinalizers()...)
	if spec, _, _ := unstructured.NestedStringSlice(obj.Object, "spec", "finalizers"); len(spec) > 0 {
		out = append(out, spec...)
	}
	return out
}
