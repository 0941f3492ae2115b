package apply

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/payload-applier/payload-applier/pkg/apply/deletion"
	"github.com/payload-applier/payload-applier/pkg/graph"
	"github.com/payload-applier/payload-applier/pkg/payload"
)

// establishing is a fake cluster holding the CRD widgets.example.com not
// yet Established, and the pass that created it. requests counts what the
// engine asked, by verb; watching is closed once a watch is open.
func establishing(t *testing.T) (*pass, *payload.Manifest, resourceClient, *unstructured.Unstructured, *dynamicfake.FakeDynamicClient, func() map[string]int, <-chan struct{}) {
	t.Helper()
	crd := liveCRD("widgets.example.com", "example.com", "widgets", "Widget", "Namespaced", "v1")
	unstructured.RemoveNestedField(crd.Object, "status", "conditions")
	crd.SetResourceVersion("1")
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{payload.CRDGVR: "CustomResourceDefinitionList"}, crd.DeepCopy())
	var mu sync.Mutex
	requests := map[string]int{}
	count := func(a clienttesting.Action) {
		mu.Lock()
		defer mu.Unlock()
		requests[a.GetVerb()]++
	}
	dyn.PrependReactor("*", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		count(a)
		return false, nil, nil
	})
	watching := make(chan struct{})
	var once sync.Once
	dyn.PrependWatchReactor("*", func(a clienttesting.Action) (bool, watch.Interface, error) {
		count(a)
		once.Do(func() { close(watching) })
		return false, nil, nil
	})
	e, err := New(Config{Dynamic: dyn, Mapper: resettable{meta.NewDefaultRESTMapper(nil)}, Ledger: &deletion.MemoryStore{}})
	if err != nil {
		t.Fatal(err)
	}
	m := &payload.Manifest{}
	m.Obj, m.GVK = crd.DeepCopy(), payload.CRDGVK
	unstructured.RemoveNestedField(m.Obj.Object, "status")
	rel := &payload.Release{Version: "1.0.0", Manifests: []*payload.Manifest{m}}
	p := newPass(e, rel, SyncOptions{Mode: graph.ModeInstall, EstablishTimeout: 5 * time.Second})
	snapshot := func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		out := map[string]int{}
		for k, v := range requests {
			out[k] = v
		}
		return out
	}
	return p, m, resourceClient{gvr: payload.CRDGVR, ri: dyn.Resource(payload.CRDGVR)}, crd, dyn, snapshot, watching
}

func established(crd *unstructured.Unstructured) *unstructured.Unstructured {
	crd = crd.DeepCopy()
	_ = unstructured.SetNestedSlice(crd.Object, []any{
		map[string]any{"type": "NamesAccepted", "status": "True"},
		map[string]any{"type": "Established", "status": "True"},
	}, "status", "conditions")
	return crd
}

func TestANewCRDIsWatchedUntilEstablished(t *testing.T) {
	p, m, rc, crd, dyn, requests, watching := establishing(t)
	// The fake's watcher opens just after its reactor runs: update until
	// the wait ends, so that one update lands on it.
	done := make(chan struct{})
	go func() {
		<-watching
		for {
			_ = dyn.Tracker().Update(payload.CRDGVR, established(crd), "")
			select {
			case <-done:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	live, h := p.awaitEstablished(context.Background(), m, rc, crd)
	close(done)
	if !h.Healthy() || live == nil {
		t.Fatalf("health %+v, want Established", h)
	}
	if got := requests(); got["watch"] != 1 || got["get"] != 0 {
		t.Errorf("requests %v, want one watch and no read", got)
	}
	if _, err := p.e.mapper.known(schema.GroupKind{Group: "example.com", Kind: "Widget"}, "v1"); err != nil {
		t.Errorf("the CRD's kind does not resolve: %v", err)
	}
}

func TestANewCRDIsReadWhenTheWatchIsRefused(t *testing.T) {
	p, m, rc, crd, dyn, requests, _ := establishing(t)
	dyn.PrependWatchReactor("*", func(clienttesting.Action) (bool, watch.Interface, error) {
		return true, nil, errors.New("watch refused")
	})
	if err := dyn.Tracker().Update(payload.CRDGVR, established(crd), ""); err != nil {
		t.Fatal(err)
	}
	if _, h := p.awaitEstablished(context.Background(), m, rc, crd); !h.Healthy() {
		t.Fatalf("health %+v, want Established", h)
	}
	if got := requests(); got["get"] == 0 {
		t.Errorf("requests %v, want reads after the refused watch", got)
	}
}

func TestACRDNeverEstablishedEndsTheWait(t *testing.T) {
	p, m, rc, crd, _, _, _ := establishing(t)
	p.opts.EstablishTimeout = 200 * time.Millisecond
	if _, h := p.awaitEstablished(context.Background(), m, rc, crd); h.Reason != ReasonCRDNotEstablished {
		t.Fatalf("health %+v, want %s", h, ReasonCRDNotEstablished)
	}
}
