package apply

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/payload-applier/payload-applier/pkg/graph"
	"github.com/payload-applier/payload-applier/pkg/payload"
)

// deleteOutcome is what one look at a delete manifest's object found.
type deleteOutcome string

const (
	// outcomeIssue: the caller must issue the DELETE now.
	outcomeIssue deleteOutcome = "issue"
	// outcomeOngoing: the object is terminating; wait for it.
	outcomeOngoing deleteOutcome = "ongoing"
	// outcomeCompleted: the object is gone after our delete.
	outcomeCompleted deleteOutcome = "completed"
	// outcomeAbsent: the object was not there at first look.
	outcomeAbsent deleteOutcome = "absent"
	// outcomeDone: already recorded as gone, still gone.
	outcomeDone deleteOutcome = "done"
	// outcomeReappeared: recorded as gone, but it exists again.
	outcomeReappeared deleteOutcome = "reappeared"
	// outcomeNotDeleting: the object exists, and this mode starts no delete.
	outcomeNotDeleting deleteOutcome = "not-deleting"
)

// deleteInput is everything the transition looks at.
type deleteInput struct {
	Manifest *payload.Manifest
	Release  string
	Mode     graph.Mode
	// Record is the ledger's record, nil when there is none.
	Record *DeleteRecord
	// Live is the object as read, nil when NotFound.
	Live *unstructured.Unstructured
	Now  time.Time
}

// nextDelete is the pure transition of a delete: from the ledger's record and
// what the cluster shows, decide what to do and what to record. It never
// decides to issue a DELETE for an object that is already terminating, and
// only issues one in update mode or for a delete an update already asked for.
func nextDelete(in deleteInput) (DeleteRecord, deleteOutcome) {
	now := metav1.NewTime(in.Now)
	rec := DeleteRecord{ID: in.Manifest.ID(), File: in.Manifest.Position(), Release: in.Release}
	if in.Record != nil {
		rec = *in.Record
	}

	if in.Live == nil {
		switch {
		case in.Record == nil || rec.State == DeletePending || rec.State == DeleteAbandoned:
			rec.State = DeleteAbsent
			rec.CompletedAt = &now
			return rec, outcomeAbsent
		case rec.State == DeleteInProgress:
			rec.State = DeleteCompleted
			rec.CompletedAt = &now
			rec.Finalizers = nil
			return rec, outcomeCompleted
		default:
			return rec, outcomeDone
		}
	}

	live := in.Live
	if rec.Done() {
		// A new update that still carries the delete manifest asks anew;
		// within the release that completed it, the object is only reported.
		if in.Mode == graph.ModeUpdate && rec.Release != in.Release {
			rec = DeleteRecord{ID: rec.ID, File: in.Manifest.Position(), Release: in.Release}
		} else {
			if rec.ReappearedAt == nil || rec.UID != live.GetUID() {
				rec.ReappearedAt = &now
				rec.UID = live.GetUID()
			}
			return rec, outcomeReappeared
		}
	}

	if rec.State == DeleteAbandoned && in.Mode == graph.ModeUpdate {
		// A release asks again for a delete an earlier one gave up.
		rec = DeleteRecord{ID: rec.ID, File: in.Manifest.Position(), Release: in.Release}
	}

	if rec.State == DeleteInProgress && rec.UID != "" && rec.UID != live.GetUID() {
		// The object we deleted is gone and another took its name.
		rec.State = DeleteCompleted
		rec.CompletedAt = &now
		rec.ReappearedAt = &now
		rec.UID = live.GetUID()
		return rec, outcomeReappeared
	}

	if ts := live.GetDeletionTimestamp(); ts != nil {
		rec.State = DeleteInProgress
		rec.UID = live.GetUID()
		rec.DeletionTimestamp = ts
		rec.Finalizers = finalizersOf(live)
		if rec.RequestedAt == nil {
			rec.RequestedAt = &now
		}
		return rec, outcomeOngoing
	}

	asked := in.Record != nil && (rec.State == DeletePending || rec.State == DeleteInProgress)
	if in.Mode != graph.ModeUpdate && !asked {
		return rec, outcomeNotDeleting
	}
	// Record the intent before acting: a crash after this point leaves a
	// record that later passes finish.
	rec.State = DeletePending
	rec.UID = live.GetUID()
	rec.RequestedAt = &now
	rec.LastError = ""
	return rec, outcomeIssue
}

// finalizersOf lists what holds a terminating object: its finalizers and,
// for a Namespace, the spec.finalizers its controller works through.
func finalizersOf(obj *unstructured.Unstructured) []string {
	out := append([]string(nil), obj.GetFinalizers()...)
	if spec, _, _ := unstructured.NestedStringSlice(obj.Object, "spec", "finalizers"); len(spec) > 0 {
		out = append(out, spec...)
	}
	return out
}
