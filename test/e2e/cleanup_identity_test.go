package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/payload-applier/payload-applier/pkg/apply/cleanup"
	"github.com/payload-applier/payload-applier/pkg/clusterversion"
	"github.com/payload-applier/payload-applier/pkg/payload"
	"github.com/payload-applier/payload-applier/test/cluster"
)

// TestOperandCleanupLeavesACRDRecreatedMidCleanup: an update's cleanup
// deletes the Widgets of the CRD whose delete it claimed; the admin then
// frees them, deletes that CRD out of band and creates it again, with new
// Widgets. The new CRD is not the one the update claimed (another UID):
// no later pass, reconcile or z-stream, deletes any of its Widgets nor
// the CRD, and the cleanup reads Skipped, naming the replacement.
func TestOperandCleanupLeavesACRDRecreatedMidCleanup(t *testing.T) {
	bin, c, ns := newCLITest(t)
	w := newWidgetComponent(t, ns)
	v100, v101 := w.releases(t, supportedAnn)
	v102 := writePayload(t, "1.0.2", w.removalFiles())
	// Registered first, so it runs last: once the Widgets are freed.
	deleteCRDsAtEnd(t, c, w.crd)
	w.install(t, bin, c, v100)
	for i := range 2 {
		w.createWidget(t, c, ns, fmt.Sprintf("old%d", i), true) // no operator runs: held until the admin frees them
	}
	setCleanupPolicy(t, "Delete")

	t.Log("the update starts the cleanup of the CRD it claims")
	if code, stdout, stderr := runCLI(t, bin, "apply", "--payload", v101); code != 0 {
		t.Fatalf("update: exit %d\n%s\n%s", code, stdout, stderr)
	}
	wantE2ECondition(t, clusterVersion(t), "OperandCleanup", "True", "WaitingOnCleanup", "waiting for operator to finish cleanup for 2 CRs")
	for i := range 2 {
		if old := c.get(t, widgetGVK(w), ns, fmt.Sprintf("old%d", i)); old == nil || old.GetDeletionTimestamp() == nil {
			t.Fatalf("Widget old%d must be terminating once the cleanup started: %v", i, old)
		}
	}
	claimed := c.get(t, crdGVKOf(), "", w.crd)
	if claimed == nil || claimed.GetDeletionTimestamp() != nil {
		t.Fatalf("the CRD must wait, untouched, for its operands: %v", claimed)
	}

	t.Log("the admin frees the Widgets, deletes the CRD and creates it again with new Widgets")
	for i := range 2 {
		c.removeFinalizers(t, w.gvr, ns, fmt.Sprintf("old%d", i))
	}
	if err := c.dynamic.Resource(crdResource).Delete(context.Background(), w.crd, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	c.waitGone(t, crdGVKOf(), "", w.crd)
	recreateCRD(t, w.crdManifest())
	mark := auditMark(t)
	recreated := c.get(t, crdGVKOf(), "", w.crd)
	if recreated == nil || recreated.GetUID() == claimed.GetUID() {
		t.Fatalf("the CRD must be back under another UID than %s: %v", claimed.GetUID(), recreated)
	}
	w.createWidget(t, c, ns, "new-held", true)
	w.createWidget(t, c, ns, "new-free", false)

	t.Log("a reconcile of the update leaves the new CRD and its Widgets, and removes the operator")
	code, stdout, stderr := runCLI(t, bin, "apply", "--payload", v101)
	if code != 0 || !strings.Contains(stdout, "(reconcile)") {
		t.Fatalf("reconcile: exit %d\n%s\n%s", code, stdout, stderr)
	}
	replaced := fmt.Sprintf("%s: it was replaced since the update claimed its delete (uid %s, claimed %s)", w.crd, recreated.GetUID(), claimed.GetUID())
	wantE2ECondition(t, clusterVersion(t), "OperandCleanup", "False", "OperandCleanupSkipped", replaced)
	if _, err := c.kube.AppsV1().Deployments(ns).Get(context.Background(), "widget-operator", metav1.GetOptions{}); err == nil {
		t.Error("a skipped cleanup must not hold the removal: the operator is still there")
	}

	t.Log("a z-stream that still carries the delete manifests leaves them too")
	if code, stdout, stderr := runCLI(t, bin, "apply", "--payload", v102); code != 0 {
		t.Fatalf("z-stream: exit %d\n%s\n%s", code, stdout, stderr)
	}
	wantE2ECondition(t, clusterVersion(t), "OperandCleanup", "False", "OperandCleanupSkipped", replaced)
	if h := clusterVersion(t).Status.History; len(h) == 0 || h[0].Version != "1.0.2" || h[0].State != "Completed" {
		t.Errorf("the z-stream must complete: history %+v", h)
	}

	for _, d := range applierAudit(t, mark, cluster.AuditFilter{WritesOnly: true}) {
		switch r := d.ObjectRef; {
		case r == nil:
		case (d.Verb == "delete" || d.Verb == "deletecollection") && r.APIGroup == w.group && r.Resource == "widgets":
			t.Errorf("the applier deleted a Widget of the re-created CRD: %s", d)
		case d.Verb == "delete" && r.Resource == "customresourcedefinitions" && r.Name == w.crd:
			t.Errorf("the applier deleted the re-created CRD: %s", d)
		}
	}
	if crd := c.get(t, crdGVKOf(), "", w.crd); crd == nil || crd.GetUID() != recreated.GetUID() || crd.GetDeletionTimestamp() != nil {
		t.Errorf("the re-created CRD (uid %s) must stay as it is: %v", recreated.GetUID(), crd)
	}
	for _, name := range []string{"new-held", "new-free"} {
		if obj := c.get(t, widgetGVK(w), ns, name); obj == nil || obj.GetDeletionTimestamp() != nil {
			t.Errorf("Widget %s of the re-created CRD must stay: %v", name, obj)
		}
	}
}

func widgetGVK(w widgetComponent) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: w.group, Version: "v1", Kind: "Widget"}
}

// recreateCRD creates a CRD from its manifest, as an admin, and waits
// until it is served.
func recreateCRD(t testing.TB, manifest string) {
	t.Helper()
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(manifest), &obj.Object); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cluster.ApplyCRDs(ctx, testCluster.RESTConfig(), []*unstructured.Unstructured{obj}); err != nil {
		t.Fatal(err)
	}
}

// leaseShadowCRD is a CRD named for the built-in Leases: the apiserver
// accepts it (with the approval annotation its group needs), reads its
// names accepted and Established, and still serves the built-in Leases at
// coordination.k8s.io/v1 leases.
func leaseShadowCRD(annotations ...string) string {
	ann := "    " + include + "\n    api-approved.kubernetes.io: \"unapproved, test only\""
	for _, a := range annotations {
		ann += "\n    " + a
	}
	return fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: leases.coordination.k8s.io
  annotations:
%s
spec:
  group: coordination.k8s.io
  scope: Namespaced
  names: {plural: leases, singular: lease, kind: Lease, listKind: LeaseList}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`, ann)
}

// unlintedStore serves payload directories by version without rejecting
// lint errors, for payloads that slipped past release CI; the operator
// filters them for its ClusterVersion.
type unlintedStore map[string]string

func (s unlintedStore) Load(version string, _ payload.LoadOptions) (*payload.Release, error) {
	dir, ok := s[version]
	if !ok {
		return nil, fmt.Errorf("release %s is not in the store", version)
	}
	rel, _, err := payload.LoadAll(dir)
	return rel, err
}

// TestOperandCleanupOfACRDNamedForABuiltinAPIDeletesNothingOfIt: a
// component ships a CRD with the group and plural of the built-in Leases
// (lint rejects it; the payloads are given unlinted). The apiserver takes
// it, Established, yet keeps serving the built-in Leases there. When a
// release removes the component with operand cleanup Supported and the
// admin's Delete policy, the cleanup is Blocked and no Lease is deleted;
// the component's removal goes ahead, its operator and the CRD deleted.
func TestOperandCleanupOfACRDNamedForABuiltinAPIDeletesNothingOfIt(t *testing.T) {
	c := newClients(t)
	ns := testCluster.CreateNamespace(t)
	opNS := testCluster.CreateNamespace(t)
	const crdName = "leases.coordination.k8s.io"
	deleteCRDsAtEnd(t, c, crdName)
	w := widgetComponent{ns: ns} // for its operator Deployment, widget-operator in ns
	// The scope keeps a regression from reaching any Lease but the test's.
	install := writePayload(t, "1.0.0", map[string]string{
		"0000_50_leases_00_crd.yaml": leaseShadowCRD(), "0000_50_leases_10_operator.yaml": w.operatorManifest()})
	removal := writePayload(t, "1.0.1", map[string]string{
		"0000_50_leases_00_crd.yaml":      leaseShadowCRD(deleteAnn, supportedAnn, fmt.Sprintf(`release.openshift.io/operand-namespaces: %q`, ns)),
		"0000_50_leases_10_operator.yaml": w.operatorManifest(deleteAnn)})
	if _, err := payload.Load(removal, payload.DefaultLoadOptions()); err == nil || !strings.Contains(err.Error(), string(payload.RuleCRDShadowsBuiltin)) {
		t.Fatalf("lint must reject the removal for %s: %v", payload.RuleCRDShadowsBuiltin, err)
	}
	op := newOperatorOn(t, unlintedStore{"1.0.0": install, "1.0.1": removal}, uniqueName(t, "builtin"), opNS, nil, nil)
	// Its Events go to the cluster, where the test reads them.
	op.StartEvents()
	t.Cleanup(op.Shutdown)

	t.Log("install the component; its CRD is accepted and Established")
	op.request(t, "1.0.0", false)
	if out := op.sync(t); out.Result == nil || !out.Result.Complete() {
		t.Fatalf("install: %+v", out)
	}
	// Only the built-in check stands between the cleanup and the Leases.
	waitFor(t, "the CRD named for the Leases to read NamesAccepted and Established", 30*time.Second, func() bool {
		crd := c.get(t, crdGVKOf(), "", crdName)
		if crd == nil {
			return false
		}
		names, _, _ := unstructuredCondition(crd, "NamesAccepted")
		established, _, _ := unstructuredCondition(crd, "Established")
		return names == "True" && established == "True"
	})
	lease, err := c.kube.CoordinationV1().Leases(ns).Create(context.Background(), &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "holder"},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("someone"), LeaseDurationSeconds: ptr.To[int32](3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	t.Log("the admin asks for Delete; the release removes the component with Supported")
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{cleanup.PolicyAnnotation: "Delete"}}})
	if _, err := op.config.ConfigV1().ClusterVersions().Patch(context.Background(), op.name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	mark := auditMark(t)
	op.request(t, "1.0.1", false)
	var last *cleanup.Record
	for pass := 0; ; pass++ {
		out := op.sync(t)
		if out.Refused != nil || out.LoadErr != nil || out.Result == nil {
			t.Fatalf("update pass %d: %+v", pass, out)
		}
		for i := range out.Result.Cleanups {
			if out.Result.Cleanups[i].Component == "leases" {
				last = &out.Result.Cleanups[i]
			}
		}
		_, depErr := c.kube.AppsV1().Deployments(ns).Get(context.Background(), "widget-operator", metav1.GetOptions{})
		if depErr != nil && c.get(t, crdGVKOf(), "", crdName) == nil {
			break
		}
		if pass == 5 {
			t.Fatalf("after %d passes the component is not removed; cleanups %+v", pass+1, out.Result.Cleanups)
		}
		time.Sleep(500 * time.Millisecond)
	}

	for _, d := range applierAudit(t, mark, cluster.AuditFilter{WritesOnly: true, APIGroup: "coordination.k8s.io", Resource: "leases"}) {
		if d.Verb == "delete" || d.Verb == "deletecollection" {
			t.Errorf("the applier deleted a Lease: %s", d)
		}
	}
	if got, err := c.kube.CoordinationV1().Leases(ns).Get(context.Background(), "holder", metav1.GetOptions{}); err != nil || got.UID != lease.UID || got.DeletionTimestamp != nil {
		t.Errorf("the Lease must stay as it is: %v, %v", got, err)
	}
	builtin := crdName + ": leases.coordination.k8s.io is a built-in Kubernetes API (kind Lease)"
	if last == nil || last.State != cleanup.Blocked || !strings.Contains(last.SkipSummary(), builtin) {
		t.Errorf("cleanup %+v, want Blocked naming %q", last, builtin)
	}
	if recs := storedCleanups(t, c, opNS); len(recs) != 1 || recs[0].State != cleanup.Blocked || !strings.Contains(recs[0].SkipSummary(), builtin) {
		t.Errorf("stored cleanups %+v, want leases Blocked naming %q", recs, builtin)
	}
	removed := map[string]bool{}
	for _, d := range applierAudit(t, mark, cluster.AuditFilter{Verb: "delete"}) {
		switch r := d.ObjectRef; {
		case r == nil:
		case r.Resource == "deployments" && r.Namespace == ns && r.Name == "widget-operator":
			removed["operator"] = true
		case r.Resource == "customresourcedefinitions" && r.Name == crdName:
			removed["crd"] = true
		}
	}
	if !removed["operator"] || !removed["crd"] {
		t.Errorf("the applier must delete the operator and the CRD: %v", removed)
	}
	waitFor(t, "the OperandCleanupBlocked Event", 10*time.Second, func() bool {
		return eventIn(t, opNS, corev1.EventTypeWarning, cleanup.ReasonBlocked, builtin)
	})
	if cond := condition(op.clusterVersion(t), clusterversion.ConditionOperandCleanup); cond.Status != "False" || cond.Reason != cleanup.ReasonBlocked || !strings.Contains(cond.Message, builtin) {
		t.Errorf("OperandCleanup condition = %s/%s %q, want False/%s naming the built-in API", cond.Status, cond.Reason, cond.Message, cleanup.ReasonBlocked)
	}
}

// storedCleanups reads the operand cleanup records the engine keeps in ns.
func storedCleanups(t testing.TB, c *clients, ns string) []cleanup.Record {
	t.Helper()
	recs, err := cleanup.NewConfigMapStore(c.kube, ns, payload.DefaultApplier().OperandCleanup).Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// eventIn reports whether an Event of type and reason, its message holding
// fragment, was recorded in ns.
func eventIn(t testing.TB, ns, typ, reason, fragment string) bool {
	t.Helper()
	list, err := newClients(t).kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range list.Items {
		if ev.Type == typ && ev.Reason == reason && strings.Contains(ev.Message, fragment) {
			return true
		}
	}
	return false
}

// unstructuredCondition reads a status condition of obj.
func unstructuredCondition(obj *unstructured.Unstructured, typ string) (status, reason, message string) {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == typ {
			status, _ = m["status"].(string)
			reason, _ = m["reason"].(string)
			message, _ = m["message"].(string)
		}
	}
	return status, reason, message
}
