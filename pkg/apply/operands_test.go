package apply

import (
	"context"
	"errors"
	"fmt"
	goruntime "runtime"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/payload-applier/payload-applier/pkg/apply/cleanup"
	"github.com/payload-applier/payload-applier/pkg/apply/deletion"
	"github.com/payload-applier/payload-applier/pkg/graph"
	"github.com/payload-applier/payload-applier/pkg/payload"
	"github.com/payload-applier/payload-applier/test/heapsample"
)

var (
	deploymentsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	crdsGVR        = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
)

// operandCluster is a fake cluster with the widgets component installed:
// its CRD, its operator's Deployment (available as given) and Widgets a/w1
// (held by a finalizer), a/w2 and b/w3. A DELETE of an object with
// finalizers only marks it terminating, as the apiserver does.
type operandCluster struct {
	dyn     *dynamicfake.FakeDynamicClient
	engine  *Engine
	deletes []string
}

func newOperandCluster(t *testing.T, available bool) *operandCluster {
	t.Helper()
	crd := liveCRD("widgets.example.com", "example.com", "widgets", "Widget", "Namespaced", "v1")
	crd.SetUID("widgets-crd")
	w1 := unstructuredOf("example.com/v1", "Widget", "a", "w1")
	w1.SetFinalizers([]string{"example.com/cleanup"})
	return newOperandClusterOf(t, available, crd, w1, unstructuredOf("example.com/v1", "Widget", "a", "w2"), unstructuredOf("example.com/v1", "Widget", "b", "w3"))
}

// Kinds the operand clusters serve beside Deployments, CRDs and Widgets.
var (
	leasesGVR          = schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}
	projectsGVR        = schema.GroupVersionResource{Group: "project.openshift.io", Version: "v1", Resource: "projects"}
	clusterOperatorGVR = schema.GroupVersionResource{Group: "config.openshift.io", Version: "v1", Resource: "clusteroperators"}
)

// newOperandClusterOf is a fake cluster holding objs and the widgets
// component's operator Deployment (available as given). A DELETE of an
// object with finalizers only marks it terminating, as the apiserver does.
func newOperandClusterOf(t *testing.T, available bool, objs ...runtime.Object) *operandCluster {
	t.Helper()
	rm := meta.NewDefaultRESTMapper([]schema.GroupVersion{{Version: "v1"}, {Group: "apps", Version: "v1"}, payload.CRDGVK.GroupVersion(), {Group: "example.com", Version: "v1"},
		leasesGVR.GroupVersion(), projectsGVR.GroupVersion(), clusterOperatorGVR.GroupVersion()})
	rm.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	rm.Add(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, meta.RESTScopeNamespace)
	rm.Add(payload.CRDGVK, meta.RESTScopeRoot)
	rm.Add(schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}, meta.RESTScopeNamespace)
	rm.Add(schema.GroupVersionKind{Group: "coordination.k8s.io", Version: "v1", Kind: "Lease"}, meta.RESTScopeNamespace)
	rm.Add(schema.GroupVersionKind{Group: "project.openshift.io", Version: "v1", Kind: "Project"}, meta.RESTScopeRoot)
	rm.Add(schema.GroupVersionKind{Group: "config.openshift.io", Version: "v1", Kind: "ClusterOperator"}, meta.RESTScopeRoot)
	op := unstructuredOf("apps/v1", "Deployment", "ns", "widget-operator")
	status := "False"
	if available {
		status = "True"
	}
	_ = unstructured.SetNestedSlice(op.Object, []any{map[string]any{"type": "Available", "status": status}}, "status", "conditions")
	c := &operandCluster{}
	c.dyn = dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		widgetsGVR: "WidgetList", deploymentsGVR: "DeploymentList", crdsGVR: "CustomResourceDefinitionList", configMapsGVR: "ConfigMapList",
		leasesGVR: "LeaseList", projectsGVR: "ProjectList", clusterOperatorGVR: "ClusterOperatorList", apiServicesGVR: "APIServiceList",
	}, append(objs, op)...)
	c.dyn.PrependReactor("delete", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		da := a.(clienttesting.DeleteActionImpl)
		c.deletes = append(c.deletes, fmt.Sprintf("%s/%s/%s", da.GetResource().Resource, da.GetNamespace(), da.GetName()))
		obj, err := c.dyn.Tracker().Get(da.GetResource(), da.GetNamespace(), da.GetName())
		if err != nil {
			return false, nil, nil
		}
		u := obj.(*unstructured.Unstructured)
		if len(u.GetFinalizers()) == 0 {
			return false, nil, nil
		}
		now := metav1.Now()
		u.SetDeletionTimestamp(&now)
		return true, nil, c.dyn.Tracker().Update(da.GetResource(), u, da.GetNamespace())
	})
	e, err := New(Config{Dynamic: c.dyn, Mapper: resettable{rm}, Ledger: &deletion.MemoryStore{}})
	if err != nil {
		t.Fatal(err)
	}
	c.engine = e
	return c
}

// liveCRD is a CRD as the apiserver shows it once it serves its API:
// names accepted, Established, serving versions (the last one stored).
func liveCRD(name, group, plural, kind, scope string, versions ...string) *unstructured.Unstructured {
	crd := unstructuredOf("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", name)
	_ = unstructured.SetNestedField(crd.Object, group, "spec", "group")
	_ = unstructured.SetNestedField(crd.Object, plural, "spec", "names", "plural")
	_ = unstructured.SetNestedField(crd.Object, kind, "spec", "names", "kind")
	_ = unstructured.SetNestedField(crd.Object, scope, "spec", "scope")
	var vs []any
	for i, v := range versions {
		vs = append(vs, map[string]any{"name": v, "served": true, "storage": i == len(versions)-1})
	}
	_ = unstructured.SetNestedSlice(crd.Object, vs, "spec", "versions")
	_ = unstructured.SetNestedField(crd.Object, plural, "status", "acceptedNames", "plural")
	_ = unstructured.SetNestedField(crd.Object, kind, "status", "acceptedNames", "kind")
	_ = unstructured.SetNestedSlice(crd.Object, []any{
		map[string]any{"type": "NamesAccepted", "status": "True"},
		map[string]any{"type": "Established", "status": "True"},
	}, "status", "conditions")
	return crd
}

func (c *operandCluster) exists(gvr schema.GroupVersionResource, ns, name string) bool {
	_, err := c.dyn.Tracker().Get(gvr, ns, name)
	return err == nil
}

// removal is release 2.0.0, which removes the widgets component; scope
// limits the cleanup to namespace a.
func removal(t *testing.T, annotations ...string) *payload.Release {
	ann := deleteAnn
	for _, a := range annotations {
		ann += "\n    " + a
	}
	rel := planRelease(t,
		planDoc{"0000_50_widgets_00_crd.yaml", "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\n  annotations:\n    " + ann + "\n"},
		planDoc{"0000_50_widgets_10_operator.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: widget-operator\n  namespace: ns\n  annotations:\n    " + deleteAnn + "\n"})
	rel.Version = "2.0.0"
	return rel
}

const (
	supportedAnn = `release.openshift.io/operand-cleanup: "Supported"`
	scopeA       = `release.openshift.io/operand-namespaces: "a"`
)

func (c *operandCluster) sync(t *testing.T, rel *payload.Release, mode graph.Mode, policy cleanup.Policy) *SyncResult {
	t.Helper()
	res, err := c.engine.Sync(context.Background(), rel, SyncOptions{Mode: mode, OperandCleanup: policy, DeleteSettle: 1})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestOperandCleanupDeletesOperandsBeforeTheOperator(t *testing.T) {
	c := newOperandCluster(t, true)
	rel := removal(t, supportedAnn, scopeA)

	res := c.sync(t, rel, graph.ModeUpdate, cleanup.PolicyDelete)
	if len(res.Cleanups) != 1 || res.Cleanups[0].State != cleanup.Running || res.Cleanups[0].Total() != 1 {
		t.Fatalf("cleanups %+v, want one running, waiting for w1", res.Cleanups)
	}
	if got := strings.Join(c.deletes, " "); got != "widgets/a/w1 widgets/a/w2" {
		t.Fatalf("DELETEs %q, want the in-scope Widgets only, and nothing of the component yet", got)
	}
	if !c.exists(deploymentsGVR, "ns", "widget-operator") || !c.exists(widgetsGVR, "b", "w3") {
		t.Fatal("the operator and the out-of-scope Widget must stay")
	}
	if msg := res.Objects[1].Message; !strings.Contains(msg, "waiting for operator to finish cleanup for 1 CRs") {
		t.Errorf("the operator's delete task says %q", msg)
	}

	t.Log("a later pass, in any mode, carries the cleanup on without deleting a terminating Widget again")
	c.deletes = nil
	c.sync(t, rel, graph.ModeReconcile, cleanup.PolicyDelete)
	if len(c.deletes) != 0 {
		t.Fatalf("DELETEs %v, want none while w1 terminates", c.deletes)
	}

	t.Log("once the operator has finished w1, the component goes: the gate is open")
	if err := c.dyn.Tracker().Delete(widgetsGVR, "a", "w1"); err != nil {
		t.Fatal(err)
	}
	res = c.sync(t, rel, graph.ModeReconcile, cleanup.PolicyDelete)
	if res.Cleanups[0].State != cleanup.Completed || c.exists(deploymentsGVR, "ns", "widget-operator") || c.exists(crdsGVR, "", "widgets.example.com") {
		t.Fatalf("cleanup %+v, deletes %v: want the operator and the CRD deleted once the operands are gone", res.Cleanups[0], c.deletes)
	}
	if !c.exists(widgetsGVR, "b", "w3") {
		t.Fatal("the Widget outside the scope must stay")
	}
}

func TestOperandCleanupNeedsBothKeys(t *testing.T) {
	for name, tc := range map[string]struct {
		annotations []string
		policy      cleanup.Policy
	}{
		"no Supported on the CRD": {nil, cleanup.PolicyDelete},
		"the admin's Orphan":      {[]string{supportedAnn}, cleanup.PolicyOrphan},
		"no admin policy":         {[]string{supportedAnn}, ""},
	} {
		t.Run(name, func(t *testing.T) {
			c := newOperandCluster(t, true)
			res := c.sync(t, removal(t, tc.annotations...), graph.ModeUpdate, tc.policy)
			for _, d := range c.deletes {
				if strings.HasPrefix(d, "widgets/") {
					t.Errorf("an operand was deleted without both keys: %s", d)
				}
			}
			if len(res.Cleanups) != 0 || c.exists(deploymentsGVR, "ns", "widget-operator") {
				t.Errorf("cleanups %+v: the removal must proceed as without the feature", res.Cleanups)
			}
		})
	}
}

func TestOperandCleanupWaitsForAnAvailableOperator(t *testing.T) {
	c := newOperandCluster(t, false)
	res := c.sync(t, removal(t, supportedAnn), graph.ModeUpdate, cleanup.PolicyDelete)
	if rec := res.Cleanups[0]; rec.State != cleanup.Waiting || !strings.Contains(rec.Message, "is not Available") || len(c.deletes) != 0 {
		t.Fatalf("cleanup %+v, deletes %v: want a wait and nothing deleted", rec, c.deletes)
	}
}

func TestOperandCleanupAbortsWhenTheAdminSwitchesToOrphan(t *testing.T) {
	c := newOperandCluster(t, true)
	rel := removal(t, supportedAnn)
	c.sync(t, rel, graph.ModeUpdate, cleanup.PolicyDelete)
	res := c.sync(t, rel, graph.ModeReconcile, cleanup.PolicyOrphan)
	if rec := res.Cleanups[0]; rec.State != cleanup.Aborted || !strings.Contains(rec.Message, "no guarantee") {
		t.Fatalf("cleanup %+v, want aborted", rec)
	}
	if c.exists(deploymentsGVR, "ns", "widget-operator") {
		t.Fatal("an aborted cleanup opens the gate: the removal proceeds")
	}
}

func TestOperandCleanupSkipsWhatARuleForbids(t *testing.T) {
	user := planDoc{"0000_70_user_00_widget.yaml", "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: kept\n  namespace: a\n"}
	for name, tc := range map[string]struct {
		rel      func(t *testing.T) *payload.Release
		rollback bool
		rule     string
	}{
		"rule 3: another manifest still uses the kind": {func(t *testing.T) *payload.Release {
			rel := removal(t, supportedAnn)
			m := planRelease(t, user).Manifests[0]
			m.Index = len(rel.Manifests)
			rel.Manifests = append(rel.Manifests, m)
			return rel
		}, false, "rule 3"},
		"rule 4: a rollback": {func(t *testing.T) *payload.Release { return removal(t, supportedAnn) }, true, "rule 4 (NotReplaced): the update is a rollback"},
	} {
		t.Run(name, func(t *testing.T) {
			c := newOperandCluster(t, true)
			res, err := c.engine.Sync(context.Background(), tc.rel(t), SyncOptions{Mode: graph.ModeUpdate, OperandCleanup: cleanup.PolicyDelete, Rollback: tc.rollback, DeleteSettle: 1})
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range c.deletes {
				if strings.HasPrefix(d, "widgets/") {
					t.Errorf("a skipped cleanup deleted %s", d)
				}
			}
			if len(res.Cleanups) != 1 || res.Cleanups[0].State != cleanup.Skipped || !strings.Contains(strings.Join(res.Cleanups[0].Skips, " "), tc.rule) {
				t.Errorf("cleanups %+v, want skipped naming %s", res.Cleanups, tc.rule)
			}
		})
	}
}

// TestAdmitOperand covers each rule of the one delete gate for an operand
// cleanup's DELETE.
func TestAdmitOperand(t *testing.T) {
	e, err := New(Config{Dynamic: dynamicfake.NewSimpleDynamicClient(runtime.NewScheme()), Mapper: resettable{meta.NewDefaultRESTMapper(nil)}, Ledger: &deletion.MemoryStore{}})
	if err != nil {
		t.Fatal(err)
	}
	widgets := cleanupCRD{CRD: cleanup.CRD{Name: "widgets.example.com", Namespaces: []string{"a"}}, uid: "crd-1",
		api: crdAPI{gvr: schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}, kind: "Widget"}}
	leases := cleanupCRD{CRD: cleanup.CRD{Name: "leases.coordination.k8s.io"}, uid: "crd-2",
		api: crdAPI{gvr: schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}, kind: "Lease"}}
	cos := cleanupCRD{CRD: cleanup.CRD{Name: "clusteroperators.config.openshift.io"}, uid: "crd-3",
		api: crdAPI{gvr: schema.GroupVersionResource{Group: "config.openshift.io", Version: "v1", Resource: "clusteroperators"}, kind: "ClusterOperator"}}
	marked := map[payload.ObjectID]bool{crdID(widgets.Name): true, crdID(leases.Name): true, crdID(cos.Name): true}
	claimed := func(uid types.UID, state deletion.State) {
		for _, crd := range []cleanupCRD{widgets, leases, cos} {
			e.ledger.Set(deletion.Record{ID: crdID(crd.Name), State: state, UID: uid})
		}
	}
	widget := func(ns, name string) payload.ObjectID {
		return payload.ObjectID{Group: "example.com", Kind: "Widget", Namespace: ns, Name: name}
	}
	for _, tc := range []struct {
		name   string
		marked map[payload.ObjectID]bool
		policy cleanup.Policy
		uid    types.UID
		state  deletion.State
		crd    cleanupCRD
		id     payload.ObjectID
		refuse string
	}{
		{"an in-scope operand of the claimed CRD", marked, cleanup.PolicyDelete, "crd-1", deletion.Pending, widgets, widget("a", "w"), ""},
		{"while the CRD's delete is in progress", marked, cleanup.PolicyDelete, "crd-1", deletion.InProgress, widgets, widget("a", "w"), ""},
		{"without the admin's Delete", marked, cleanup.PolicyOrphan, "crd-1", deletion.Pending, widgets, widget("a", "w"), "policy is not Delete"},
		{"when the release keeps the CRD", nil, cleanup.PolicyDelete, "crd-1", deletion.Pending, widgets, widget("a", "w"), "does not delete its CRD"},
		{"a CRD re-created after its delete", marked, cleanup.PolicyDelete, "crd-1", deletion.Completed, widgets, widget("a", "w"), "its delete completed"},
		{"a CRD replaced since the claim", marked, cleanup.PolicyDelete, "crd-0", deletion.Pending, widgets, widget("a", "w"), "is not the one release"},
		{"a claim without a UID", marked, cleanup.PolicyDelete, "", deletion.Pending, widgets, widget("a", "w"), "is not the one release"},
		{"outside the scope", marked, cleanup.PolicyDelete, "crd-1", deletion.Pending, widgets, widget("b", "w"), "outside the cleanup scope"},
		{"another kind", marked, cleanup.PolicyDelete, "crd-1", deletion.Pending, widgets, payload.ObjectID{Kind: "ConfigMap", Namespace: "a", Name: "w"}, "not of kind Widget"},
		{"a protected object", marked, cleanup.PolicyDelete, "crd-1", deletion.Pending, widgets, payload.ObjectID{Group: "config.openshift.io", Kind: "ClusterVersion", Name: "version"}, "the ClusterVersion the applier reports on"},
		{"a built-in API a CRD shadows", marked, cleanup.PolicyDelete, "crd-2", deletion.Pending, leases, payload.ObjectID{Group: "coordination.k8s.io", Kind: "Lease", Namespace: "a", Name: "l"}, "is a built-in API"},
		{"an operand of a protected CRD", marked, cleanup.PolicyDelete, "crd-3", deletion.Pending, cos, payload.ObjectID{Group: "config.openshift.io", Kind: "ClusterOperator", Name: "etcd"}, "behind the applier's own status"},
	} {
		claimed(tc.uid, tc.state)
		p := &pass{e: e, rel: &payload.Release{Version: "2.0.0"}, marked: tc.marked, opts: SyncOptions{OperandCleanup: tc.policy}}
		err := p.admit(deleteRequest{id: tc.id, operand: &tc.crd})
		var te *TaskError
		switch {
		case tc.refuse == "" && err != nil:
			t.Errorf("%s: refused (%v), want admitted", tc.name, err)
		case tc.refuse != "" && (!errors.As(err, &te) || te.Reason != ReasonDeletionRefused || !strings.Contains(err.Error(), tc.refuse)):
			t.Errorf("%s: %v, want a refusal saying %q", tc.name, err, tc.refuse)
		}
	}
}

func TestPlanShowsTheCleanupGate(t *testing.T) {
	plan := PlanOffline(removal(t, supportedAnn, scopeA), PlanOptions{Mode: graph.ModeUpdate})
	var gated []string
	for _, a := range plan.Actions {
		if strings.Contains(a.Reason, "behind the operand cleanup gate of component widgets") {
			gated = append(gated, a.Manifest.File)
			if !strings.Contains(a.Reason, "widgets.example.com in a") {
				t.Errorf("the gate note lacks the CRD and its scope: %s", a.Reason)
			}
		}
	}
	if len(gated) != 1 || gated[0] != "0000_50_widgets_10_operator.yaml" {
		t.Errorf("gate noted on %v, want the first delete of the chain, the operator", gated)
	}
}

func TestAReconcileStartsNoOperandCleanup(t *testing.T) {
	for _, mode := range []graph.Mode{graph.ModeReconcile, graph.ModeInstall} {
		c := newOperandCluster(t, true)
		res := c.sync(t, removal(t, supportedAnn), mode, cleanup.PolicyDelete)
		if len(res.Cleanups) != 0 || len(c.deletes) != 0 {
			t.Errorf("%s: cleanups %+v, deletes %v; want none", mode, res.Cleanups, c.deletes)
		}
	}
}

// BenchmarkOperandCleanupGate is one update pass whose gate deletes
// 10,000 Widgets of a removed component, none held by a finalizer, on a
// fake cluster: the engine's own cost. peak-heap-MB samples the heap
// during the pass.
//
//	go test -run '^$' -bench BenchmarkOperandCleanupGate -benchmem ./pkg/apply/
func BenchmarkOperandCleanupGate(b *testing.B) {
	const operands = 10000
	t := &testing.T{}
	var peak uint64
	for b.Loop() {
		b.StopTimer()
		c := newOperandCluster(t, true)
		for i := range operands {
			w := unstructuredOf("example.com/v1", "Widget", fmt.Sprintf("ns%d", i%10), fmt.Sprintf("w%05d", i))
			if err := c.dyn.Tracker().Add(w); err != nil {
				b.Fatal(err)
			}
		}
		if err := c.dyn.Tracker().Delete(widgetsGVR, "a", "w1"); err != nil {
			b.Fatal(err)
		}
		rel := removal(t, supportedAnn)
		goruntime.GC()
		stop := heapsample.Peak(&peak)
		b.StartTimer()
		res, err := c.engine.Sync(context.Background(), rel, SyncOptions{Mode: graph.ModeUpdate, OperandCleanup: cleanup.PolicyDelete, DeleteSettle: 1})
		b.StopTimer()
		stop()
		if err != nil || res.Cleanups[0].State != cleanup.Completed {
			b.Fatalf("cleanup %+v, err %v", res.Cleanups, err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
}
