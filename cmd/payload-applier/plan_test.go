package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/payload-applier/payload-applier/pkg/apply"
	"github.com/payload-applier/payload-applier/pkg/graph"
	"github.com/payload-applier/payload-applier/pkg/payload"
)

var updatePlanGolden = flag.Bool("update", false, "rewrite the plan golden files in testdata/plan")

const (
	planTestdata = "testdata/plan"
	planPayload  = "testdata/plan/payload"
	ocpReal      = "../../../shared/payloads/ocp-real"
)

// planCLI runs the CLI in process, offline unless args name a kubeconfig,
// and returns its output and the exit code run would return.
func planCLI(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	t.Setenv("KUBECONFIG", "")
	return execute(t, args...)
}

func TestPlanGolden(t *testing.T) {
	tests := map[string][]string{
		"update.txt":     {"--payload", planPayload},
		"update.json":    {"--payload", planPayload, "--output", "json"},
		"update.dot":     {"--payload", planPayload, "-o", "dot"},
		"install.txt":    {"--payload", planPayload, "--mode", "install"},
		"reconcile.json": {"--payload", planPayload, "--mode", "reconcile", "-o", "json"},
		"hypershift.txt": {"--payload", planPayload, "--profile", "hypershift"},
		"strict.txt":     {"--payload", planPayload, "--strict-order"},
	}
	for name, args := range tests {
		t.Run(name, func(t *testing.T) {
			stdout, stderr, code := planCLI(t, append([]string{"plan"}, args...)...)
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if again, _, _ := planCLI(t, append([]string{"plan"}, args...)...); again != stdout {
				t.Fatalf("the same plan printed twice differs:\n%s\n---\n%s", stdout, again)
			}
			golden := filepath.Join(planTestdata, name+".golden")
			if *updatePlanGolden {
				if err := os.WriteFile(golden, []byte(stdout), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -run TestPlanGolden -update to create it)", err)
			}
			if stdout != string(want) {
				t.Errorf("output differs from %s (rerun with -update to accept):\n%s", golden, stdout)
			}
		})
	}
}

// joinPlan is an offline plan whose apply graph is the given joins, nodes
// without tasks, and which deletes and skips nothing.
func joinPlan(nodes ...*graph.Node) *apply.Plan {
	for id, n := range nodes {
		n.ID = id
	}
	return &apply.Plan{Release: "4.20.1", Mode: graph.ModeUpdate, Apply: &graph.Graph{Nodes: nodes}, Deletes: &graph.Graph{}}
}

func TestPlanShowsTheApplyWalkBySteps(t *testing.T) {
	// Node 3 follows 1 directly and through 2 and 0: it runs at the end of
	// the longer path. Nodes 1 and 4 are roots, listed by id in one step.
	doc := newPlanDoc(joinPlan(
		&graph.Node{In: []int{2}, Out: []int{3}},
		&graph.Node{Out: []int{2, 3}},
		&graph.Node{In: []int{1}, Out: []int{0}},
		&graph.Node{In: []int{0, 1}},
		&graph.Node{},
	))
	text := doc.text(false)
	want := `
Apply walk: 5 nodes in 4 steps; the nodes of a step may run in parallel
step 1: 2 nodes in parallel
  node 1: join
  node 4: join
step 2
  node 2: join, after 1
step 3
  node 0: join, after 2
step 4
  node 3: join, after 0, 1
`
	if i := strings.Index(text, "\nApply walk"); i < 0 || text[i:] != want {
		t.Errorf("text plan:\n%s\nwant the apply walk:%s", text, want)
	}
	dot := doc.dot()
	for _, line := range []string{
		`    1 [ label="" shape="point" ];`, // a join is a point, not a box
		"  2 -> 0;", "  0 -> 3;", "  1 -> 3;",
	} {
		if !strings.Contains(dot, line+"\n") {
			t.Errorf("dot plan lacks %q:\n%s", line, dot)
		}
	}
}

func TestPlanShowsAnEmptyApplyWalk(t *testing.T) {
	// A payload of deletes only, or one the filters empty, has no apply node.
	doc := newPlanDoc(joinPlan())
	if text := doc.text(false); !strings.Contains(text, "\nApply walk: 0 nodes in 0 steps;") || strings.Contains(text, "step 1") {
		t.Errorf("text plan:\n%s", text)
	}
	dot := doc.dot()
	if !strings.HasPrefix(dot, "digraph plan {\n") || !strings.HasSuffix(dot, "\n}\n") || strings.Contains(dot, "subgraph") {
		t.Errorf("dot plan of no nodes:\n%s", dot)
	}
}

func TestPlanDOTEscapesLabels(t *testing.T) {
	awkward := `a "quoted" \ label` + "\non two lines"
	escaped := `a \"quoted\" \\ label\non two lines`
	doc := planDoc{Release: awkward, Mode: "update", Nodes: []planNode{
		{ID: 0, After: []int{}, Tasks: []planTask{{Action: "apply"}}, walk: walkApply, label: awkward},
	}, steps: [][]int{{0}}}
	dot := doc.dot()
	for _, want := range []string{
		`  label="release ` + escaped + `, update mode: 1 apply";`,
		`    0 [ label="` + escaped + `\n1 apply" shape="box" ];`,
	} {
		if !strings.Contains(dot, want+"\n") {
			t.Errorf("dot plan lacks the line %s:\n%s", want, dot)
		}
	}
}

func TestPlanIsOfflineWithoutAKubeconfig(t *testing.T) {
	// An in-cluster environment that points nowhere: plan must not try it.
	t.Setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
	t.Setenv("KUBERNETES_SERVICE_PORT", "1")
	stdout, stderr, code := planCLI(t, "plan", "--payload", planPayload)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "planned offline") {
		t.Errorf("the plan does not say it is offline:\n%s", stdout)
	}
}

func TestPlanExitCodes(t *testing.T) {
	dir := t.TempDir()
	unreachable := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(unreachable, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	invalid := filepath.Join(dir, "invalid")
	if err := os.CopyFS(invalid, os.DirFS(planPayload)); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(invalid, "0000_90_gamma_01_remove.yaml")
	data, err := os.ReadFile(bad)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, bytes.Replace(data, []byte(`delete: "true"`), []byte(`delete: "yes"`), 1), 0o644); err != nil {
		t.Fatal(err)
	}

	tests := map[string]struct {
		args   []string
		code   int
		stderr string
	}{
		"an invalid payload names the file and line": {
			args: []string{"--payload", invalid}, code: exitUsage, stderr: "0000_90_gamma_01_remove.yaml:8:"},
		"a missing payload":     {args: []string{"--payload", filepath.Join(dir, "none")}, code: exitUsage, stderr: "none"},
		"no --payload":          {args: nil, code: exitUsage, stderr: `"payload" not set`},
		"an unknown mode":       {args: []string{"--payload", planPayload, "--mode", "fast"}, code: exitUsage, stderr: "--mode"},
		"an unknown output":     {args: []string{"--payload", planPayload, "-o", "yaml"}, code: exitUsage, stderr: "--output"},
		"an unknown profile":    {args: []string{"--payload", planPayload, "--profile", "edge"}, code: exitUsage, stderr: "--profile"},
		"an unreachable server": {args: []string{"--payload", planPayload, "--kubeconfig", unreachable}, code: exitUsage, stderr: "unreachable"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, stderr, code := planCLI(t, append([]string{"plan"}, tc.args...)...)
			if code != tc.code || !strings.Contains(stderr, tc.stderr) {
				t.Errorf("exit %d, stderr %q; want exit %d mentioning %q", code, stderr, tc.code, tc.stderr)
			}
		})
	}
}

// TestPlanRealPayloadOffline plans the real OpenShift payload in every mode
// and checks the JSON contract: exact keys, arrays, ids, and every manifest
// exactly once.
func TestPlanRealPayloadOffline(t *testing.T) {
	if _, err := os.Stat(ocpReal); err != nil {
		t.Skipf("no real payload at %s: %v", ocpReal, err)
	}
	all, _, err := payload.LoadAll(ocpReal)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{}
	for _, m := range all.Manifests {
		want[m.Position()]++
	}
	for _, mode := range []string{"update", "install", "reconcile"} {
		t.Run(mode, func(t *testing.T) {
			stdout, stderr, code := planCLI(t, "plan", "--payload", ocpReal, "--mode", mode, "-o", "json")
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			var doc map[string]any
			if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
				t.Fatalf("output is not JSON: %v", err)
			}
			requireKeys(t, "plan", doc, "release", "mode", "acceptance", "capabilities", "nodes")
			if acc, _ := doc["acceptance"].(map[string]any); acc["checked"] != false || acc["message"] != "not checked offline" {
				t.Errorf("acceptance = %v, want it unchecked offline", doc["acceptance"])
			}
			if doc["release"] != all.Version || doc["mode"] != mode {
				t.Errorf("release %v mode %v, want %s %s", doc["release"], doc["mode"], all.Version, mode)
			}
			nodes, ok := doc["nodes"].([]any)
			if !ok || len(nodes) == 0 {
				t.Fatalf("nodes = %v", doc["nodes"])
			}
			seen := map[string]int{}
			actions := map[string]int{}
			for i, raw := range nodes {
				node := raw.(map[string]any)
				requireKeys(t, fmt.Sprintf("node %d", i), node, "id", "after", "tasks")
				if node["id"] != float64(i) {
					t.Errorf("node %d has id %v: ids are positions", i, node["id"])
				}
				after, ok1 := node["after"].([]any)
				tasks, ok2 := node["tasks"].([]any)
				if !ok1 || !ok2 {
					t.Fatalf("node %d: after %v, tasks %v: want arrays", i, node["after"], node["tasks"])
				}
				for _, a := range after {
					if id, ok := a.(float64); !ok || id < 0 || int(id) >= len(nodes) || int(id) == i {
						t.Errorf("node %d runs after %v, which is no other node", i, a)
					}
				}
				lastWave := 0.0
				for j, rawTask := range tasks {
					task := rawTask.(map[string]any)
					requireKeys(t, fmt.Sprintf("node %d task %d", i, j), task,
						"file", "line", "group", "version", "kind", "namespace", "name", "action", "reason", "wave")
					// Waves count from 1 and never go back; skipped tasks never run.
					wave, _ := task["wave"].(float64)
					if (task["action"] != "skip" || wave != 0) && (wave < lastWave || wave < 1) {
						t.Errorf("node %d task %d in wave %v after wave %v", i, j, task["wave"], lastWave)
					}
					lastWave = wave
					seen[fmt.Sprintf("%s:%v", task["file"], task["line"])]++
					actions[task["action"].(string)]++
				}
			}
			for pos, n := range want {
				if seen[pos] != n {
					t.Errorf("%s appears %d times in the plan, want %d", pos, seen[pos], n)
				}
			}
			for pos := range seen {
				if want[pos] == 0 {
					t.Errorf("the plan lists %s, which is no manifest", pos)
				}
			}
			for a := range actions {
				if !slices.Contains([]string{"apply", "delete", "skip"}, a) {
					t.Errorf("offline action %q", a)
				}
			}
			if mode == "update" && actions["delete"] == 0 {
				t.Error("the real payload's deletes are not planned in update mode")
			}
		})
	}
}

func requireKeys(t *testing.T, what string, obj map[string]any, keys ...string) {
	t.Helper()
	var got []string
	for k := range obj {
		got = append(got, k)
	}
	slices.Sort(got)
	keys = slices.Clone(keys)
	slices.Sort(keys)
	if !slices.Equal(got, keys) {
		t.Errorf("%s has keys %v, want exactly %v", what, got, keys)
	}
}

// TestPlanTextShowsWaves: a wave of several tasks gets a heading and an
// indent; a task alone in its wave reads as in a serial node.
func TestPlanTextShowsWaves(t *testing.T) {
	task := func(name string, wave int) planTask {
		return planTask{File: name + ".yaml", Line: 1, Action: "apply", Wave: wave, subject: "ConfigMap/ns/" + name}
	}
	n := planNode{ID: 3, label: "50-demo", Tasks: []planTask{task("ns", 1), task("a", 2), task("b", 2), task("dep", 3)}}
	var b strings.Builder
	writeTextNode(&b, n, false)
	want := `  node 3: 50-demo (4 apply) in 3 waves
    apply            ConfigMap/ns/ns (ns.yaml:1)
    wave 2, 2 at once:
      apply            ConfigMap/ns/a (a.yaml:1)
      apply            ConfigMap/ns/b (b.yaml:1)
    apply            ConfigMap/ns/dep (dep.yaml:1)
`
	if got := b.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	// One task per wave, as --strict-order plans: no wave is named.
	n.Tasks = []planTask{task("a", 1), task("b", 2)}
	b.Reset()
	writeTextNode(&b, n, false)
	if strings.Contains(b.String(), "wave") {
		t.Errorf("a serial node names waves:\n%s", b.String())
	}
}
