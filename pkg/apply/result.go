package apply

import (
	"time"

	"github.com/payload-applier/payload-applier/pkg/graph"
	"github.com/payload-applier/payload-applier/pkg/payload"
)

// Action is what a sync did to one object, in the past tense.
type Action string

const (
	ActionCreated    Action = "created"
	ActionConfigured Action = "configured"
	ActionUnchanged  Action = "unchanged"
	// ActionSkipped: create-only and already present.
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
)

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
	Deletes DeleteStatus
	// Apply and DeleteWalk are the raw graph results.
	Apply, DeleteWalk *graph.Result
}

// Complete reports whether every apply task succeeded. Deletes never hold a
// release back from completing.
func (r *SyncResult) Complete() bool {
	return len(r.Errors) == 0 && r.Done == r.Total
}

// DeleteStatus summarizes the ledger for Upgradeable and status reporting.
type DeleteStatus struct {
	// InProgress lists deletes issued, or asked for and paced, that have not completed.
	InProgress []DeleteRecord
	// Stuck lists in-progress deletes older than the stuck threshold.
	Stuck []DeleteRecord
	// Failed lists deletes whose last attempt failed.
	Failed []DeleteRecord
	// Reappeared lists objects that came back after their delete completed.
	Reappeared []DeleteRecord
	// OldestPending is the age of the oldest in-progress delete.
	OldestPending time.Duration
}

// Blocking reports whether the deletes should hold back minor updates.
func (s DeleteStatus) Blocking() bool {
	return len(s.InProgress) > 0 || len(s.Failed) > 0
}

// Event reports progress while a sync runs. The CLI prints them; the operator
// turns them into status.
type Event struct {
	Time   time.Time
	Object ObjectResult
	// Done and Total count apply tasks finished so far, for progress lines.
	Done, Total int
}
