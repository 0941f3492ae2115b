// Package deletion is the lifecycle of the object a delete manifest names:
// the record the ledger keeps of it, the one transition function that
// changes a record, and the ledger that persists records across restarts.
//
// It sends nothing to the cluster but its ledger's ConfigMap (through
// recordstore). pkg/apply reads the object, tells Next what it saw as an
// Observation, stores the record Next returns and does what its Outcome
// says, sending any DELETE through its one delete path. Nothing else
// writes a record's state.
package deletion

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/payload-applier/payload-applier/pkg/payload"
)

// ReasonFailed is the reason of a delete that failed or is stuck: the
// engine's on the task, and Upgradeable's while it lasts.
const ReasonFailed = "ResourceDeletionFailed"

// State is where a delete stands. Next documents the transitions.
type State string

const (
	// Pending: an update asked for the delete, but pacing has not let it be
	// issued yet. Later passes, in any mode, issue it.
	Pending State = "Pending"
	// InProgress: the DELETE was issued (or the object was already
	// terminating) and the object still exists.
	InProgress State = "InProgress"
	// Completed: the object was seen gone after the delete.
	Completed State = "Completed"
	// Absent: the object was not found at first look: already removed or
	// never installed.
	Absent State = "Absent"
	// Abandoned: pacing held the delete back and a later release dropped
	// its delete manifest, so it is never issued.
	Abandoned State = "Abandoned"
	// Refused: the safety gate refused the delete (LastError says why) and
	// the object stays. It blocks minor updates as a failed delete does,
	// and nothing else; an update checks again, and a release without the
	// delete manifest drops the record.
	Refused State = "Refused"
)

// States lists every state, for tests that must cover them all.
var States = []State{Pending, InProgress, Completed, Absent, Abandoned, Refused}

// Record is the ledger's memory of one delete manifest's object.
type Record struct {
	ID payload.ObjectID `json:"id"`
	// File is the manifest that asked for the delete, as file:line.
	File string `json:"file"`
	// Release is the version of the update that asked for the delete.
	Release           string       `json:"release"`
	State             State        `json:"state"`
	UID               types.UID    `json:"uid,omitempty"`
	RequestedAt       *metav1.Time `json:"requestedAt,omitempty"`
	DeletionTimestamp *metav1.Time `json:"deletionTimestamp,omitempty"`
	Finalizers        []string     `json:"finalizers,omitempty"`
	CompletedAt       *metav1.Time `json:"completedAt,omitempty"`
	ReappearedAt      *metav1.Time `json:"reappearedAt,omitempty"`
	// LastError is the most recent failure to issue the delete, if any.
	LastError string `json:"lastError,omitempty"`
	// CarriedBy lists the releases whose passes walked this delete
	// manifest, most recent last, so that acceptance can tell whether the
	// current release still carried it (see Carriers).
	CarriedBy []string `json:"carriedBy,omitempty"`
}

// maxCarriers bounds CarriedBy: acceptance asks only about the last
// completed release, which an update in flight pushes back by one.
const maxCarriers = 4

// carry returns carriers with release last, a new slice so that a record
// copied from the ledger never shares its backing array.
func carry(carriers []string, release string) []string {
	if n := len(carriers); n > 0 && carriers[n-1] == release {
		return carriers
	}
	out := make([]string, 0, len(carriers)+1)
	for _, c := range carriers {
		if c != release {
			out = append(out, c)
		}
	}
	out = append(out, release)
	if len(out) > maxCarriers {
		out = out[len(out)-maxCarriers:]
	}
	return out
}

// Carriers maps each object in recs to the releases whose delete
// manifests named it, as far as the ledger remembers. A record written
// before CarriedBy existed counts as carried by the release that claimed it.
func Carriers(recs []Record) map[payload.ObjectID][]string {
	out := make(map[payload.ObjectID][]string, len(recs))
	for _, r := range recs {
		switch {
		case len(r.CarriedBy) > 0:
			out[r.ID] = r.CarriedBy
		case r.Release != "":
			out[r.ID] = []string{r.Release}
		}
	}
	return out
}

// Done reports whether the object is known to be gone.
func (r *Record) Done() bool {
	return r.State == Completed || r.State == Absent
}

// Finished reports whether no pass will act on the record again: its
// object is gone, or its delete was given up.
func (r *Record) Finished() bool {
	return r.Done() || r.State == Abandoned
}

// Progress says how an unfinished delete stands, for results and Events.
func (r *Record) Progress() string {
	msg := "delete in progress"
	if r.DeletionTimestamp != nil {
		msg += fmt.Sprintf(" since %s", FormatTime(r.DeletionTimestamp))
	}
	if len(r.Finalizers) > 0 {
		msg += fmt.Sprintf("; waiting on finalizers %s", strings.Join(r.Finalizers, ", "))
	}
	return msg
}

// FormatTime renders a record's time in messages.
func FormatTime(t *metav1.Time) string {
	if t == nil {
		return "an unknown time"
	}
	return t.UTC().Format(time.RFC3339)
}

// stuck reports whether an issued delete has waited longer than after.
func (r *Record) stuck(now time.Time, after time.Duration) bool {
	return r.State == InProgress && r.RequestedAt != nil && now.Sub(r.RequestedAt.Time) > after
}

// Summary groups records for Upgradeable and status reporting.
type Summary struct {
	// InProgress lists deletes issued, or asked for and paced, that have not completed.
	InProgress []Record
	// Stuck lists in-progress deletes older than the stuck threshold.
	Stuck []Record
	// Failed lists deletes whose last attempt failed, the refused ones too.
	Failed []Record
	// Refused lists the deletes the safety gate refused.
	Refused []Record
	// Reappeared lists objects that came back after their delete completed.
	Reappeared []Record
	// OldestPending is the age of the oldest in-progress delete.
	OldestPending time.Duration
}

// Blocking reports whether the deletes should hold back minor updates.
func (s Summary) Blocking() bool {
	return len(s.InProgress) > 0 || len(s.Failed) > 0
}

// Summarize groups recs as of now; an in-progress delete older than
// stuckAfter is stuck.
func Summarize(recs []Record, now time.Time, stuckAfter time.Duration) Summary {
	var s Summary
	for _, r := range recs {
		if r.ReappearedAt != nil && r.Done() {
			s.Reappeared = append(s.Reappeared, r)
		}
		if r.Finished() {
			continue
		}
		if r.LastError != "" {
			s.Failed = append(s.Failed, r)
		}
		if r.State == Refused {
			s.Refused = append(s.Refused, r)
			continue
		}
		s.InProgress = append(s.InProgress, r)
		if r.RequestedAt == nil {
			continue
		}
		if age := now.Sub(r.RequestedAt.Time); age > s.OldestPending {
			s.OldestPending = age
		}
		if r.stuck(now, stuckAfter) {
			s.Stuck = append(s.Stuck, r)
		}
	}
	return s
}
