package apply

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/payload-applier/payload-applier/pkg/apply/cleanup"
	"github.com/payload-applier/payload-applier/pkg/apply/deletion"
	"github.com/payload-applier/payload-applier/pkg/graph"
	"github.com/payload-applier/payload-applier/pkg/payload"
)

const (
	// planParallelism bounds concurrent reads and dry runs: a plan is a
	// question asked on the side, so it should not load the apiserver.
	planParallelism = 8
	// maxListedFields caps the changed fields an update's reason names.
	maxListedFields = 8
)

// PlanOptions tune a plan. Zero values take the defaults.
type PlanOptions struct {
	// Mode shapes the apply graph and decides whether deletes are issued,
	// as in Sync. Default update. Reconcile uses attempt 0's permutation.
	Mode graph.Mode
	// Self names the applier's own objects, which are never deleted.
	// PlanOffline uses it; Engine.Plan uses the engine's. Zero fields take
	// DefaultSelf's values.
	Self Self
	// Parallelism bounds concurrent reads of Engine.Plan. Default 8.
	Parallelism int
	// StrictOrder plans each component one manifest at a time, as Sync
	// with SyncOptions.StrictOrder.
	StrictOrder bool
	// CRDChecks, when set, are CheckCRDs' findings for the same release,
	// from an acceptance check: a CRD update they judged is noted from
	// them rather than judged again, which would list its objects again.
	CRDChecks *CRDChecks
}

func (o *PlanOptions) setDefaults() {
	o.Mode = cmp.Or(o.Mode, graph.ModeUpdate)
	o.Self = o.Self.WithDefaults()
	if o.Parallelism < 1 {
		o.Parallelism = planParallelism
	}
}

// PlannedAction is the plan for one manifest.
type PlannedAction struct {
	Manifest *payload.Manifest
	// Action is what the sync would report; Action.Planned is the word a
	// plan prints for it.
	Action Action
	// Reason explains the action: a create-only note, the changed fields of
	// an update, what holds a delete, why a manifest is skipped.
	Reason string
}

// Plan is what one pass over a release would do, without doing it: the two
// graphs Sync would run and one action per manifest.
type Plan struct {
	Release string
	Mode    graph.Mode
	// Live is true when the actions were computed against a cluster.
	Live bool
	// Apply and Deletes are the graphs Sync would run, apply walk first;
	// a task's Index points into Actions.
	Apply, Deletes *graph.Graph
	// Actions is index-aligned with the release's Manifests.
	Actions []PlannedAction
	// Skipped holds one ActionSkipped per manifest that the inclusion filters
	// dropped, index-aligned with the release's Skipped.
	Skipped []PlannedAction
}

// newPlan builds the graphs, with waves judged by waves, and the skips; the
// caller fills in Actions.
func newPlan(rel *payload.Release, opts PlanOptions, waves *payload.WaveRule) *Plan {
	tasks := tasksFor(rel, waves)
	p := &Plan{
		Release: rel.Version,
		Mode:    opts.Mode,
		Apply:   graph.Build(tasks, graph.BuildOptions{Mode: opts.Mode, StrictOrder: opts.StrictOrder}),
		Deletes: graph.BuildDeletes(tasks, graph.BuildOptions{StrictOrder: opts.StrictOrder}),
		Actions: make([]PlannedAction, len(rel.Manifests)),
		Skipped: make([]PlannedAction, len(rel.Skipped)),
	}
	for i, m := range rel.Manifests {
		p.Actions[i].Manifest = m
	}
	for i, s := range rel.Skipped {
		p.Skipped[i] = PlannedAction{Manifest: s.Manifest, Action: ActionSkipped, Reason: s.Filter + " filter: " + s.Reason}
	}
	return p
}

// PlanOffline plans rel without a cluster. A create-or-update manifest is
// ActionApplied. A delete manifest is ActionDeleteRequested in update mode
// and ActionNotDeleted in the others: install and reconcile passes start no
// delete, and whether an earlier update claimed one is in the ledger, which
// only a cluster holds. Deletes of the applier's own objects are
// ActionRefused, as the engine refuses them.
func PlanOffline(rel *payload.Release, opts PlanOptions) *Plan {
	opts.setDefaults()
	p := newPlan(rel, opts, payload.NewWaveRule(rel, nil))
	// Offline, no RESTMapping tells a kind's scope; lint rejects a
	// namespace on a known cluster-scoped kind.
	guard := &pass{e: &Engine{protected: opts.Self.Protected()}, rel: rel, marked: markedFor(rel, (*payload.Manifest).ID)}
	for i, m := range rel.Manifests {
		a := &p.Actions[i]
		switch {
		case !m.Delete():
			a.Action = ActionApplied
			if m.CreateOnly() {
				a.Reason = "create-only: created when missing, never updated"
			}
		case opts.Mode != graph.ModeUpdate:
			a.Action, a.Reason = ActionNotDeleted, notDeletingReason(opts.Mode, false)
		default:
			a.Action = ActionDeleteRequested
			if err := guard.admit(deleteRequest{id: m.ID()}); err != nil {
				a.Action, a.Reason = ActionRefused, refusalReason(err)
			}
		}
	}
	p.notePacing()
	p.noteCleanupGates(rel)
	return p
}

// Plan computes, read-only, what Sync would do to rel in opts.Mode. It reads
// the delete ledger and each object, and for an object the engine's no-op
// test finds drifted, it asks the server for a dry run of the apply to name
// the fields that would change. It never writes: the only non-GET requests
// are those dry runs. An error means a read failed; no partial plan is
// returned.
//
// Limits: a kind the cluster does not serve yet is ActionCreated, although an
// object of it may exist under another version; a delete's pacing is noted
// in the reason of the deletes it holds back, not simulated.
func (e *Engine) Plan(ctx context.Context, rel *payload.Release, opts PlanOptions) (*Plan, error) {
	opts.setDefaults()
	if err := e.ledger.Load(ctx); err != nil {
		return nil, err
	}
	plan := newPlan(rel, opts, e.waveRule(rel))
	plan.Live = true
	ps := newPass(e, rel, SyncOptions{Mode: opts.Mode})

	// One node per manifest and no edges: reading has no order, and a
	// failed read must not hold back the others.
	res := graph.Run(ctx, graph.Unordered(Tasks(rel)), graph.RunOptions{Parallelism: opts.Parallelism}, func(ctx context.Context, t *graph.Task) error {
		m := rel.Manifests[t.Index]
		var a PlannedAction
		var err error
		if t.Delete {
			a, err = ps.planDelete(ctx, m)
		} else {
			a, err = ps.planApply(ctx, m, opts.CRDChecks)
		}
		if err != nil {
			return taskError(m, "plan", err)
		}
		plan.Actions[t.Index] = a
		return nil
	})
	if err := res.Err(); err != nil {
		return nil, err
	}
	plan.notePacing()
	plan.noteCleanupGates(rel)
	return plan, nil
}

// planApply decides between create, update and unchanged with one read,
// and dry-runs only what the engine's no-op test finds drifted; crds are
// the CRD checks already made, if any.
func (p *pass) planApply(ctx context.Context, m *payload.Manifest, crds *CRDChecks) (PlannedAction, error) {
	a := PlannedAction{Manifest: m}
	rc, err := p.resourceFor(m)
	if meta.IsNoMatchError(err) {
		a.Action, a.Reason = ActionCreated, typeMissingReason(p.rel, m)
		return a, nil
	}
	if err != nil {
		return a, err
	}
	live, err := p.get(ctx, m, rc)
	if err != nil {
		return a, err
	}
	switch {
	case live == nil:
		a.Action, a.Reason = ActionCreated, "not found"
		if m.CreateOnly() {
			a.Reason += "; create-only: never updated afterwards"
		}
		return a, nil
	case m.CreateOnly():
		// The sync reports ActionSkipped, but the plan contract calls a
		// present create-only object unchanged.
		a.Action, a.Reason = ActionUnchanged, "create-only"
		return a, nil
	}
	want := p.e.withoutUndeclared(m, desiredObject(m))
	if p.e.unchanged(m, want, live) {
		a.Action = ActionUnchanged
		return a, nil
	}
	a.Action, a.Reason, err = planUpdate(ctx, rc, want, live)
	if err == nil && a.Action == ActionConfigured && m.IsCRD() {
		a.Reason += "; " + p.crdPlanNote(ctx, m, live, crds)
	}
	return a, err
}

// planUpdate dry-runs the apply and names the fields it would change.
// When the server refuses the dry run (the object is invalid, or the user
// may only read), the reason names the drifted fields the manifest sets.
func planUpdate(ctx context.Context, rc resourceClient, want, live *unstructured.Unstructured) (Action, string, error) {
	next, err := rc.apply(ctx, want, true)
	note := ""
	if dropped := dropUndeclared(want, err); len(dropped) > 0 {
		note = "; drops fields its schema does not declare: " + strings.Join(dropped, ", ")
		next, err = rc.apply(ctx, want, true)
	}
	if err != nil {
		switch ReasonFor(err) {
		case ReasonClusterDown, ReasonClusterOverloaded, ReasonClusterError, ReasonUnauthorized:
			return "", "", fmt.Errorf("dry run: %w", err)
		}
		return ActionConfigured, fmt.Sprintf("%s (from the manifest; the server-side dry run failed: %v)%s",
			summarizeFields(driftedFields(live.Object, want.Object)), err, note), nil
	}
	if changed := changedFields(live.Object, next.Object); len(changed) > 0 {
		return ActionConfigured, summarizeFields(changed) + note, nil
	}
	return ActionUnchanged, "differs only in form; the server keeps the object as it is" + note, nil
}

// planDelete runs the engine's delete transition on what the cluster and
// the ledger show, and keeps only its verdict.
func (p *pass) planDelete(ctx context.Context, m *payload.Manifest) (PlannedAction, error) {
	live, _, err := p.lookupForDelete(ctx, m)
	if err != nil {
		return PlannedAction{Manifest: m}, err
	}
	step := p.next(m, deletion.Observation{Kind: deletion.Look, Live: live})
	a := deleteAction(m, p.opts.Mode, live, step)
	if step.Outcome == deletion.OutcomeIssue {
		if err := p.admit(deleteRequest{id: p.e.identity(m)}); err != nil {
			a.Action, a.Reason = ActionRefused, refusalReason(err)
		} else if destructive(m) {
			switch c, err := p.e.contents(ctx, p.rel, m, live); {
			case err != nil:
				a.Reason += fmt.Sprintf("; what it takes with it is unknown: %v", err)
			case c.Total() > 0:
				a.Reason += "; takes with it " + c.String()
			}
		}
	}
	return a, nil
}

// deleteAction maps the delete transition of m, in mode, to a planned
// action; live is the object as read. Outside an update, a delete is issued
// only for a record an update claimed, whose release the record keeps.
func deleteAction(m *payload.Manifest, mode graph.Mode, live *unstructured.Unstructured, step deletion.Step) PlannedAction {
	a := PlannedAction{Manifest: m}
	next := step.Record
	switch step.Outcome {
	case deletion.OutcomeIssue:
		a.Action, a.Reason = ActionDeleteRequested, "present, "+holders(deletion.FinalizersOf(live))
		if mode != graph.ModeUpdate && next.Release != "" {
			a.Reason += fmt.Sprintf("; the update to %s asked for it (ledger)", next.Release)
		}
	case deletion.OutcomeOngoing:
		a.Action = ActionDeleting
		a.Reason = fmt.Sprintf("already terminating since %s, %s", deletion.FormatTime(next.DeletionTimestamp), holders(next.Finalizers))
	case deletion.OutcomeAbsent:
		a.Action, a.Reason = ActionAlreadyDeleted, "not found"
	case deletion.OutcomeCompleted:
		a.Action, a.Reason = ActionDeleted, "gone; the ledger's delete in progress completes"
	case deletion.OutcomeDone:
		a.Action, a.Reason = ActionAlreadyDeleted, "delete completed at "+deletion.FormatTime(next.CompletedAt)
	case deletion.OutcomeReappeared:
		a.Action = ActionReappeared
		a.Reason = fmt.Sprintf("reappeared after its delete completed at %s; not deleted again", deletion.FormatTime(next.CompletedAt))
	default: // deletion.OutcomeNotDeleting
		a.Action, a.Reason = ActionNotDeleted, "present; "+notDeletingReason(mode, true)
	}
	return a
}

// deletes reports whether the pass would delete a's object or find it
// terminating.
func (a *PlannedAction) deletes() bool {
	return a.Action == ActionDeleteRequested || a.Action == ActionDeleting
}

// notDeletingReason explains why a mode other than update issues no delete.
func notDeletingReason(mode graph.Mode, ledgerRead bool) string {
	msg := "deletes are issued only in update mode"
	if mode == graph.ModeReconcile {
		msg += "; a reconcile pass only finishes the deletes an update claimed in the ledger"
		if ledgerRead {
			msg += ", and none claimed this one"
		} else {
			msg += ", which plan reads only from a cluster"
		}
	}
	return msg
}

func holders(finalizers []string) string {
	if len(finalizers) == 0 {
		return "no finalizers"
	}
	return "finalizers " + strings.Join(finalizers, ", ")
}

func refusalReason(err error) string {
	var te *TaskError
	if errors.As(err, &te) {
		return te.Message
	}
	return err.Error()
}

// notePacing tells, in each delete chain, which deletes each one waits for:
// the engine issues a wave of deletes only once every delete of the
// nearest wave before it in the chain is gone. A refused delete holds
// nothing back.
func (p *Plan) notePacing() {
	for _, n := range p.Deletes.Nodes {
		var blockers []*PlannedAction
		for _, wave := range n.Waves() {
			var issued []*PlannedAction
			for _, t := range wave {
				a := &p.Actions[t.Index]
				if !a.deletes() {
					continue
				}
				if len(blockers) > 0 {
					a.Reason = appendReason(a.Reason, "issued once "+pacingSubject(blockers)+" gone")
				}
				issued = append(issued, a)
			}
			if len(issued) > 0 {
				blockers = issued
			}
		}
	}
}

// pacingSubject names the deletes a wave waits for: "X is", "X and Y
// are" or "X and 2 more deletes are".
func pacingSubject(blockers []*PlannedAction) string {
	first := blockers[0].Manifest.ID().String()
	switch len(blockers) {
	case 1:
		return first + " is"
	case 2:
		return first + " and " + blockers[1].Manifest.ID().String() + " are"
	}
	return fmt.Sprintf("%s and %d more deletes are", first, len(blockers)-1)
}

// noteCleanupGates tells, on the first delete of each chain that an
// operand cleanup gate heads, what the gate deletes first and on which
// condition; it never simulates the gate.
func (p *Plan) noteCleanupGates(rel *payload.Release) {
	gates := map[string]cleanup.Candidate{}
	for _, c := range cleanup.Candidates(rel) {
		gates[c.Component] = c
	}
	for _, n := range p.Deletes.Nodes {
		if len(n.Tasks) == 0 {
			continue
		}
		a := &p.Actions[n.Tasks[0].Index]
		c, ok := gates[a.Manifest.Component]
		if !ok || !a.deletes() {
			continue
		}
		var crds []string
		for _, crd := range c.CRDs {
			switch {
			case crd.Skip != nil:
				crds = append(crds, fmt.Sprintf("not %s (%s)", crd.Name, crd.Skip.Reason()))
			case crd.Namespaces == nil:
				crds = append(crds, crd.Name+" in every namespace")
			default:
				crds = append(crds, fmt.Sprintf("%s in %s", crd.Name, strings.Join(crd.Namespaces, ", ")))
			}
		}
		a.Reason = appendReason(a.Reason, fmt.Sprintf("behind the operand cleanup gate of component %s: when the ClusterVersion sets %s: Delete, the custom resources of %s go first",
			c.Component, cleanup.PolicyAnnotation, strings.Join(crds, "; ")))
	}
}

func appendReason(reason, more string) string {
	return strings.TrimPrefix(reason+"; "+more, "; ")
}

// typeMissingReason explains a kind the cluster does not serve: a CRD
// earlier in the payload usually brings it.
func typeMissingReason(rel *payload.Release, m *payload.Manifest) string {
	for _, c := range rel.Manifests {
		if !c.IsCRD() || c.Delete() {
			continue
		}
		if crdGroupKind(c.Obj) == m.GVK.GroupKind() {
			return fmt.Sprintf("type served by CustomResourceDefinition %s in this payload, not by the cluster yet", c.Obj.GetName())
		}
	}
	return fmt.Sprintf("%s is not served by the cluster and no CustomResourceDefinition in this payload serves it: the apply would fail", m.GVK)
}

// changedFields lists the paths where next differs from live, but for what
// every write changes: status and the metadata the server owns.
func changedFields(live, next map[string]interface{}) []string {
	var out []string
	diffPaths(&out, "", withoutServerFields(live), withoutServerFields(next))
	return out
}

// diffPaths appends the paths at which a and b differ: the deepest map keys
// and list items that do, or a whole list whose length changed.
func diffPaths(out *[]string, path string, a, b interface{}) {
	switch av := a.(type) {
	case map[string]interface{}:
		bv, ok := b.(map[string]interface{})
		if !ok {
			*out = append(*out, path)
			return
		}
		union := maps.Clone(av)
		maps.Copy(union, bv)
		for _, k := range slices.Sorted(maps.Keys(union)) {
			// A key on one side only compares a value with nil.
			diffPaths(out, fieldPath(path, k), av[k], bv[k])
		}
	case []interface{}:
		bv, ok := b.([]interface{})
		if !ok || len(av) != len(bv) {
			*out = append(*out, path)
			return
		}
		for i := range av {
			diffPaths(out, fmt.Sprintf("%s[%d]", path, i), av[i], bv[i])
		}
	default:
		if !reflect.DeepEqual(a, b) {
			*out = append(*out, path)
		}
	}
}

// driftedFields lists the paths the manifest sets that live does not hold,
// by the engine's own comparison.
func driftedFields(live, want map[string]interface{}) []string {
	var out []string
	var walk func(path string, l, w interface{})
	walk = func(path string, l, w interface{}) {
		wm, wok := w.(map[string]interface{})
		lm, lok := l.(map[string]interface{})
		if !wok || !lok {
			if !contains(l, w) {
				out = append(out, path)
			}
			return
		}
		for _, k := range slices.Sorted(maps.Keys(wm)) {
			lv, ok := lm[k]
			switch {
			case !ok && !isEmpty(wm[k]):
				out = append(out, fieldPath(path, k))
			case ok:
				walk(fieldPath(path, k), lv, wm[k])
			}
		}
	}
	walk("", live, want)
	return out
}

var plainKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)

// fieldPath joins a key to a path: spec.replicas, or
// metadata.annotations["example.com/key"] for a key that is no identifier.
func fieldPath(path, key string) string {
	if !plainKey.MatchString(key) {
		return fmt.Sprintf("%s[%q]", path, key)
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

// summarizeFields joins paths for a reason, naming at most maxListedFields.
func summarizeFields(paths []string) string {
	if len(paths) <= maxListedFields {
		return strings.Join(paths, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(paths[:maxListedFields], ", "), len(paths)-maxListedFields)
}
