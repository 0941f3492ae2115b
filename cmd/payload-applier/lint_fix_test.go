package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/payload-applier/payload-applier/pkg/payload"
	"github.com/payload-applier/payload-applier/pkg/payload/payloadtest"
)

const fixTestdata = "../../pkg/payload/testdata/fix"

// orphanIDs returns the objects lint reports as orphans of next.
func orphanIDs(t *testing.T, previous, next string) []string {
	t.Helper()
	stdout, stderr, _ := execute(t, "lint", "--output", "json", "--previous", previous, next)
	var findings []payload.Finding
	if err := json.Unmarshal([]byte(stdout), &findings); err != nil {
		t.Fatalf("%v: %s %s", err, stdout, stderr)
	}
	var ids []string
	for _, f := range findings {
		if f.Rule == payload.RuleOrphan {
			ids = append(ids, strings.Fields(f.Message)[0])
		}
	}
	slices.Sort(ids)
	return ids
}

// planActions returns, per action, the objects an offline update plan of
// dir acts on, as Kind/namespace/name.
func planActions(t *testing.T, dir string) map[string][]string {
	t.Helper()
	stdout, stderr, code := planCLI(t, "plan", "--payload", dir, "--output", "json")
	if code != exitOK {
		t.Fatalf("plan exit %d: %s", code, stderr)
	}
	var plan struct {
		Nodes []struct {
			Tasks []struct{ Group, Kind, Namespace, Name, Action string }
		}
	}
	if err := json.Unmarshal([]byte(stdout), &plan); err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, n := range plan.Nodes {
		for _, task := range n.Tasks {
			id := payload.ObjectID{Group: task.Group, Kind: task.Kind, Namespace: task.Namespace, Name: task.Name}
			out[task.Action] = append(out[task.Action], id.String())
		}
	}
	for _, ids := range out {
		slices.Sort(ids)
	}
	return out
}

// TestLintFixPair fixes a previous/next pair with orphans, near-miss
// delete values and misspelled keys: each change is one stdout line, the
// fixed pair lints clean (exit 0), a second run changes nothing, and the
// plan of the fixed release deletes the orphans and the near-miss delete
// manifests, nothing else. The orphan whose manifest only a misspelled
// include key had hidden is applied again, not deleted.
func TestLintFixPair(t *testing.T) {
	previous := filepath.Join(fixTestdata, "previous")
	next := payloadtest.CopyTree(t, filepath.Join(fixTestdata, "next"))
	orphans := orphanIDs(t, previous, next)
	want := []string{
		"ClusterRole.rbac.authorization.k8s.io/example-reader",
		"ConfigMap/openshift-example/dropped-one",
		"ConfigMap/openshift-example/dropped-two",
		"ConfigMap/openshift-example/retyped",
		"ServiceAccount/openshift-example/other",
	}
	if !slices.Equal(orphans, want) {
		t.Fatalf("orphans before the fix %v, want %v", orphans, want)
	}

	stdout, stderr, code := execute(t, "lint", "--fix", "--previous", previous, next)
	if code != exitOK {
		t.Fatalf("exit %d after the fix:\n%s%s", code, stdout, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 13 {
		t.Errorf("want 13 change lines, got:\n%s", stdout)
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, next+string(filepath.Separator)) || !strings.Contains(l, ": fixed ") {
			t.Errorf("change line %q is not FILE:LINE: fixed RULE: ...", l)
		}
	}
	if !strings.Contains(stderr, "0 errors, 0 warnings, 0 info") {
		t.Errorf("the fixed pair does not lint clean: %s", stderr)
	}
	if again, stderr, code := execute(t, "lint", "--fix", "--previous", previous, next); again != "" || code != exitOK {
		t.Errorf("a second run (exit %d) changed:\n%s%s", code, again, stderr)
	}

	actions := planActions(t, next)
	wantDeletes := []string{
		"ClusterRole.rbac.authorization.k8s.io/example-reader",
		"ConfigMap/openshift-example/dropped-one",
		"ConfigMap/openshift-example/dropped-two",
		"ServiceAccount/openshift-example/other",
	}
	for _, name := range []string{"bool", "case", "json", "quoted", "typo", "yes"} {
		wantDeletes = append(wantDeletes, "ConfigMap/openshift-example/retire-"+name)
	}
	slices.Sort(wantDeletes)
	if !slices.Equal(actions["delete"], wantDeletes) {
		t.Errorf("plan deletes %v, want %v", actions["delete"], wantDeletes)
	}
	if !slices.Contains(actions["apply"], "ConfigMap/openshift-example/retyped") {
		t.Errorf("plan does not apply the manifest the fixed include key brought back: %v", actions["apply"])
	}
}

// TestLintFixOutput: beside machine output the changes go to stderr, so
// that stdout stays one JSON document; what remains is reported and sets
// the exit code.
func TestLintFixOutput(t *testing.T) {
	dir := payloadtest.CopyTree(t, filepath.Join(fixTestdata, "undecided"))
	writeTestFile(t, filepath.Join(dir, "0000_70_x_00_cm.yaml"), `apiVersion: v1
kind: ConfigMap
metadata:
  name: x
  namespace: openshift-example
  annotations:
    include.release.openshift.io/self-managed-high-availability: "true"
    release.openshift.io/delete: "Yes"
`)
	stdout, stderr, code := execute(t, "lint", "--fix", "--output", "json", dir)
	if code != exitFailed {
		t.Errorf("exit %d, want %d: the undecided findings remain", code, exitFailed)
	}
	var findings []payload.Finding
	if err := json.Unmarshal([]byte(stdout), &findings); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, stdout)
	}
	if len(findings) != 3 {
		t.Errorf("want the 3 undecided findings, got %v", findings)
	}
	if !strings.Contains(stderr, "0000_70_x_00_cm.yaml:8: fixed delete-value") {
		t.Errorf("stderr does not report the change:\n%s", stderr)
	}
}

func writeTestFile(t *testing.T, name, content string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
