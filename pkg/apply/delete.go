package apply

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/payload-applier/payload-applier/pkg/graph"
	"github.com/payload-applier/payload-applier/pkg/payload"
)

func isNotFound(err error) bool { return apierrors.IsNotFound(err) }

// claimDeletes records, before any delete runs, that this update asks for
// every delete its payload carries. A delete that pacing holds back then
// still belongs to this update, and later passes in any mode issue it.
func (p *pass) claimDeletes(ctx context.Context) error {
	var claims []DeleteRecord
	for _, m := range p.rel.Manifests {
		if !m.Delete() {
			continue
		}
		if _, ok := p.e.ledger.get(m.ID()); ok {
			continue
		}
		claims = append(claims, DeleteRecord{ID: m.ID(), File: m.Position(), Release: p.rel.Version, State: DeletePending})
	}
	return p.e.ledger.putAll(ctx, claims)
}

// deleteTask is the graph task function for a delete manifest. It issues at
// most one DELETE, never for an object that is already terminating, and
// returns a graph.ErrWaiting error while the object is still there so that
// the next delete of the chain waits for a later pass.
func (p *pass) deleteTask(ctx context.Context, t *graph.Task) error {
	m := p.taskManifest(t)
	id := m.ID()
	res := p.results[t.Index]

	live, rc, err := p.lookupForDelete(ctx, m)
	if err != nil {
		te := taskError(m, "read before delete", err)
		res.Action, res.Err, res.Message = ActionFailed, te, te.Message
		p.record(ctx, t.Index, res)
		return te
	}
	var prev *DeleteRecord
	if r, ok := p.e.ledger.get(id); ok {
		prev = &r
	}
	next, outcome := nextDelete(deleteInput{Manifest: m, Release: p.rel.Version, Mode: p.opts.Mode,
		Record: prev, Live: live, Now: p.e.clock.Now()})

	if outcome == outcomeIssue {
		return p.issueDelete(ctx, t, m, rc, live, next)
	}
	// A mode that starts no delete records nothing about an object it
	// leaves alone; a record would read as a delete in progress.
	if outcome == outcomeNotDeleting && prev == nil {
		res.Action, res.Message = ActionNotDeleted, fmt.Sprintf("present; a %s pass starts no delete", p.opts.Mode)
		p.record(ctx, t.Index, res)
		return nil
	}
	p.e.ledger.set(next)
	switch outcome {
	case outcomeOngoing:
		res.Action, res.Message = ActionDeleting, ongoingMessage(next)
		p.record(ctx, t.Index, res)
		return waiting(id)
	case outcomeCompleted:
		p.e.note("DeleteCompleted", fmt.Sprintf("Delete of %s completed.", id))
		p.e.transition(TransitionCompleted, next)
		res.Action, res.Message = ActionDeleted, "delete completed"
	case outcomeAbsent:
		p.e.transition(TransitionAlreadyDeleted, next)
		res.Action, res.Message = ActionAlreadyDeleted, "not found: already removed or never installed"
	case outcomeDone:
		res.Action, res.Message = ActionAlreadyDeleted, fmt.Sprintf("delete completed at %s", formatTime(next.CompletedAt))
	case outcomeReappeared:
		if prev == nil || prev.ReappearedAt == nil || !prev.ReappearedAt.Equal(next.ReappearedAt) {
			p.e.warn("DeletedObjectReappeared", fmt.Sprintf("%s has reappeared after having been deleted at %s; it is not deleted again.", id, formatTime(next.CompletedAt)))
			p.e.transition(TransitionReappeared, next)
		}
		res.Action, res.Message = ActionReappeared, fmt.Sprintf("reappeared after its delete completed at %s; not deleted again", formatTime(next.CompletedAt))
	case outcomeNotDeleting:
		res.Action, res.Message = ActionNotDeleted, fmt.Sprintf("present; a %s pass starts no delete", p.opts.Mode)
	}
	p.record(ctx, t.Index, res)
	return nil
}

// lookupForDelete reads the object a delete manifest names. A kind that no
// longer resolves means its CRD is gone, and every object of it with it.
func (p *pass) lookupForDelete(ctx context.Context, m *payload.Manifest) (*unstructured.Unstructured, resourceClient, error) {
	rc, err := p.resourceFor(m)
	if meta.IsNoMatchError(err) {
		return nil, rc, nil
	}
	if err != nil {
		return nil, rc, err
	}
	live, err := p.getFresh(ctx, rc, m.Obj.GetName())
	return live, rc, err
}

// issueDelete persists the intent, sends the DELETE with a UID precondition
// so that a recreated object is never the one removed, and watches briefly
// for the object to vanish.
func (p *pass) issueDelete(ctx context.Context, t *graph.Task, m *payload.Manifest, rc resourceClient, live *unstructured.Unstructured, rec DeleteRecord) error {
	id := m.ID()
	res := p.results[t.Index]
	if err := p.e.checkDeletable(p.rel, id); err != nil {
		return p.failDelete(ctx, t, m, rec, err)
	}
	// No save before the DELETE: the claim is already stored, and after a
	// crash the object itself shows what happened. Terminating means
	// delete issued, never issued twice; gone means done.
	p.e.ledger.set(rec)
	uid := live.GetUID()
	answer, after, err := p.deleteObject(ctx, rc, m.Obj.GetName(), metav1.DeleteOptions{
		PropagationPolicy: ptr.To(metav1.DeletePropagationBackground),
		Preconditions:     &metav1.Preconditions{UID: &uid},
	})
	switch {
	case apierrors.IsNotFound(err):
		// Gone between our read and our delete.
	case apierrors.IsConflict(err):
		// Another object took the name: look again next pass.
		res.Action, res.Message = ActionDeleteWaiting, "the object was replaced before the delete; checking again next pass"
		p.record(ctx, t.Index, res)
		return waiting(id)
	case err != nil:
		rec.LastError = err.Error()
		return p.failDelete(ctx, t, m, rec, err)
	default:
		p.e.note("DeleteRequested", fmt.Sprintf("Delete requested for %s (%s).", id, m.Position()))
		p.e.transition(TransitionRequested, rec)
	}
	rec.State = DeleteInProgress
	obj, gone := after, answer == answerGone || apierrors.IsNotFound(err)
	if !gone {
		obj, gone = p.awaitGone(ctx, rc, m.Obj.GetName(), uid, after)
	}
	if gone {
		now := metav1.NewTime(p.e.clock.Now())
		rec.State, rec.CompletedAt, rec.Finalizers = DeleteCompleted, &now, nil
		p.e.ledger.set(rec)
		p.e.note("DeleteCompleted", fmt.Sprintf("Delete of %s completed.", id))
		p.e.transition(TransitionCompleted, rec)
		res.Action, res.Message = ActionDeleted, "deleted"
		p.record(ctx, t.Index, res)
		return nil
	}
	if obj != nil {
		rec.DeletionTimestamp = obj.GetDeletionTimestamp()
		rec.Finalizers = finalizersOf(obj)
	}
	p.e.ledger.set(rec)
	res.Action, res.Message = ActionDeleteRequested, ongoingMessage(rec)
	p.record(ctx, t.Index, res)
	return waiting(id)
}

// awaitGone polls until the object with uid is gone or the settle time ends.
// It returns the last object seen when it is still there. seen is the
// object as the DELETE's answer showed it, if it did; without it the first
// read is at once.
func (p *pass) awaitGone(ctx context.Context, rc resourceClient, name string, uid types.UID, seen *unstructured.Unstructured) (*unstructured.Unstructured, bool) {
	last := seen
	gone := false
	_ = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, p.opts.DeleteSettle, seen == nil, func(ctx context.Context) (bool, error) {
		obj, err := p.getFresh(ctx, rc, name)
		if err != nil {
			return false, nil
		}
		if obj == nil || obj.GetUID() != uid {
			gone = true
			return true, nil
		}
		last = obj
		return false, nil
	})
	return last, gone
}

// deleteAnswer is what a DELETE's response says of the object.
type deleteAnswer int

const (
	// answerUnknown: the response was not read; look at the object.
	answerUnknown deleteAnswer = iota
	// answerGone: removed at once.
	answerGone
	// answerTerminating: finalizers or a grace period hold it.
	answerTerminating
)

// deleteObject sends one DELETE. With a REST client it reads the answer:
// the apiserver returns a Status, or for some resources the removed object
// without a deletionTimestamp, when the object is gone at once, and the
// object with a deletionTimestamp while something holds it.
func (p *pass) deleteObject(ctx context.Context, rc resourceClient, name string, opts metav1.DeleteOptions) (deleteAnswer, *unstructured.Unstructured, error) {
	if p.e.rest == nil {
		return answerUnknown, nil, rc.ri.Delete(ctx, name, opts)
	}
	opts.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "DeleteOptions"}
	body, err := json.Marshal(opts)
	if err != nil {
		return answerUnknown, nil, err
	}
	raw, err := p.e.rest.Delete().AbsPath(rc.path(name)).
		SetHeader("Content-Type", "application/json").Body(body).Do(ctx).Raw()
	if err != nil {
		return answerUnknown, nil, err
	}
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(raw); err != nil {
		return answerUnknown, nil, nil
	}
	if obj.GetKind() == "Status" || obj.GetDeletionTimestamp() == nil {
		return answerGone, nil, nil
	}
	return answerTerminating, obj, nil
}

// failDelete records a failed delete: in the ledger, as an Event and as the
// task's error, which holds back the rest of its chain.
func (p *pass) failDelete(ctx context.Context, t *graph.Task, m *payload.Manifest, rec DeleteRecord, err error) error {
	te := taskError(m, "delete", err)
	if te.Reason != ReasonDeletionRefused {
		te.Reason = ReasonDeletionFailed
	}
	if rec.LastError == "" {
		rec.LastError = te.Error()
	}
	p.e.ledger.set(rec)
	p.e.warn(string(te.Reason), te.Error())
	p.e.transition(TransitionFailed, rec)
	res := p.results[t.Index]
	res.Action, res.Err, res.Message = ActionFailed, te, te.Message
	p.record(ctx, t.Index, res)
	return te
}

func waiting(id payload.ObjectID) error {
	return fmt.Errorf("%w: %s is still being deleted", graph.ErrWaiting, id)
}

func ongoingMessage(r DeleteRecord) string {
	msg := "delete in progress"
	if r.DeletionTimestamp != nil {
		msg += fmt.Sprintf(" since %s", formatTime(r.DeletionTimestamp))
	}
	if len(r.Finalizers) > 0 {
		msg += fmt.Sprintf("; waiting on finalizers %s", strings.Join(r.Finalizers, ", "))
	}
	return msg
}

func formatTime(t *metav1.Time) string {
	if t == nil {
		return "an unknown time"
	}
	return t.UTC().Format(time.RFC3339)
}

// markUnrun explains the delete tasks the walk did not reach: each waits on
// the nearest later delete of its chain that has not completed.
func (p *pass) markUnrun() {
	chains := map[string][]int{}
	for i, m := range p.rel.Manifests {
		if !m.Delete() {
			continue
		}
		key := m.Component
		if m.RunLevel < 0 {
			key = "file:" + m.File
		}
		chains[key] = append(chains[key], i)
	}
	for _, idx := range chains {
		sort.Sort(sort.Reverse(sort.IntSlice(idx)))
		var blocker string
		for _, i := range idx {
			r := &p.results[i]
			switch r.Action {
			case ActionDeleting, ActionDeleteRequested, ActionDeleteWaiting, ActionFailed:
				if blocker == "" {
					blocker = r.ID.String()
				}
			case ActionNotRun:
				if blocker != "" {
					r.Action, r.Message = ActionDeleteWaiting, "waiting on "+blocker
				}
			}
		}
	}
}

// trackOrphanedDeletes follows the deletes the walk left open: in-progress
// ones that the current payload no longer names, and pending ones (held
// back by pacing, or failed) whose object is already gone, which must not
// be reported as deletions in progress. It only reads; it never issues a
// delete.
func (p *pass) trackOrphanedDeletes(ctx context.Context) {
	for _, rec := range p.e.ledger.all() {
		inProgressOrphan := rec.State == DeleteInProgress && !p.marked[rec.ID]
		if !inProgressOrphan && rec.State != DeletePending {
			continue
		}
		_ = p.e.observeRecord(ctx, rec)
		if rec.State == DeletePending && !p.marked[rec.ID] {
			p.abandon(ctx, rec)
		}
	}
}

// abandon gives up a delete that pacing held back when the release now
// applied no longer asks for it. Nothing may delete an object the applied
// payload does not mark, so the object stays, like any object a release
// drops; the record says so instead of blocking minor updates forever.
func (p *pass) abandon(ctx context.Context, rec DeleteRecord) {
	latest, ok := p.e.ledger.get(rec.ID)
	if !ok || latest.State != DeletePending {
		return // observeRecord found it gone
	}
	latest.State = DeleteAbandoned
	p.e.ledger.set(latest)
	p.e.warn("DeleteAbandoned", fmt.Sprintf("Release %s asked to delete %s (%s), but the delete was still waiting and release %s no longer asks for it; the object is left in place.",
		latest.Release, latest.ID, latest.File, p.rel.Version))
}
