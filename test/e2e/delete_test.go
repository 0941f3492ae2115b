package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	configclient "github.com/openshift/client-go/config/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/payload-applier/payload-applier/pkg/apply"
	"github.com/payload-applier/payload-applier/pkg/apply/deletion"
	"github.com/payload-applier/payload-applier/pkg/graph"
	"github.com/payload-applier/payload-applier/test/cluster"
)

const deleteAnnotation = `release.openshift.io/delete: "true"`

// withDelete adds the delete annotation after the include annotation.
func withDelete(manifest string) string {
	return strings.Replace(manifest, include, include+"\n    "+deleteAnnotation, 1)
}

// gadgetPayload is one operator's manifests: namespace, CRD, RBAC,
// Deployment, a custom resource and its ClusterOperator.
func gadgetPayload(ns, group, name string) map[string]string {
	return map[string]string{
		"0000_50_gadget_00_namespace.yaml": fmt.Sprintf(`
apiVersion: v1
kind: Namespace
metadata:
  name: %s
  annotations:
    %s
`, ns, include),
		"0000_50_gadget_01_crd.yaml": crd(group, "gizmos", "Gizmo"),
		"0000_50_gadget_02_rbac.yaml": fmt.Sprintf(`
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: %s
  annotations:
    %s
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
subjects:
- {kind: ServiceAccount, name: default, namespace: %s}
`, name, include, ns),
		"0000_50_gadget_03_deployment.yaml": fmt.Sprintf(`
apiVersion: apps/v1
kind: Deployment
metadata:
  name: gadget-operator
  namespace: %s
  annotations:
    %s
spec:
  replicas: 1
  selector: {matchLabels: {app: gadget}}
  template:
    metadata: {labels: {app: gadget}}
    spec:
      containers:
      - {name: operator, image: "example.com/gadget:1"}
`, ns, include),
		"0000_50_gadget_04_cr.yaml": customResource(group, "Gizmo", ns, "main"),
		"0000_50_gadget_05_clusteroperator.yaml": fmt.Sprintf(`
apiVersion: config.openshift.io/v1
kind: ClusterOperator
metadata:
  name: %s
  annotations:
    %s
spec: {}
status:
  versions:
  - {name: operator, version: "1.0.0"}
`, name, include),
	}
}

// markAvailable plays the operator: it reports the ClusterOperator Available
// at version, as a real operator would.
func markAvailable(t testing.TB, name, version string) {
	t.Helper()
	cc, err := configclient.NewForConfig(testCluster.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	co, err := cc.ConfigV1().ClusterOperators().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		co, err = cc.ConfigV1().ClusterOperators().Create(ctx, &configv1.ClusterOperator{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	now := metav1.Now()
	co.Status.Versions = []configv1.OperandVersion{{Name: "operator", Version: version}}
	co.Status.Conditions = []configv1.ClusterOperatorStatusCondition{
		{Type: configv1.OperatorAvailable, Status: configv1.ConditionTrue, LastTransitionTime: now},
		{Type: configv1.OperatorDegraded, Status: configv1.ConditionFalse, LastTransitionTime: now},
		{Type: configv1.OperatorProgressing, Status: configv1.ConditionFalse, LastTransitionTime: now},
	}
	if _, err := cc.ConfigV1().ClusterOperators().UpdateStatus(ctx, co, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestUpdateDeletesSeveralKindsInReverseOrder(t *testing.T) {
	c := newClients(t)
	ledgerNS := testCluster.CreateNamespace(t)
	e := newEngine(t, ledgerNS)
	name := uniqueName(t, "gadget")
	ns, group := name, name+".example.com"
	markAvailable(t, name, "1.0.0")

	requireComplete(t, sync(t, e, load(t, writePayload(t, "1.0.0", gadgetPayload(ns, group, name))), graph.ModeInstall))
	gizmo := schema.GroupVersionKind{Group: group, Version: "v1", Kind: "Gizmo"}
	if c.get(t, gizmo, ns, "main") == nil {
		t.Fatal("install did not create the custom resource")
	}

	v2files := gadgetPayload(ns, group, name)
	for f, body := range v2files {
		v2files[f] = withDelete(body)
	}
	v2 := load(t, writePayload(t, "1.0.1", v2files))
	mark := auditMark(t)
	res := sync(t, e, v2, graph.ModeUpdate)
	requireComplete(t, res)

	var order []string
	for _, ev := range applierAudit(t, mark, cluster.AuditFilter{Verb: "delete"}) {
		order = append(order, ev.ObjectRef.Resource)
	}
	want := []string{"clusteroperators", "gizmos", "deployments", "clusterrolebindings", "customresourcedefinitions", "namespaces"}
	if got := strings.Join(order, ","); !strings.HasPrefix(strings.Join(want, ","), got) || len(order) == 0 {
		t.Fatalf("deletes were issued in order %v, want a prefix of %v", order, want)
	}

	// Later passes, in reconcile mode, finish what the update asked for.
	for pass := 0; pass < 20 && len(res.Deletes.InProgress) > 0; pass++ {
		c.waitSettled(t, res)
		res = sync(t, e, v2, graph.ModeReconcile)
	}
	if len(res.Deletes.InProgress) > 0 {
		t.Fatalf("deletes never completed: %+v", res.Deletes.InProgress)
	}
	order = order[:0]
	for _, ev := range applierAudit(t, mark, cluster.AuditFilter{Verb: "delete"}) {
		order = append(order, ev.ObjectRef.Resource)
	}
	if got := strings.Join(order, ","); got != strings.Join(want, ",") {
		t.Fatalf("deletes over all passes were %v, want exactly %v, once each", order, want)
	}
	c.waitGone(t, namespaceGVK, "", ns)
}

// waitSettled gives terminating objects a moment between passes.
func (c *clients) waitSettled(t testing.TB, res *apply.SyncResult) {
	t.Helper()
	for _, d := range res.Deletes.InProgress {
		if d.State == deletion.InProgress && d.ID.Kind == "Namespace" {
			c.waitGone(t, namespaceGVK, "", d.ID.Name)
		}
	}
}

func heldConfigMap(ns, name string) string {
	return strings.Replace(configMap(ns, name, "x"), "  annotations:", "  finalizers: [example.com/hold]\n  annotations:", 1)
}

func TestFinalizerKeepsDeletePendingAcrossPassesAndRestarts(t *testing.T) {
	c := newClients(t)
	ns := testCluster.CreateNamespace(t)
	e := newEngine(t, ns)
	files := func(del bool) map[string]string {
		first, held := configMap(ns, "first", "x"), heldConfigMap(ns, "held")
		if del {
			first, held = withDelete(first), withDelete(held)
		}
		return map[string]string{
			"0000_50_demo_01_first.yaml": first,
			"0000_55_demo_02_held.yaml":  held,
			"0000_60_other_01_keep.yaml": configMap(ns, "keep", "x"),
		}
	}
	requireComplete(t, sync(t, e, load(t, writePayload(t, "1.0.0", files(false))), graph.ModeInstall))

	v2 := load(t, writePayload(t, "1.0.1", files(true)))
	mark := auditMark(t)
	res := sync(t, e, v2, graph.ModeUpdate)
	requireComplete(t, res) // deletes never hold the update back
	got := actions(res)
	if got["ConfigMap/"+ns+"/held"] != apply.ActionDeleteRequested || got["ConfigMap/"+ns+"/first"] != apply.ActionDeleteWaiting {
		t.Fatalf("want held delete-requested and first waiting, got %v", got)
	}
	if len(res.Deletes.InProgress) != 2 || !res.Deletes.Blocking() {
		t.Fatalf("both deletes must be in progress: %+v", res.Deletes)
	}
	held := c.get(t, configMapGVK, ns, "held")
	if held == nil || held.GetDeletionTimestamp() == nil {
		t.Fatal("the held object must be terminating")
	}

	// A new engine, as after a restart, knows the pending deletes and does
	// not issue the DELETE again while the object is terminating.
	restarted := newEngine(t, ns)
	st, err := restarted.Deletes(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.InProgress) != 2 {
		t.Fatalf("after a restart the ledger must still hold 2 pending deletes: %+v", st)
	}
	res = sync(t, restarted, v2, graph.ModeReconcile)
	if a := actions(res)["ConfigMap/"+ns+"/held"]; a != apply.ActionDeleting {
		t.Fatalf("held was %s in the restarted pass, want deleting", a)
	}
	for _, d := range res.Deletes.InProgress {
		if d.ID.Name == "held" && (len(d.Finalizers) != 1 || d.DeletionTimestamp == nil) {
			t.Errorf("the record must carry the finalizer and deletionTimestamp: %+v", d)
		}
	}

	c.removeFinalizers(t, schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, ns, "held")
	c.waitGone(t, configMapGVK, ns, "held")
	res = sync(t, restarted, v2, graph.ModeReconcile)
	if len(res.Deletes.InProgress) != 0 {
		t.Fatalf("deletes must complete once the finalizer is gone: %+v", res.Deletes.InProgress)
	}
	if c.get(t, configMapGVK, ns, "first") != nil || c.get(t, configMapGVK, ns, "keep") == nil {
		t.Fatal("first must be deleted by the later pass and keep must stay")
	}
	deletes := applierDeletes(t, mark)
	if deletes["held"] != 1 || deletes["first"] != 1 || len(deletes) != 2 {
		t.Fatalf("want exactly one DELETE each for held and first, got %v", deletes)
	}
}

// applierDeletes counts the applier's DELETE requests by object name.
func applierDeletes(t testing.TB, mark cluster.AuditMark) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, w := range applierAudit(t, mark, cluster.AuditFilter{Verb: "delete"}) {
		out[w.ObjectRef.Name]++
	}
	return out
}

func TestReappearedObjectIsReportedNotDeletedAgainByAnyRelease(t *testing.T) {
	c := newClients(t)
	ns := testCluster.CreateNamespace(t)
	e := newEngine(t, ns)
	requireComplete(t, sync(t, e, load(t, writePayload(t, "1.0.0", map[string]string{
		"0000_50_demo_01_x.yaml": configMap(ns, "x", "v"),
	})), graph.ModeInstall))
	v2 := load(t, writePayload(t, "1.0.1", map[string]string{
		"0000_50_demo_01_x.yaml": withDelete(configMap(ns, "x", "v")),
	}))
	res := sync(t, e, v2, graph.ModeUpdate)
	if a := actions(res)["ConfigMap/"+ns+"/x"]; a != apply.ActionDeleted {
		t.Fatalf("x was %s, want deleted", a)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: ns}}
	if _, err := c.kube.CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mark := auditMark(t)
	for _, mode := range []graph.Mode{graph.ModeReconcile, graph.ModeUpdate} {
		res = sync(t, e, v2, mode)
		if a := actions(res)["ConfigMap/"+ns+"/x"]; a != apply.ActionReappeared {
			t.Errorf("%s pass: x was %s, want reappeared", mode, a)
		}
	}
	if len(res.Deletes.Reappeared) != 1 || res.Deletes.Reappeared[0].ReappearedAt == nil {
		t.Errorf("the ledger must record the reappearance: %+v", res.Deletes)
	}
	// A later release that still carries the delete manifest leaves it too.
	v3 := load(t, writePayload(t, "1.0.2", map[string]string{
		"0000_50_demo_01_x.yaml": withDelete(configMap(ns, "x", "v")),
	}))
	if a := actions(sync(t, e, v3, graph.ModeUpdate))["ConfigMap/"+ns+"/x"]; a != apply.ActionReappeared {
		t.Errorf("the next release: x was %s, want reappeared", a)
	}
	if d := applierDeletes(t, mark); len(d) != 0 {
		t.Errorf("a reappeared object was deleted again: %v", d)
	}
	if c.get(t, configMapGVK, ns, "x") == nil {
		t.Error("the reappeared object must stay")
	}
}

func TestPacedDeleteDroppedByALaterReleaseIsAbandoned(t *testing.T) {
	c := newClients(t)
	ns := testCluster.CreateNamespace(t)
	e := newEngine(t, ns)
	v1 := map[string]string{
		"0000_50_demo_01_first.yaml": configMap(ns, "first", "x"),
		"0000_55_demo_02_held.yaml":  heldConfigMap(ns, "held"),
	}
	requireComplete(t, sync(t, e, load(t, writePayload(t, "1.0.0", v1)), graph.ModeInstall))
	v2 := map[string]string{
		"0000_50_demo_01_first.yaml": withDelete(configMap(ns, "first", "x")),
		"0000_55_demo_02_held.yaml":  withDelete(heldConfigMap(ns, "held")),
	}
	res := sync(t, e, load(t, writePayload(t, "1.0.1", v2)), graph.ModeUpdate)
	if actions(res)["ConfigMap/"+ns+"/first"] != apply.ActionDeleteWaiting {
		t.Fatalf("first must wait behind held: %v", actions(res))
	}
	// 1.0.2 drops both delete manifests: the issued delete is still tracked,
	// the waiting one is given up, and nothing deletes first.
	mark := auditMark(t)
	res = sync(t, e, load(t, writePayload(t, "1.0.2", map[string]string{"0000_60_other_00_x.yaml": configMap(ns, "x", "x")})), graph.ModeUpdate)
	requireComplete(t, res)
	if len(res.Deletes.InProgress) != 1 || res.Deletes.InProgress[0].ID.Name != "held" {
		t.Fatalf("only the issued delete may stay in progress: %+v", res.Deletes.InProgress)
	}
	if d := applierDeletes(t, mark); len(d) != 0 {
		t.Fatalf("a release without the delete manifest deleted %v", d)
	}
	if c.get(t, configMapGVK, ns, "first") == nil {
		t.Fatal("the abandoned object must stay")
	}
	c.removeFinalizers(t, schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, ns, "held")
	c.waitGone(t, configMapGVK, ns, "held")
	if err := e.RefreshDeletes(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st, _ := e.Deletes(context.Background(), 0); st.Blocking() {
		t.Fatalf("nothing may block once the issued delete completed: %+v", st)
	}
}

func TestNonUpdatePassesRecordNothingForObjectsTheyLeave(t *testing.T) {
	c := newClients(t)
	ns := testCluster.CreateNamespace(t)
	e := newEngine(t, ns)
	existing := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "old", Namespace: ns}}
	if _, err := c.kube.CoreV1().ConfigMaps(ns).Create(context.Background(), existing, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rel := load(t, writePayload(t, "1.0.0", map[string]string{"0000_50_demo_01_old.yaml": withDelete(configMap(ns, "old", "x"))}))
	for _, mode := range []graph.Mode{graph.ModeInstall, graph.ModeReconcile} {
		res := sync(t, e, rel, mode)
		if a := actions(res)["ConfigMap/"+ns+"/old"]; a != apply.ActionNotDeleted {
			t.Errorf("%s: old was %s, want not-deleted", mode, a)
		}
		if res.Deletes.Blocking() {
			t.Errorf("%s: an object left alone must not count as a delete in progress: %+v", mode, res.Deletes)
		}
	}
}
