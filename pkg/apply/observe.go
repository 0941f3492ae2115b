package apply

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/payload-applier/payload-applier/pkg/apply/deletion"
)

// RefreshDeletes looks at every in-progress delete and records the ones that
// have completed. It only reads the cluster, so the operator can call it
// between passes to let Upgradeable turn True as soon as a finalizer clears.
func (e *Engine) RefreshDeletes(ctx context.Context) error {
	if err := e.ledger.Load(ctx); err != nil {
		return err
	}
	for _, rec := range e.ledger.All() {
		if rec.State != deletion.InProgress {
			continue
		}
		if err := e.poll(ctx, rec); err != nil {
			return err
		}
	}
	return e.ledger.Flush(ctx)
}

// poll re-reads the object of a pending or in-progress delete and records
// what it shows. It never issues a delete: the walk alone does.
func (e *Engine) poll(ctx context.Context, rec deletion.Record) error {
	live, err := e.readRecorded(ctx, rec)
	if err != nil {
		return err
	}
	e.take(deletion.Next(&rec, deletion.Observation{Kind: deletion.Poll, Now: e.clock.Now(), Live: live}))
	return nil
}

// readRecorded reads the object a record names, nil when it is gone: a kind
// no longer served means its CRD is gone, and every object of it with it.
func (e *Engine) readRecorded(ctx context.Context, rec deletion.Record) (*unstructured.Unstructured, error) {
	gvk := schema.GroupVersionKind{Group: rec.ID.Group, Kind: rec.ID.Kind}
	rc, err := e.resolve(gvk, rec.ID.Namespace, false)
	if meta.IsNoMatchError(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return rc.read(ctx, rec.ID.Name)
}

// take stores what a delete step decided and reports its transitions and
// Events. It is how every record change reaches the ledger.
func (e *Engine) take(step deletion.Step) deletion.Step {
	if step.Save {
		e.ledger.Set(step.Record)
	}
	for _, t := range step.Transitions {
		e.count(t, step.Record)
	}
	e.emit(step.Events)
	return step
}

// emit records the Events a transition step asks for.
func (e *Engine) emit(events []deletion.Event) {
	for _, ev := range events {
		if ev.Warning {
			e.warn(ev.Reason, ev.Message)
		} else {
			e.note(ev.Reason, ev.Message)
		}
	}
}

// count reports a delete transition for metrics: a manifest delete's, or
// an operand DELETE's, whose record the ledger does not keep.
func (e *Engine) count(t deletion.Transition, rec deletion.Record) {
	if e.onDelete != nil {
		e.onDelete(t, rec)
	}
}
