package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/payload-applier/payload-applier/pkg/apply"
	"github.com/payload-applier/payload-applier/pkg/apply/deletion"
	"github.com/payload-applier/payload-applier/pkg/graph"
	"github.com/payload-applier/payload-applier/pkg/payload"
	"github.com/payload-applier/payload-applier/pkg/payload/payloadtest"
	"github.com/payload-applier/payload-applier/test/cluster"
)

// include marks a manifest for the default profile; without it the CVO's
// inclusion filter drops the manifest.
const include = `include.release.openshift.io/self-managed-high-availability: "true"`

// writePayload writes a flat payload directory for version holding files.
func writePayload(t testing.TB, version string, files map[string]string) string {
	t.Helper()
	trimmed := make(map[string]string, len(files))
	for name, body := range files {
		// Manifests written as raw strings start with a line break.
		trimmed[name] = strings.TrimLeft(body, "\n")
	}
	return payloadtest.WriteRelease(t, t.TempDir(), version, nil, trimmed)
}

// load reads and validates a payload, failing the test when it is invalid.
func load(t testing.TB, dir string) *payload.Release {
	t.Helper()
	rel, err := payload.Load(dir, payload.DefaultLoadOptions())
	if err != nil {
		t.Fatalf("load %s: %v", dir, err)
	}
	return rel
}

// loadUnlinted loads and filters dir without rejecting lint errors, for
// tests of what the engine does with a payload lint would stop.
func loadUnlinted(t testing.TB, dir string) *payload.Release {
	t.Helper()
	all, _, err := payload.LoadAll(dir)
	if err != nil {
		t.Fatalf("load %s: %v", dir, err)
	}
	return all.Filter(payload.DefaultLoadOptions())
}

// clients bundles what tests use to look at the cluster.
type clients struct {
	kube    kubernetes.Interface
	dynamic dynamic.Interface
	mapper  *restmapper.DeferredDiscoveryRESTMapper
}

// newClients are the test's own clients, as cluster.AdminUser: for setup
// and checks, never for the applier's work.
func newClients(t testing.TB) *clients {
	t.Helper()
	return newClientsFor(t, testCluster.RESTConfig())
}

// newClientsFor builds the clients on cfg: another user, or a config with
// its own warning handler.
func newClientsFor(t testing.TB, cfg *rest.Config) *clients {
	t.Helper()
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &clients{kube: kube, dynamic: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))}
}

// newEngine builds an engine whose ledger lives in ledgerNS. Engine and
// ledger act as cluster.ApplierUser.
func newEngine(t testing.TB, ledgerNS string) *apply.Engine {
	t.Helper()
	cfg := testCluster.ApplierRESTConfig()
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e, err := apply.NewForConfig(cfg, apply.Config{
		Ledger: deletion.NewConfigMapStore(kube, ledgerNS, "ledger"),
	})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// fastOptions keeps retries and delete settling short for tests.
func fastOptions(mode graph.Mode) apply.SyncOptions {
	return apply.SyncOptions{
		Mode:         mode,
		Backoff:      &wait.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Steps: 4},
		DeleteSettle: 2 * time.Second,
	}
}

func sync(t testing.TB, e *apply.Engine, rel *payload.Release, mode graph.Mode) *apply.SyncResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := e.Sync(ctx, rel, fastOptions(mode))
	if err != nil {
		t.Fatalf("sync %s (%s): %v", rel.Version, mode, err)
	}
	return res
}

func requireComplete(t testing.TB, res *apply.SyncResult) {
	t.Helper()
	if !res.Complete() {
		t.Fatalf("sync of %s (%s) incomplete: %d of %d, errors: %v", res.Release, res.Mode, res.Done, res.Total, res.Errors)
	}
}

// actions maps object names to what the sync did with them.
func actions(res *apply.SyncResult) map[string]apply.Action {
	out := map[string]apply.Action{}
	for _, o := range res.Objects {
		out[o.ID.String()] = o.Action
	}
	return out
}

// get reads an object; nil when NotFound.
func (c *clients) get(t testing.TB, gvk schema.GroupVersionKind, ns, name string) *unstructured.Unstructured {
	t.Helper()
	mapping, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		c.mapper.Reset()
		if mapping, err = c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
			t.Fatalf("map %s: %v", gvk, err)
		}
	}
	var ri dynamic.ResourceInterface = c.dynamic.Resource(mapping.Resource)
	if ns != "" {
		ri = c.dynamic.Resource(mapping.Resource).Namespace(ns)
	}
	obj, err := ri.Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatalf("get %s %s/%s: %v", gvk.Kind, ns, name, err)
	}
	return obj
}

var (
	configMapGVK = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	namespaceGVK = schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}
	secretGVK    = schema.GroupVersionKind{Version: "v1", Kind: "Secret"}
)

// waitGone waits until get returns nil.
func (c *clients) waitGone(t testing.TB, gvk schema.GroupVersionKind, ns, name string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return c.get(t, gvk, ns, name) == nil, nil
	})
	if err != nil {
		t.Fatalf("%s %s/%s still exists", gvk.Kind, ns, name)
	}
}

// removeFinalizers clears an object's finalizers with a merge patch.
func (c *clients) removeFinalizers(t testing.TB, gvr schema.GroupVersionResource, ns, name string) {
	t.Helper()
	patch, _ := json.Marshal(map[string]interface{}{"metadata": map[string]interface{}{"finalizers": nil}})
	var ri dynamic.ResourceInterface = c.dynamic.Resource(gvr)
	if ns != "" {
		ri = c.dynamic.Resource(gvr).Namespace(ns)
	}
	if _, err := ri.Patch(context.Background(), name, "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
		t.Fatalf("remove finalizers of %s/%s: %v", ns, name, err)
	}
}

// applierAudit returns the audit events since mark that match f. Unless f
// names a user, they are the applier's own requests (cluster.ApplierUser),
// not the test's setup nor kube-controller-manager's.
func applierAudit(t testing.TB, mark cluster.AuditMark, f cluster.AuditFilter) []cluster.AuditEvent {
	t.Helper()
	events, err := testCluster.AuditSince(mark, f)
	if err != nil {
		t.Fatal(err)
	}
	return events
}

// applierWrites returns the applier's write requests since mark.
func applierWrites(t testing.TB, mark cluster.AuditMark) []cluster.AuditEvent {
	t.Helper()
	return applierAudit(t, mark, cluster.AuditFilter{WritesOnly: true})
}

func auditMark(t testing.TB) cluster.AuditMark {
	t.Helper()
	m, err := testCluster.AuditMark()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// uniqueName gives cluster-scoped objects per-test names.
func uniqueName(t testing.TB, base string) string {
	return fmt.Sprintf("%s-%d", base, time.Now().UnixNano()%1_000_000_000)
}
