package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	configclient "github.com/openshift/client-go/config/clientset/versioned"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/payload-applier/payload-applier/test/cluster"
)

// widgetComponent is the component "widgets": its CRD, a group of its own
// per test, and its operator's Deployment in ns. The Deployment has no
// replicas, so kube-controller-manager reads it Available without pods.
type widgetComponent struct {
	ns, group, crd string
	gvr            schema.GroupVersionResource
}

func newWidgetComponent(t *testing.T, ns string) widgetComponent {
	group := uniqueName(t, "e2e") + ".example.com"
	return widgetComponent{ns: ns, group: group, crd: "widgets." + group,
		gvr: schema.GroupVersionResource{Group: group, Version: "v1", Resource: "widgets"}}
}

func (w widgetComponent) crdManifest(annotations ...string) string {
	ann := "    " + include
	for _, a := range annotations {
		ann += "\n    " + a
	}
	return fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: %s
  annotations:
%s
spec:
  group: %s
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`, w.crd, ann, w.group)
}

func (w widgetComponent) operatorManifest(annotations ...string) string {
	ann := "    " + include
	for _, a := range annotations {
		ann += "\n    " + a
	}
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: widget-operator
  namespace: %s
  annotations:
%s
spec:
  replicas: 0
  selector: {matchLabels: {app: widget-operator}}
  template:
    metadata: {labels: {app: widget-operator}}
    spec:
      containers: [{name: operator, image: example.com/widget-operator:1}]
`, w.ns, ann)
}

// releases writes 1.0.0, which installs the component, and 1.0.1, which
// removes it with the given annotations on the CRD's delete manifest.
func (w widgetComponent) releases(t *testing.T, crdAnnotations ...string) (string, string) {
	v100 := writePayload(t, "1.0.0", map[string]string{
		"0000_50_widgets_00_crd.yaml": w.crdManifest(), "0000_50_widgets_10_operator.yaml": w.operatorManifest()})
	del := append([]string{`release.openshift.io/delete: "true"`}, crdAnnotations...)
	v101 := writePayload(t, "1.0.1", map[string]string{
		"0000_50_widgets_00_crd.yaml":      w.crdManifest(del...),
		"0000_50_widgets_10_operator.yaml": w.operatorManifest(`release.openshift.io/delete: "true"`)})
	return v100, v101
}

// install applies v100, which installs the component, and frees every
// Widget when the test ends so that its CRD can go.
func (w widgetComponent) install(t *testing.T, bin string, c *clients, v100 string) {
	t.Helper()
	if code, stdout, stderr := runCLI(t, bin, "apply", "--payload", v100); code != 0 {
		t.Fatalf("install: exit %d\n%s\n%s", code, stdout, stderr)
	}
	t.Cleanup(func() { w.releaseAll(t, c) })
}

// createWidget creates a Widget, held by the operator's finalizer when held.
func (w widgetComponent) createWidget(t *testing.T, c *clients, ns, name string, held bool) {
	t.Helper()
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion(w.group + "/v1")
	obj.SetKind("Widget")
	obj.SetNamespace(ns)
	obj.SetName(name)
	if held {
		obj.SetFinalizers([]string{"example.com/widget-cleanup"})
	}
	createWhenServed(t, c, w.gvr, obj)
}

// runOperator plays the component's operator: while its Deployment
// exists, it finishes every terminating Widget by removing its finalizer.
func (w widgetComponent) runOperator(t *testing.T, c *clients) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		_ = wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			if _, err := c.kube.AppsV1().Deployments(w.ns).Get(ctx, "widget-operator", metav1.GetOptions{}); err != nil {
				return false, nil
			}
			list, err := c.dynamic.Resource(w.gvr).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, nil
			}
			for _, item := range list.Items {
				if item.GetDeletionTimestamp() != nil && len(item.GetFinalizers()) > 0 {
					_, _ = c.dynamic.Resource(w.gvr).Namespace(item.GetNamespace()).Patch(ctx, item.GetName(), types.MergePatchType,
						[]byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
				}
			}
			return false, nil
		})
	}()
}

// releaseAll removes the finalizers the test left, so the CRD can go.
func (w widgetComponent) releaseAll(t *testing.T, c *clients) {
	list, err := c.dynamic.Resource(w.gvr).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return
	}
	for _, item := range list.Items {
		c.removeFinalizers(t, w.gvr, item.GetNamespace(), item.GetName())
	}
}

func setCleanupPolicy(t *testing.T, policy string) {
	t.Helper()
	cc, err := configclient.NewForConfig(testCluster.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{"payload-applier.io/operand-cleanup": policy}}})
	if _, err := cc.ConfigV1().ClusterVersions().Patch(context.Background(), "version", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// applyUntil applies dir until done holds, at most ten passes.
func applyUntil(t *testing.T, bin, dir string, done func() bool) {
	t.Helper()
	for range 10 {
		if code, stdout, stderr := runCLI(t, bin, "apply", "--payload", dir); code != 0 {
			t.Fatalf("apply %s: exit %d\n%s\n%s", dir, code, stdout, stderr)
		}
		if done() {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("applying %s ten times did not finish", dir)
}

func TestOperandCleanupDeletesOperandsBeforeTheirOperator(t *testing.T) {
	bin, c, ns := newCLITest(t)
	other := testCluster.CreateNamespace(t)
	w := newWidgetComponent(t, ns)
	v100, v101 := w.releases(t, `release.openshift.io/operand-cleanup: "Supported"`, fmt.Sprintf(`release.openshift.io/operand-namespaces: %q`, ns))
	w.install(t, bin, c, v100)
	for i := range 3 {
		w.createWidget(t, c, ns, fmt.Sprintf("w%d", i), true)
	}
	w.createWidget(t, c, other, "outside", false)
	w.runOperator(t, c)
	setCleanupPolicy(t, "Delete")

	mark := auditMark(t)
	applyUntil(t, bin, v101, func() bool { return c.get(t, crdGVKOf(), "", w.crd) == nil })

	// ResponseComplete carries the request's body, with its preconditions.
	deletes := applierAudit(t, mark, cluster.AuditFilter{Stage: cluster.AuditStageResponseComplete, Verb: "delete"})
	operatorAt, widgets := -1, 0
	for i, d := range deletes {
		switch {
		case d.ObjectRef.Resource == "deployments" && d.ObjectRef.Name == "widget-operator":
			operatorAt = i
		case d.ObjectRef.Resource == "widgets" && d.ObjectRef.Namespace == other:
			t.Errorf("the Widget outside the cleanup's scope was deleted by the applier: %s", d)
		case d.ObjectRef.Resource == "widgets":
			widgets++
			if operatorAt >= 0 {
				t.Errorf("Widget %s was deleted after the operator", d.ObjectRef.Name)
			}
			if !strings.Contains(string(d.RequestObject), `"uid"`) {
				t.Errorf("the DELETE of %s carries no UID precondition: %s", d.ObjectRef.Name, d.RequestObject)
			}
		}
	}
	if widgets != 3 || operatorAt < 0 {
		t.Fatalf("%d Widget DELETEs and the operator's at %d; want the three in scope, then the operator:\n%v", widgets, operatorAt, deletes)
	}
	cv := clusterVersion(t)
	wantE2ECondition(t, cv, "OperandCleanup", "False", "OperandCleanupCompleted", "component widgets completed")
}

func TestWithoutOptInTheCRDWedgesAndOnlyMarkedObjectsGo(t *testing.T) {
	bin, c, ns := newCLITest(t)
	w := newWidgetComponent(t, ns)
	v100, v101 := w.releases(t, `release.openshift.io/operand-cleanup: "Supported"`)
	w.install(t, bin, c, v100)
	w.createWidget(t, c, ns, "held", true)
	w.runOperator(t, c)
	// The payload supports it; the admin never opted in.
	mark := auditMark(t)
	applyUntil(t, bin, v101, func() bool {
		crd := c.get(t, crdGVKOf(), "", w.crd)
		return crd != nil && crd.GetDeletionTimestamp() != nil
	})
	if _, err := c.kube.AppsV1().Deployments(ns).Get(context.Background(), "widget-operator", metav1.GetOptions{}); err == nil {
		t.Fatal("the operator must be deleted as without the feature")
	}
	time.Sleep(time.Second)
	if crd := c.get(t, crdGVKOf(), "", w.crd); crd == nil {
		t.Fatal("the CRD must wedge in Terminating: its operand's finalizer has nobody to run it")
	}
	for _, d := range applierWrites(t, mark) {
		if d.Verb == "delete" && d.ObjectRef.Resource == "widgets" {
			t.Errorf("an operand was deleted without the admin's opt-in: %s", d)
		}
	}
	if c := findCondition(clusterVersion(t), "OperandCleanup"); c != nil {
		t.Errorf("no cleanup ran, yet OperandCleanup = %+v", c)
	}
}

func TestSwitchingToOrphanAbortsTheCleanup(t *testing.T) {
	bin, c, ns := newCLITest(t)
	w := newWidgetComponent(t, ns)
	v100, v101 := w.releases(t, `release.openshift.io/operand-cleanup: "Supported"`)
	w.install(t, bin, c, v100)
	w.createWidget(t, c, ns, "held", true) // no operator runs: it stays held
	setCleanupPolicy(t, "Delete")
	if code, stdout, stderr := runCLI(t, bin, "apply", "--payload", v101); code != 0 {
		t.Fatalf("apply: exit %d\n%s\n%s", code, stdout, stderr)
	}
	cv := clusterVersion(t)
	wantE2ECondition(t, cv, "OperandCleanup", "True", "WaitingOnCleanup", "waiting for operator to finish cleanup for 1 CRs")
	if u := findCondition(cv, "Upgradeable"); u == nil || u.Status != "False" || !strings.Contains(u.Message, "operand cleanup runs for widgets (1 CRs left)") {
		t.Errorf("Upgradeable = %+v, want False naming the cleanup", u)
	}
	if _, err := c.kube.AppsV1().Deployments(ns).Get(context.Background(), "widget-operator", metav1.GetOptions{}); err != nil {
		t.Fatalf("the operator must outlive its operands: %v", err)
	}

	setCleanupPolicy(t, "Orphan")
	applyUntil(t, bin, v101, func() bool {
		_, err := c.kube.AppsV1().Deployments(ns).Get(context.Background(), "widget-operator", metav1.GetOptions{})
		return err != nil
	})
	wantE2ECondition(t, clusterVersion(t), "OperandCleanup", "False", "OperandCleanupAborted", "no guarantee")
}

func crdGVKOf() schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}
}

func TestHeldOperandsAreListedBoundedBlockMinorUpdatesAndStall(t *testing.T) {
	bin, c, ns := newCLITest(t)
	w := newWidgetComponent(t, ns)
	v100, v101 := w.releases(t, `release.openshift.io/operand-cleanup: "Supported"`)
	removal := map[string]string{
		"0000_50_widgets_00_crd.yaml":      w.crdManifest(`release.openshift.io/delete: "true"`, `release.openshift.io/operand-cleanup: "Supported"`),
		"0000_50_widgets_10_operator.yaml": w.operatorManifest(`release.openshift.io/delete: "true"`)}
	v102, v110 := writePayload(t, "1.0.2", removal), writePayload(t, "1.1.0", removal)
	w.install(t, bin, c, v100)
	for i := range 25 {
		w.createWidget(t, c, ns, fmt.Sprintf("w%02d", i), true) // no operator: held for good
	}
	setCleanupPolicy(t, "Delete")
	if code, stdout, stderr := runCLI(t, bin, "apply", "--payload", v101, "--operand-cleanup-stall-after", "2s"); code != 0 {
		t.Fatalf("apply: exit %d\n%s\n%s", code, stdout, stderr)
	}
	wantE2ECondition(t, clusterVersion(t), "OperandCleanup", "True", "WaitingOnCleanup", "cleanup for 25 CRs of component widgets; remaining 25 Widget: Widget/"+ns+"/w00")
	if msg := findCondition(clusterVersion(t), "OperandCleanup").Message; !strings.Contains(msg, "and 15 more") {
		t.Errorf("the list must name 10 and count the rest: %s", msg)
	}
	started := cleanupStartedAt(t, c)

	t.Log("a minor update waits for the cleanup; a z-stream goes ahead")
	if code, stdout, stderr := runCLI(t, bin, "apply", "--payload", v110); code != 3 || !strings.Contains(stdout+stderr, "operand cleanup runs for widgets") {
		t.Fatalf("the minor update: exit %d, want 3 naming the cleanup\n%s\n%s", code, stdout, stderr)
	}
	time.Sleep(2 * time.Second)
	if code, stdout, stderr := runCLI(t, bin, "apply", "--payload", v102, "--operand-cleanup-stall-after", "2s"); code != 0 {
		t.Fatalf("the z-stream: exit %d\n%s\n%s", code, stdout, stderr)
	}

	t.Log("no progress for the stall threshold: stalled, with the start kept across processes")
	wantE2ECondition(t, clusterVersion(t), "OperandCleanup", "True", "OperandCleanupStalled", "no progress for 2s")
	if again := cleanupStartedAt(t, c); again != started {
		t.Errorf("the cleanup's start moved from %s to %s across a restart", started, again)
	}
	if _, err := c.kube.AppsV1().Deployments(ns).Get(context.Background(), "widget-operator", metav1.GetOptions{}); err != nil {
		t.Fatalf("a stalled cleanup keeps the operator: %v", err)
	}
}

// cleanupStartedAt reads the persisted start of the widgets cleanup.
func cleanupStartedAt(t *testing.T, c *clients) string {
	t.Helper()
	cm, err := c.kube.CoreV1().ConfigMaps("openshift-cluster-version").Get(context.Background(), "payload-applier-operand-cleanup", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var recs []struct {
		Component string `json:"component"`
		StartedAt string `json:"startedAt"`
	}
	if err := json.Unmarshal([]byte(cm.Data["records.json"]), &recs); err != nil || len(recs) != 1 || recs[0].StartedAt == "" {
		t.Fatalf("cleanup records %s: %v", cm.Data["records.json"], err)
	}
	return recs[0].StartedAt
}
