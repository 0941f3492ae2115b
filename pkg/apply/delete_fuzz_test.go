package apply

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/payload-applier/payload-applier/pkg/apply/cleanup"
	"github.com/payload-applier/payload-applier/pkg/apply/deletion"
	"github.com/payload-applier/payload-applier/pkg/apply/recordstore"
	"github.com/payload-applier/payload-applier/pkg/graph"
	"github.com/payload-applier/payload-applier/pkg/payload"
)

// fuzzKind is a kind the fuzzed cluster serves.
type fuzzKind struct {
	gvk      schema.GroupVersionKind
	resource string
	cluster  bool
}

var fuzzKinds = []fuzzKind{
	{schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, "configmaps", false},
	{schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, "namespaces", true},
	{schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, "deployments", false},
	{schema.GroupVersionKind{Group: "config.openshift.io", Version: "v1", Kind: "ClusterVersion"}, "clusterversions", true},
	{schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}, "customresourcedefinitions", true},
	{schema.GroupVersionKind{Group: "project.openshift.io", Version: "v1", Kind: "Project"}, "projects", true},
	{schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}, "widgets", false},
	{schema.GroupVersionKind{Group: "coordination.k8s.io", Version: "v1", Kind: "Lease"}, "leases", false},
}

// fuzzCRD serves the Widgets; its delete manifest may opt in to operand
// cleanup, the one way an object no delete manifest names may go.
// shadowCRDName names a CRD for the built-in Leases: it serves nothing,
// and a cleanup that trusted its name would delete Leases.
const (
	fuzzCRD       = "widgets.example.com"
	shadowCRDName = "leases.coordination.k8s.io"
)

// Names and namespaces are drawn from small sets that hold every protected
// object, so that the fuzzer meets them often.
var (
	fuzzNames = []string{"x", "y", "kube-system", "default", "kube-public", "openshift-cluster-version",
		"cluster-version-operator", "payload-applier-delete-ledger", "version",
		"clusterversions.config.openshift.io", "clusteroperators.config.openshift.io", fuzzCRD, shadowCRDName}
	fuzzNamespaces = []string{"a", "openshift-cluster-version", "kube-system"}
)

// fuzzTarget is one object of the fuzzed cluster, as the DELETE reaches it.
type fuzzTarget struct {
	resource, namespace, name string
}

// protectedTarget restates, independently of the engine, what must never be
// deleted.
func protectedTarget(o fuzzTarget) bool {
	switch o.resource {
	case "namespaces", "projects":
		return o.name == "kube-system" || o.name == "kube-public" || o.name == "default" || o.name == "openshift-cluster-version"
	case "customresourcedefinitions":
		return o.name == "clusterversions.config.openshift.io" || o.name == "clusteroperators.config.openshift.io"
	case "clusterversions":
		return o.name == "version"
	case "deployments":
		return o.namespace == "openshift-cluster-version" && o.name == "cluster-version-operator"
	case "configmaps":
		return o.namespace == "openshift-cluster-version" && o.name == "payload-applier-delete-ledger"
	}
	return false
}

// fuzzBytes hands out the fuzzer's bytes as small choices; past the end
// every choice is 0.
type fuzzBytes []byte

func (b *fuzzBytes) pick(n int) int {
	if len(*b) == 0 {
		return 0
	}
	v := int((*b)[0])
	*b = (*b)[1:]
	return v % n
}

// FuzzSyncDeletes runs Engine.Sync on a random payload, cluster, ledger
// and operand cleanup policy and checks every DELETE the cluster received:
// its object is named by a delete manifest of the release (by the scope
// the cluster gives its kind), or, in an update whose admin policy is
// Delete, is a custom resource in the scope of a CRD the release removes
// with operand cleanup Supported, that very CRD (by UID) whose delete the
// ledger holds under way, while the cleanup state reads; it is never
// protected, never of a built-in API a CRD shadows; and a pass that is not
// an update deletes only what an update claimed in the ledger. Cluster,
// ledger and cleanup store are drawn too: re-created CRDs (another UID, a
// completed delete), claims without a UID, a CRD named for Leases, and an
// unreadable cleanup store.
//
//	go test -run '^$' -fuzz FuzzSyncDeletes ./pkg/apply/
func FuzzSyncDeletes(f *testing.F) {
	f.Add([]byte{})
	// A delete manifest for kube-system with a stray namespace: the
	// DELETE of a cluster-scoped kind ignores the namespace.
	f.Add([]byte{0, 1, 1, 2, 0, 1, 1, 1, 1, 2, 0, 0, 1, 1, 1})
	f.Add([]byte{0, 3, 0, 0, 1, 1, 1, 5, 1, 1, 3, 2, 8, 0, 1, 1, 0, 9, 1, 1, 1, 0, 1, 3, 1, 4})
	f.Add([]byte("a payload of a few manifests, some of them deletes, and a cluster"))
	for _, seed := range wideningSeeds {
		f.Add(seed)
	}
	// The same update, with widgets.example.com's delete recorded as
	// completed: the CRD on the cluster was created again.
	f.Add([]byte{0, 1, 4, 11, 0, 0, 1, 0, 1, 2, 4, 11, 0, 0, 1, 1, 0, 2, 1, 0, 1, 6, 0, 0, 0, 1, 1, 1, 1, 2, 1})
	// An update removes leases.coordination.k8s.io, a CRD named for a
	// built-in API, with both keys; a Lease exists.
	f.Add([]byte{0, 1, 4, 12, 0, 0, 1, 0, 1, 2, 4, 12, 0, 0, 1, 1, 1, 7, 0, 0, 0, 1, 1, 1, 1, 2, 1})
	// The widening seed with an unreadable cleanup store.
	f.Add([]byte{0, 1, 4, 11, 0, 0, 1, 0, 1, 2, 4, 11, 0, 0, 1, 1, 1, 6, 0, 0, 0, 1, 1, 1, 1, 2, 0})
	f.Fuzz(func(t *testing.T, data []byte) { syncRandomDeletes(t, data) })
}

// wideningSeeds each make an update whose admin policy is Delete remove
// widgets.example.com with operand cleanup Supported while a Widget
// exists: in every namespace, then in namespace a only, the Widget in a.
var wideningSeeds = [][]byte{
	{0, 1, 4, 11, 0, 0, 1, 0, 1, 2, 4, 11, 0, 0, 1, 1, 1, 6, 0, 0, 0, 1, 1, 1, 1, 2, 1},
	{0, 1, 4, 11, 0, 0, 1, 0, 0, 2, 4, 11, 0, 0, 1, 1, 1, 6, 0, 0, 0, 1, 1, 1, 1, 2, 1},
}

// TestFuzzSeedsReachTheWidening keeps the seeds meaningful: a change to
// what the fuzz draws must not leave the operand rule untried.
func TestFuzzSeedsReachTheWidening(t *testing.T) {
	for _, seed := range wideningSeeds {
		if n := syncRandomDeletes(t, seed); n == 0 {
			t.Errorf("seed %v sends no operand DELETE", seed)
		}
	}
}

// syncRandomDeletes is one case of FuzzSyncDeletes; it returns how many
// operand DELETEs the pass sent, so that tests can tell which seeds reach
// the widening.
func syncRandomDeletes(t *testing.T, data []byte) (operands int) {
	{
		in := fuzzBytes(data)
		mode := []graph.Mode{graph.ModeUpdate, graph.ModeReconcile, graph.ModeInstall}[in.pick(3)]

		// The payload.
		rel := &payload.Release{Version: "2"}
		marked := map[fuzzTarget]bool{}
		for i := range in.pick(7) {
			k := fuzzKinds[in.pick(len(fuzzKinds))]
			name := fuzzNames[in.pick(len(fuzzNames))]
			ns := fuzzNamespaces[in.pick(len(fuzzNamespaces))]
			if k.cluster && in.pick(2) == 0 {
				ns = "" // else a stray namespace the cluster ignores
			}
			del := in.pick(2) == 1
			m := fuzzManifest(i, k, ns, name, del)
			rel.Manifests = append(rel.Manifests, m)
			if del && k.resource == "customresourcedefinitions" && in.pick(2) == 0 {
				ann := m.Obj.GetAnnotations()
				ann[payload.OperandCleanupAnnotation] = payload.OperandCleanupSupported
				if in.pick(2) == 0 {
					ann[payload.OperandNamespacesAnnotation] = "a"
				}
				m.Obj.SetAnnotations(ann)
			}
			if del {
				target := fuzzTarget{k.resource, ns, name}
				if k.cluster {
					target.namespace = ""
				}
				marked[target] = true
			}
		}

		// The cluster and the ledger.
		rm := meta.NewDefaultRESTMapper(nil)
		listKinds := map[schema.GroupVersionResource]string{}
		var objs []runtime.Object
		var records []deletion.Record
		claimed := map[fuzzTarget]bool{}
		present := map[fuzzTarget]bool{}
		// The widgets CRD as the cluster holds it, and the ledger's record
		// of its delete, for the operand rule.
		var liveCRDUID types.UID
		var crdRecord *deletion.Record
		for _, k := range fuzzKinds {
			scope := meta.RESTScopeNamespace
			if k.cluster {
				scope = meta.RESTScopeRoot
			}
			rm.Add(k.gvk, scope)
			listKinds[k.gvk.GroupVersion().WithResource(k.resource)] = k.gvk.Kind + "List"
		}
		for range in.pick(10) {
			k := fuzzKinds[in.pick(len(fuzzKinds))]
			name := fuzzNames[in.pick(len(fuzzNames))]
			ns := fuzzNamespaces[in.pick(len(fuzzNamespaces))]
			if k.cluster {
				ns = ""
			}
			uid := types.UID(fmt.Sprintf("uid-%d", in.pick(3)))
			if in.pick(4) > 0 && !present[fuzzTarget{k.resource, ns, name}] {
				present[fuzzTarget{k.resource, ns, name}] = true
				objs = append(objs, fuzzObject(k, ns, name, uid, in.pick(3) == 0))
				if k.resource == "customresourcedefinitions" && name == fuzzCRD {
					liveCRDUID = uid
				}
			}
			if in.pick(2) == 0 {
				state := deletion.States[in.pick(len(deletion.States))]
				id := payload.ObjectID{Group: k.gvk.Group, Kind: k.gvk.Kind, Namespace: ns, Name: name}
				// A record may carry a stray namespace, as its manifest did.
				if k.cluster && in.pick(2) == 0 {
					id.Namespace = fuzzNamespaces[in.pick(len(fuzzNamespaces))]
				}
				rec := deletion.Record{ID: id, Release: []string{"1", "2"}[in.pick(2)], State: state, UID: uid}
				if in.pick(4) == 0 {
					rec.UID = "" // a claim whose read failed
				}
				records = append(records, rec)
				if id == crdID(fuzzCRD) {
					crdRecord = &rec // the ledger keeps the last record of an object
				}
				if state == deletion.Pending || state == deletion.InProgress {
					claimed[fuzzTarget{k.resource, ns, name}] = true
				}
			}
		}
		dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds, objs...)
		var deleted []fuzzTarget
		dyn.PrependReactor("*", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
			switch a := a.(type) {
			case clienttesting.DeleteAction:
				deleted = append(deleted, fuzzTarget{a.GetResource().Resource, a.GetNamespace(), a.GetName()})
			case clienttesting.PatchAction:
				if a.GetPatchType() == types.ApplyPatchType {
					obj := &unstructured.Unstructured{}
					if err := obj.UnmarshalJSON(a.GetPatch()); err != nil {
						return true, nil, err
					}
					return true, obj, nil
				}
			}
			return false, nil, nil
		})
		store := &deletion.MemoryStore{}
		if err := store.Save(context.Background(), records); err != nil {
			t.Fatal(err)
		}
		e, err := New(Config{Dynamic: dyn, Mapper: resettable{rm}, Ledger: store})
		if err != nil {
			t.Fatal(err)
		}
		corruptCleanups := in.pick(4) == 0
		if corruptCleanups {
			e.cleanups = recordstore.NewLedger[cleanup.Record](&unreadableStore{}, cleanup.RecordFormat)
		}
		policy := []cleanup.Policy{"", cleanup.PolicyOrphan, cleanup.PolicyDelete}[in.pick(3)]
		opts := SyncOptions{Mode: mode, Backoff: &wait.Backoff{Duration: time.Millisecond, Steps: 1},
			DeleteSettle: 10 * time.Millisecond, EstablishTimeout: 10 * time.Millisecond, OperandCleanup: policy}
		if _, err := e.Sync(context.Background(), rel, opts); err != nil {
			t.Fatal(err)
		}

		for _, d := range deleted {
			switch {
			case protectedTarget(d):
				t.Fatalf("%s pass deleted protected %s %s/%s", mode, d.resource, d.namespace, d.name)
			case !marked[d] && d.resource == "widgets" && policy == cleanup.PolicyDelete && mode == graph.ModeUpdate && operandInScope(rel, d.namespace) &&
				!corruptCleanups && crdDeleteOf(crdRecord, liveCRDUID):
				// An operand of the CRD the release removes with both keys.
				operands++
			case !marked[d]:
				t.Fatalf("%s pass deleted %s %s/%s, which no delete manifest of the release names", mode, d.resource, d.namespace, d.name)
			case mode != graph.ModeUpdate && !claimed[d]:
				t.Fatalf("%s pass deleted %s %s/%s, which no update claimed", mode, d.resource, d.namespace, d.name)
			}
		}
	}
	return operands
}

// crdDeleteOf restates, independently of the engine, whether the ledger
// held, or the update claimed, the delete of the widgets CRD with the UID
// the cluster shows: an update claims a delete the ledger has no record
// of, with the UID it reads; any other record must be of a delete still
// under way, for that very CRD.
func crdDeleteOf(rec *deletion.Record, live types.UID) bool {
	if live == "" {
		return false
	}
	if rec == nil {
		return true
	}
	return (rec.State == deletion.Pending || rec.State == deletion.InProgress) && rec.UID == live
}

// operandInScope restates, independently of the engine, whether a Widget
// in ns is in the scope of a delete manifest of fuzzCRD that supports
// operand cleanup.
func operandInScope(rel *payload.Release, ns string) bool {
	for _, m := range rel.Manifests {
		ann := m.Obj.GetAnnotations()
		if m.GVK.Kind != "CustomResourceDefinition" || m.Obj.GetName() != fuzzCRD || !m.Delete() || ann[payload.OperandCleanupAnnotation] != payload.OperandCleanupSupported {
			continue
		}
		if scope, ok := ann[payload.OperandNamespacesAnnotation]; !ok || scope == ns {
			return true
		}
	}
	return false
}

func fuzzManifest(index int, k fuzzKind, ns, name string, del bool) *payload.Manifest {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(k.gvk)
	obj.SetNamespace(ns)
	obj.SetName(name)
	if del {
		obj.SetAnnotations(map[string]string{payload.DeleteAnnotation: "true"})
	}
	file := fmt.Sprintf("0000_50_c%d_%02d_%s.yaml", index%2, index, strings.ToLower(k.gvk.Kind))
	m := &payload.Manifest{File: file, Line: 1, Index: index}
	m.Obj, m.GVK, m.OriginalFilename = obj, k.gvk, file
	m.RunLevel, m.Component = payload.ParseFileName(file)
	return m
}

func fuzzObject(k fuzzKind, ns, name string, uid types.UID, terminating bool) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(k.gvk)
	obj.SetNamespace(ns)
	obj.SetName(name)
	switch {
	case k.resource == "customresourcedefinitions" && name == fuzzCRD:
		obj = liveCRD(fuzzCRD, "example.com", "widgets", "Widget", "Namespaced", "v1")
	case k.resource == "customresourcedefinitions" && name == shadowCRDName:
		obj = liveCRD(shadowCRDName, "coordination.k8s.io", "leases", "Lease", "Namespaced", "v1")
	case k.resource == "deployments":
		// Available, so that an operand cleanup may start.
		_ = unstructured.SetNestedSlice(obj.Object, []any{map[string]any{"type": "Available", "status": "True"}}, "status", "conditions")
	}
	obj.SetUID(uid)
	if terminating {
		ts := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		obj.SetDeletionTimestamp(&ts)
		obj.SetFinalizers([]string{"example.com/hold"})
	}
	return obj
}
