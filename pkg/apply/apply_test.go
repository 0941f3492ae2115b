package apply

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/payload-applier/payload-applier/pkg/apply/deletion"
	"github.com/payload-applier/payload-applier/pkg/graph"
	"github.com/payload-applier/payload-applier/pkg/payload"
)

// fakeConfigMaps is a fake cluster that serves ConfigMaps holding objs.
func fakeConfigMaps(objs ...runtime.Object) (*meta.DefaultRESTMapper, *dynamicfake.FakeDynamicClient) {
	// The default version lets a lookup by kind alone resolve, as discovery
	// does in a cluster.
	rm := meta.NewDefaultRESTMapper([]schema.GroupVersion{{Version: "v1"}})
	rm.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{configMapsGVR: "ConfigMapList"}, objs...)
	return rm, dyn
}

// writeRecorder is an engine on fakeConfigMaps, with its ledger in store,
// that records every write and answers applies with the object as sent.
func writeRecorder(t *testing.T, store deletion.Store, objs ...runtime.Object) (*Engine, *[]clienttesting.Action) {
	t.Helper()
	rm, dyn := fakeConfigMaps(objs...)
	var writes []clienttesting.Action
	dyn.PrependReactor("*", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetVerb() == "get" || a.GetVerb() == "list" {
			return false, nil, nil
		}
		writes = append(writes, a)
		return answerApplyPatches(a)
	})
	e, err := New(Config{Dynamic: dyn, Mapper: resettable{rm}, Ledger: store})
	if err != nil {
		t.Fatal(err)
	}
	return e, &writes
}

// answerApplyPatches answers a server-side apply with the object as sent,
// which the fake dynamic client cannot do.
func answerApplyPatches(a clienttesting.Action) (bool, runtime.Object, error) {
	if pa, ok := a.(clienttesting.PatchActionImpl); ok && pa.PatchType == types.ApplyPatchType {
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(pa.Patch); err != nil {
			return true, nil, err
		}
		obj.SetResourceVersion("9")
		return true, obj, nil
	}
	return false, nil, nil
}

func TestCreatesArePOSTs(t *testing.T) {
	e, writes := writeRecorder(t, &deletion.MemoryStore{})
	rel := planRelease(t, planDoc{"0000_50_a_01_new.yaml", cmYAML("new", "v")})
	res, err := e.Sync(context.Background(), rel, SyncOptions{Mode: graph.ModeInstall})
	if err != nil || !res.Complete() {
		t.Fatalf("sync: %v %v", err, res.Errors)
	}
	if len(*writes) != 1 {
		t.Fatalf("%d writes, want one create", len(*writes))
	}
	// The fake drops CreateOptions: the e2e test reads the field manager and
	// the field validation from the apiserver's audit log.
	if _, ok := (*writes)[0].(clienttesting.CreateActionImpl); !ok {
		t.Fatalf("write was %s, want a create", (*writes)[0].GetVerb())
	}
}

func TestTheFirstChangeAfterACreateAdoptsItsFieldsForApply(t *testing.T) {
	created := liveCM("a", "old")
	created.SetManagedFields([]metav1.ManagedFieldsEntry{{
		Manager: FieldManager, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
		FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:data":{".":{},"f:key":{}},"f:metadata":{"f:annotations":{".":{},"f:note":{}}}}`)},
	}})
	applied := liveCM("b", "old")
	applied.SetManagedFields([]metav1.ManagedFieldsEntry{{
		Manager: FieldManager, Operation: metav1.ManagedFieldsOperationApply, APIVersion: "v1",
		FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:data":{"f:key":{}}}`)},
	}})
	e, writes := writeRecorder(t, &deletion.MemoryStore{}, created, applied)
	rel := planRelease(t,
		planDoc{"0000_50_a_01_a.yaml", cmYAML("a", "new")},
		planDoc{"0000_50_b_01_b.yaml", cmYAML("b", "new")})
	res, err := e.Sync(context.Background(), rel, SyncOptions{Mode: graph.ModeUpdate})
	if err != nil || !res.Complete() {
		t.Fatalf("sync: %v %v", err, res.Errors)
	}
	var a, b []string
	for _, w := range *writes {
		pa, ok := w.(clienttesting.PatchActionImpl)
		if !ok {
			t.Fatalf("unexpected %s", w.GetVerb())
		}
		switch pa.Name {
		case "a":
			a = append(a, string(pa.PatchType))
			if pa.PatchType == types.JSONPatchType {
				var ops []struct {
					Path  string          `json:"path"`
					Value json.RawMessage `json:"value"`
				}
				var got []metav1.ManagedFieldsEntry
				if err := json.Unmarshal(pa.Patch, &ops); err != nil || len(ops) == 0 || ops[0].Path != "/metadata/managedFields" {
					t.Fatalf("adopting patch %s: %v", pa.Patch, err)
				}
				if err := json.Unmarshal(ops[0].Value, &got); err != nil {
					t.Fatal(err)
				}
				if len(got) != 1 || got[0].Operation != metav1.ManagedFieldsOperationApply || got[0].Manager != FieldManager {
					t.Errorf("managed fields after adoption = %+v, want one Apply entry of %s", got, FieldManager)
				}
			}
		case "b":
			b = append(b, string(pa.PatchType))
		}
	}
	if len(a) != 2 || a[0] != string(types.JSONPatchType) || a[1] != string(types.ApplyPatchType) {
		t.Errorf("writes to the created object: %v, want the adoption, then the apply", a)
	}
	if len(b) != 1 || b[0] != string(types.ApplyPatchType) {
		t.Errorf("writes to an object already applied: %v, want the apply alone", b)
	}
}

// TestAKindTheServerRefusesAsWrittenIsCreatedThroughItsType: the schema of
// SecurityContextConstraints requires fields that may be null, which a
// manifest may leave out and the Go type always sends. For a kind not
// known to need it, the first such create is refused and made through the
// type; the next of the kind goes through the type at once.
func TestAKindTheServerRefusesAsWrittenIsCreatedThroughItsType(t *testing.T) {
	if creates := sccCreates(t, true); !reflect.DeepEqual(creates, []string{"one refused", "one typed", "two typed"}) {
		t.Errorf("creates %v, want one refused then typed, and two typed at once", creates)
	}
}

// SecurityContextConstraints, as ClusterOperators, are known to need it:
// no create of them is refused.
func TestTheKindsKnownToNeedTheirTypeAreCreatedThroughItAtOnce(t *testing.T) {
	if creates := sccCreates(t, false); !reflect.DeepEqual(creates, []string{"one typed", "two typed"}) {
		t.Errorf("creates %v, want both typed at once", creates)
	}
}

// sccCreates installs two SecurityContextConstraints whose manifests lack
// a field the schema requires and says how each create went; forget makes
// the kind unknown to need its type.
func sccCreates(t *testing.T, forget bool) []string {
	t.Helper()
	sccs := schema.GroupVersionResource{Group: "security.openshift.io", Version: "v1", Resource: "securitycontextconstraints"}
	rm := meta.NewDefaultRESTMapper(nil)
	gvk := schema.GroupVersionKind{Group: "security.openshift.io", Version: "v1", Kind: "SecurityContextConstraints"}
	rm.AddSpecific(gvk, sccs, sccs, meta.RESTScopeRoot)
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{sccs: "SecurityContextConstraintsList"})
	var creates []string
	dyn.PrependReactor("create", "securitycontextconstraints", func(a clienttesting.Action) (bool, runtime.Object, error) {
		obj := a.(clienttesting.CreateActionImpl).GetObject().(*unstructured.Unstructured)
		if _, ok := obj.Object["priority"]; !ok {
			creates = append(creates, obj.GetName()+" refused")
			return true, nil, apierrors.NewInvalid(schema.GroupKind{Group: "security.openshift.io", Kind: "SecurityContextConstraints"}, obj.GetName(),
				field.ErrorList{field.Required(field.NewPath("priority"), "")})
		}
		creates = append(creates, obj.GetName()+" typed")
		return false, nil, nil
	})
	e, err := New(Config{Dynamic: dyn, Mapper: resettable{rm}, Ledger: &deletion.MemoryStore{}})
	if err != nil {
		t.Fatal(err)
	}
	// Known kinds go through the type from the first: forget it, to
	// watch an unknown kind learn.
	if forget {
		delete(e.typedCreates, payload.SCCKind)
	}
	scc := func(name string) string {
		return "apiVersion: security.openshift.io/v1\nkind: SecurityContextConstraints\nmetadata:\n  name: " + name +
			"\n  annotations:\n    include.release.openshift.io/self-managed-high-availability: \"true\"\n" +
			"allowPrivilegedContainer: false\nrunAsUser:\n  type: MustRunAsRange\n"
	}
	rel := planRelease(t, planDoc{"0000_50_a_01_one.yaml", scc("one")}, planDoc{"0000_50_a_02_two.yaml", scc("two")})
	res, err := e.Sync(context.Background(), rel, SyncOptions{Mode: graph.ModeInstall, StrictOrder: true})
	if err != nil || !res.Complete() {
		t.Fatalf("sync: %v %v", err, res.Errors)
	}
	return creates
}

// An install creates what it has never written without reading it first;
// an object already there costs a refused create, then the usual read.
func TestAnInstallCreatesWithoutReadingFirst(t *testing.T) {
	rm, dyn := fakeConfigMaps(liveCM("there", "v"))
	requests := map[string]int{}
	dyn.PrependReactor("*", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		requests[a.GetVerb()]++
		return answerApplyPatches(a)
	})
	e, err := New(Config{Dynamic: dyn, Mapper: resettable{rm}, Ledger: &deletion.MemoryStore{}})
	if err != nil {
		t.Fatal(err)
	}
	var docs []planDoc
	for i := range 5 {
		docs = append(docs, planDoc{fmt.Sprintf("0000_50_a_%02d_new.yaml", i), cmYAML(fmt.Sprintf("new-%d", i), "v")})
	}
	rel := planRelease(t, append(docs, planDoc{"0000_50_a_09_there.yaml", cmYAML("there", "v")})...)
	res, err := e.Sync(context.Background(), rel, SyncOptions{Mode: graph.ModeInstall})
	if err != nil || !res.Complete() {
		t.Fatalf("sync: %v %v", err, res.Errors)
	}
	if requests["create"] != 6 || requests["get"]+requests["list"] != 1 {
		t.Errorf("first install pass: %v; want 6 creates and one read, of the object already there", requests)
	}
	// A later install pass reads what this engine wrote, as any pass.
	clear(requests)
	if res, err := e.Sync(context.Background(), rel, SyncOptions{Mode: graph.ModeInstall}); err != nil || !res.Complete() {
		t.Fatalf("second sync: %v %v", err, res.Errors)
	}
	if requests["create"] != 0 || requests["get"]+requests["list"] == 0 {
		t.Errorf("second install pass: %v; want reads and no create", requests)
	}
}

// A resync reads two objects of a kind in one namespace by one LIST, but
// ConfigMaps, whose namespaces hold much else, one GET each up to four.
func TestAResyncListsPairsButNotPairsOfBulkData(t *testing.T) {
	rolesGVR := schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles"}
	rm := meta.NewDefaultRESTMapper([]schema.GroupVersion{{Version: "v1"}})
	rm.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	rm.Add(schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "Role"}, meta.RESTScopeNamespace)
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{configMapsGVR: "ConfigMapList", rolesGVR: "RoleList"})
	requests := map[string]int{}
	dyn.PrependReactor("*", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		requests[a.GetVerb()+" "+a.GetResource().Resource]++
		return answerApplyPatches(a)
	})
	e, err := New(Config{Dynamic: dyn, Mapper: resettable{rm}, Ledger: &deletion.MemoryStore{}})
	if err != nil {
		t.Fatal(err)
	}
	role := func(name string) string {
		return "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: " + name + "\n  namespace: ns\n  annotations:\n    include.release.openshift.io/self-managed-high-availability: \"true\"\nrules: []\n"
	}
	rel := planRelease(t,
		planDoc{"0000_50_a_01_cm.yaml", cmYAML("a", "v")}, planDoc{"0000_50_a_02_cm.yaml", cmYAML("b", "v")},
		planDoc{"0000_50_a_03_role.yaml", role("r1")}, planDoc{"0000_50_a_04_role.yaml", role("r2")})
	if res, err := e.Sync(context.Background(), rel, SyncOptions{Mode: graph.ModeInstall}); err != nil || !res.Complete() {
		t.Fatalf("install: %v %v", err, res.Errors)
	}
	clear(requests)
	if res, err := e.Sync(context.Background(), rel, SyncOptions{Mode: graph.ModeReconcile}); err != nil || !res.Complete() {
		t.Fatalf("resync: %v %v", err, res.Errors)
	}
	if requests["list roles"] != 1 || requests["get roles"] != 0 || requests["get configmaps"] != 2 || requests["list configmaps"] != 0 {
		t.Errorf("resync requests %v; want one LIST of roles and a GET per ConfigMap", requests)
	}
}
