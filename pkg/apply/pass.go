package apply

import (
	"context"
	"errors"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	"github.com/payload-applier/payload-applier/pkg/graph"
	"github.com/payload-applier/payload-applier/pkg/payload"
)

// listThreshold is how many manifests of one resource in one namespace make a
// LIST cheaper than a GET each.
const listThreshold = 4

// pass is the state of one Sync.
type pass struct {
	e    *Engine
	rel  *payload.Release
	opts SyncOptions

	// results is indexed like rel.Manifests; each task writes only its own slot.
	results []ObjectResult
	done    int
	doneMu  sync.Mutex
	total   int

	// snapshots caches one LIST per (resource, namespace) that many
	// manifests share, so a resync reads far less than once per manifest.
	groupSize   map[listKey]int
	snapshotsMu sync.Mutex
	snapshots   map[listKey]*snapshot
}

type listKey struct {
	gvk       schema.GroupVersionKind
	namespace string
}

type snapshot struct {
	once  sync.Once
	items map[string]*unstructured.Unstructured
	err   error
}

func newPass(e *Engine, rel *payload.Release, opts SyncOptions) *pass {
	p := &pass{
		e:         e,
		rel:       rel,
		opts:      opts,
		results:   make([]ObjectResult, len(rel.Manifests)),
		groupSize: map[listKey]int{},
		snapshots: map[listKey]*snapshot{},
	}
	for i, m := range rel.Manifests {
		p.results[i] = ObjectResult{ID: m.ID(), File: m.Position(), Delete: m.Delete(), Action: ActionNotRun}
		if !m.Delete() {
			p.total++
		}
		p.groupSize[listKey{gvk: m.GVK, namespace: m.Obj.GetNamespace()}]++
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
	mapping, err := p.e.mapper.mapping(m.GVK)
	if err != nil {
		return resourceClient{}, err
	}
	rc := resourceClient{gvr: mapping.Resource}
	if mapping.Scope.Name() == "namespace" {
		ns := m.Obj.GetNamespace()
		if ns == "" {
			return resourceClient{}, &TaskError{Subject: m.ID(), File: m.Position(), Reason: ReasonInvalid, Effect: EffectFail,
				Message: fmt.Sprintf("%s is namespaced, but the manifest sets no metadata.namespace", m.GVK.Kind)}
		}
		rc.namespace = ns
		rc.ri = p.e.dynamic.Resource(mapping.Resource).Namespace(ns)
	} else {
		rc.ri = p.e.dynamic.Resource(mapping.Resource)
	}
	return rc, nil
}

// get reads the live object, from a shared LIST snapshot when many manifests
// of the same resource live in one namespace. It returns nil when NotFound.
func (p *pass) get(ctx context.Context, m *payload.Manifest, rc resourceClient) (*unstructured.Unstructured, error) {
	name := m.Obj.GetName()
	key := listKey{gvk: m.GVK, namespace: rc.namespace}
	if p.groupSize[key] >= listThreshold {
		if snap := p.snapshot(ctx, rc, key); snap.err == nil {
			return snap.items[name], nil
		}
	}
	obj, err := rc.ri.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return obj, err
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
		opts := metav1.ListOptions{Limit: 500}
		for {
			list, err := rc.ri.List(ctx, opts)
			if err != nil {
				s.err = err
				return
			}
			for i := range list.Items {
				s.items[list.Items[i].GetName()] = &list.Items[i]
			}
			if list.GetContinue() == "" {
				return
			}
			opts.Continue = list.GetContinue()
		}
	})
	return s
}

// retry runs fn with the pass's backoff while it fails with a retryable error.
func (p *pass) retry(ctx context.Context, fn func() error) error {
	backoff := *p.opts.Backoff
	var last error
	err := wait.ExponentialBackoffWithContext(ctx, backoff, func(ctx context.Context) (bool, error) {
		last = fn()
		if last == nil {
			return true, nil
		}
		var te *TaskError
		if errors.As(last, &te) && !te.retryable() {
			return false, last
		}
		return false, nil
	})
	if last != nil {
		return last
	}
	return err
}

// resourceClient is a resolved dynamic client for one manifest.
type resourceClient struct {
	gvr       schema.GroupVersionResource
	namespace string
	ri        dynamic.ResourceInterface
}

// taskManifest returns the manifest behind a graph task.
func (p *pass) taskManifest(t *graph.Task) *payload.Manifest {
	return p.rel.Manifests[t.Index]
}
