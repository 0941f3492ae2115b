package e2e

import (
	"context"
	"fmt"
	goruntime "runtime"
	"strings"
	gosync "sync"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/payload-applier/payload-applier/pkg/graph"
	"github.com/payload-applier/payload-applier/test/cluster"
	"github.com/payload-applier/payload-applier/test/heapsample"
)

// crdVersion is one entry of a test CRD's spec.versions; schema is the
// openAPIV3Schema's spec property as JSON.
type crdVersion struct {
	name            string
	served, storage bool
	spec            string
}

const (
	sizeSpec          = `{"type":"object","properties":{"size":{"type":"string"}}}`
	sizeAndColorSpec  = `{"type":"object","required":["color"],"properties":{"size":{"type":"string"},"color":{"type":"string"}}}`
	colorDefaultsSpec = `{"type":"object","required":["color"],"properties":{"size":{"type":"string"},"color":{"type":"string","default":"blue"}}}`
)

// gadgetCRD writes the CRD gadgets.<group> with versions; JSON is YAML, so
// the schemas need no indentation.
func gadgetCRD(group string, versions ...crdVersion) string {
	var b strings.Builder
	fmt.Fprintf(&b, `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.%s
  annotations:
    %s
spec:
  group: %s
  scope: Namespaced
  names: {kind: Gadget, plural: gadgets, singular: gadget, listKind: GadgetList}
  versions:
`, group, include, group)
	for _, v := range versions {
		fmt.Fprintf(&b, "  - name: %s\n    served: %t\n    storage: %t\n    schema: {openAPIV3Schema: {type: object, properties: {spec: %s}}}\n",
			v.name, v.served, v.storage, v.spec)
	}
	return b.String()
}

// deleteCRDsAtEnd removes the test's cluster-scoped CRDs when it ends.
func deleteCRDsAtEnd(t testing.TB, c *clients, names ...string) {
	t.Cleanup(func() {
		crds := c.dynamic.Resource(crdResource)
		for _, name := range names {
			_ = crds.Delete(context.Background(), name, metav1.DeleteOptions{})
		}
	})
}

func createGadget(t testing.TB, c *clients, group, version, ns, name string, spec map[string]any) {
	t.Helper()
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": group + "/" + version, "kind": "Gadget", "spec": spec}}
	obj.SetNamespace(ns)
	obj.SetName(name)
	createWhenServed(t, c, schema.GroupVersionResource{Group: group, Version: version, Resource: "gadgets"}, obj)
}

// createWhenServed creates a custom resource, retrying while its CRD is
// still getting established.
func createWhenServed(t testing.TB, c *clients, gvr schema.GroupVersionResource, obj *unstructured.Unstructured) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := c.dynamic.Resource(gvr).Namespace(obj.GetNamespace()).Create(ctx, obj, metav1.CreateOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("create %s %s/%s: %v", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
	}
}

// TestCRDUpdateThatExistingObjectsViolateIsRefused: a new schema that an
// existing object fails is refused at acceptance, naming the object and
// the field, after paged LISTs; without such an object it applies. A CRD
// that drifted back is then guarded at the apply itself: the task fails,
// the CRD is left as it is, and what follows it in its component waits.
func TestCRDUpdateThatExistingObjectsViolateIsRefused(t *testing.T) {
	bin, c, ns := newCLITest(t)
	group := ns + ".example.com"
	crdName := "gadgets." + group
	deleteCRDsAtEnd(t, c, crdName)
	after := configMap(ns, "after", "x")
	v100 := writePayload(t, "1.0.0", map[string]string{"0000_50_gadgets_00_crd.yaml": gadgetCRD(group, crdVersion{"v1", true, true, sizeSpec}),
		"0000_50_gadgets_10_after.yaml": after})
	v101 := writePayload(t, "1.0.1", map[string]string{"0000_50_gadgets_00_crd.yaml": gadgetCRD(group, crdVersion{"v1", true, true, sizeAndColorSpec}),
		"0000_50_gadgets_10_after.yaml": after})
	v101defaults := writePayload(t, "1.0.1", map[string]string{"0000_50_gadgets_00_crd.yaml": gadgetCRD(group, crdVersion{"v1", true, true, colorDefaultsSpec}),
		"0000_50_gadgets_10_after.yaml": after})

	if code, stdout, stderr := runCLI(t, bin, "apply", "--payload", v100); code != 0 {
		t.Fatalf("install: exit %d\n%s\n%s", code, stdout, stderr)
	}
	createGadget(t, c, group, "v1", ns, "plain", map[string]any{"size": "small"})
	before := c.get(t, crdGVKOf(), "", crdName).GetResourceVersion()

	t.Log("plan says the CRD update would be blocked, and why")
	code, stdout, stderr := runCLI(t, bin, "plan", "--payload", v101)
	if code != 0 || !strings.Contains(stdout, "would be refused") || !strings.Contains(stdout, "blocked (CustomResourceDefinitionUpdateBlocked)") ||
		!strings.Contains(stdout, ns+"/plain: spec.color: Required value") {
		t.Fatalf("plan must show the CRD's incompatibility: exit %d\n%s\n%s", code, stdout, stderr)
	}

	t.Log("apply refuses it at acceptance: exit 3, the object and the field named, paged LISTs")
	mark := auditMark(t)
	code, stdout, stderr = runCLI(t, bin, "apply", "--payload", v101)
	if code != 3 || !strings.Contains(stdout+stderr, "CustomResourceDefinitionCompatibility") {
		t.Fatalf("exit %d, want 3 naming the check\n%s\n%s", code, stdout, stderr)
	}
	accepted := findCondition(clusterVersion(t), "ReleaseAccepted")
	if accepted == nil || accepted.Status != configv1.ConditionFalse || !strings.Contains(accepted.Message, crdName) ||
		!strings.Contains(accepted.Message, "ExistingObjectsInvalid") || !strings.Contains(accepted.Message, ns+"/plain: spec.color: Required value") {
		t.Fatalf("ReleaseAccepted = %+v, want False naming the CRD, the check, the object and the field", accepted)
	}
	if got := c.get(t, crdGVKOf(), "", crdName).GetResourceVersion(); got != before {
		t.Fatalf("the refused CRD changed: resourceVersion %s, was %s", got, before)
	}
	lists := applierAudit(t, mark, cluster.AuditFilter{Verb: "list", Resource: "gadgets"})
	if len(lists) == 0 {
		t.Fatal("the Gadgets were never listed")
	}
	for _, l := range lists {
		if !strings.Contains(l.RequestURI, "limit=500") {
			t.Errorf("an unpaged LIST: %s", l.RequestURI)
		}
	}

	t.Log("a new required field with a default is no problem for the same object")
	if code, stdout, stderr := runCLI(t, bin, "plan", "--payload", v101defaults); code != 0 || strings.Contains(stdout, "would be refused") ||
		!strings.Contains(stdout, "compatible with the live CRD and its objects") {
		t.Fatalf("plan of the defaulted schema: exit %d\n%s\n%s", code, stdout, stderr)
	}

	t.Log("without the offending object, the same schema applies")
	if err := c.dynamic.Resource(schema.GroupVersionResource{Group: group, Version: "v1", Resource: "gadgets"}).Namespace(ns).
		Delete(context.Background(), "plain", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if code, stdout, stderr := runCLI(t, bin, "apply", "--payload", v101); code != 0 {
		t.Fatalf("apply without the offending object: exit %d\n%s\n%s", code, stdout, stderr)
	}

	t.Log("the CRD drifts back and an object the payload's schema rejects appears: the apply itself refuses the CRD update")
	crd := c.get(t, crdGVKOf(), "", crdName)
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	v1 := versions[0].(map[string]any)
	if err := unstructured.SetNestedField(v1, map[string]any{"type": "object", "properties": map[string]any{"size": map[string]any{"type": "string"}}},
		"schema", "openAPIV3Schema", "properties", "spec"); err != nil {
		t.Fatal(err)
	}
	_ = unstructured.SetNestedSlice(crd.Object, versions, "spec", "versions")
	crdClient := c.dynamic.Resource(crdResource)
	if _, err := crdClient.Update(context.Background(), crd, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	createGadget(t, c, group, "v1", ns, "colorless", map[string]any{"size": "large"})
	if err := c.kube.CoreV1().ConfigMaps(ns).Delete(context.Background(), "after", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	drifted := c.get(t, crdGVKOf(), "", crdName).GetResourceVersion()
	code, stdout, stderr = runCLI(t, bin, "apply", "--payload", v101)
	if code != 1 || !strings.Contains(stdout+stderr, "update refused, the CustomResourceDefinition is left as it is") ||
		!strings.Contains(stdout+stderr, ns+"/colorless: spec.color: Required value") {
		t.Fatalf("the reconcile pass must fail the CRD task naming the object: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if got := c.get(t, crdGVKOf(), "", crdName).GetResourceVersion(); got != drifted {
		t.Fatalf("the blocked CRD changed: resourceVersion %s, was %s", got, drifted)
	}
	if c.get(t, configMapGVK, ns, "after") != nil {
		t.Fatal("the ConfigMap ordered after the blocked CRD in its component must wait")
	}
	failing := findCondition(clusterVersion(t), "Failing")
	if failing == nil || failing.Status != configv1.ConditionTrue || !strings.Contains(failing.Reason+failing.Message, "CustomResourceDefinitionUpdateBlocked") {
		t.Errorf("Failing = %+v, want True with CustomResourceDefinitionUpdateBlocked", failing)
	}
}

// TestCRDVersionRemoval: a served version dropped in one step is refused,
// in two steps it passes; a version still in status.storedVersions is
// refused even with force; force passes the rest and history records it.
func TestCRDVersionRemoval(t *testing.T) {
	bin, c, ns := newCLITest(t)
	group := ns + ".example.com"
	crdName := "gadgets." + group
	deleteCRDsAtEnd(t, c, crdName, "gadgets.force."+group)
	release := func(version string, versions ...crdVersion) string {
		return writePayload(t, version, map[string]string{"0000_50_gadgets_00_crd.yaml": gadgetCRD(group, versions...)})
	}
	alphaStored := release("1.0.0", crdVersion{"v1alpha1", true, true, sizeSpec}, crdVersion{"v1", true, false, sizeSpec})
	v1Stored := release("1.0.1", crdVersion{"v1alpha1", true, false, sizeSpec}, crdVersion{"v1", true, true, sizeSpec})
	alphaUnserved := release("1.0.2", crdVersion{"v1alpha1", false, false, sizeSpec}, crdVersion{"v1", true, true, sizeSpec})
	alphaGone := release("1.0.3", crdVersion{"v1", true, true, sizeSpec})

	if code, stdout, stderr := runCLI(t, bin, "apply", "--payload", alphaStored); code != 0 {
		t.Fatalf("install: exit %d\n%s\n%s", code, stdout, stderr)
	}
	createGadget(t, c, group, "v1alpha1", ns, "old-a", map[string]any{"size": "small"})
	createGadget(t, c, group, "v1alpha1", ns, "old-b", map[string]any{"size": "large"})
	if code, stdout, stderr := runCLI(t, bin, "apply", "--payload", v1Stored); code != 0 {
		t.Fatalf("apply %s: exit %d\n%s\n%s", v1Stored, code, stdout, stderr)
	}
	stored, _, _ := unstructured.NestedStringSlice(c.get(t, crdGVKOf(), "", crdName).Object, "status", "storedVersions")
	if strings.Join(stored, ",") != "v1alpha1,v1" {
		t.Fatalf("storedVersions %v, want [v1alpha1 v1]", stored)
	}

	t.Log("a version still in storedVersions is refused, even with force")
	for _, args := range [][]string{{"apply", "--payload", alphaGone}, {"apply", "--payload", alphaGone, "--force"}} {
		code, stdout, stderr := runCLI(t, bin, args...)
		if code != 3 || !strings.Contains(stdout+stderr, "StoredVersionRemoved") {
			t.Fatalf("%v: exit %d, want 3 naming StoredVersionRemoved\n%s\n%s", args, code, stdout, stderr)
		}
	}
	if accepted := findCondition(clusterVersion(t), "ReleaseAccepted"); accepted == nil || !strings.Contains(accepted.Message, "Force does not override") {
		t.Fatalf("ReleaseAccepted = %+v, want it to say force does not override", accepted)
	}

	t.Log("crd migrate-storage rewrites each object in v1, then leaves v1 alone in storedVersions")
	code, stdout, stderr := runCLI(t, bin, "crd", "migrate-storage", crdName, "--dry-run")
	if code != 0 || !strings.Contains(stdout, "2 objects would be rewritten (dry run) in v1") || !strings.Contains(stdout, "[v1alpha1 v1] -> [v1alpha1 v1]") {
		t.Fatalf("dry run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	mark := auditMark(t)
	code, stdout, stderr = runCLI(t, bin, "crd", "migrate-storage", crdName)
	if code != 0 || !strings.Contains(stdout, "2 objects rewritten in v1") || !strings.Contains(stdout, "[v1alpha1 v1] -> [v1]") {
		t.Fatalf("migrate-storage: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if puts := applierAudit(t, mark, cluster.AuditFilter{Verb: "update", Resource: "gadgets", Stage: cluster.AuditStageResponseComplete}); len(puts) != 2 {
		t.Errorf("%d object writes, want one per Gadget: %v", len(puts), puts)
	}
	stored, _, _ = unstructured.NestedStringSlice(c.get(t, crdGVKOf(), "", crdName).Object, "status", "storedVersions")
	if strings.Join(stored, ",") != "v1" {
		t.Fatalf("storedVersions %v after the migration, want [v1]", stored)
	}

	t.Log("once storage is migrated, dropping the still served version in one step is refused")
	code, stdout, stderr = runCLI(t, bin, "apply", "--payload", alphaGone)
	if code != 3 || !strings.Contains(stdout+stderr, "ServedVersionRemoved") || strings.Contains(stdout+stderr, "StoredVersionRemoved") {
		t.Fatalf("exit %d, want 3 naming ServedVersionRemoved only\n%s\n%s", code, stdout, stderr)
	}

	t.Log("in two steps, served: false first, the removal passes")
	for _, dir := range []string{alphaUnserved, alphaGone} {
		if code, stdout, stderr := runCLI(t, bin, "apply", "--payload", dir); code != 0 {
			t.Fatalf("apply %s: exit %d\n%s\n%s", dir, code, stdout, stderr)
		}
	}
	if versions, _, _ := unstructured.NestedSlice(c.get(t, crdGVKOf(), "", crdName).Object, "spec", "versions"); len(versions) != 1 {
		t.Fatalf("the CRD has %d versions, want v1 alone", len(versions))
	}

	t.Log("force passes a one-step removal and history records the accepted risk")
	group2 := "force." + group
	forced := func(version string, versions ...crdVersion) string {
		return writePayload(t, version, map[string]string{"0000_50_gadgets_00_crd.yaml": gadgetCRD(group2, versions...)})
	}
	resetClusterVersion(t)
	if code, stdout, stderr := runCLI(t, bin, "apply", "--payload", forced("2.0.0", crdVersion{"v1", true, true, sizeSpec}, crdVersion{"v1beta1", true, false, sizeSpec})); code != 0 {
		t.Fatalf("install: exit %d\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, stderr = runCLI(t, bin, "apply", "--payload", forced("2.0.1", crdVersion{"v1", true, true, sizeSpec}), "--force")
	if code != 0 {
		t.Fatalf("a forced one-step removal must apply: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if versions, _, _ := unstructured.NestedSlice(c.get(t, crdGVKOf(), "", "gadgets."+group2).Object, "spec", "versions"); len(versions) != 1 {
		t.Fatalf("the forced CRD has %d versions, want 1", len(versions))
	}
	if h := clusterVersion(t).Status.History[0]; h.Version != "2.0.1" || !strings.Contains(h.AcceptedRisks, "CustomResourceDefinitionCompatibility") ||
		!strings.Contains(h.AcceptedRisks, "ServedVersionRemoved") {
		t.Errorf("history[0] = %s, accepted risks %q: want the CRD risk recorded", h.Version, h.AcceptedRisks)
	}
}

// BenchmarkCRDAcceptanceOver10000Objects measures the acceptance check of
// a CRD update against the real apiserver, over 10,000 existing objects in
// 10 namespaces: paged LISTs, defaulting and validation of each object.
// "valid" is a new required field with a default (every object passes);
// "invalid" is the same field without one (every object fails, 10 named).
func BenchmarkCRDAcceptanceOver10000Objects(b *testing.B) {
	const objects, namespaces, writers = 10000, 10, 32
	c := newClients(b)
	group := uniqueName(b, "bench") + ".example.com"
	deleteCRDsAtEnd(b, c, "gadgets."+group)
	e := newEngine(b, testCluster.CreateNamespace(b))
	requireComplete(b, sync(b, e, load(b, writePayload(b, "1.0.0", map[string]string{
		"0000_50_gadgets_00_crd.yaml": gadgetCRD(group, crdVersion{"v1", true, true, sizeSpec})})), graph.ModeInstall))
	nss := make([]string, namespaces)
	for i := range nss {
		nss[i] = testCluster.CreateNamespace(b)
	}
	work := make(chan int)
	var wg gosync.WaitGroup
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				createGadget(b, c, group, "v1", nss[i%namespaces], fmt.Sprintf("g%05d", i), map[string]any{"size": "small"})
			}
		}()
	}
	for i := range objects {
		work <- i
	}
	close(work)
	wg.Wait()

	for _, tc := range []struct {
		name    string
		spec    string
		invalid int
	}{{"valid", colorDefaultsSpec, 0}, {"invalid", sizeAndColorSpec, objects}} {
		b.Run(tc.name, func(b *testing.B) {
			rel := load(b, writePayload(b, "1.0.1", map[string]string{"0000_50_gadgets_00_crd.yaml": gadgetCRD(group, crdVersion{"v1", true, true, tc.spec})}))
			var peak uint64
			for b.Loop() {
				goruntime.GC()
				stop := heapsample.Peak(&peak)
				findings := e.CRDCompatibility(context.Background(), rel)
				stop()
				count := 0
				for _, f := range findings {
					count += f.Count
				}
				if count != tc.invalid {
					b.Fatalf("%d invalid objects, want %d: %v", count, tc.invalid, findings)
				}
			}
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
			b.ReportMetric(float64(objects)*float64(b.N)/b.Elapsed().Seconds(), "objects/s")
		})
	}
}
