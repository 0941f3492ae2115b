package apply

import (
	"context"
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/payload-applier/payload-applier/pkg/apply/cleanup"
	"github.com/payload-applier/payload-applier/pkg/apply/deletion"
	"github.com/payload-applier/payload-applier/pkg/apply/recordstore"
	"github.com/payload-applier/payload-applier/pkg/graph"
	"github.com/payload-applier/payload-applier/pkg/payload"
)

// The tests here hold operand cleanup to the promise every other delete
// keeps: it deletes only objects of the CRD the update deletes (by UID),
// of the API that CRD serves itself, never protected ones, and its own
// state never stops a pass.

// deletesOf lists the DELETEs of c that hit resource.
func (c *operandCluster) deletesOf(resource string) []string {
	var out []string
	for _, d := range c.deletes {
		if strings.HasPrefix(d, resource+"/") {
			out = append(out, d)
		}
	}
	return out
}

// recreateWidgets replaces the widgets CRD and its Widgets, as someone
// who installs the component again would: a new CRD (uid), new objects,
// and its operator running again.
func (c *operandCluster) recreateWidgets(t *testing.T, uid string, widgets ...string) {
	t.Helper()
	tr := c.dyn.Tracker()
	if err := tr.Delete(crdsGVR, "", "widgets.example.com"); err != nil && !strings.Contains(err.Error(), "not found") {
		t.Fatal(err)
	}
	list, _ := c.dyn.Resource(widgetsGVR).List(context.Background(), metav1.ListOptions{})
	for _, w := range list.Items {
		_ = tr.Delete(widgetsGVR, w.GetNamespace(), w.GetName()) // the CRD took them with it
	}
	crd := liveCRD("widgets.example.com", "example.com", "widgets", "Widget", "Namespaced", "v1")
	crd.SetUID(types.UID(uid))
	if err := tr.Create(crdsGVR, crd, ""); err != nil {
		t.Fatal(err)
	}
	if !c.exists(deploymentsGVR, "ns", "widget-operator") {
		op := unstructuredOf("apps/v1", "Deployment", "ns", "widget-operator")
		_ = unstructured.SetNestedSlice(op.Object, []any{map[string]any{"type": "Available", "status": "True"}}, "status", "conditions")
		if err := tr.Create(deploymentsGVR, op, "ns"); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range widgets {
		if err := tr.Create(widgetsGVR, unstructuredOf("example.com/v1", "Widget", "a", name), "a"); err != nil {
			t.Fatal(err)
		}
	}
}

func zStream(t *testing.T, annotations ...string) *payload.Release {
	rel := removal(t, annotations...)
	rel.Version = "2.0.1"
	return rel
}

// TestARecreatedCRDKeepsItsObjects: once the CRD a release deletes is
// gone, a CRD created again under its name is another object. No later
// pass, z-stream or reconcile, deletes its custom resources.
func TestARecreatedCRDKeepsItsObjects(t *testing.T) {
	t.Run("deleted without a cleanup, then the admin opts in", func(t *testing.T) {
		c := newOperandCluster(t, true)
		c.sync(t, removal(t, supportedAnn), graph.ModeUpdate, cleanup.PolicyOrphan)
		if c.exists(crdsGVR, "", "widgets.example.com") {
			t.Fatal("setup: the removal of 2.0.0 must delete the CRD")
		}
		c.recreateWidgets(t, "widgets-crd-2", "n1", "n2")
		c.deletes = nil

		for _, mode := range []graph.Mode{graph.ModeUpdate, graph.ModeReconcile} {
			res := c.sync(t, zStream(t, supportedAnn), mode, cleanup.PolicyDelete)
			if d := c.deletesOf("widgets"); len(d) > 0 || !c.exists(widgetsGVR, "a", "n1") {
				t.Fatalf("%s pass deleted Widgets of the re-created CRD: %v", mode, d)
			}
			if mode == graph.ModeUpdate && (len(res.Cleanups) != 1 || res.Cleanups[0].State != cleanup.Skipped ||
				!strings.Contains(res.Cleanups[0].SkipSummary(), "created again")) {
				t.Errorf("cleanups %+v, want Skipped saying the CRD was created again", res.Cleanups)
			}
		}
		if !c.exists(crdsGVR, "", "widgets.example.com") {
			t.Error("the re-created CRD must not be deleted again")
		}
	})

	t.Run("re-created mid-cleanup", func(t *testing.T) {
		c := newOperandCluster(t, true)
		res := c.sync(t, removal(t, supportedAnn), graph.ModeUpdate, cleanup.PolicyDelete)
		if res.Cleanups[0].State != cleanup.Running {
			t.Fatalf("setup: cleanup %+v, want running on w1", res.Cleanups[0])
		}
		c.recreateWidgets(t, "widgets-crd-2", "n1")
		c.deletes = nil

		res = c.sync(t, removal(t, supportedAnn), graph.ModeReconcile, cleanup.PolicyDelete)
		if d := c.deletesOf("widgets"); len(d) > 0 {
			t.Fatalf("reconcile deleted Widgets of the replacing CRD: %v", d)
		}
		if rec := res.Cleanups[0]; rec.State != cleanup.Skipped || !strings.Contains(rec.SkipSummary(), "replaced since the update claimed its delete") {
			t.Errorf("cleanup %+v, want Skipped naming the replacement", rec)
		}
		res = c.sync(t, zStream(t, supportedAnn), graph.ModeUpdate, cleanup.PolicyDelete)
		if d := c.deletesOf("widgets"); len(d) > 0 || !c.exists(widgetsGVR, "a", "n1") || !c.exists(crdsGVR, "", "widgets.example.com") {
			t.Fatalf("the z-stream deleted the replacing CRD or its Widgets: %v", c.deletes)
		}
	})
}

// shadowCRD is a CRD named for a resource that another API serves.
func shadowCRD(name, group, plural, kind string) *unstructured.Unstructured {
	crd := liveCRD(name, group, plural, kind, "Namespaced", "v1")
	crd.SetUID("shadow-crd")
	return crd
}

// shadowRemoval removes component widgets, whose Supported CRD is crd.
func shadowRemoval(t *testing.T, crd string) *payload.Release {
	rel := planRelease(t,
		planDoc{"0000_50_widgets_00_crd.yaml", "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: " + crd + "\n  annotations:\n    " + deleteAnn + "\n    " + supportedAnn + "\n"},
		planDoc{"0000_50_widgets_10_operator.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: widget-operator\n  namespace: ns\n  annotations:\n    " + deleteAnn + "\n"})
	rel.Version = "2.0.0"
	return rel
}

// TestACRDThatShadowsAnotherAPIDeletesNothingOfIt: a removed CRD whose
// group and plural another API serves would list, and delete, that API's
// objects. The cleanup is Blocked, naming the collision, and the removal
// goes ahead: deleting the CRD itself touches no other API.
func TestACRDThatShadowsAnotherAPIDeletesNothingOfIt(t *testing.T) {
	notAccepted := liveCRD("widgets.example.com", "example.com", "widgets", "Widget", "Namespaced", "v1")
	notAccepted.SetUID("shadow-crd")
	_ = unstructured.SetNestedField(notAccepted.Object, map[string]any{}, "status", "acceptedNames")
	_ = unstructured.SetNestedSlice(notAccepted.Object, []any{map[string]any{"type": "NamesAccepted", "status": "False", "reason": "NameConflict"}}, "status", "conditions")
	apiService := unstructuredOf("apiregistration.k8s.io/v1", "APIService", "", "v1.project.openshift.io")
	_ = unstructured.SetNestedMap(apiService.Object, map[string]any{"group": "project.openshift.io", "version": "v1",
		"service": map[string]any{"namespace": "openshift-apiserver", "name": "api"}}, "spec")

	for _, tc := range []struct {
		name     string
		crd      *unstructured.Unstructured
		objects  []runtime.Object
		resource string
		why      string
	}{
		{"a built-in API", shadowCRD("leases.coordination.k8s.io", "coordination.k8s.io", "leases", "Lease"),
			[]runtime.Object{unstructuredOf("coordination.k8s.io/v1", "Lease", "a", "node-1")}, "leases", "is a built-in Kubernetes API (kind Lease)"},
		{"an aggregated API", shadowCRD("projects.project.openshift.io", "project.openshift.io", "projects", "Project"),
			[]runtime.Object{apiService, unstructuredOf("project.openshift.io/v1", "Project", "", "team-a")}, "projects", "APIService v1.project.openshift.io, backed by service openshift-apiserver/api"},
		{"names another CRD holds", notAccepted,
			[]runtime.Object{unstructuredOf("example.com/v1", "Widget", "a", "theirs")}, "widgets", "did not accept its names"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newOperandClusterOf(t, true, append(tc.objects, tc.crd)...)
			res := c.sync(t, shadowRemoval(t, tc.crd.GetName()), graph.ModeUpdate, cleanup.PolicyDelete)
			if d := c.deletesOf(tc.resource); len(d) > 0 {
				t.Fatalf("DELETEs of another API's objects: %v", d)
			}
			if len(res.Cleanups) != 1 || res.Cleanups[0].State != cleanup.Blocked || !strings.Contains(res.Cleanups[0].SkipSummary(), tc.why) {
				t.Fatalf("cleanups %+v, want Blocked saying %q", res.Cleanups, tc.why)
			}
			if c.exists(deploymentsGVR, "ns", "widget-operator") {
				t.Error("a Blocked cleanup opens the gate: the removal goes ahead")
			}
		})
	}
}

// TestAProtectedCRDsObjectsSurviveAnUnlintedPayload: lint rejects a
// payload that deletes the ClusterOperator CRD, but the engine holds the
// rule on its own: no ClusterOperator is deleted, and neither is the CRD.
func TestAProtectedCRDsObjectsSurviveAnUnlintedPayload(t *testing.T) {
	crd := liveCRD("clusteroperators.config.openshift.io", "config.openshift.io", "clusteroperators", "ClusterOperator", "Cluster", "v1")
	crd.SetUID("co-crd")
	c := newOperandClusterOf(t, true, crd, unstructuredOf("config.openshift.io/v1", "ClusterOperator", "", "etcd"))
	res := c.sync(t, shadowRemoval(t, "clusteroperators.config.openshift.io"), graph.ModeUpdate, cleanup.PolicyDelete)
	if d := append(c.deletesOf("clusteroperators"), c.deletesOf("customresourcedefinitions")...); len(d) > 0 {
		t.Fatalf("DELETEs %v of the protected CRD or its objects", d)
	}
	if len(res.Cleanups) != 1 || res.Cleanups[0].State != cleanup.Blocked || !strings.Contains(res.Cleanups[0].SkipSummary(), "behind the applier's own status") {
		t.Errorf("cleanups %+v, want Blocked naming the protection", res.Cleanups)
	}
	if res.Deletes.Refused == nil {
		t.Error("the CRD's own delete must be refused")
	}
}

// unreadableStore is a cleanup store whose ConfigMap holds data that
// cannot be decoded.
type unreadableStore struct{ saves int }

func (s *unreadableStore) Load(context.Context) ([]cleanup.Record, error) {
	return nil, &deletion.UnreadableError{Namespace: "ns", Name: "payload-applier-operand-cleanup", Key: "records.json", Err: errors.New("not a list of records")}
}

func (s *unreadableStore) Save(context.Context, []cleanup.Record) error { s.saves++; return nil }

// TestAnUnreadableCleanupStateLetsAppliesGoOn: a corrupt cleanup store
// stops no pass. Applies and other components' deletes go ahead; the
// components whose operands it is about wait, nothing of them is deleted,
// and the store is never overwritten.
func TestAnUnreadableCleanupStateLetsAppliesGoOn(t *testing.T) {
	c := newOperandCluster(t, true)
	store := &unreadableStore{}
	c.engine.cleanups = recordstore.NewLedger[cleanup.Record](store, cleanup.RecordFormat)
	rel := removal(t, supportedAnn)
	for _, d := range []planDoc{
		{"0000_40_other_00_kept.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kept\n  namespace: ns\n"},
		{"0000_40_other_01_gone.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: gone\n  namespace: ns\n  annotations:\n    " + deleteAnn + "\n"},
	} {
		m := planRelease(t, d).Manifests[0]
		m.Index = len(rel.Manifests)
		rel.Manifests = append(rel.Manifests, m)
	}
	if err := c.dyn.Tracker().Create(configMapsGVR, unstructuredOf("v1", "ConfigMap", "ns", "gone"), "ns"); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []graph.Mode{graph.ModeUpdate, graph.ModeReconcile} {
		res := c.sync(t, rel, mode, cleanup.PolicyDelete)
		if res.CleanupErr == nil || !res.Complete() {
			t.Fatalf("%s: CleanupErr %v, complete %v; want the error reported and every apply done", mode, res.CleanupErr, res.Complete())
		}
	}
	if !c.exists(configMapsGVR, "ns", "kept") || c.exists(configMapsGVR, "ns", "gone") {
		t.Error("applies and other components' deletes must go ahead")
	}
	if d := c.deletesOf("widgets"); len(d) > 0 || !c.exists(deploymentsGVR, "ns", "widget-operator") {
		t.Errorf("DELETEs %v: nothing of the component whose cleanup state is unreadable may go", c.deletes)
	}
	if store.saves != 0 {
		t.Errorf("the unreadable store was written %d times", store.saves)
	}
}

// TestALostCleanupStateIsCarriedOnFromTheLedger: an admin who deletes the
// cleanup state mid-cleanup (the repair of an unreadable one) does not
// let a reconcile remove the operator before its operands: the ledger
// shows the component's deletes claimed and none issued, so the cleanup
// goes on. A removal that went on without a cleanup starts none.
func TestALostCleanupStateIsCarriedOnFromTheLedger(t *testing.T) {
	c := newOperandCluster(t, true)
	rel := removal(t, supportedAnn)
	if res := c.sync(t, rel, graph.ModeUpdate, cleanup.PolicyDelete); res.Cleanups[0].State != cleanup.Running {
		t.Fatalf("setup: cleanup %+v, want running on w1", res.Cleanups[0])
	}
	c.engine.cleanups = recordstore.NewLedger[cleanup.Record](&cleanup.MemoryStore{}, cleanup.RecordFormat)
	res := c.sync(t, rel, graph.ModeReconcile, cleanup.PolicyDelete)
	if !c.exists(deploymentsGVR, "ns", "widget-operator") {
		t.Fatal("the operator was deleted while its operand w1 still terminates")
	}
	if len(res.Cleanups) != 1 || res.Cleanups[0].State != cleanup.Running || res.Cleanups[0].Total() != 1 {
		t.Errorf("cleanups %+v, want the cleanup running again on w1", res.Cleanups)
	}

	t.Log("a removal that went ahead under Orphan starts no cleanup once the admin says Delete, though its CRD still terminates")
	c = newOperandCluster(t, true)
	crd, err := c.dyn.Tracker().Get(crdsGVR, "", "widgets.example.com")
	if err != nil {
		t.Fatal(err)
	}
	held := crd.(*unstructured.Unstructured)
	held.SetFinalizers([]string{"customresourcecleanup.apiextensions.k8s.io"})
	if err := c.dyn.Tracker().Update(crdsGVR, held, ""); err != nil {
		t.Fatal(err)
	}
	c.sync(t, rel, graph.ModeUpdate, cleanup.PolicyOrphan)
	c.deletes = nil
	if res := c.sync(t, rel, graph.ModeReconcile, cleanup.PolicyDelete); len(res.Cleanups) != 0 || len(c.deletesOf("widgets")) != 0 {
		t.Errorf("cleanups %+v, DELETEs %v: want none", res.Cleanups, c.deletes)
	}
}
