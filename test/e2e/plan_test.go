package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/payload-applier/payload-applier/pkg/graph"
	"github.com/payload-applier/payload-applier/test/cluster"
)

// planOutput is the part of `plan -o json` the test reads.
type planOutput struct {
	Release string `json:"release"`
	Mode    string `json:"mode"`
	Nodes   []struct {
		ID    int   `json:"id"`
		After []int `json:"after"`
		Tasks []struct {
			Kind   string `json:"kind"`
			Name   string `json:"name"`
			Action string `json:"action"`
			Reason string `json:"reason"`
		} `json:"tasks"`
	} `json:"nodes"`
}

type plannedTask struct{ action, reason string }

// byName maps object names to their planned action.
func (p planOutput) byName() map[string]plannedTask {
	out := map[string]plannedTask{}
	for _, n := range p.Nodes {
		for _, t := range n.Tasks {
			out[t.Name] = plannedTask{t.Action, t.Reason}
		}
	}
	return out
}

// runPlan runs `payload-applier plan -o json` against the test cluster,
// through the binary that cli_test.go builds.
func runPlan(t *testing.T, bin string, args ...string) planOutput {
	t.Helper()
	code, stdout, stderr := runCLI(t, bin, append([]string{"plan", "-o", "json"}, args...)...)
	if code != 0 {
		t.Fatalf("plan %v: exit %d\n%s", args, code, stderr)
	}
	var p planOutput
	if err := json.Unmarshal([]byte(stdout), &p); err != nil {
		t.Fatalf("plan output is not JSON: %v\n%s", err, stdout)
	}
	return p
}

func TestPlanAgainstTheClusterIsReadOnly(t *testing.T) {
	bin := buildCLI(t)
	c := newClients(t)
	ns := testCluster.CreateNamespace(t)
	e := newEngine(t, ns)
	group := uniqueName(t, "plan") + ".example.com"
	createOnly := `release.openshift.io/create-only: "true"`

	v1 := load(t, writePayload(t, "1.0.0", map[string]string{
		"0000_50_demo_01_same.yaml":    configMap(ns, "same", "one"),
		"0000_50_demo_02_changed.yaml": configMap(ns, "changed", "one"),
		"0000_50_demo_03_seed.yaml":    configMap(ns, "seed", "one", createOnly),
		"0000_50_demo_04_old.yaml":     configMap(ns, "old", "one"),
		"0000_50_demo_05_held.yaml":    configMap(ns, "held", "one"),
	}))
	requireComplete(t, sync(t, e, v1, graph.ModeInstall))
	held, err := c.kube.CoreV1().ConfigMaps(ns).Get(t.Context(), "held", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	held.Finalizers = []string{"example.com/hold"}
	if _, err := c.kube.CoreV1().ConfigMaps(ns).Update(t.Context(), held, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.removeFinalizers(t, configMapGVK.GroupVersion().WithResource("configmaps"), ns, "held") })

	hosted := strings.Replace(configMap(ns, "hosted", "one"), include, `include.release.openshift.io/hypershift: "true"`, 1)
	v2 := writePayload(t, "1.1.0", map[string]string{
		"0000_40_gizmo_01_crd.yaml":    crd(group, "gizmos", "Gizmo"),
		"0000_40_gizmo_02_cr.yaml":     customResource(group, "Gizmo", ns, "gizmo"),
		"0000_50_demo_01_same.yaml":    configMap(ns, "same", "one"),
		"0000_50_demo_02_changed.yaml": configMap(ns, "changed", "two"),
		"0000_50_demo_03_seed.yaml":    configMap(ns, "seed", "two", createOnly),
		"0000_50_demo_04_old.yaml":     withDelete(configMap(ns, "old", "one")),
		"0000_50_demo_05_held.yaml":    withDelete(configMap(ns, "held", "one")),
		"0000_50_demo_06_new.yaml":     configMap(ns, "new", "one"),
		"0000_50_demo_07_never.yaml":   withDelete(configMap(ns, "never", "one")),
		"0000_50_demo_08_hosted.yaml":  hosted,
	})

	mark := auditMark(t)
	update := runPlan(t, bin, "--payload", v2, "--namespace", ns)
	reconcile := runPlan(t, bin, "--payload", v2, "--namespace", ns, "--mode", "reconcile")
	writes := applierWrites(t, mark)

	t.Run("update mode computes every action from the cluster", func(t *testing.T) {
		if update.Release != "1.1.0" || update.Mode != "update" {
			t.Errorf("release %q mode %q", update.Release, update.Mode)
		}
		want := map[string]plannedTask{
			"gizmos." + group: {"create", "not found"},
			"gizmo":           {"create", "type served by CustomResourceDefinition gizmos." + group + " in this payload, not by the cluster yet"},
			"same":            {"unchanged", ""},
			"changed":         {"update", "data.key"},
			"seed":            {"unchanged", "create-only"},
			"new":             {"create", "not found"},
			"never":           {"already-deleted", "not found"},
			"held":            {"delete", "present, finalizers example.com/hold"},
			"old":             {"delete", "present, no finalizers"}, // in held's wave: ConfigMaps share one
			"hosted":          {"skip", "profile filter: include.release.openshift.io/self-managed-high-availability unset"},
		}
		got := update.byName()
		for name, w := range want {
			if got[name] != w {
				t.Errorf("%s: got %+v, want %+v", name, got[name], w)
			}
		}
		if len(got) != len(want) {
			t.Errorf("the plan holds %d objects, want %d: %v", len(got), len(want), got)
		}
	})

	t.Run("reconcile mode starts no delete", func(t *testing.T) {
		got := reconcile.byName()
		for _, name := range []string{"old", "held"} {
			if a := got[name]; a.action != "skip" || !strings.Contains(a.reason, "deletes are issued only in update mode") ||
				!strings.Contains(a.reason, "none claimed this one") {
				t.Errorf("%s: %+v", name, a)
			}
		}
		if got["changed"].action != "update" {
			t.Errorf("changed: %+v", got["changed"])
		}
	})

	t.Run("the only writes are dry runs, one per update", func(t *testing.T) {
		updates := 0
		for _, p := range []planOutput{update, reconcile} {
			for _, a := range p.byName() {
				if a.action == "update" {
					updates++
				}
			}
		}
		if len(writes) != updates {
			t.Errorf("%d writes for %d updates planned: %v", len(writes), updates, writes)
		}
		for _, w := range writes {
			if w.Verb != "patch" || !strings.Contains(w.RequestURI, "dryRun=All") {
				t.Errorf("plan wrote for real: %s (%s)", w, w.RequestURI)
			}
		}
		if n := len(cluster.FilterAudit(writes, cluster.AuditFilter{Verb: "create"})); n != 0 {
			t.Errorf("%d creates", n)
		}
	})

	t.Run("the cluster is as the install left it", func(t *testing.T) {
		if cm := c.get(t, configMapGVK, ns, "changed"); cm == nil || cm.Object["data"].(map[string]interface{})["key"] != "one" {
			t.Errorf("changed = %v", cm)
		}
		if c.get(t, configMapGVK, ns, "new") != nil {
			t.Error("plan created new")
		}
		if old := c.get(t, configMapGVK, ns, "old"); old == nil || old.GetDeletionTimestamp() != nil {
			t.Errorf("plan deleted old: %v", old)
		}
	})
}
