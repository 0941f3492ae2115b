package apply

import (
	"context"
	"errors"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	watchtools "k8s.io/client-go/tools/watch"
)

var namespacesGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// A manifest whose namespace another component creates fails until it
// exists. Once a create finds the namespace missing, one watch waits for
// it, and every task of the pass headed there waits on that watch instead
// of retrying into it: one refused create per namespace and task in
// flight, and the tasks go on as soon as it appears.

// nsGate is one missing namespace's watch; ready closes when the namespace
// exists, or when the watch cannot tell.
type nsGate struct {
	ready  chan struct{}
	cancel context.CancelFunc
}

// namespaceMissing reports whether err says that ns does not exist.
func namespaceMissing(err error, ns string) bool {
	var status apierrors.APIStatus
	if ns == "" || !errors.As(err, &status) || !apierrors.IsNotFound(err) {
		return false
	}
	d := status.Status().Details
	return d != nil && d.Kind == "namespaces" && d.Name == ns
}

// watchNamespace starts, once per namespace and pass, the watch that
// opens ns's gate.
func (p *pass) watchNamespace(ctx context.Context, ns string) {
	p.nsMu.Lock()
	defer p.nsMu.Unlock()
	if _, ok := p.nsGates[ns]; ok {
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	g := &nsGate{ready: make(chan struct{}), cancel: cancel}
	p.nsGates[ns] = g
	go func() {
		defer close(g.ready)
		w, err := p.e.dynamic.Resource(namespacesGVR).Watch(ctx, metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("metadata.name", ns).String(),
		})
		if err != nil {
			return
		}
		// A watch from no resourceVersion first lists what exists: the
		// namespace, if it was created meanwhile.
		_, _ = watchtools.UntilWithoutRetry(ctx, w, func(ev watch.Event) (bool, error) {
			return ev.Type == watch.Added || ev.Type == watch.Modified || ev.Type == watch.Error, nil
		})
	}()
}

// awaitNamespace waits, at most limit, for ns when a task of the pass
// found it missing.
func (p *pass) awaitNamespace(ctx context.Context, ns string, limit time.Duration) {
	arrival := p.namespaceArrival(ns)
	if arrival == nil || limit <= 0 {
		return
	}
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case <-arrival:
	case <-t.C:
	case <-ctx.Done():
	}
}

// namespaceArrival is the channel that closes when ns, which a task of
// the pass found missing, exists; nil when no watch waits for it, or its
// watch has ended already.
func (p *pass) namespaceArrival(ns string) <-chan struct{} {
	p.nsMu.Lock()
	g := p.nsGates[ns]
	p.nsMu.Unlock()
	if g == nil {
		return nil
	}
	select {
	case <-g.ready:
		return nil
	default:
		return g.ready
	}
}

// stopNamespaceWatches ends the watches of namespaces that never came,
// when the pass ends.
func (p *pass) stopNamespaceWatches() {
	p.nsMu.Lock()
	defer p.nsMu.Unlock()
	for _, g := range p.nsGates {
		g.cancel()
	}
}

// nsState is the pass's missing namespaces.
type nsState struct {
	nsMu    sync.Mutex
	nsGates map[string]*nsGate
}

// backoffTotal is how long b's retries wait in all, without jitter.
func backoffTotal(b wait.Backoff) time.Duration {
	var total time.Duration
	for b.Steps > 0 {
		total += b.Step()
	}
	return total
}
