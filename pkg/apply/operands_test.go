package apply

import (
	"context"
	"fmt"
	goruntime "runtime"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
	rm := meta.NewDefaultRESTMapper([]schema.GroupVersion{{Version: "v1"}, {Group: "apps", Version: "v1"}, crdGVK.GroupVersion(), {Group: "example.com", Version: "v1"}})
	rm.Add(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, meta.RESTScopeNamespace)
	rm.Add(crdGVK, meta.RESTScopeRoot)
	rm.Add(schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}, meta.RESTScopeNamespace)
	crd := unstructuredOf("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "widgets.example.com")
	_ = unstructured.SetNestedField(crd.Object, "example.com", "spec", "group")
	_ = unstructured.SetNestedField(crd.Object, "widgets", "spec", "names", "plural")
	_ = unstructured.SetNestedField(crd.Object, "Widget", "spec", "names", "kind")
	_ = unstructured.SetNestedField(crd.Object, "Namespaced", "spec", "scope")
	_ = unstructured.SetNestedSlice(crd.Object, []any{map[string]any{"name": "v1", "served": true, "storage": true}}, "spec", "versions")
	op := unstructuredOf("apps/v1", "Deployment", "ns", "widget-operator")
	status := "False"
	if available {
		status = "True"
	}
	_ = unstructured.SetNestedSlice(op.Object, []any{map[string]any{"type": "Available", "status": status}}, "status", "conditions")
	w1 := unstructuredOf("example.com/v1", "Widget", "a", "w1")
	w1.SetFinalizers([]string{"example.com/cleanup"})
	objs := []runtime.Object{crd, op, w1, unstructuredOf("example.com/v1", "Widget", "a", "w2"), unstructuredOf("example.com/v1", "Widget", "b", "w3")}
	c := &operandCluster{}
	c.dyn = dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		widgetsGVR: "WidgetList", deploymentsGVR: "DeploymentList", crdsGVR: "CustomResourceDefinitionList", configMapsGVR: "ConfigMapList",
	}, objs...)
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

func TestCheckOperandDeletable(t *testing.T) {
	e, err := New(Config{Dynamic: dynamicfake.NewSimpleDynamicClient(runtime.NewScheme()), Mapper: resettable{meta.NewDefaultRESTMapper(nil)}, Ledger: &deletion.MemoryStore{}})
	if err != nil {
		t.Fatal(err)
	}
	crd := cleanup.CRD{Name: "widgets.example.com", Namespaces: []string{"a"}}
	marked := map[payload.ObjectID]bool{{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition", Name: crd.Name}: true}
	widget := func(ns, name string) payload.ObjectID {
		return payload.ObjectID{Group: "example.com", Kind: "Widget", Namespace: ns, Name: name}
	}
	for _, tc := range []struct {
		name    string
		marked  map[payload.ObjectID]bool
		policy  cleanup.Policy
		id      payload.ObjectID
		allowed bool
	}{
		{"an in-scope operand", marked, cleanup.PolicyDelete, widget("a", "w"), true},
		{"without the admin's Delete", marked, cleanup.PolicyOrphan, widget("a", "w"), false},
		{"when the release keeps the CRD", nil, cleanup.PolicyDelete, widget("a", "w"), false},
		{"outside the scope", marked, cleanup.PolicyDelete, widget("b", "w"), false},
		{"another kind", marked, cleanup.PolicyDelete, payload.ObjectID{Kind: "ConfigMap", Namespace: "a", Name: "w"}, false},
		{"a protected object", marked, cleanup.PolicyDelete, payload.ObjectID{Group: "config.openshift.io", Kind: "ClusterVersion", Name: "version"}, false},
	} {
		err := e.checkOperandDeletable(tc.marked, tc.policy, crd, "example.com", "Widget", tc.id)
		if (err == nil) != tc.allowed {
			t.Errorf("%s: allowed=%v (%v), want %v", tc.name, err == nil, err, tc.allowed)
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
