package apply

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	"github.com/payload-applier/payload-applier/pkg/apply/deletion"
	"github.com/payload-applier/payload-applier/pkg/graph"
	"github.com/payload-applier/payload-applier/pkg/payload"
)

// claimDeletes records, before any delete runs, that this update asks for
// every delete its payload carries, and the UID of the object it saw. A
// delete that pacing holds back then still belongs to this update, and
// later passes in any mode issue it, but only for that object: one
// re-created under the same name since is reported, never deleted.
func (p *pass) claimDeletes(ctx context.Context) error {
	var unclaimed []*payload.Manifest
	for _, m := range p.rel.Manifests {
		if !m.Delete() {
			continue
		}
		if _, ok := p.e.ledger.Get(p.e.identity(m)); !ok {
			unclaimed = append(unclaimed, m)
		}
	}
	seen := p.readClaimed(ctx, unclaimed)
	var claims []deletion.Record
	for i, m := range unclaimed {
		step := p.next(m, deletion.Observation{Kind: deletion.Claim, Live: seen[i]})
		if step.Save {
			claims = append(claims, step.Record)
		}
	}
	return p.e.ledger.PutAll(ctx, claims)
}

// next runs the delete transition of manifest m on the ledger's record,
// filling in what every observation of this pass shares.
func (p *pass) next(m *payload.Manifest, obs deletion.Observation) deletion.Step {
	obs.ID, obs.File, obs.Release = p.e.identity(m), m.Position(), p.rel.Version
	obs.Update, obs.Now = p.opts.Mode == graph.ModeUpdate, p.e.clock.Now()
	var prev *deletion.Record
	if r, ok := p.e.ledger.Get(obs.ID); ok {
		prev = &r
	}
	return deletion.Next(prev, obs)
}

// deleteTask is the graph task function for a delete manifest. It issues at
// most one DELETE, never for an object that is already terminating, and
// returns a *graph.WaitingError while the object is still there so that
// the next delete of the chain waits for a later pass.
func (p *pass) deleteTask(ctx context.Context, t *graph.Task) error {
	m := p.taskManifest(t)
	if open, rec := p.gateFor(ctx, m); !open {
		// The component's operator must outlive its operands.
		msg := rec.Describe()
		if rec.Message != "" {
			msg = "operand cleanup waits: " + rec.Message
		}
		return p.report(ctx, t, ActionDeleteWaiting, msg, &graph.WaitingError{On: "the operand cleanup of component " + m.Component})
	}
	live, rc, err := p.lookupForDelete(ctx, m)
	if err != nil {
		te := taskError(m, "read before delete", err)
		return p.report(ctx, t, ActionFailed, te.Message, te)
	}
	step := p.e.take(p.next(m, deletion.Observation{Kind: deletion.Look, Live: live}))
	issued := step.Outcome == deletion.OutcomeIssue
	if issued {
		step, err = p.issue(ctx, m, rc, live, step.Record)
	}
	rec := step.Record
	switch step.Outcome {
	case deletion.OutcomeOngoing:
		return p.report(ctx, t, ActionDeleting, rec.Progress(), p.waiting(m))
	case deletion.OutcomeRequested:
		return p.report(ctx, t, ActionDeleteRequested, rec.Progress(), p.waiting(m))
	case deletion.OutcomeReplaced:
		return p.report(ctx, t, ActionDeleteWaiting, "the object was replaced before the delete; checking again next pass", p.waiting(m))
	case deletion.OutcomeFailed:
		te := taskError(m, "delete", err)
		return p.report(ctx, t, ActionFailed, te.Message, te)
	case deletion.OutcomeRefused:
		// The object stays; the rest of the chain goes on without it.
		te := taskError(m, "delete", err)
		p.report(ctx, t, ActionRefused, te.Message, te)
		return nil
	case deletion.OutcomeCompleted:
		msg := "delete completed"
		if issued {
			msg = "deleted"
		}
		return p.report(ctx, t, ActionDeleted, msg, nil)
	case deletion.OutcomeAbsent:
		return p.report(ctx, t, ActionAlreadyDeleted, "not found: already removed or never installed", nil)
	case deletion.OutcomeDone:
		return p.report(ctx, t, ActionAlreadyDeleted, "delete completed at "+deletion.FormatTime(rec.CompletedAt), nil)
	case deletion.OutcomeReappeared:
		return p.report(ctx, t, ActionReappeared, fmt.Sprintf("reappeared after its delete completed at %s; not deleted again", deletion.FormatTime(rec.CompletedAt)), nil)
	default: // deletion.OutcomeNotDeleting
		return p.report(ctx, t, ActionNotDeleted, fmt.Sprintf("present; a %s pass starts no delete", p.opts.Mode), nil)
	}
}

// report records a delete task's result and returns the task's error.
func (p *pass) report(ctx context.Context, t *graph.Task, action Action, msg string, err error) error {
	res := p.results[t.Index]
	res.Action, res.Message = action, msg
	if action == ActionFailed || action == ActionRefused {
		res.Err = err
	}
	p.record(ctx, t.Index, res)
	return err
}

// waiting is the error that holds the rest of m's chain for a later pass.
func (p *pass) waiting(m *payload.Manifest) error {
	return &graph.WaitingError{On: "the delete of " + m.ID().String()}
}

// lookupForDelete reads the object a delete manifest names. A kind that no
// longer resolves means its CRD is gone, and every object of it with it.
// A delete done already only reports whether its object came back, which
// the watch of its resource answers without a read while it is gone.
func (p *pass) lookupForDelete(ctx context.Context, m *payload.Manifest) (*unstructured.Unstructured, resourceClient, error) {
	rc, err := p.resourceFor(m)
	if meta.IsNoMatchError(err) {
		return nil, rc, nil
	}
	if err != nil {
		return nil, rc, err
	}
	if rec, ok := p.e.ledger.Get(p.e.identity(m)); ok && rec.Done() && p.e.watched().absent(rc.gvr, rc.namespace, m.Obj.GetName()) {
		return nil, rc, nil
	}
	live, err := rc.read(ctx, m.Obj.GetName())
	return live, rc, err
}

// issue sends, through the one delete path, the DELETE the transition
// asked for, and watches briefly for the object to vanish. live is the object as the walk read it; rec is
// the record the transition stored; no
// save comes before the DELETE: the claim is already stored, and after a
// crash the object itself shows what happened. It returns the last step
// and, for a failed step, the error.
func (p *pass) issue(ctx context.Context, m *payload.Manifest, rc resourceClient, live *unstructured.Unstructured, rec deletion.Record) (deletion.Step, error) {
	req := deleteRequest{id: p.e.identity(m), rc: rc, uid: rec.UID}
	if destructive(m) {
		req.beforeSend = func(ctx context.Context) { p.announceContents(ctx, m, live) }
	}
	answer, after, err := p.send(ctx, req)
	var te *TaskError
	switch {
	case errors.As(err, &te) && te.Reason == ReasonDeletionRefused:
		te = taskError(m, "delete", err)
		return p.e.take(p.next(m, deletion.Observation{Kind: deletion.Refuse, Reason: string(te.Reason), Message: te.Error(), Detail: te.Message})), te
	case apierrors.IsNotFound(err):
		// Gone between our read and our delete.
		return p.e.take(p.next(m, deletion.Observation{Kind: deletion.Settle})), nil
	case apierrors.IsConflict(err):
		return p.e.take(p.next(m, deletion.Observation{Kind: deletion.Replace})), nil
	case err != nil:
		te := taskError(m, "delete", err)
		te.Reason = ReasonDeletionFailed
		return p.e.take(p.next(m, deletion.Observation{Kind: deletion.Fail, Reason: string(te.Reason), Message: te.Error(), Detail: err.Error()})), te
	}
	accepted := p.e.take(p.next(m, deletion.Observation{Kind: deletion.Accept}))
	var obj *unstructured.Unstructured
	gone := answer == answerGone
	if !gone {
		obj, gone = p.awaitGone(ctx, rc, m.Obj.GetName(), req.uid, after)
	}
	if !gone && obj == nil {
		return accepted, nil // never seen after the DELETE: nothing new to record
	}
	return p.e.take(p.next(m, deletion.Observation{Kind: deletion.Settle, Live: obj})), nil
}

// announceContents records an Event naming what deleting m's Namespace or
// CRD takes with it, before the DELETE goes out. Counting never holds the
// delete back: the payload asked for it, and lint warned of it.
func (p *pass) announceContents(ctx context.Context, m *payload.Manifest, live *unstructured.Unstructured) {
	c, err := p.e.contents(ctx, p.rel, m, live)
	if err != nil {
		klog.FromContext(ctx).Info("Counting what a delete takes with it failed", "object", m.ID(), "err", err)
		return
	}
	if c.Total() > 0 {
		p.e.warn(ReasonDeleteTakesObjects, fmt.Sprintf("Deleting %s (%s) also deletes %s.", m.ID(), m.Position(), c))
	}
}

// awaitGone polls until the object with uid is gone or the settle time ends.
// It returns the last object seen when it is still there. seen is the
// object as the DELETE's answer showed it, if it did; without it the first
// read is at once.
func (p *pass) awaitGone(ctx context.Context, rc resourceClient, name string, uid types.UID, seen *unstructured.Unstructured) (*unstructured.Unstructured, bool) {
	last := seen
	gone := false
	_ = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, p.opts.DeleteSettle, seen == nil, func(ctx context.Context) (bool, error) {
		obj, err := rc.read(ctx, name)
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

// markUnrun explains the delete tasks the walk did not reach: each waits on
// the nearest later delete of its chain that has not completed.
func (p *pass) markUnrun(walk *graph.Result) {
	for _, s := range walk.NotRun() {
		r := &p.results[s.Task.Index]
		if r.Action == ActionNotRun && s.Cause != nil {
			r.Action, r.Message = ActionDeleteWaiting, "waiting on "+p.results[s.Cause.Index].ID.String()
		}
	}
}

// trackOrphanedDeletes follows the deletes the walk left open: in-progress
// ones that the current payload no longer names, and pending ones (held
// back by pacing, or failed) whose object is already gone, which must not
// be reported as deletions in progress. A pending delete the release no
// longer asks for is dropped. It only reads; it never issues a delete.
func (p *pass) trackOrphanedDeletes(ctx context.Context) {
	for _, rec := range p.e.ledger.All() {
		orphan := !p.marked[rec.ID]
		if rec.State != deletion.Pending && (rec.State != deletion.InProgress || !orphan) {
			continue
		}
		_ = p.e.poll(ctx, rec)
		if latest, ok := p.e.ledger.Get(rec.ID); ok && orphan {
			p.e.take(deletion.Next(&latest, deletion.Observation{Kind: deletion.Drop, Release: p.rel.Version, Now: p.e.clock.Now()}))
		}
	}
}
