package updategraph

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// FuzzParse reads arbitrary bytes as a graph. Parse must never panic; a
// graph it accepts must keep every promise Parse makes, write back to the
// same graph, and survive Validate and a truncating Deprecate whose result
// parses again.
//
//	go test -run '^$' -fuzz FuzzParse -fuzztime 60s ./pkg/updategraph/
func FuzzParse(f *testing.F) {
	two := `{"version": "1.0.0", "payload": "a"}, {"version": "1.0.1", "payload": "b"}`
	node := func(version, payload, metadata string) string {
		return fmt.Sprintf(`{"nodes": [{"version": %q, "payload": %q, "metadata": {%s}}]}`, version, payload, metadata)
	}
	var manyKeys []string
	for i := range MaxMetadataKeys + 1 {
		manyKeys = append(manyKeys, fmt.Sprintf(`"k%d": "v"`, i))
	}
	for _, seed := range []string{
		`{"nodes": [], "edges": []}`,
		`{"nodes": [` + two + `], "edges": [[0, 1]]}`,
		// Duplicate edges, nodes and keys, and their neighbours.
		`{"nodes": [` + two + `], "edges": [[0, 1], [0, 1], [0, 1], [0,1]]}`,
		`{"nodes": [` + two + `, {"version": "1.0.0", "payload": "c"}]}`,
		`{"nodes": [` + two + `], "nodes": []}`,
		`{"nodes": [` + two + `], "edges": [[0, 1]], "edges": [[1, 0]]}`,
		`{"nodes": [{"version": "1.0.0", "version": "2.0.0", "payload": "a"}]}`,
		`{"nodes": [{"version": "1.0.0", "payload": "a", "metadata": {"url": "x", "url": "y"}}]}`,
		`{"nodes": [` + two + `], "edges": [[0, 2], [-1, 0], [0, 99999999999999999999], [1, 1]]}`,
		`{"edges": [[0, 1]], "nodes": [` + two + `]}`,
		`{"nodes": [` + two + `], "edges": [[1], [0, 1, 0], [0.5, 1], ["0", 1], null, [1e0, 0]]}`,
		`{"nodes": [` + two + `]} trailing`,
		`{"nodes": [null, {}], "edges": null, "conditionalEdges": null}`,
		`{"nodes": [` + two + `], "edges": [], "conditionalEdges": [{"edges": [{"from": "1.0.0", "to": "1.0.1"}], "risks": [{"url": "https://example.com", "name": "R", "message": "m", "matchingRules": [{"type": "PromQL", "promql": {"promql": "1"}}]}]}]}`,
		// Conditional edges: caps, a missing target, a risk twice, rules.
		`{"nodes": [` + two + `], "conditionalEdges": [{"edges": [{"from": "1.0.0", "to": "9.9.9"}], "risks": [{"url": "u", "name": "R", "message": "m", "matchingRules": [{"type": "Always"}]}]}]}`,
		`{"nodes": [` + two + `], "conditionalEdges": [{"edges": [{"from": "1.0.0", "to": "1.0.1"}], "risks": [{"name": "R", "name": "S", "url": "u", "message": "m", "matchingRules": [{"type": "Always"}]}]}]}`,
		`{"nodes": [` + two + `], "conditionalEdges": [{"edges": [{"from": "1.0.0", "to": "1.0.1"}], "risks": [{"url": "u", "name": "R", "message": "m", "matchingRules": [{"type": "Always"}]}, {"url": "u", "name": "R", "message": "m", "matchingRules": [{"type": "Always"}]}]}]}`,
		`{"nodes": [` + two + `], "conditionalEdges": [{"edges": [{"from": "1.0.0", "to": "1.0.1"}], "risks": []}, {"edges": [], "risks": null}, null]}`,
		`{"nodes": [` + two + `], "conditionalEdges": [{"edges": [{"from": "1.0.0", "to": "1.0.1"}], "risks": [{"url": "u", "name": "` + strings.Repeat("n", MaxRiskNameBytes+1) + `", "message": "m", "matchingRules": [{"type": "Always"}]}]}]}`,
		`{"nodes": [` + two + `], "conditionalEdges": [{"edges": [{"from": "1.0.0", "to": "1.0.1"}], "risks": [{"url": "u", "name": "R", "message": "m", "matchingRules": [` + strings.Repeat(`{"type": "Always"},`, MaxRulesPerRisk) + `{"type": "Always"}]}]}]}`,
		`{"nodes": [` + two + `], "conditionalEdges": {"edges": []}}`,
		// Channels, deprecation, a cycle and two heads.
		`{"nodes": [{"version": "1.0.0", "payload": "a", "metadata": {"io.openshift.upgrades.graph.release.channels": "a,b,a, ,b"}},
			{"version": "1.1.0", "payload": "b", "metadata": {"io.openshift.upgrades.graph.release.channels": "a", "io.openshift.upgrades.graph.release.deprecated": ""}},
			{"version": "2.0.0", "payload": "c", "metadata": {"io.openshift.upgrades.graph.release.channels": "b"}}],
		  "edges": [[0, 1], [1, 0], [0, 2]]}`,
		// At and just over the caps on strings.
		node("1.0.0-"+strings.Repeat("a", MaxVersionBytes-len("1.0.0-")), strings.Repeat("p", MaxPayloadBytes), ""),
		node("1.0.0-"+strings.Repeat("a", MaxVersionBytes), "p", ""),
		node("1.0.0", strings.Repeat("p", MaxPayloadBytes+1), ""),
		node("1.0.0", "p", strings.Join(manyKeys, ",")),
		node("1.0.0", "p", fmt.Sprintf("%q: %q", strings.Repeat("k", MaxMetadataKeyBytes+1), "v")),
		node("1.0.0", "p", fmt.Sprintf("%q: %q", DeprecatedKey, strings.Repeat("m", MaxMetadataValueBytes+1))),
		node("1.0.0", "p", fmt.Sprintf("%q: %q", ChannelsKey, strings.Repeat("c", MaxChannelNameBytes+1))),
		// Counts at and just over MaxNodes.
		`{` + nodesJSON(MaxNodes) + `}`,
		`{` + nodesJSON(MaxNodes+1) + `}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := Parse(bytes.NewReader(data))
		if err != nil {
			return
		}
		checkParsed(t, g)
		var out bytes.Buffer
		if err := g.Encode(&out); err != nil {
			t.Fatal(err)
		}
		again, err := Parse(&out)
		if err != nil {
			t.Fatalf("the graph written back does not parse: %v\n%s", err, out.String())
		}
		if !sameGraph(g, again) {
			t.Fatalf("the graph written back differs:\n%+v\n%+v", g, again)
		}

		g.Validate()
		if len(g.Nodes) == 0 {
			return
		}
		opts := DeprecateOptions{Releases: []string{g.Nodes[0].Version, g.Nodes[len(g.Nodes)-1].Version}, Truncate: true}
		if channels := g.Nodes[0].Channels(); len(channels) > 0 {
			opts.DefaultChannel = channels[0]
		}
		res, err := Deprecate(g, opts)
		if err != nil {
			return
		}
		out.Reset()
		if err := res.Graph.Encode(&out); err != nil {
			t.Fatal(err)
		}
		if _, err := Parse(&out); err != nil {
			t.Fatalf("Deprecate wrote a graph that does not parse: %v\n%s", err, out.String())
		}
		res.Graph.Validate()
	})
}

// checkParsed checks what Parse promises of a graph it accepts.
func checkParsed(t *testing.T, g *Graph) {
	t.Helper()
	if len(g.Nodes) > MaxNodes || len(g.Edges) > MaxEdges {
		t.Fatalf("%d nodes and %d edges, over the caps", len(g.Nodes), len(g.Edges))
	}
	versions := map[string]bool{}
	for _, n := range g.Nodes {
		if versions[n.Version] || n.Version == "" {
			t.Fatalf("version %q empty or repeated", n.Version)
		}
		versions[n.Version] = true
		if len(n.Version) > MaxVersionBytes || len(n.Payload) > MaxPayloadBytes || len(n.Metadata) > MaxMetadataKeys {
			t.Fatalf("node %s over a cap", n.Version)
		}
		for k, v := range n.Metadata {
			if len(k) > MaxMetadataKeyBytes || len(v) > MaxMetadataValueBytes {
				t.Fatalf("node %s: metadata %q over a cap", n.Version, k)
			}
		}
	}
	edges := map[[2]int]bool{}
	for _, e := range g.Edges {
		if edges[e] || e[0] == e[1] || e[0] < 0 || e[1] < 0 || e[0] >= len(g.Nodes) || e[1] >= len(g.Nodes) {
			t.Fatalf("edge %v repeated, a loop or out of range", e)
		}
		edges[e] = true
	}
	if len(g.Conditional) > MaxConditionalEdges {
		t.Fatalf("%d conditionalEdges, over the cap", len(g.Conditional))
	}
	for _, c := range g.Conditional {
		if len(c.Risks) == 0 || len(c.Risks) > MaxRisksPerEdge {
			t.Fatalf("a conditional edge with %d risks", len(c.Risks))
		}
		for _, r := range c.Risks {
			if r.Name == "" || len(r.Name) > MaxRiskNameBytes || len(r.Message) > MaxRiskMessageBytes || len(r.URL) > MaxRiskURLBytes ||
				len(r.MatchingRules) == 0 || len(r.MatchingRules) > MaxRulesPerRisk {
				t.Fatalf("risk %q over a cap or without rules", r.Name)
			}
		}
	}
	for _, c := range g.Conditional {
		for _, e := range c.Edges {
			// Never panics; an error is only a missing target.
			if _, err := g.ConditionalUpdates(e.From); err != nil && ReasonOf(err) != ReasonResponseInvalid {
				t.Fatalf("ConditionalUpdates(%s): %v", e.From, err)
			}
		}
	}
}

// sameGraph compares graphs as JSON says them: empty metadata is none,
// and conditional edges are compared without their layout.
func sameGraph(a, b *Graph) bool {
	if !reflect.DeepEqual(a.Edges, b.Edges) || len(a.Nodes) != len(b.Nodes) {
		return false
	}
	for i := range a.Nodes {
		x, y := a.Nodes[i], b.Nodes[i]
		if x.Version != y.Version || x.Payload != y.Payload || len(x.Metadata) != len(y.Metadata) {
			return false
		}
		for k, v := range x.Metadata {
			if w, ok := y.Metadata[k]; !ok || v != w {
				return false
			}
		}
	}
	return compact(a.ConditionalEdges) == compact(b.ConditionalEdges) && reflect.DeepEqual(a.Conditional, b.Conditional)
}

func compact(raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}
