package updategraph

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// chainJSON writes a graph of n releases 1.0.0, 1.0.1, … in a chain; with
// skips it also skips ahead by two and by five, as real z-streams do.
// perNodeChannel
// puts release i in its own channel "c-i" and in "c-(i-1)", so that every
// pair of neighbours is a channel of its own (n-1 channels of two releases,
// each valid) beside "stable", which holds them all.
func chainJSON(n int, skips, perNodeChannel bool) []byte {
	var b bytes.Buffer
	b.WriteString(`{"nodes": [`)
	for i := range n {
		if i > 0 {
			b.WriteString(",\n")
		}
		channels := "stable"
		if perNodeChannel {
			channels += fmt.Sprintf(",c-%d", i)
			if i > 0 {
				channels += fmt.Sprintf(",c-%d", i-1)
			}
		}
		fmt.Fprintf(&b, `{"version": "1.%d.%d", "payload": "quay.io/openshift-release-dev/ocp-release@sha256:%064d", "metadata": {"url": "https://access.redhat.com/errata/RHBA-2026:%d", %q: %q}}`,
			i/1000, i%1000, i, i, ChannelsKey, channels)
	}
	b.WriteString("],\n\"edges\": [")
	first := true
	for i := range n {
		for _, step := range []int{1, 2, 5} {
			if i+step >= n || (!skips && step != 1) {
				continue
			}
			if !first {
				b.WriteString(",")
			}
			first = false
			fmt.Fprintf(&b, "[%d,%d]", i, i+step)
		}
	}
	b.WriteString("]}\n")
	return b.Bytes()
}

// duplicateEdgesJSON is a hostile graph, cheap to send and costly to keep:
// two releases and one edge repeated until the graph is just under
// MaxGraphBytes.
func duplicateEdgesJSON() []byte {
	head := `{"nodes": [{"version": "1.0.0", "payload": "a"}, {"version": "1.0.1", "payload": "b"}], "edges": [[0,1]`
	n := (MaxGraphBytes - len(head) - 3) / len(",[0,1]")
	return []byte(head + strings.Repeat(",[0,1]", n) + "]}\n")
}

func mustParse(tb testing.TB, data []byte) *Graph {
	tb.Helper()
	g, err := Parse(bytes.NewReader(data))
	if err != nil {
		tb.Fatal(err)
	}
	return g
}

func benchmarkParse(b *testing.B, data []byte) {
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParse10kNodes(b *testing.B) { benchmarkParse(b, chainJSON(10_000, true, false)) }

func BenchmarkParseDuplicateEdges32MiB(b *testing.B) { benchmarkParse(b, duplicateEdgesJSON()) }

func benchmarkValidate(b *testing.B, g *Graph) {
	b.ReportAllocs()
	for b.Loop() {
		if errs := g.Validate(); len(errs) > 0 {
			b.Fatal(errs)
		}
	}
}

func BenchmarkValidate10kNodes(b *testing.B) {
	benchmarkValidate(b, mustParse(b, chainJSON(10_000, true, false)))
}

func BenchmarkValidate10kChannels(b *testing.B) {
	benchmarkValidate(b, mustParse(b, chainJSON(10_000, false, true)))
}

// BenchmarkDeprecateTruncate10kChain deprecates the release before the
// head of a 10,000-release chain: the 9,998 releases behind it go.
func BenchmarkDeprecateTruncate10kChain(b *testing.B) {
	g := mustParse(b, chainJSON(10_000, false, false))
	opts := DeprecateOptions{Releases: []string{g.Nodes[len(g.Nodes)-2].Version}, Truncate: true, DefaultChannel: "stable"}
	b.ReportAllocs()
	for b.Loop() {
		res, err := Deprecate(g, opts)
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Removed) != len(g.Nodes)-2 {
			b.Fatalf("removed %d releases, want %d", len(res.Removed), len(g.Nodes)-2)
		}
	}
}

// BenchmarkDeprecateTruncate10kChannels deprecates, with truncation, a
// release in the middle of the chain whose every pair of neighbours is a
// channel: half the channels go with their releases.
func BenchmarkDeprecateTruncate10kChannels(b *testing.B) {
	g := mustParse(b, chainJSON(10_000, false, true))
	opts := DeprecateOptions{Releases: []string{g.Nodes[5000].Version}, Truncate: true, DefaultChannel: "stable"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Deprecate(g, opts); err != nil {
			b.Fatal(err)
		}
	}
}
