package apply

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/payload-applier/payload-applier/pkg/apply/cleanup"
	"github.com/payload-applier/payload-applier/pkg/graph"
	"github.com/payload-applier/payload-applier/pkg/payload"
)

// listThreshold is how many manifests of one resource in one namespace make
// a LIST cheaper than a GET each: two, as a resync reads every object, but
// four for kinds that hold bulk data beside many objects of others
// (payload.BulkDataKinds), where the LIST carries those too.
func listThreshold(gk schema.GroupKind) int {
	if slices.Contains(payload.BulkDataKinds, gk) {
		return 4
	}
	return 2
}

// listed reports whether the pass reads key's objects by LIST.
func (p *pass) listed(key listKey) bool {
	return p.groupSize[key] >= listThreshold(key.gvk.GroupKind())
}

// prefetchParallelism bounds the LISTs a pass takes at once when it
// prefetches its snapshots.
const prefetchParallelism = 8

// pass is the state of one Sync.
type pass struct {
	e    *Engine
	rel  *payload.Release
	opts SyncOptions

	// results is indexed like rel.Manifests; each task writes only its own slot.
	results []ObjectResult
	// marked is the set of objects the release marks for deletion.
	marked map[payload.ObjectID]bool
	// candidates are the components the release removes with CRDs marked
	// for operand cleanup; gates holds each one's gate for this pass.
	candidates map[string]cleanup.Candidate
	gates      map[string]*gate
	// cleanupErr is set while the operand cleanup state cannot be read:
	// the gates of candidates stay closed and nothing of it is saved.
	cleanupErr error
	done       int
	doneMu     sync.Mutex
	total      int

	// snapshots caches one LIST per (resource, namespace) that many
	// manifests share, so a resync reads far less than once per manifest.
	groupSize map[listKey]int
	// readers counts, per group and name, the apply manifests that read
	// that name, so that a snapshot keeps only the objects the payload
	// names, and drops each once its last reader has it.
	readers     map[listKey]map[string]int
	snapshotsMu sync.Mutex
	snapshots   map[listKey]*snapshot
	prefetching sync.WaitGroup

	// current holds the objects the watch knows unchanged since this
	// engine found them as their manifests want (liveVersions), as the
	// pass began: the pass neither reads nor lists them.
	current map[payload.ObjectID]bool

	// nsState holds the namespaces a create found missing (nswait.go).
	nsState
}

type listKey struct {
	gvk       schema.GroupVersionKind
	namespace string
}

type snapshot struct {
	once sync.Once
	err  error

	mu    sync.Mutex
	items map[string]*unstructured.Unstructured
	// unread counts the readers of each name still to come.
	unread map[string]int
}

// take returns the live object for name, or nil when the LIST did not hold
// it, and forgets it once every manifest naming it has read it: a pass over
// a large payload then holds only the objects still to be compared.
func (s *snapshot) take(name string) *unstructured.Unstructured {
	s.mu.Lock()
	defer s.mu.Unlock()
	obj := s.items[name]
	if n, ok := s.unread[name]; ok {
		if n <= 1 {
			delete(s.items, name)
			delete(s.unread, name)
		} else {
			s.unread[name] = n - 1
		}
	}
	return obj
}

func newPass(e *Engine, rel *payload.Release, opts SyncOptions) *pass {
	p := &pass{
		e:          e,
		rel:        rel,
		opts:       opts,
		results:    make([]ObjectResult, len(rel.Manifests)),
		marked:     markedFor(rel, e.identity),
		candidates: map[string]cleanup.Candidate{},
		gates:      map[string]*gate{},
		groupSize:  map[listKey]int{},
		readers:    map[listKey]map[string]int{},
		snapshots:  map[listKey]*snapshot{},
		current:    map[payload.ObjectID]bool{},
		nsState:    nsState{nsGates: map[string]*nsGate{}},
	}
	for _, c := range cleanup.Candidates(rel) {
		p.candidates[c.Component] = c
		p.gates[c.Component] = &gate{}
	}
	watching := e.watched() != nil
	for i, m := range rel.Manifests {
		p.results[i] = ObjectResult{ID: m.ID(), File: m.Position(), Delete: m.Delete(), Action: ActionNotRun}
		if !m.Delete() && watching {
			if rc, err := e.resolve(m.GVK, m.Obj.GetNamespace(), false); err == nil && e.unchangedSince(m, rc) {
				p.current[m.ID()] = true
				p.total++
				continue
			}
		}
		key := listKey{gvk: m.GVK, namespace: m.Obj.GetNamespace()}
		p.groupSize[key]++
		if m.Delete() {
			continue
		}
		p.total++
		if p.readers[key] == nil {
			p.readers[key] = map[string]int{}
		}
		p.readers[key][m.Obj.GetName()]++
	}
	return p
}

// record stores a task's result and emits its event.
func (p *pass) record(ctx context.Context, index int, r ObjectResult) {
	p.results[index] = r
	p.doneMu.Lock()
	if !r.Delete && r.Err == nil {
		p.done++
	}
	ev := Event{Time: p.e.clock.Now(), Object: r, Done: p.done, Total: p.total}
	p.doneMu.Unlock()
	if p.opts.Events == nil {
		return
	}
	select {
	case p.opts.Events <- ev:
	case <-ctx.Done():
	}
}

// resourceFor resolves a manifest to its dynamic resource client.
func (p *pass) resourceFor(m *payload.Manifest) (resourceClient, error) {
	rc, err := p.e.resolve(m.GVK, m.Obj.GetNamespace(), true)
	if errors.Is(err, errNoNamespace) {
		return rc, &TaskError{Subject: m.ID(), File: m.Position(), Reason: ReasonInvalid, Effect: payload.EffectFail,
			Message: fmt.Sprintf("%s is namespaced, but the manifest sets no metadata.namespace", m.GVK.Kind)}
	}
	return rc, err
}

// get reads the live object, from a shared LIST snapshot when many manifests
// of the same resource live in one namespace. It returns nil when NotFound.
func (p *pass) get(ctx context.Context, m *payload.Manifest, rc resourceClient) (*unstructured.Unstructured, error) {
	name := m.Obj.GetName()
	key := listKey{gvk: m.GVK, namespace: rc.namespace}
	if p.listed(key) {
		if snap := p.snapshot(ctx, rc, key); snap.err == nil {
			return snap.take(name), nil
		}
	}
	return rc.read(ctx, name)
}

func (p *pass) snapshot(ctx context.Context, rc resourceClient, key listKey) *snapshot {
	p.snapshotsMu.Lock()
	s, ok := p.snapshots[key]
	if !ok {
		s = &snapshot{}
		p.snapshots[key] = s
	}
	p.snapshotsMu.Unlock()
	s.once.Do(func() {
		s.items = map[string]*unstructured.Unstructured{}
		s.unread = map[string]int{}
		for name, n := range p.readers[key] {
			s.unread[name] = n
		}
		// Keep only what the payload names, each item on its own so that
		// the page can be freed as the items are taken.
		s.err = rc.list(ctx, func(obj *unstructured.Unstructured) {
			if _, ok := s.unread[obj.GetName()]; ok {
				item := *obj
				s.items[obj.GetName()] = &item
			}
		})
	})
	return s
}

// prefetchSnapshots starts the LIST of every shared group at once, a few at
// a time, instead of one after another as each group's first task comes
// to it: reconcile runs two workers, so a resync of many namespaces would
// otherwise wait for its LISTs in turn. Only the flattened modes prefetch:
// all their nodes start together, so no snapshot is older than a lazy one
// would be, whereas an update reaches later run levels minutes after the
// pass began. Kinds that do not resolve yet are left to their tasks, so the
// prefetch never refreshes discovery. waitPrefetch waits for it to end.
func (p *pass) prefetchSnapshots(ctx context.Context) {
	if p.opts.Mode == graph.ModeUpdate {
		return
	}
	sem := make(chan struct{}, prefetchParallelism)
	started := map[listKey]bool{}
	for _, m := range p.rel.Manifests {
		if m.Delete() {
			continue
		}
		rc, err := p.e.resolve(m.GVK, m.Obj.GetNamespace(), false)
		if err != nil {
			continue
		}
		key := listKey{gvk: m.GVK, namespace: rc.namespace}
		if started[key] || !p.listed(key) || p.createsUnread(m) {
			continue
		}
		started[key] = true
		p.prefetching.Add(1)
		go func() {
			defer p.prefetching.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			defer func() { <-sem }()
			p.snapshot(ctx, rc, key)
		}()
	}
}

func (p *pass) waitPrefetch() { p.prefetching.Wait() }

// appliedResources are the resources of the objects this pass left as
// their manifests want, read or not.
func (p *pass) appliedResources() map[schema.GroupVersionResource]bool {
	gvrs := map[schema.GroupVersionResource]bool{}
	p.e.appliedMu.Lock()
	defer p.e.appliedMu.Unlock()
	for i, m := range p.rel.Manifests {
		if st, ok := p.e.applied[m.ID()]; ok && p.results[i].Err == nil && !m.Delete() {
			gvrs[st.gvr] = true
		}
	}
	return gvrs
}

// retry runs fn with the pass's backoff while it fails with a retryable
// error. wake, when set, names the channel that ends a failure's wait
// early: what it lacked has appeared (a namespace, a kind), usually made
// by a task in flight, so the next try need not sit out the whole step.
func (p *pass) retry(ctx context.Context, fn func() error, wake func(error) <-chan struct{}) error {
	backoff := *p.opts.Backoff
	for {
		err := fn()
		if err == nil {
			return nil
		}
		var te *TaskError
		if errors.As(err, &te) && !te.retryable() || backoff.Steps <= 1 {
			return err
		}
		var woken <-chan struct{}
		if wake != nil {
			woken = wake(err)
		}
		t := time.NewTimer(backoff.Step())
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-woken:
			t.Stop()
		case <-t.C:
		}
	}
}

// taskManifest returns the manifest behind a graph task.
func (p *pass) taskManifest(t *graph.Task) *payload.Manifest {
	return p.rel.Manifests[t.Index]
}
