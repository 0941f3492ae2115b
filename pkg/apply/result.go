package apply

import (
	"time"

	"github.com/payload-applier/payload-applier/pkg/apply/cleanup"
	"github.com/payload-applier/payload-applier/pkg/apply/deletion"
	"github.com/payload-applier/payload-applier/pkg/graph"
	"github.com/payload-applier/payload-applier/pkg/payload"
)

// Action is what a sync did to one object, in the past tense; a Plan
// reports the Action its sync would.
type Action string

const (
	ActionCreated    Action = "created"
	ActionConfigured Action = "configured"
	ActionUnchanged  Action = "unchanged"
	// ActionApplied: created, configured or unchanged, without telling
	// which. Only an offline plan reports it: it reads no object.
	ActionApplied Action = "applied"
	// ActionSkipped: create-only and already present; in a plan, dropped
	// by the inclusion filters.
	ActionSkipped Action = "skipped"
	// ActionFailed: the apply or delete failed; see Err.
	ActionFailed Action = "failed"
	// ActionNotRun: a task the graph never reached (a failed prerequisite or cancellation).
	ActionNotRun Action = "not-run"

	ActionDeleteRequested Action = "delete-requested"
	ActionDeleting        Action = "deleting"
	ActionDeleted         Action = "deleted"
	ActionAlreadyDeleted  Action = "already-deleted"
	// ActionDeleteWaiting: paced behind a delete that has not completed.
	ActionDeleteWaiting Action = "waiting"
	// ActionNotDeleted: present, but this mode starts no delete.
	ActionNotDeleted Action = "not-deleted"
	ActionReappeared Action = "reappeared"
	// ActionRefused: the safety gate refused the delete; see Err.
	ActionRefused Action = "refused"
)

// planWords holds the word `payload-applier plan` prints for each Action.
// The words are part of the `plan -o json` contract: never rename one.
// "" marks an Action no plan reports.
var planWords = map[Action]string{
	ActionApplied:         "apply",
	ActionCreated:         "create",
	ActionConfigured:      "update",
	ActionUnchanged:       "unchanged",
	ActionSkipped:         "skip",
	ActionDeleteRequested: "delete",
	ActionDeleting:        "delete",
	ActionDeleted:         "already-deleted",
	ActionAlreadyDeleted:  "already-deleted",
	ActionNotDeleted:      "skip",
	ActionReappeared:      "skip",
	ActionRefused:         "skip",
	// A plan runs nothing, so nothing fails or is left unrun; it notes a
	// delete's pacing and cleanup gate in its reason instead of waiting.
	ActionFailed:        "",
	ActionNotRun:        "",
	ActionDeleteWaiting: "",
}

// Planned is the word a plan prints for a, or "" for an Action no plan
// reports.
func (a Action) Planned() string {
	return planWords[a]
}

// ObjectResult is the outcome for one manifest.
type ObjectResult struct {
	ID     payload.ObjectID
	File   string
	Delete bool
	Action Action
	// Message explains waits, skips and failures.
	Message string
	Err     error
}

// SyncResult is what one pass over a release did.
type SyncResult struct {
	Release string
	Mode    graph.Mode
	// Objects holds one result per manifest, in payload order.
	Objects []ObjectResult
	// Errors holds every apply failure, each a *TaskError where classified.
	// Deletes never add here: their trouble shows in Deletes.
	Errors []error
	// Done counts the apply tasks that finished; Total counts all apply tasks.
	Done, Total int
	// Deletes is the ledger's view once the pass ended.
	Deletes deletion.Summary
	// Cleanups are the operand cleanups the engine knows once the pass ended.
	Cleanups []cleanup.Record
	// LedgerErr is set when the delete ledger could not be read: the pass
	// applied but deleted nothing (a *deletion.UnreadableError).
	LedgerErr error
	// CleanupErr is set when the operand cleanup state could not be read
	// (a *recordstore.UnreadableError): the pass applied, and deleted
	// nothing of the components whose operands it is about.
	CleanupErr error
	// Walks are the runner's results of the apply and the delete walk.
	Walks graph.PassResult
}

// Complete reports whether every apply task succeeded. Deletes never hold a
// release back from completing.
func (r *SyncResult) Complete() bool {
	return len(r.Errors) == 0 && r.Done == r.Total
}

// Event reports progress while a sync runs. The CLI prints them; the operator
// turns them into status.
type Event struct {
	Time   time.Time
	Object ObjectResult
	// Done and Total count apply tasks finished so far, for progress lines.
	Done, Total int
}
