package updategraph

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
)

// build makes a graph from "version:ch1,ch2" nodes (no channels after a
// bare version) and "from>to" edges.
func build(t *testing.T, nodes []string, edges ...string) *Graph {
	t.Helper()
	g := &Graph{Nodes: []Node{}, Edges: [][2]int{}}
	for _, spec := range nodes {
		version, channels, _ := strings.Cut(spec, ":")
		n := Node{Version: version, Payload: "quay.io/r:" + version}
		if channels != "" {
			n.Metadata = map[string]string{ChannelsKey: channels}
		}
		g.Nodes = append(g.Nodes, n)
	}
	for _, e := range edges {
		from, to, _ := strings.Cut(e, ">")
		if g.Find(from) < 0 || g.Find(to) < 0 {
			t.Fatalf("edge %s names an unknown node", e)
		}
		g.Edges = append(g.Edges, [2]int{g.Find(from), g.Find(to)})
	}
	return g
}

// describe renders a graph as its sorted nodes with channels (and * when
// deprecated) and its sorted edges, for comparison.
func describe(g *Graph) string {
	var nodes, edges []string
	for _, n := range g.Nodes {
		s := n.Version + ":" + strings.Join(n.Channels(), ",")
		if _, ok := n.Deprecation(); ok {
			s += "*"
		}
		nodes = append(nodes, s)
	}
	for _, e := range g.Edges {
		edges = append(edges, g.Nodes[e[0]].Version+">"+g.Nodes[e[1]].Version)
	}
	sort.Strings(nodes)
	sort.Strings(edges)
	return fmt.Sprintf("nodes %v edges %v", nodes, edges)
}

func TestDeprecate(t *testing.T) {
	line := func() *Graph {
		return build(t, []string{"1.1.0:stable", "1.2.0:stable", "1.3.0:stable", "1.4.0:stable"}, "1.1.0>1.2.0", "1.2.0>1.3.0", "1.3.0>1.4.0")
	}
	// opm's ChannelRemoved example: preview 0.14.0 > 0.15.0 > 0.22.2, and
	// stable 0.14.0 > 0.15.0, headed by 0.15.0.
	twoChannels := func() *Graph {
		return build(t, []string{"0.14.0:preview,stable", "0.15.0:preview,stable", "0.22.2:preview"}, "0.14.0>0.15.0", "0.15.0>0.22.2")
	}
	for _, tc := range []struct {
		name    string
		graph   *Graph
		opts    DeprecateOptions
		want    string
		wantErr error
	}{
		{"without truncation a release is only marked", line(), DeprecateOptions{Releases: []string{"1.3.0"}},
			"nodes [1.1.0:stable 1.2.0:stable 1.3.0:stable* 1.4.0:stable] edges [1.1.0>1.2.0 1.2.0>1.3.0 1.3.0>1.4.0]", nil},
		{"truncation removes the tail; the deprecated release stays to update from", line(),
			DeprecateOptions{Releases: []string{"1.3.0"}, Truncate: true, DefaultChannel: "stable"},
			"nodes [1.3.0:stable* 1.4.0:stable] edges [1.3.0>1.4.0]", nil},
		{"a channel headed by the deprecated release goes; shared releases leave only the shared channels", twoChannels(),
			DeprecateOptions{Releases: []string{"0.15.0"}, Truncate: true, DefaultChannel: "preview"},
			"nodes [0.15.0:preview* 0.22.2:preview] edges [0.15.0>0.22.2]", nil},
		{"a release in another channel too stays there; the channel the deprecated release headed goes", build(t, []string{"1.0.0:a,b", "1.1.0:a", "2.0.0:b"}, "1.0.0>1.1.0", "1.0.0>2.0.0"),
			DeprecateOptions{Releases: []string{"1.1.0"}, Truncate: true, DefaultChannel: "b"},
			"nodes [1.0.0:b 1.1.0:* 2.0.0:b] edges [1.0.0>2.0.0]", nil},
		{"a branch point stays", build(t, []string{"1.0.0:a", "1.1.0:a", "1.2.0:a", "1.3.0:a"}, "1.0.0>1.1.0", "1.0.0>1.2.0", "1.1.0>1.3.0", "1.2.0>1.3.0"),
			DeprecateOptions{Releases: []string{"1.1.0"}, Truncate: true, DefaultChannel: "a"},
			"nodes [1.0.0:a 1.1.0:a* 1.2.0:a 1.3.0:a] edges [1.0.0>1.2.0 1.1.0>1.3.0 1.2.0>1.3.0]", nil},
		{"a release that skips past the deprecated one keeps its skip", build(t, []string{"1.0.0:a", "1.1.0:a", "1.2.0:a", "1.3.0:a"}, "1.0.0>1.1.0", "1.1.0>1.2.0", "1.2.0>1.3.0", "1.0.0>1.3.0"),
			DeprecateOptions{Releases: []string{"1.2.0"}, Truncate: true, DefaultChannel: "a"},
			"nodes [1.0.0:a 1.2.0:a* 1.3.0:a] edges [1.0.0>1.3.0 1.2.0>1.3.0]", nil},
		{"an unknown release changes nothing", line(), DeprecateOptions{Releases: []string{"9.9.9"}, Truncate: true, DefaultChannel: "stable"},
			describe(line()), nil},
		{"a release an earlier deprecation truncated is left alone", line(),
			DeprecateOptions{Releases: []string{"1.3.0", "1.2.0"}, Truncate: true, DefaultChannel: "stable"},
			"nodes [1.3.0:stable* 1.4.0:stable] edges [1.3.0>1.4.0]", nil},
		{"the default channel's head is not removed", twoChannels(),
			DeprecateOptions{Releases: []string{"0.22.2"}, Truncate: true, DefaultChannel: "preview"}, "", ErrRemovingDefaultChannel},
		{"nor a release in its tail when it is older", twoChannels(),
			DeprecateOptions{Releases: []string{"0.15.0"}, Truncate: true, DefaultChannel: "stable"}, "", ErrRemovingDefaultChannel},
		{"with the flag, every head must be listed", twoChannels(),
			DeprecateOptions{Releases: []string{"0.22.2"}, Truncate: true, DefaultChannel: "preview", AllowChannelRemoval: true}, "", ErrRemovingDefaultChannel},
		{"with the flag and every head listed, everything goes", twoChannels(),
			DeprecateOptions{Releases: []string{"0.22.2", "0.15.0"}, Truncate: true, DefaultChannel: "preview", AllowChannelRemoval: true},
			"nodes [] edges []", nil},
		{"a graph without channels is one channel", build(t, []string{"1.0.0", "1.1.0", "1.2.0"}, "1.0.0>1.1.0", "1.1.0>1.2.0"),
			DeprecateOptions{Releases: []string{"1.1.0"}, Truncate: true},
			"nodes [1.1.0:* 1.2.0:] edges [1.1.0>1.2.0]", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := describe(tc.graph)
			res, err := Deprecate(tc.graph, tc.opts)
			if describe(tc.graph) != before {
				t.Fatal("Deprecate changed its input graph")
			}
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || res != nil {
					t.Fatalf("got %v (result %v), want %v and no graph", err, res, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := describe(res.Graph); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
			if errs := res.Graph.Validate(); len(errs) > 0 && len(res.Graph.Nodes) > 0 && !strings.Contains(tc.name, "only marked") {
				t.Errorf("the result does not validate: %v", errs)
			}
		})
	}
}

func TestDeprecateReportsWhatChanged(t *testing.T) {
	g := build(t, []string{"0.14.0:preview,stable", "0.15.0:preview,stable", "0.22.2:preview"}, "0.14.0>0.15.0", "0.15.0>0.22.2")
	res, err := Deprecate(g, DeprecateOptions{Releases: []string{"0.15.0", "0.1.0"}, Truncate: true, DefaultChannel: "preview", Message: "use 0.22"})
	if err != nil {
		t.Fatal(err)
	}
	got := [][]string{res.Removed, res.RemovedChannels, res.NotFound}
	if want := [][]string{{"0.14.0"}, {"stable"}, {"0.1.0"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("removed, removed channels, not found = %v, want %v", got, want)
	}
	if msg, _ := res.Graph.Nodes[res.Graph.Find("0.15.0")].Deprecation(); msg != "use 0.22" {
		t.Errorf("message = %q", msg)
	}
}

func TestDeprecateNeedsTheDefaultChannelToTruncateChannels(t *testing.T) {
	g := build(t, []string{"1.0.0:a", "1.1.0:a"}, "1.0.0>1.1.0")
	if _, err := Deprecate(g, DeprecateOptions{Releases: []string{"1.0.0"}, Truncate: true}); err == nil {
		t.Fatal("truncating a graph with channels must name the default channel")
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		graph *Graph
		want  []string
	}{
		{"a line is valid", build(t, []string{"1.0.0:a", "1.1.0:a"}, "1.0.0>1.1.0"), nil},
		{"two heads", build(t, []string{"1.0.0:a", "1.1.0:a", "1.2.0:a"}, "1.0.0>1.1.0", "1.0.0>1.2.0"), []string{`channel "a" has 2 heads, want one: 1.1.0, 1.2.0`}},
		{"a cycle", build(t, []string{"1.0.0:a", "1.1.0:a", "1.2.0:a"}, "1.0.0>1.1.0", "1.1.0>1.0.0", "1.1.0>1.2.0"), []string{`channel "a" has a cycle: 1.0.0 -> 1.1.0 -> 1.0.0`}},
		{"a graph without channels is one channel", build(t, []string{"1.0.0", "1.1.0", "1.2.0"}, "1.0.0>1.2.0"), []string{"the graph has 2 heads"}},
		{"channels are judged apart", build(t, []string{"1.0.0:a,b", "1.1.0:a", "2.0.0:b"}, "1.0.0>1.1.0", "1.0.0>2.0.0"), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, err := range tc.graph.Validate() {
				got = append(got, err.Error())
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tc.want[i]) {
					t.Errorf("got %q, want %q", got[i], tc.want[i])
				}
			}
		})
	}
}

func TestUpdatesHideDeprecatedReleases(t *testing.T) {
	g := build(t, []string{"1.0.0", "1.0.1", "1.0.2", "1.1.0"}, "1.0.0>1.0.1", "1.0.0>1.0.2", "1.0.0>1.1.0")
	g.Nodes[g.Find("1.0.2")].Metadata = map[string]string{DeprecatedKey: "broken"}
	updates, found := g.Updates("1.0.0")
	var versions []string
	for _, u := range updates {
		versions = append(versions, u.Version)
	}
	if !found || !slices.Equal(versions, []string{"1.1.0", "1.0.1"}) {
		t.Errorf("updates = %v (found %v), want 1.1.0 and 1.0.1, newest first, without the deprecated 1.0.2", versions, found)
	}
	if _, found := g.Updates("2.0.0"); found {
		t.Error("a version not in the graph must not be found")
	}
}

func TestParseRejectsMalformedGraphs(t *testing.T) {
	for _, tc := range []struct{ name, json, want string }{
		{"not JSON", `{`, "not a Cincinnati graph"},
		{"no nodes", `{"edges": []}`, `no "nodes"`},
		{"unknown field", `{"nodes": [], "edgez": []}`, "unknown field"},
		{"a bad version", `{"nodes": [{"version": "four", "payload": "x"}]}`, "not a Semantic Version"},
		{"a duplicate", `{"nodes": [{"version": "1.0.0", "payload": "x"}, {"version": "1.0.0", "payload": "y"}]}`, "both have version"},
		{"an edge out of range", `{"nodes": [{"version": "1.0.0", "payload": "x"}], "edges": [[0, 3]]}`, "does not exist"},
		{"a self edge", `{"nodes": [{"version": "1.0.0", "payload": "x"}], "edges": [[0, 0]]}`, "to itself"},
		{"too large", `{"nodes": [` + strings.Repeat(" ", MaxGraphBytes) + `]}`, "larger than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(tc.json))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
}
