package apply

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// RefreshDeletes looks at every in-progress delete and records the ones that
// have completed. It only reads the cluster, so the operator can call it
// between passes to let Upgradeable turn True as soon as a finalizer clears.
func (e *Engine) RefreshDeletes(ctx context.Context) error {
	if err := e.ledger.load(ctx); err != nil {
		return err
	}
	for _, rec := range e.ledger.all() {
		if rec.State != DeleteInProgress {
			continue
		}
		if err := e.observeRecord(ctx, rec); err != nil {
			return err
		}
	}
	return e.ledger.flush(ctx)
}

// observeRecord re-reads the object of an in-progress or pending delete and
// updates its record. A pending delete whose object is gone is Absent, as
// if the walk had looked; one whose object exists is left to the walk,
// which alone issues deletes.
func (e *Engine) observeRecord(ctx context.Context, rec DeleteRecord) error {
	gk := schema.GroupKind{Group: rec.ID.Group, Kind: rec.ID.Kind}
	mapping, err := e.mapper.m.RESTMapping(gk)
	gone := false
	switch {
	case meta.IsNoMatchError(err):
		gone = true
	case err != nil:
		return err
	default:
		var ri dynamic.ResourceInterface = e.dynamic.Resource(mapping.Resource)
		if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
			ri = e.dynamic.Resource(mapping.Resource).Namespace(rec.ID.Namespace)
		}
		live, err := ri.Get(ctx, rec.ID.Name, metav1.GetOptions{})
		switch {
		case isNotFound(err):
			gone = true
		case err != nil:
			return err
		case rec.UID != "" && live.GetUID() != rec.UID:
			gone = true
		case rec.State == DeletePending && live.GetDeletionTimestamp() == nil:
			return nil
		default:
			// A pending delete whose object is terminating was issued by a
			// pass whose outcome was never saved, or by someone else.
			if rec.State == DeletePending {
				now := metav1.NewTime(e.clock.Now())
				rec.State, rec.UID, rec.RequestedAt = DeleteInProgress, live.GetUID(), &now
			}
			rec.DeletionTimestamp, rec.Finalizers = live.GetDeletionTimestamp(), finalizersOf(live)
		}
	}
	if gone && rec.State == DeletePending {
		now := metav1.NewTime(e.clock.Now())
		rec.State, rec.CompletedAt, rec.Finalizers = DeleteAbsent, &now, nil
		e.transition(TransitionAlreadyDeleted, rec)
		e.ledger.set(rec)
		return nil
	}
	if gone {
		now := metav1.NewTime(e.clock.Now())
		rec.State, rec.CompletedAt, rec.Finalizers = DeleteCompleted, &now, nil
		e.note("DeleteCompleted", "Delete of "+rec.ID.String()+" completed.")
		e.transition(TransitionCompleted, rec)
	}
	e.ledger.set(rec)
	return nil
}
