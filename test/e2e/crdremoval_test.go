package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/payload-applier/payload-applier/pkg/clusterversion"
	"github.com/payload-applier/payload-applier/pkg/crdcompat"
)

// removalGadgetCRD is gadgets.<group>: stage "alpha" stores v1alpha1 only;
// "scheduled" adds v1 as the storage version and marks v1alpha1
// deprecated, removed in 1.1; "unserved" also stops serving v1alpha1, as a
// release must before one removes it; "removed" keeps v1 alone.
func removalGadgetCRD(group, stage string) string {
	const schema = "schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}"
	annotations := "    " + include
	var versions string
	switch stage {
	case "alpha":
		versions = "  - {name: v1alpha1, served: true, storage: true, " + schema + "}\n"
	case "scheduled", "unserved":
		annotations += fmt.Sprintf("\n    %s: \"1.1\"", crdcompat.RemovedInAnnotation(group))
		versions = fmt.Sprintf("  - {name: v1alpha1, served: %t, storage: false, deprecated: true, %s}\n", stage == "scheduled", schema) +
			"  - {name: v1, served: true, storage: true, " + schema + "}\n"
	case "removed":
		versions = "  - {name: v1, served: true, storage: true, " + schema + "}\n"
	}
	return fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.%[1]s
  annotations:
%[2]s
spec:
  group: %[1]s
  scope: Namespaced
  names: {kind: Gadget, plural: gadgets, singular: gadget, listKind: GadgetList}
  versions:
%[3]s`, group, annotations, versions)
}

// TestCRDVersionRemovalPendingBlocksMinorUpdates: the current release
// marks v1alpha1 deprecated, removed in 1.1, while it is still stored with
// two objects: Upgradeable=False with CustomResourceDefinitionVersionRemovalPending
// naming the CRD, the version and the count; status shows it; a minor
// update is refused and a z-stream accepted. `crd migrate-storage` clears
// it, and the minor update that removes v1alpha1 then goes ahead.
func TestCRDVersionRemovalPendingBlocksMinorUpdates(t *testing.T) {
	c := newClients(t)
	ns := testCluster.CreateNamespace(t)
	group := ns + ".removal.example.com"
	crdName := "gadgets." + group
	deleteCRDsAtEnd(t, c, crdName)
	const crdFile = "0000_50_gadgets_00_crd.yaml"
	store := writeStore(t, map[string]map[string]string{
		"1.0.0": {crdFile: removalGadgetCRD(group, "alpha")},
		"1.0.1": {crdFile: removalGadgetCRD(group, "scheduled")},
		"1.0.2": {crdFile: removalGadgetCRD(group, "unserved"), "0000_50_gadgets_10_z.yaml": configMap(ns, "z-stream", "x")},
		"1.1.0": {crdFile: removalGadgetCRD(group, "removed"), "0000_50_gadgets_10_minor.yaml": configMap(ns, "minor", "x")},
	})
	cvName := uniqueName(t, "crdremoval")
	op := newOperator(t, store, cvName, ns, nil, nil)

	t.Log("1.0.0 installs the CRD storing v1alpha1; two gadgets are stored in it")
	op.request(t, "1.0.0", false)
	if out := op.sync(t); out.Result == nil || !out.Result.Complete() {
		t.Fatalf("install did not complete: %+v", out)
	}
	for _, name := range []string{"a", "b"} {
		createGadget(t, c, group, "v1alpha1", ns, name, map[string]any{"size": "s"})
	}
	requireCondition(t, op.clusterVersion(t), configv1.OperatorUpgradeable, configv1.ConditionTrue, clusterversion.ReasonAsExpected)

	t.Log("1.0.1 makes v1 the storage version and schedules v1alpha1's removal in 1.1: Upgradeable=False")
	op.request(t, "1.0.1", false)
	if out := op.sync(t); out.Refused != nil || out.Result == nil || !out.Result.Complete() {
		t.Fatalf("1.0.1 must apply: %+v", out)
	}
	want := crdName + " v1alpha1 (removed in 1.1; 2 objects"
	var up configv1.ClusterOperatorStatusCondition
	// The new storage version may take a moment to be served for the count.
	waitFor(t, "Upgradeable to count the stored objects", 30*time.Second, func() bool {
		up = condition(op.clusterVersion(t), configv1.OperatorUpgradeable)
		if !strings.Contains(up.Message, want) {
			op.sync(t)
			return false
		}
		return true
	})
	if up.Status != configv1.ConditionFalse || up.Reason != crdcompat.ReasonVersionRemovalPending || !strings.Contains(up.Message, "crd migrate-storage") {
		t.Fatalf("Upgradeable = %s/%s %q, want False/%s naming %q and the fix", up.Status, up.Reason, up.Message, crdcompat.ReasonVersionRemovalPending, want)
	}

	t.Log("status shows the reason and the message")
	bin := buildCLI(t)
	code, stdout, stderr := runCLI(t, bin, "status", "--name", cvName)
	if code != 0 || !strings.Contains(stdout, crdcompat.ReasonVersionRemovalPending) || !strings.Contains(stdout, want) {
		t.Fatalf("status must show the blocker: exit %d\n%s\n%s", code, stdout, stderr)
	}

	t.Log("a minor update is refused")
	op.request(t, "1.1.0", false)
	if out := op.sync(t); out.Refused == nil {
		t.Fatal("1.1.0 must be refused while v1alpha1 is still stored")
	}
	cv := op.clusterVersion(t)
	ra := requireCondition(t, cv, "ReleaseAccepted", configv1.ConditionFalse, clusterversion.ReasonPreconditionChecks)
	if !strings.Contains(ra.Message, want) {
		t.Errorf("the refusal must say why: %q", ra.Message)
	}
	if cv.Status.Desired.Version != "1.0.1" {
		t.Fatalf("desired = %s, want 1.0.1 kept", cv.Status.Desired.Version)
	}

	t.Log("a z-stream update is accepted meanwhile, and the blocker stays")
	op.request(t, "1.0.2", false)
	if out := op.sync(t); out.Refused != nil || out.Result == nil || !out.Result.Complete() || c.get(t, configMapGVK, ns, "z-stream") == nil {
		t.Fatalf("1.0.2 must be accepted and applied: %+v", out)
	}
	requireCondition(t, op.clusterVersion(t), configv1.OperatorUpgradeable, configv1.ConditionFalse, crdcompat.ReasonVersionRemovalPending)

	t.Log("crd migrate-storage rewrites the gadgets in v1 and trims storedVersions; Upgradeable clears")
	code, stdout, stderr = runCLI(t, bin, "crd", "migrate-storage", crdName)
	if code != 0 || !strings.Contains(stdout, "2 objects rewritten in v1") {
		t.Fatalf("migrate-storage: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if stored := storedVersions(t, c, crdName); !slices.Equal(stored, []string{"v1"}) {
		t.Fatalf("status.storedVersions = %v, want [v1]", stored)
	}
	op.sync(t)
	requireCondition(t, op.clusterVersion(t), configv1.OperatorUpgradeable, configv1.ConditionTrue, clusterversion.ReasonAsExpected)

	t.Log("the minor update that removes v1alpha1 now goes ahead")
	op.request(t, "1.1.0", false)
	if out := op.sync(t); out.Refused != nil || out.Result == nil || !out.Result.Complete() || c.get(t, configMapGVK, ns, "minor") == nil {
		t.Fatalf("1.1.0 must be accepted and applied: %+v", out)
	}
	crd, err := c.dynamic.Resource(crdResource).Get(context.Background(), crdName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions"); len(versions) != 1 {
		t.Errorf("the CRD serves %d versions after 1.1.0, want v1 alone", len(versions))
	}
}

func storedVersions(t testing.TB, c *clients, name string) []string {
	t.Helper()
	crd, err := c.dynamic.Resource(crdResource).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stored, _, _ := unstructured.NestedStringSlice(crd.Object, "status", "storedVersions")
	return stored
}

// TestCRDVersionRemovalPendingInPlanAndApply: the CLI judges alike. plan
// against the cluster and apply, which is given only the target release,
// read the schedule from the live CRD: a minor update is refused (apply
// exits 3) and a z-stream is not, until crd migrate-storage.
func TestCRDVersionRemovalPendingInPlanAndApply(t *testing.T) {
	bin, c, ns := newCLITest(t)
	group := ns + ".removal.example.com"
	crdName := "gadgets." + group
	deleteCRDsAtEnd(t, c, crdName)
	const crdFile = "0000_50_gadgets_00_crd.yaml"
	dirs := map[string]string{
		"1.0.0": writePayload(t, "1.0.0", map[string]string{crdFile: removalGadgetCRD(group, "alpha")}),
		"1.0.1": writePayload(t, "1.0.1", map[string]string{crdFile: removalGadgetCRD(group, "scheduled")}),
		"1.0.2": writePayload(t, "1.0.2", map[string]string{crdFile: removalGadgetCRD(group, "unserved"), "0000_50_gadgets_10_z.yaml": configMap(ns, "z-stream", "x")}),
		"1.1.0": writePayload(t, "1.1.0", map[string]string{crdFile: removalGadgetCRD(group, "removed"), "0000_50_gadgets_10_minor.yaml": configMap(ns, "minor", "x")}),
	}
	apply := func(version string, want int) string {
		t.Helper()
		code, stdout, stderr := runCLI(t, bin, "apply", "--payload", dirs[version])
		if code != want {
			t.Fatalf("apply %s: exit %d, want %d\n%s\n%s", version, code, want, stdout, stderr)
		}
		return stdout + stderr
	}
	plan := func(version string) string {
		t.Helper()
		code, stdout, stderr := runCLI(t, bin, "plan", "--payload", dirs[version])
		if code != 0 {
			t.Fatalf("plan %s: exit %d\n%s\n%s", version, code, stdout, stderr)
		}
		return stdout
	}

	apply("1.0.0", 0)
	createGadget(t, c, group, "v1alpha1", ns, "a", map[string]any{"size": "s"})
	want := crdName + " v1alpha1 (removed in 1.1; 1 object"
	waitFor(t, "apply 1.0.1 to count the stored gadget", 30*time.Second, func() bool {
		apply("1.0.1", 0)
		return strings.Contains(condition(clusterVersion(t), configv1.OperatorUpgradeable).Message, want)
	})
	requireCondition(t, clusterVersion(t), configv1.OperatorUpgradeable, configv1.ConditionFalse, crdcompat.ReasonVersionRemovalPending)

	t.Log("plan refuses the minor, naming the CRD, and accepts the z-stream")
	if out := plan("1.1.0"); !strings.Contains(out, "would be refused") || !strings.Contains(out, crdcompat.ReasonVersionRemovalPending) || !strings.Contains(out, want) {
		t.Fatalf("plan of 1.1.0 must be refused for the pending removal:\n%s", out)
	}
	if out := plan("1.0.2"); !strings.Contains(out, "an update from 1.0.1 to 1.0.2 would be accepted") {
		t.Fatalf("plan of 1.0.2 must be accepted:\n%s", out)
	}

	t.Log("apply, given only the target, refuses the minor and applies the z-stream")
	if out := apply("1.1.0", 3); !strings.Contains(out, crdcompat.ReasonVersionRemovalPending) {
		t.Fatalf("the refusal must name the reason:\n%s", out)
	}
	apply("1.0.2", 0)
	if c.get(t, configMapGVK, ns, "z-stream") == nil {
		t.Fatal("1.0.2 must be applied")
	}

	t.Log("after crd migrate-storage, plan and apply accept the minor")
	if code, stdout, stderr := runCLI(t, bin, "crd", "migrate-storage", crdName); code != 0 {
		t.Fatalf("migrate-storage: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if out := plan("1.1.0"); !strings.Contains(out, "an update from 1.0.2 to 1.1.0 would be accepted") {
		t.Fatalf("plan of 1.1.0 must be accepted now:\n%s", out)
	}
	apply("1.1.0", 0)
	if c.get(t, configMapGVK, ns, "minor") == nil {
		t.Fatal("1.1.0 must be applied")
	}
}
