package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/payload-applier/payload-applier/pkg/apply"
	"github.com/payload-applier/payload-applier/pkg/graph"
	"github.com/payload-applier/payload-applier/test/cluster"
)

func configMap(ns, name, data string, extraAnnotations ...string) string {
	ann := "    " + include
	for _, a := range extraAnnotations {
		ann += "\n    " + a
	}
	return fmt.Sprintf(`
apiVersion: v1
kind: ConfigMap
metadata:
  name: %s
  namespace: %s
  annotations:
%s
data:
  key: %q
`, name, ns, ann, data)
}

func TestInstallUpdateAndNoOpResync(t *testing.T) {
	c := newClients(t)
	ns := testCluster.CreateNamespace(t)
	e := newEngine(t, ns)

	v1 := load(t, writePayload(t, "1.0.0", map[string]string{
		"0000_50_demo_01_a.yaml":     configMap(ns, "a", "one"),
		"0000_50_demo_02_b.yaml":     configMap(ns, "b", "one"),
		"0000_60_other_01_c.yaml":    configMap(ns, "c", "one"),
		"0000_60_other_02_many.yaml": configMap(ns, "d", "one") + "---\n" + configMap(ns, "e", "one") + "---\n" + configMap(ns, "f", "one") + "---\n" + configMap(ns, "g", "one"),
	}))
	res := sync(t, e, v1, graph.ModeInstall)
	requireComplete(t, res)
	for _, o := range res.Objects {
		if o.Action != apply.ActionCreated {
			t.Errorf("install: %s was %s, want created", o.ID, o.Action)
		}
	}

	t.Run("a no-op resync writes nothing", func(t *testing.T) {
		mark := auditMark(t)
		res := sync(t, e, v1, graph.ModeReconcile)
		requireComplete(t, res)
		for _, o := range res.Objects {
			if o.Action != apply.ActionUnchanged {
				t.Errorf("%s was %s, want unchanged", o.ID, o.Action)
			}
		}
		if w := applierWrites(t, mark); len(w) != 0 {
			t.Errorf("a no-op resync made %d writes, first: %s", len(w), w[0])
		}
	})

	t.Run("a fresh engine's resync reads at most once per manifest and writes nothing", func(t *testing.T) {
		fresh := newEngine(t, ns)
		mark := auditMark(t)
		requireComplete(t, sync(t, fresh, v1, graph.ModeReconcile))
		reads := 0
		for _, ev := range applierAudit(t, mark, cluster.AuditFilter{Resource: "configmaps", Namespace: ns}) {
			if ev.Verb == "get" || ev.Verb == "list" {
				reads++
			}
		}
		if reads > len(v1.Manifests) {
			t.Errorf("%d configmap reads for %d manifests", reads, len(v1.Manifests))
		}
		if w := applierWrites(t, mark); len(w) != 0 {
			t.Errorf("a no-op resync made %d writes, first: %s", len(w), w[0])
		}
	})

	t.Run("drift on a field the manifest sets is corrected", func(t *testing.T) {
		cm, err := c.kube.CoreV1().ConfigMaps(ns).Get(context.Background(), "a", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cm.Data["key"] = "drifted"
		cm.Data["extra"] = "kept"
		if _, err := c.kube.CoreV1().ConfigMaps(ns).Update(context.Background(), cm, metav1.UpdateOptions{FieldManager: "someone-else"}); err != nil {
			t.Fatal(err)
		}
		res := sync(t, e, v1, graph.ModeReconcile)
		requireComplete(t, res)
		if got := actions(res)["ConfigMap/"+ns+"/a"]; got != apply.ActionConfigured {
			t.Errorf("drifted object was %s, want configured", got)
		}
		cm, _ = c.kube.CoreV1().ConfigMaps(ns).Get(context.Background(), "a", metav1.GetOptions{})
		if cm.Data["key"] != "one" || cm.Data["extra"] != "kept" {
			t.Errorf("after correction data = %v: the manifest's field must be restored and others kept", cm.Data)
		}
	})

	t.Run("an update changes what changed", func(t *testing.T) {
		v2 := load(t, writePayload(t, "1.0.1", map[string]string{
			"0000_50_demo_01_a.yaml":     configMap(ns, "a", "two"),
			"0000_50_demo_02_b.yaml":     configMap(ns, "b", "one"),
			"0000_60_other_01_c.yaml":    configMap(ns, "c", "one"),
			"0000_60_other_02_many.yaml": configMap(ns, "d", "one") + "---\n" + configMap(ns, "e", "one") + "---\n" + configMap(ns, "f", "one") + "---\n" + configMap(ns, "g", "one"),
		}))
		mark := auditMark(t)
		res := sync(t, e, v2, graph.ModeUpdate)
		requireComplete(t, res)
		got := actions(res)
		if got["ConfigMap/"+ns+"/a"] != apply.ActionConfigured || got["ConfigMap/"+ns+"/b"] != apply.ActionUnchanged {
			t.Errorf("actions = %v", got)
		}
		if w := applierWrites(t, mark); len(w) != 1 || w[0].Verb != "patch" {
			t.Errorf("want exactly one patch, got %v", w)
		}
	})
}

// The engine creates with a POST, which is cheaper than a server-side
// apply, and hands the created fields to its apply manager before the first
// apply: a field that a later manifest drops must then disappear.
func TestAFieldALaterManifestDropsIsRemoved(t *testing.T) {
	c := newClients(t)
	ns := testCluster.CreateNamespace(t)
	e := newEngine(t, ns)
	const dropped = `example.com/dropped: "in 1.0.1"`
	v1 := load(t, writePayload(t, "1.0.0", map[string]string{
		"0000_50_demo_01_a.yaml": configMap(ns, "a", "one", dropped),
	}))
	mark := auditMark(t)
	requireComplete(t, sync(t, e, v1, graph.ModeInstall))
	writes := applierWrites(t, mark)
	if len(writes) != 1 || writes[0].Verb != "create" ||
		!strings.Contains(writes[0].RequestURI, "fieldManager="+apply.FieldManager) ||
		!strings.Contains(writes[0].RequestURI, "fieldValidation=Warn") {
		t.Fatalf("install wrote %v, want one create by %s letting the server drop undeclared fields", writes, apply.FieldManager)
	}

	v2 := load(t, writePayload(t, "1.0.1", map[string]string{
		"0000_50_demo_01_a.yaml": configMap(ns, "a", "two"),
	}))
	mark = auditMark(t)
	res := sync(t, e, v2, graph.ModeUpdate)
	requireComplete(t, res)
	cm, err := c.kube.CoreV1().ConfigMaps(ns).Get(context.Background(), "a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := cm.Annotations["example.com/dropped"]; ok || cm.Data["key"] != "two" {
		t.Errorf("after the update: annotations %v, data %v; want the dropped annotation gone and key two", cm.Annotations, cm.Data)
	}
	for _, f := range cm.ManagedFields {
		if f.Manager == apply.FieldManager && f.Operation != metav1.ManagedFieldsOperationApply {
			t.Errorf("%s still owns fields through a %s", f.Manager, f.Operation)
		}
	}
	if w := applierWrites(t, mark); len(w) != 2 {
		t.Errorf("the first update wrote %d times, want 2 (adopt the created fields, apply): %v", len(w), w)
	}

	t.Run("later updates are one apply", func(t *testing.T) {
		v3 := load(t, writePayload(t, "1.0.2", map[string]string{
			"0000_50_demo_01_a.yaml": configMap(ns, "a", "three"),
		}))
		mark := auditMark(t)
		requireComplete(t, sync(t, e, v3, graph.ModeUpdate))
		if w := applierWrites(t, mark); len(w) != 1 || w[0].Verb != "patch" {
			t.Errorf("want one patch, got %v", w)
		}
	})
}

func TestCreateOnlyCreatesButNeverUpdates(t *testing.T) {
	c := newClients(t)
	ns := testCluster.CreateNamespace(t)
	e := newEngine(t, ns)
	manifest := func(data string) map[string]string {
		return map[string]string{"0000_50_demo_01_cfg.yaml": configMap(ns, "cfg", data, `release.openshift.io/create-only: "true"`)}
	}
	res := sync(t, e, load(t, writePayload(t, "1.0.0", manifest("initial"))), graph.ModeInstall)
	requireComplete(t, res)
	if got := actions(res)["ConfigMap/"+ns+"/cfg"]; got != apply.ActionCreated {
		t.Fatalf("create-only object was %s, want created", got)
	}
	mark := auditMark(t)
	res = sync(t, e, load(t, writePayload(t, "1.0.1", manifest("changed"))), graph.ModeUpdate)
	requireComplete(t, res)
	if got := actions(res)["ConfigMap/"+ns+"/cfg"]; got != apply.ActionSkipped {
		t.Errorf("existing create-only object was %s, want skipped", got)
	}
	cm, _ := c.kube.CoreV1().ConfigMaps(ns).Get(context.Background(), "cfg", metav1.GetOptions{})
	if cm.Data["key"] != "initial" {
		t.Errorf("create-only object was updated: %v", cm.Data)
	}
	if w := applierWrites(t, mark); len(w) != 0 {
		t.Errorf("create-only update wrote: %v", w)
	}
}

func crd(group, plural, kind string) string {
	return fmt.Sprintf(`
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: %[2]s.%[1]s
  annotations:
    %[4]s
spec:
  group: %[1]s
  scope: Namespaced
  names: {plural: %[2]s, singular: %[5]s, kind: %[3]s, listKind: %[3]sList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
`, group, plural, kind, include, strings.ToLower(kind))
}

func customResource(group, kind, ns, name string, annotations ...string) string {
	ann := "    " + include
	for _, a := range annotations {
		ann += "\n    " + a
	}
	return fmt.Sprintf(`
apiVersion: %s/v1
kind: %s
metadata:
  name: %s
  namespace: %s
  annotations:
%s
spec:
  size: 3
`, group, kind, name, ns, ann)
}

func TestCustomResourceAppliesInTheSamePassAsItsCRD(t *testing.T) {
	for _, mode := range []graph.Mode{graph.ModeUpdate, graph.ModeInstall} {
		t.Run(string(mode), func(t *testing.T) {
			ns := testCluster.CreateNamespace(t)
			e := newEngine(t, ns)
			group := uniqueName(t, "w") + ".example.com"
			rel := load(t, writePayload(t, "1.0.0", map[string]string{
				"0000_10_widgets_00_crd.yaml": crd(group, "widgets", "Widget"),
				"0000_20_widgets_01_cr.yaml":  customResource(group, "Widget", ns, "w1"),
			}))
			res := sync(t, e, rel, mode)
			requireComplete(t, res)
			if got := actions(res)["Widget."+group+"/"+ns+"/w1"]; got != apply.ActionCreated {
				t.Errorf("custom resource was %s, want created: %+v", got, res.Objects)
			}
		})
	}
}

func TestInstallWithDeleteManifestCreatesNothing(t *testing.T) {
	c := newClients(t)
	ns := testCluster.CreateNamespace(t)
	e := newEngine(t, ns)
	rel := load(t, writePayload(t, "1.0.0", map[string]string{
		"0000_50_demo_01_keep.yaml": configMap(ns, "keep", "x"),
		"0000_50_demo_02_gone.yaml": configMap(ns, "gone", "x", `release.openshift.io/delete: "true"`),
	}))
	mark := auditMark(t)
	res := sync(t, e, rel, graph.ModeInstall)
	requireComplete(t, res)
	if c.get(t, configMapGVK, ns, "gone") != nil {
		t.Fatal("install created an object its manifest marks for deletion")
	}
	if got := actions(res)["ConfigMap/"+ns+"/gone"]; got != apply.ActionAlreadyDeleted {
		t.Errorf("delete manifest at install was %s, want already-deleted", got)
	}
	for _, w := range applierWrites(t, mark) {
		if w.Verb == "delete" {
			t.Errorf("install issued a delete: %s", w)
		}
	}
}

func TestProtectedObjectsAreRefused(t *testing.T) {
	c := newClients(t)
	ns := testCluster.CreateNamespace(t)
	e := newEngine(t, ns)
	v1 := load(t, writePayload(t, "1.0.0", map[string]string{"0000_50_demo_01_a.yaml": configMap(ns, "a", "x")}))
	requireComplete(t, sync(t, e, v1, graph.ModeInstall))
	// Lint rejects this payload at load (protected-delete); the engine,
	// the last gate, must refuse it too, so it is loaded unlinted.
	v2 := loadUnlinted(t, writePayload(t, "1.0.1", map[string]string{
		"0000_50_demo_01_a.yaml": configMap(ns, "a", "x"),
		"0000_00_danger_00_ns.yaml": `
apiVersion: v1
kind: Namespace
metadata:
  name: kube-public
  annotations:
    ` + include + `
    release.openshift.io/delete: "true"
`,
	}))
	mark := auditMark(t)
	res := sync(t, e, v2, graph.ModeUpdate)
	requireComplete(t, res)
	var refusal *apply.ObjectResult
	for i := range res.Objects {
		if res.Objects[i].ID.Name == "kube-public" {
			refusal = &res.Objects[i]
		}
	}
	if refusal == nil || refusal.Action != apply.ActionRefused || !strings.Contains(refusal.Message, "protected namespace") {
		t.Fatalf("want a refusal naming the protected namespace, got %+v", refusal)
	}
	if c.get(t, namespaceGVK, "", "kube-public") == nil {
		t.Fatal("kube-public was deleted")
	}
	for _, w := range applierWrites(t, mark) {
		if w.Verb == "delete" {
			t.Errorf("a refused delete reached the apiserver: %s", w)
		}
	}
	if len(res.Deletes.Failed) != 1 {
		t.Errorf("the refusal must show as a failed delete for Upgradeable: %+v", res.Deletes)
	}
}

// TestAStrayNamespaceNeitherHidesNorMovesAClusterScopedDelete: lint
// rejects a namespace on a cluster-scoped kind at load; the engine, given
// such a payload anyway, refuses kube-system, deletes the unprotected
// namespace and records both without the stray namespace.
func TestAStrayNamespaceNeitherHidesNorMovesAClusterScopedDelete(t *testing.T) {
	bin, c, ns := newCLITest(t)
	doomed := uniqueName(t, "doomed")
	stray := func(name string) string {
		return "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: " + name + "\n  namespace: " + ns + "\n  annotations:\n    " + include + "\n    release.openshift.io/delete: \"true\"\n"
	}
	files := map[string]string{"0000_50_sys_00_ns.yaml": stray("kube-system"), "0000_50_doomed_00_ns.yaml": stray(doomed)}
	dir := writePayload(t, "1.0.1", files)
	code, _, stderr := runCLI(t, bin, "apply", "--payload", dir)
	if code != 2 || !strings.Contains(stderr, "namespace-on-cluster-scoped") || !strings.Contains(stderr, "0000_50_sys_00_ns.yaml:") {
		t.Fatalf("exit %d, want 2 naming the file and the rule:\n%s", code, stderr)
	}

	if _, err := c.kube.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: doomed}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e := newEngine(t, ns)
	mark := auditMark(t)
	res := sync(t, e, loadUnlinted(t, dir), graph.ModeUpdate)
	for _, o := range res.Objects {
		if o.ID.Name == "kube-system" && o.Action != apply.ActionRefused {
			t.Errorf("kube-system was %s, want refused", o.Action)
		}
	}
	if d := applierDeletes(t, mark); d["kube-system"] != 0 || d[doomed] != 1 {
		t.Errorf("DELETEs %v: want none for kube-system and one for %s", d, doomed)
	}
	for _, r := range append(res.Deletes.Refused, res.Deletes.InProgress...) {
		if r.ID.Namespace != "" {
			t.Errorf("the ledger keeps %s with the manifest's stray namespace", r.ID)
		}
	}
}
