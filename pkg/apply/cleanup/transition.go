package cleanup

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/payload-applier/payload-applier/pkg/apply/deletion"
	"github.com/payload-applier/payload-applier/pkg/textwrap"
)

// Kind is what the engine saw, or did, that may change a component's
// cleanup record. A pass observes a component in this order: Begin; then,
// when Next asks for it, Judged; then, when Next says to delete, Counted
// or Failed.
type Kind string

const (
	// Begin: a pass reached the component's delete chain. Policy, Update
	// and Rollback describe the pass.
	Begin Kind = "Begin"
	// Judged: the engine read the component's CRDs and its operator.
	// Excluded notes the CRDs whose operands are left alone, Cleanable
	// counts the others, and Unavailable says why rule 1 fails ("" when
	// it holds).
	Judged Kind = "Judged"
	// Counted: the engine sent the DELETEs it could; Count is what is
	// left of the operands.
	Counted Kind = "Counted"
	// Failed: listing or deleting operands failed, or the delete gate
	// refused one; Why says what. Nothing is known of what is left.
	Failed Kind = "Failed"
)

// Kinds lists every kind, for tests that must cover them all.
var Kinds = []Kind{Begin, Judged, Counted, Failed}

// Note is one CRD whose operands a cleanup leaves alone.
type Note struct {
	CRD string
	// Rule is the rule that failed; 0 when the reason is no numbered rule.
	Rule Rule
	// Blocked marks a CRD whose API is not served by the CRD itself.
	Blocked bool
	Message string
}

// Reason is the failed rule and why, without the CRD.
func (n Note) Reason() string {
	if n.Rule != 0 {
		return n.Rule.String() + ": " + n.Message
	}
	return n.Message
}

func (n Note) String() string {
	if n.CRD == "" {
		return bounded(n.Reason())
	}
	return bounded(n.CRD + ": " + n.Reason())
}

// Observation is one thing the engine saw or did.
type Observation struct {
	Kind Kind
	Now  time.Time
	// Component and Release name the component and the release the pass
	// applies; a new record takes both.
	Component, Release string

	// Begin. Pending: an update claimed the component's deletes and none
	// was issued yet, so its gate never opened (a record lost since).
	Policy   Policy
	Update   bool
	Pending  bool
	Rollback bool

	// Judged, and again with Counted and Failed, so that the record keeps
	// them.
	Excluded    []Note
	Cleanable   int
	Unavailable string

	// Counted.
	Count Count
	// Failed.
	Why string
}

// Outcome is what the engine does after a step.
type Outcome string

const (
	// OutcomeOpen: the component's deletes go ahead.
	OutcomeOpen Outcome = "open"
	// OutcomeJudge: read the CRDs and the operator, then observe Judged.
	OutcomeJudge Outcome = "judge"
	// OutcomeDelete: delete the operands of the cleanable CRDs, then
	// observe Counted or Failed.
	OutcomeDelete Outcome = "delete"
	// OutcomeWait: the component's deletes wait for a later pass.
	OutcomeWait Outcome = "wait"
)

// Reasons of operand cleanup: of its Events on the ClusterVersion, and of
// the OperandCleanup condition, which uses the same words.
const (
	ReasonStarted   = "OperandCleanupStarted"
	ReasonCompleted = "OperandCleanupCompleted"
	ReasonSkipped   = "OperandCleanupSkipped"
	ReasonAborted   = "OperandCleanupAborted"
	// ReasonBlocked: the cleanup cannot start (Waiting too long), or a
	// CRD's API is not its own (the Blocked state).
	ReasonBlocked = "OperandCleanupBlocked"
	// Condition reasons only.
	ReasonWaiting = "WaitingOnCleanup"
	ReasonStalled = "OperandCleanupStalled"
	// ReasonInProgress is the Upgradeable=False reason while a cleanup
	// runs or waits.
	ReasonInProgress = "OperandCleanupInProgress"
)

// Event is a Kubernetes Event a step asks the engine to record, as a
// delete's step does.
type Event = deletion.Event

// Step is what Next decided.
type Step struct {
	Record Record
	// Save is false when there is no record to keep: the cleanup never
	// started, and this observation starts none.
	Save    bool
	Outcome Outcome
	Events  []Event
}

// Next is the one transition of a component's operand cleanup: from the
// stored record (nil when there is none) and an observation, it decides
// the next record and what the engine does. Nothing else writes a record.
//
// States move: (none) → Waiting while rule 1 fails, or → Running once
// operands are deleted, or → Completed when none is left; Waiting →
// Running → Completed; (none), Waiting or Running → Skipped when no CRD
// may be cleaned up (→ Blocked when a CRD's API is not its own); Waiting
// or Running → Aborted when the admin's policy is no longer Delete.
// Completed, Aborted, Skipped and Blocked are final while the release
// removes the component. A cleanup starts only in an update, never in a
// rollback; later passes of any mode carry it on, and so does one whose
// record was lost before its gate ever opened.
func Next(prev *Record, obs Observation) Step {
	s := &Step{Outcome: OutcomeOpen}
	if prev != nil {
		s.Record = *prev
	}
	switch obs.Kind {
	case Begin:
		s.begin(prev, obs)
	case Judged:
		s.judged(prev, obs)
	case Counted:
		s.counted(prev, obs)
	case Failed:
		s.wait(prev, obs, "deleting operands failed: "+obs.Why)
	}
	s.Save = prev != nil || s.Record.State != ""
	return *s
}

func active(prev *Record) bool {
	return prev != nil && (prev.State == Running || prev.State == Waiting)
}

func (s *Step) begin(prev *Record, obs Observation) {
	switch {
	case prev != nil && prev.State.Open():
		// Final: the gate stays open.
	case obs.Policy != PolicyDelete:
		if !active(prev) {
			return
		}
		s.Record.State = Aborted
		s.Record.Message = fmt.Sprintf("the operand cleanup policy is no longer Delete: %d CRs are left in place, with no guarantee that what their finalizers guard is released", prev.Total())
		s.Events = []Event{{Warning: true, Reason: ReasonAborted, Message: fmt.Sprintf("Operand cleanup of component %s aborted: %s.", obs.Component, s.Record.Message)}}
	case obs.Rollback:
		// Reported, so that an admin who asked for Delete learns why not.
		s.exclude(prev, obs, []Note{{Rule: RuleNotReplaced, Message: "the update is a rollback"}})
	case prev == nil && !obs.Update && !obs.Pending:
		// A cleanup starts only for what an update asked; later passes
		// carry it on, from the ledger's claim if its record was lost.
	default:
		s.Outcome = OutcomeJudge
	}
}

func (s *Step) judged(prev *Record, obs Observation) {
	switch {
	case prev != nil && prev.State.Open():
	case obs.Cleanable == 0:
		s.exclude(prev, obs, obs.Excluded)
	case obs.Unavailable != "":
		s.wait(prev, obs, obs.Unavailable)
	default:
		s.Outcome = OutcomeDelete
	}
}

func (s *Step) counted(prev *Record, obs Observation) {
	if prev != nil && prev.State.Open() {
		return
	}
	s.Record = progressed(prev, obs.Component, obs.Release, obs.Count, obs.Now)
	s.Record.setNotes(obs.Excluded)
	switch {
	case s.Record.State == Completed:
		s.Events = []Event{{Reason: ReasonCompleted, Message: fmt.Sprintf("Operand cleanup of component %s completed; its removal goes ahead.", obs.Component)}}
	case !active(prev) || prev.State == Waiting:
		s.Outcome = OutcomeWait
		s.Events = []Event{{Reason: ReasonStarted, Message: fmt.Sprintf("Deleting the operands of component %s before removing it: %s.", obs.Component, s.Record.Describe())}}
	default:
		s.Outcome = OutcomeWait
	}
}

// wait keeps the gate closed: nothing is deleted this pass.
func (s *Step) wait(prev *Record, obs Observation, why string) {
	if prev != nil && prev.State.Open() {
		return
	}
	s.Record = waiting(prev, obs.Component, obs.Release, bounded(why), obs.Now)
	s.Record.setNotes(obs.Excluded)
	s.Outcome = OutcomeWait
}

// exclude opens the gate with no operand deleted: every CRD is left alone.
func (s *Step) exclude(prev *Record, obs Observation, notes []Note) {
	rec := Record{Component: obs.Component, Release: obs.Release, State: Skipped}
	if active(prev) {
		rec.Release, rec.StartedAt = prev.Release, prev.StartedAt
	}
	rec.setNotes(notes)
	reason, verb := ReasonSkipped, "skipped"
	if rec.BlockedCRDs > 0 {
		rec.State, reason, verb = Blocked, ReasonBlocked, "blocked"
	}
	s.Record = rec
	if prev == nil || prev.State != rec.State || !slices.Equal(prev.Skips, rec.Skips) || prev.MoreSkips != rec.MoreSkips {
		s.Events = []Event{{Warning: true, Reason: reason, Message: fmt.Sprintf("Operand cleanup of component %s %s, its operands are left in place: %s.", obs.Component, verb, rec.SkipSummary())}}
	}
}

// setNotes keeps the first notes and counts the rest.
func (r *Record) setNotes(notes []Note) {
	r.Skips, r.MoreSkips, r.BlockedCRDs = nil, 0, 0
	for _, n := range notes {
		if n.Blocked {
			r.BlockedCRDs++
		}
		if len(r.Skips) < maxNotes {
			r.Skips = append(r.Skips, n.String())
		} else {
			r.MoreSkips++
		}
	}
}

// SkipSummary joins the notes, saying how many more there are.
func (r *Record) SkipSummary() string {
	msg := strings.Join(r.Skips, "; ")
	if r.MoreSkips > 0 {
		msg += fmt.Sprintf("; and %d more CRDs", r.MoreSkips)
	}
	return msg
}

// bounded cuts a message written to the cluster to maxNoteLen bytes,
// saying that it did.
func bounded(s string) string {
	return textwrap.Bound(s, maxNoteLen)
}
