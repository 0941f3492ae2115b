package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/payload-applier/payload-applier/pkg/updategraph"
)

// channelGraph: preview 0.14.0 > 0.15.0 > 0.22.2; stable is headed by 0.15.0.
const channelGraph = `{"nodes": [
  {"version": "0.14.0", "payload": "r:0.14.0", "metadata": {"io.openshift.upgrades.graph.release.channels": "preview,stable"}},
  {"version": "0.15.0", "payload": "r:0.15.0", "metadata": {"io.openshift.upgrades.graph.release.channels": "preview,stable"}},
  {"version": "0.22.2", "payload": "r:0.22.2", "metadata": {"io.openshift.upgrades.graph.release.channels": "preview"}}
], "edges": [[0, 1], [1, 2]]}`

func writeGraph(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "graph.json")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestUpdateGraphDeprecate(t *testing.T) {
	in := writeGraph(t, channelGraph)
	out := filepath.Join(t.TempDir(), "new.json")
	stdout, stderr, code := execute(t, "update-graph", "deprecate", in, "--release", "0.15.0", "--release", "0.1.0",
		"--truncate", "--default-channel", "preview", "--message", "use 0.22", "-o", out)
	if code != exitOK || stdout != "" {
		t.Fatalf("exit %d, stdout %q\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"0.1.0 is not in the graph", "removed releases: 0.14.0", "removed channels: stable"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	g, err := updategraph.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	if msg := g.Deprecations()["0.15.0"]; len(g.Nodes) != 2 || msg != "use 0.22" {
		t.Errorf("new graph has %d nodes and deprecations %v", len(g.Nodes), g.Deprecations())
	}
	if before, _ := os.ReadFile(in); string(before) != channelGraph {
		t.Error("the input graph was edited")
	}

	stdout, _, code = execute(t, "update-graph", "deprecate", in, "--release", "0.15.0")
	if code != exitOK || !strings.Contains(stdout, updategraph.DeprecatedKey) {
		t.Errorf("without --output the graph goes to stdout (exit %d):\n%s", code, stdout)
	}
}

func TestUpdateGraphDeprecateRefusesToRemoveTheDefaultHead(t *testing.T) {
	in := writeGraph(t, channelGraph)
	out := filepath.Join(t.TempDir(), "new.json")
	_, stderr, code := execute(t, "update-graph", "deprecate", in, "--release", "0.22.2", "--truncate", "--default-channel", "preview", "-o", out)
	if code != exitFailed || !strings.Contains(stderr, "head of the default channel") {
		t.Fatalf("exit %d, want 1 naming the default channel's head:\n%s", code, stderr)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a refused deprecation must leave no output file: %v", err)
	}
	for _, args := range [][]string{
		{"update-graph", "deprecate", in},
		{"update-graph", "deprecate", in, "--release", "0.15.0", "--allow-channel-removal"},
		{"update-graph", "deprecate", filepath.Join(t.TempDir(), "missing.json"), "--release", "0.15.0"},
	} {
		if _, stderr, code := execute(t, args...); code != exitUsage {
			t.Errorf("%v: exit %d, want 2\n%s", args, code, stderr)
		}
	}
}

func TestUpdateGraphValidateAndShow(t *testing.T) {
	good := writeGraph(t, channelGraph)
	if stdout, stderr, code := execute(t, "update-graph", "validate", good); code != exitOK || !strings.Contains(stdout, "3 releases, 2 edges, valid") {
		t.Errorf("exit %d:\n%s%s", code, stdout, stderr)
	}
	twoHeads := writeGraph(t, `{"nodes": [{"version": "1.0.0", "payload": "a"}, {"version": "1.0.1", "payload": "b"}, {"version": "1.0.2", "payload": "c"}], "edges": [[0, 1], [0, 2]]}`)
	if stdout, _, code := execute(t, "update-graph", "validate", twoHeads); code != exitFailed || !strings.Contains(stdout, "2 heads") {
		t.Errorf("exit %d, want 1 naming the heads:\n%s", code, stdout)
	}
	stdout, _, code := execute(t, "update-graph", "show", good, "--channel", "stable")
	if code != exitOK || !strings.Contains(stdout, "0.14.0") || strings.Contains(stdout, "0.22.2") {
		t.Errorf("show --channel stable (exit %d):\n%s", code, stdout)
	}
}

func TestUpdateGraphMergesDuplicateEdges(t *testing.T) {
	in := writeGraph(t, strings.Replace(channelGraph, `"edges": [[0, 1], [1, 2]]`, `"edges": [[0, 1], [1, 2], [0, 1], [1, 2]]`, 1))
	stdout, stderr, code := execute(t, "update-graph", "validate", in)
	if code != exitOK || !strings.Contains(stdout, "3 releases, 2 edges, valid") || !strings.Contains(stderr, "lists 2 edges more than once; each is kept once") {
		t.Errorf("exit %d, want the repeats merged with a note:\n%s%s", code, stdout, stderr)
	}
	stdout, _, code = execute(t, "update-graph", "deprecate", in, "--release", "0.22.2")
	if code != exitOK || strings.Count(stdout, "[\n      0,\n      1\n    ]") != 1 {
		t.Errorf("the written graph must list each edge once (exit %d):\n%s", code, stdout)
	}
}

func TestUpdateGraphRefusesAGraphOverACap(t *testing.T) {
	in := writeGraph(t, strings.Replace(channelGraph, `"preview"}`, `"preview,`+strings.Repeat("x", updategraph.MaxChannelNameBytes+1)+`"}`, 1))
	for _, command := range []string{"validate", "show"} {
		_, stderr, code := execute(t, "update-graph", command, in)
		if code != exitUsage || !strings.Contains(stderr, "MaxChannelNameBytes = 256") {
			t.Errorf("%s: exit %d, want 2 naming the cap and its limit:\n%s", command, code, stderr)
		}
	}
}
