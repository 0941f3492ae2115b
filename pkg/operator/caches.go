package operator

import (
	"context"
	"sync"

	configv1 "github.com/openshift/api/config/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/payload-applier/payload-applier/pkg/precondition"
)

// loopCaches are the stores of the informers the loop runs anyway. A pass
// the loop starts reads through one once its informer has synced, as the
// CVO's sync reads through its listers, so that an idle pass asks the API
// nothing the watches already know: a change they bring pokes the loop
// after the store has it. Any other pass (Sync called by apply or a test,
// plan) reads the API, and sees a change made just before it. Every store
// is read only: callers copy what they change.
type loopCaches struct {
	mu          sync.Mutex
	cvInformer  cache.SharedIndexInformer
	coInformer  cache.SharedIndexInformer
	fgInformer  cache.SharedIndexInformer
	cmInformers map[types.NamespacedName]cache.SharedIndexInformer
}

// synced is inf's store once inf has synced; nil before, or without inf.
func synced(inf cache.SharedIndexInformer) cache.Store {
	if inf == nil || !inf.HasSynced() {
		return nil
	}
	return inf.GetStore()
}

func (c *loopCaches) set(f func(*loopCaches)) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	f(c)
}

// loopPass marks the context of a pass the loop starts.
type loopPass struct{}

// forLoop is ctx of a pass the loop starts, which reads through caches.
func forLoop(ctx context.Context) context.Context {
	return context.WithValue(ctx, loopPass{}, true)
}

func (c *loopCaches) get(ctx context.Context, f func(*loopCaches) cache.SharedIndexInformer) cache.Store {
	if c == nil || ctx.Value(loopPass{}) == nil {
		return nil
	}
	c.mu.Lock()
	inf := f(c)
	c.mu.Unlock()
	return synced(inf)
}

// clusterVersion is the ClusterVersion name as the cache holds it, or nil
// when no synced cache holds it.
func (c *loopCaches) clusterVersion(ctx context.Context, name string) *configv1.ClusterVersion {
	store := c.get(ctx, func(c *loopCaches) cache.SharedIndexInformer { return c.cvInformer })
	if store == nil {
		return nil
	}
	cv, _ := byKey[*configv1.ClusterVersion](store, name)
	return cv
}

// byKey is the object under key in store, when there is one of type T.
func byKey[T any](store cache.Store, key string) (T, bool) {
	obj, found, _ := store.GetByKey(key)
	t, ok := obj.(T)
	return t, found && ok
}

// clusterOperators lists the cached ClusterOperators, copied; ok is false
// while no synced cache holds them.
func (c *loopCaches) clusterOperators(ctx context.Context) (cos []configv1.ClusterOperator, ok bool) {
	store := c.get(ctx, func(c *loopCaches) cache.SharedIndexInformer { return c.coInformer })
	if store == nil {
		return nil, false
	}
	for _, obj := range store.List() {
		if co, isCO := obj.(*configv1.ClusterOperator); isCO {
			cos = append(cos, *co.DeepCopy())
		}
	}
	return cos, true
}

// featureGate is the cached FeatureGate name, nil when the cluster has
// none; ok is false while no synced cache watches it.
func (c *loopCaches) featureGate(ctx context.Context, name string) (fg *configv1.FeatureGate, ok bool) {
	store := c.get(ctx, func(c *loopCaches) cache.SharedIndexInformer { return c.fgInformer })
	if store == nil {
		return nil, false
	}
	if fg, found := byKey[*configv1.FeatureGate](store, name); found {
		return fg.DeepCopy(), true
	}
	return nil, true
}

// adminConfigMap is the admin ConfigMap name as its cache holds it; ok is
// false while no synced cache watches it. An informer that cannot list
// never syncs, so a ConfigMap that cannot be read is read from the API,
// which says why.
func (c *loopCaches) adminConfigMap(ctx context.Context, name types.NamespacedName) (cm precondition.AdminConfigMap, ok bool) {
	store := c.get(ctx, func(c *loopCaches) cache.SharedIndexInformer { return c.cmInformers[name] })
	if store == nil {
		return cm, false
	}
	cm.Name = name
	if got, found := byKey[*corev1.ConfigMap](store, name.String()); found {
		cm.Data = got.DeepCopy().Data
	} else {
		cm.Absent = true
	}
	return cm, true
}

// readClusterVersion reads the ClusterVersion a pass starts from: through
// the cache, with this operator's last status write in place of the
// version it replaced while the watch has not brought it yet, or from the
// API. The caller owns the copy returned.
func (o *Operator) readClusterVersion(ctx context.Context) (*configv1.ClusterVersion, error) {
	if cv := o.caches.clusterVersion(ctx, o.cfg.Name); cv != nil {
		return o.writer.newest(cv).DeepCopy(), nil
	}
	return o.config.ConfigV1().ClusterVersions().Get(ctx, o.cfg.Name, metav1.GetOptions{})
}
