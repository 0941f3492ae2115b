package apply

import (
	"context"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"

	"github.com/payload-applier/payload-applier/pkg/payload"
)

// liveVersions watches the metadata of the resources the engine has
// applied, so that a resync knows which objects changed since it last
// found them as their manifests want without reading each one: the CVO
// reads every object on every resync, and on an idle cluster nearly all of
// those reads find nothing new. A watch costs one request per resource
// when it starts and one each time the server ends it, every 5 to 10
// minutes; only names, namespaces and resourceVersions are kept.
//
// A change the watch has not delivered yet when a pass looks is repaired
// by the next pass, as a change made just after a pass would be.
type liveVersions struct {
	client metadata.Interface
	ctx    context.Context

	mu        sync.Mutex
	informers map[schema.GroupVersionResource]*liveWatch
	// pending is the watch set the last pass asked for, not started yet.
	pending *watchRequest
}

// watchRequest is the set of resources a pass asks to watch; exact stops
// the watches of the others.
type watchRequest struct {
	gvrs  map[schema.GroupVersionResource]bool
	exact bool
}

// request records the watch set a pass asks for; startPending starts it.
// The pass's caller starts it once it has reported the pass, so that the
// watches' first LISTs do not hold back that report; the next pass starts
// it otherwise.
func (l *liveVersions) request(gvrs map[schema.GroupVersionResource]bool, exact bool) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pending = &watchRequest{gvrs: gvrs, exact: exact}
}

func (l *liveVersions) startPending() {
	if l == nil {
		return
	}
	l.mu.Lock()
	req := l.pending
	l.pending = nil
	l.mu.Unlock()
	if req != nil {
		l.watch(req.gvrs, req.exact)
	}
}

// liveWatch is one resource's watch, which runs until ctx ends.
type liveWatch struct {
	cache.SharedIndexInformer
	ctx  context.Context
	stop context.CancelFunc
}

func newLiveVersions(ctx context.Context, client metadata.Interface) *liveVersions {
	return &liveVersions{client: client, ctx: ctx, informers: map[schema.GroupVersionResource]*liveWatch{}}
}

// version returns the resourceVersion the watch last saw for the object,
// and whether the watch of its resource has listed and so knows it; an
// object the synced watch does not hold is gone, which the caller learns
// by reading it.
func (l *liveVersions) version(gvr schema.GroupVersionResource, namespace, name string) (string, bool) {
	m, synced := l.lookup(gvr, namespace, name)
	if !synced || m == nil {
		return "", false
	}
	return m.ResourceVersion, true
}

// absent reports whether the watch of gvr has listed and holds no object
// name in namespace.
func (l *liveVersions) absent(gvr schema.GroupVersionResource, namespace, name string) bool {
	m, synced := l.lookup(gvr, namespace, name)
	return synced && m == nil
}

// lookup is the watched metadata of one object, nil when the watch holds
// none; synced is false while gvr is not watched or has not listed.
func (l *liveVersions) lookup(gvr schema.GroupVersionResource, namespace, name string) (m *metav1.PartialObjectMetadata, synced bool) {
	if l == nil {
		return nil, false
	}
	l.mu.Lock()
	inf := l.informers[gvr]
	l.mu.Unlock()
	if inf == nil || !inf.HasSynced() {
		return nil, false
	}
	key := name
	if namespace != "" {
		key = namespace + "/" + name
	}
	obj, ok, err := inf.GetStore().GetByKey(key)
	if err != nil {
		return nil, false
	}
	if !ok {
		return nil, true
	}
	m, ok = obj.(*metav1.PartialObjectMetadata)
	return m, ok
}

// watch starts watching the resources gvrs not watched yet: those of the
// objects a pass applied or found as their manifests want. A reconcile
// pass makes them the only ones watched (exact); a completed install or
// update pass only adds to them, and starting at the end of the install
// lets the first resyncs after it skip what has not changed. With exact
// it also stops the watches of the others (a resource the release no
// longer applies may no longer be served). The new watches start
// watchParallelism at a time, each slot taken until its watch has listed
// (or failed to within syncWait): started together, their LISTs would come
// as one burst that the apiserver's priority and fairness may refuse
// (429). All end with the context the engine was given to watch with.
func (l *liveVersions) watch(gvrs map[schema.GroupVersionResource]bool, exact bool) {
	if l == nil || l.ctx.Err() != nil {
		return
	}
	var start []*liveWatch
	l.mu.Lock()
	for gvr, w := range l.informers {
		if exact && !gvrs[gvr] {
			w.stop()
			delete(l.informers, gvr)
		}
	}
	for gvr := range gvrs {
		if l.informers[gvr] != nil {
			continue
		}
		inf := metadatainformer.NewFilteredMetadataInformer(l.client, gvr, metav1.NamespaceAll, 0, cache.Indexers{}, nil).Informer()
		_ = inf.SetTransform(keepVersionOnly)
		ctx, stop := context.WithCancel(l.ctx)
		w := &liveWatch{SharedIndexInformer: inf, ctx: ctx, stop: stop}
		l.informers[gvr] = w
		start = append(start, w)
	}
	l.mu.Unlock()
	slots := make(chan struct{}, watchParallelism)
	for _, w := range start {
		go func() {
			select {
			case slots <- struct{}{}:
			case <-w.ctx.Done():
				return
			}
			go w.RunWithContext(w.ctx)
			ctx, cancel := context.WithTimeout(w.ctx, syncWait)
			cache.WaitForCacheSync(ctx.Done(), w.HasSynced)
			cancel()
			<-slots
		}()
	}
}

// watchParallelism bounds the watches that list at once.
const watchParallelism = 4

// awaitSynced waits, at most max, until every watch has listed, so that a
// reconcile pass starting just after the watches did can skip what they
// know rather than read it all.
func (l *liveVersions) awaitSynced(ctx context.Context, max time.Duration) {
	if l == nil {
		return
	}
	l.mu.Lock()
	var synced []cache.InformerSynced
	for _, w := range l.informers {
		synced = append(synced, w.HasSynced)
	}
	l.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, max)
	defer cancel()
	cache.WaitForCacheSync(ctx.Done(), synced...)
}

// syncWait bounds how long the next watch waits for one that cannot list.
const syncWait = 10 * time.Second

// keepVersionOnly keeps of an object what version needs: a cluster's
// ConfigMaps and Secrets are many, and their managedFields are most of
// their metadata.
func keepVersionOnly(obj interface{}) (interface{}, error) {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return obj, nil
	}
	return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
		Name: m.Name, Namespace: m.Namespace, ResourceVersion: m.ResourceVersion,
	}}, nil
}

// WatchLive lets the engine watch, until ctx ends, the metadata of the
// resources it applies (liveVersions), so that its resyncs read only the
// objects that changed. It needs Config.Metadata; without, it does
// nothing. A one-shot apply has no use for it.
func (e *Engine) WatchLive(ctx context.Context) {
	if e.metadata == nil {
		return
	}
	e.appliedMu.Lock()
	defer e.appliedMu.Unlock()
	if e.live == nil {
		e.live = newLiveVersions(ctx, e.metadata)
	}
}

// watchSettle bounds how long a reconcile pass waits for watches still
// listing: a resync has no hurry, and reading all instead costs hundreds
// of requests.
const watchSettle = 10 * time.Second

// StartWatches starts the watches the last pass asked for (WatchLive). The
// operator calls it once it has written the pass's status; a later Sync
// starts them otherwise.
func (e *Engine) StartWatches() {
	e.watched().startPending()
}

// watched is the engine's liveVersions, nil until WatchLive.
func (e *Engine) watched() *liveVersions {
	e.appliedMu.Lock()
	defer e.appliedMu.Unlock()
	return e.live
}

// unchangedSince reports whether m's object is, as the watch last saw it,
// the version this engine last found as m wants it, and healthy then: a
// pass then needs neither to read it nor to judge its health again.
func (e *Engine) unchangedSince(m *payload.Manifest, rc resourceClient) bool {
	e.appliedMu.Lock()
	st, ok := e.applied[m.ID()]
	live := e.live
	e.appliedMu.Unlock()
	if !ok || !st.healthy || st.hash != m.Hash() || st.gvr != rc.gvr {
		return false
	}
	rv, known := live.version(rc.gvr, rc.namespace, m.Obj.GetName())
	return known && rv == st.resourceVersion
}
