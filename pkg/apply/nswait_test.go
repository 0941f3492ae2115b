package apply

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/payload-applier/payload-applier/pkg/apply/deletion"
	"github.com/payload-applier/payload-applier/pkg/graph"
)

// A create into a namespace another component has not made yet waits for
// it, once found missing, instead of retrying into it: one refused create,
// and the task goes on when the namespace appears.
func TestACreateIntoAMissingNamespaceWaitsForIt(t *testing.T) {
	e, refused := missingNamespaceEngine(t)
	rel := planRelease(t, planDoc{"0000_50_a_01_cm.yaml", cmYAML("a", "v")})
	// Retried every 20 ms for up to 2 s, the task would be refused about
	// ten times before the namespace came.
	res, err := e.Sync(context.Background(), rel, SyncOptions{Mode: graph.ModeInstall,
		Backoff: &wait.Backoff{Duration: 20 * time.Millisecond, Factor: 1, Steps: 100}})
	if err != nil || !res.Complete() {
		t.Fatalf("sync: %v %v", err, res.Errors)
	}
	if n := refused.Load(); n != 1 {
		t.Errorf("%d creates refused for the missing namespace, want one", n)
	}
}

// A task refused for a missing namespace tries again as soon as the
// namespace appears, not when its backoff step ends.
func TestATaskRetriesAsSoonAsItsNamespaceAppears(t *testing.T) {
	e, refused := missingNamespaceEngine(t)
	rel := planRelease(t, planDoc{"0000_50_a_01_cm.yaml", cmYAML("a", "v")})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := e.Sync(ctx, rel, SyncOptions{Mode: graph.ModeInstall, Backoff: &hourSteps})
	if err != nil || !res.Complete() {
		t.Fatalf("sync: %v %v", err, res.Errors)
	}
	if n := refused.Load(); n != 1 {
		t.Errorf("%d creates refused, want one", n)
	}
}

// missingNamespaceEngine is an engine whose creates into namespace "ns"
// are refused until it exists; the first refusal makes it, a moment
// later, as the namespace's component would. refused counts them.
func missingNamespaceEngine(t *testing.T) (*Engine, *atomic.Int32) {
	t.Helper()
	rm := meta.NewDefaultRESTMapper([]schema.GroupVersion{{Version: "v1"}})
	rm.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{configMapsGVR: "ConfigMapList", namespacesGVR: "NamespaceList"})
	refused := &atomic.Int32{}
	nsExists := func() bool { _, err := dyn.Tracker().Get(namespacesGVR, "", "ns"); return err == nil }
	dyn.PrependReactor("create", "configmaps", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if nsExists() {
			return false, nil, nil
		}
		if refused.Add(1) == 1 {
			go func() {
				time.Sleep(200 * time.Millisecond)
				_ = dyn.Tracker().Add(unstructuredOf("v1", "Namespace", "", "ns"))
			}()
		}
		return true, nil, apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, "ns")
	})
	e, err := New(Config{Dynamic: dyn, Mapper: resettable{rm}, Ledger: &deletion.MemoryStore{}})
	if err != nil {
		t.Fatal(err)
	}
	return e, refused
}

func TestNamespaceMissing(t *testing.T) {
	missing := apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, "ns")
	for _, tc := range []struct {
		err  error
		ns   string
		want bool
	}{
		{missing, "ns", true},
		{missing, "other", false},
		{missing, "", false},
		{apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, "ns"), "ns", false},
		{&TaskError{Message: "x"}, "ns", false},
	} {
		if got := namespaceMissing(tc.err, tc.ns); got != tc.want {
			t.Errorf("%v in %q: %v, want %v", tc.err, tc.ns, got, tc.want)
		}
	}
}

// The watch of a namespace that never comes ends with its pass.
func TestANamespaceWatchEndsWithItsPass(t *testing.T) {
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{namespacesGVR: "NamespaceList"})
	e, err := New(Config{Dynamic: dyn, Mapper: resettable{meta.NewDefaultRESTMapper(nil)}, Ledger: &deletion.MemoryStore{}})
	if err != nil {
		t.Fatal(err)
	}
	p := newPass(e, planRelease(t), SyncOptions{})
	p.watchNamespace(context.Background(), "never")
	p.stopNamespaceWatches()
	select {
	case <-p.nsGates["never"].ready:
	case <-time.After(5 * time.Second):
		t.Fatal("the watch outlived its pass")
	}
}
