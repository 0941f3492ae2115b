package updategraph

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// nodesJSON writes n minimal releases 0.0.0, 0.0.1, … as a "nodes" list.
func nodesJSON(n int) string {
	var b strings.Builder
	b.WriteString(`"nodes": [`)
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"version": "0.%d.%d", "payload": "p"}`, i/1000, i%1000)
	}
	b.WriteString("]")
	return b.String()
}

func TestParseMergesDuplicateEdges(t *testing.T) {
	g, err := Parse(strings.NewReader(`{"nodes": [{"version": "1.0.0", "payload": "a"}, {"version": "1.0.1", "payload": "b"}, {"version": "1.0.2", "payload": "c"}],
		"edges": [[0, 1], [0, 2], [0, 1], [1, 2], [0,1], [0, 2]]}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := [][2]int{{0, 1}, {0, 2}, {1, 2}}; !reflect.DeepEqual(g.Edges, want) || g.DuplicateEdges != 3 {
		t.Errorf("edges %v with %d duplicates, want %v, the first of each in order, and 3 duplicates", g.Edges, g.DuplicateEdges, want)
	}
	updates, _ := g.Updates("1.0.0")
	if len(updates) != 2 {
		t.Errorf("1.0.0 updates to %v, want 1.0.2 and 1.0.1 once each", updates)
	}
}

// A hostile graph: one edge listed until the graph is 32 MiB. It must come
// out as the two-node graph it is, without allocating for the copies
// (kept, the 5.6 M edges would take about 700 MiB).
func TestParseDuplicateEdgeFloodCostsNoMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 32 MiB")
	}
	data := duplicateEdgesJSON()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	g, err := Parse(bytes.NewReader(data))
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Edges) != 1 || g.DuplicateEdges < 5_000_000 {
		t.Fatalf("%d edges and %d duplicates, want one edge and millions of duplicates", len(g.Edges), g.DuplicateEdges)
	}
	if allocated := after.TotalAlloc - before.TotalAlloc; allocated > 1<<20 {
		t.Errorf("parsing allocated %d bytes, want under 1 MiB for a two-node graph", allocated)
	}
}

func TestParseRejectsKeysGivenTwice(t *testing.T) {
	for _, tc := range []struct{ name, json, want string }{
		{"the node list", `{"nodes": [{"version": "1.0.0", "payload": "x"}], "nodes": [{"version": "2.0.0", "payload": "y"}]}`, `the key "nodes" twice`},
		{"the edge list", `{"nodes": [{"version": "1.0.0", "payload": "x"}, {"version": "1.0.1", "payload": "y"}], "edges": [[0, 1]], "edges": []}`, `the key "edges" twice`},
		{"a node's version", `{"nodes": [{"version": "1.0.0", "payload": "x", "version": "1.0.1"}]}`, `node 0: duplicate field "version"`},
		{"a metadata key", `{"nodes": [{"version": "1.0.0", "payload": "x", "metadata": {"io.openshift.upgrades.graph.release.channels": "stable", "io.openshift.upgrades.graph.release.channels": "fast"}}]}`,
			`node 0: duplicate field "metadata.io.openshift.upgrades.graph.release.channels"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Parse(strings.NewReader(tc.json)); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
}

func TestParseNamesTheDuplicateRelease(t *testing.T) {
	_, err := Parse(strings.NewReader(`{"nodes": [{"version": "1.0.0", "payload": "x"}, {"version": "1.0.1", "payload": "y"}, {"version": "1.0.0", "payload": "z"}]}`))
	if err == nil || err.Error() != "nodes 0 and 2 both have version 1.0.0" {
		t.Errorf("got %v, want nodes 0 and 2 named with their version", err)
	}
}

func TestParseRejectsMalformedEdgesAndTrailingData(t *testing.T) {
	two := `"nodes": [{"version": "1.0.0", "payload": "x"}, {"version": "1.0.1", "payload": "y"}]`
	for _, tc := range []struct{ name, json, want string }{
		{"a one-element edge", `{` + two + `, "edges": [[1]]}`, "edge 0 has 1 elements"},
		{"a three-element edge", `{` + two + `, "edges": [[0, 1, 1]]}`, "edge 0 has more than 2 elements"},
		{"a null index", `{` + two + `, "edges": [[0, 1], [null, 1]]}`, "edge 1 is not a pair of node indices"},
		{"a fractional index", `{` + two + `, "edges": [[0, 1.5]]}`, "edge 0 is not a pair of node indices"},
		{"an index past any graph", `{` + two + `, "edges": [[0, 1], [0, 99999999999]]}`, "edge 1 [0, 99999999999] names a node that does not exist"},
		{"an edge out of range, nodes after edges", `{"edges": [[0, 1], [1, 2]], ` + two + `}`, "edge 1 [1, 2] names a node that does not exist (2 nodes)"},
		{"a null node", `{"nodes": [null]}`, "node 0 is null"},
		{"data after the graph", `{` + two + `} {"nodes": []}`, "more data after the graph"},
		{"not an object", `[]`, "the graph is not an object"},
		{"empty", ``, "unexpected EOF"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Parse(strings.NewReader(tc.json)); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
}

func TestParseEnforcesCaps(t *testing.T) {
	node := func(version, payload, metadata string) string {
		return fmt.Sprintf(`{"nodes": [{"version": %q, "payload": %q, "metadata": {%s}}]}`, version, payload, metadata)
	}
	var manyKeys []string
	for i := range MaxMetadataKeys + 1 {
		manyKeys = append(manyKeys, fmt.Sprintf(`"k%d": "v"`, i))
	}
	var manyEdges strings.Builder
	// 1,001 releases have a million distinct edges between them and more.
	const side = 1001
	manyEdges.WriteString(`{` + nodesJSON(side) + `, "edges": [`)
	count := 0
	for from := 0; from < side && count <= MaxEdges; from++ {
		for to := 0; to < side && count <= MaxEdges; to++ {
			if from != to {
				if count > 0 {
					manyEdges.WriteString(",")
				}
				fmt.Fprintf(&manyEdges, "[%d,%d]", from, to)
				count++
			}
		}
	}
	manyEdges.WriteString("]}")

	for _, tc := range []struct{ name, json, cap string }{
		{"nodes", `{` + nodesJSON(MaxNodes+1) + `}`, "MaxNodes"},
		{"edges", manyEdges.String(), "MaxEdges"},
		{"version", node("1.0.0-"+strings.Repeat("a", MaxVersionBytes), "p", ""), "MaxVersionBytes"},
		{"payload", node("1.0.0", strings.Repeat("p", MaxPayloadBytes+1), ""), "MaxPayloadBytes"},
		{"metadata keys", node("1.0.0", "p", strings.Join(manyKeys, ",")), "MaxMetadataKeys"},
		{"metadata key", node("1.0.0", "p", fmt.Sprintf("%q: %q", strings.Repeat("k", MaxMetadataKeyBytes+1), "v")), "MaxMetadataKeyBytes"},
		{"metadata value", node("1.0.0", "p", fmt.Sprintf("%q: %q", DeprecatedKey, strings.Repeat("m", MaxMetadataValueBytes+1))), "MaxMetadataValueBytes"},
		{"channel name", node("1.0.0", "p", fmt.Sprintf("%q: %q", ChannelsKey, "stable,"+strings.Repeat("c", MaxChannelNameBytes+1))), "MaxChannelNameBytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(tc.json))
			var capErr *CapError
			if !errors.As(err, &capErr) || capErr.Cap != tc.cap {
				t.Fatalf("got %v, want the cap %s", err, tc.cap)
			}
			if msg := err.Error(); !strings.Contains(msg, tc.cap) || !strings.Contains(msg, fmt.Sprint(capErr.Limit)) {
				t.Errorf("%q should name the cap and its limit", msg)
			}
		})
	}

	// At the caps exactly, a graph is accepted.
	atCap := node("1.0.0-"+strings.Repeat("a", MaxVersionBytes-len("1.0.0-")), strings.Repeat("p", MaxPayloadBytes),
		fmt.Sprintf("%q: %q", DeprecatedKey, strings.Repeat("m", MaxMetadataValueBytes)))
	if _, err := Parse(strings.NewReader(atCap)); err != nil {
		t.Errorf("a node at every string cap: %v", err)
	}
	if g, err := Parse(strings.NewReader(`{` + nodesJSON(MaxNodes) + `}`)); err != nil || len(g.Nodes) != MaxNodes {
		t.Errorf("MaxNodes nodes: %v", err)
	}
}

// An edge after a long string still reads: what the decoder reads ahead
// after growing its buffer for the string is not charged to the edge.
func TestParseEdgeAfterALongString(t *testing.T) {
	escaped := strings.Repeat(`\u0041`, MaxMetadataValueBytes)
	data := `{"nodes": [{"version": "1.0.0", "payload": "a", "metadata": {"m": "` + escaped + `"}}, {"version": "1.0.1", "payload": "b"}],
		"edges": [` + strings.Repeat("[0, 1],", 50_000) + `[1, 0]]}`
	g, err := Parse(strings.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Nodes[0].Metadata["m"]) != MaxMetadataValueBytes || len(g.Edges) != 2 {
		t.Errorf("metadata of %d bytes and %d edges, want %d bytes and 2 edges", len(g.Nodes[0].Metadata["m"]), len(g.Edges), MaxMetadataValueBytes)
	}
}
