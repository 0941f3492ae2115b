package operator

import (
	"fmt"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"

	"github.com/payload-applier/payload-applier/pkg/updategraph"
)

// unknownCapabilities is a spec that enables n capabilities no release
// knows, as far as the CRD lets an admin write them.
func unknownCapabilities(n int) *configv1.ClusterVersionCapabilitiesSpec {
	spec := noneWith("Console")
	for i := range n {
		spec.AdditionalEnabledCapabilities = append(spec.AdditionalEnabledCapabilities, configv1.ClusterVersionCapability(fmt.Sprintf("Unknown%06d", i)))
	}
	return spec
}

// BenchmarkSyncWith100kUnknownCapabilities is one pass of a cluster whose
// spec.capabilities.additionalEnabledCapabilities names 100,000
// capabilities no release knows.
func BenchmarkSyncWith100kUnknownCapabilities(b *testing.B) {
	files := map[string]string{"0000_50_demo_00_plain.yaml": configMapManifest("plain")}
	c, _ := capabilityCluster(b, unknownCapabilities(100_000), files, files)
	c.sync(b)
	b.ReportAllocs()
	for b.Loop() {
		c.sync(b)
	}
}

// worstConditionalGraph is a graph where 1.0.0 updates to targets
// releases through one conditional group at every per-item cap of
// pkg/updategraph: 32 risks, each with a 16 KiB message, a 2 KiB URL and
// 16 PromQL rules of 16 KiB.
func worstConditionalGraph(targets int) *updategraph.Graph {
	g := &updategraph.Graph{Nodes: []updategraph.Node{{Version: "1.0.0", Payload: "r:1.0.0"}}}
	group := updategraph.ConditionalEdge{}
	for i := range targets {
		v := fmt.Sprintf("1.1.%d", i)
		g.Nodes = append(g.Nodes, updategraph.Node{Version: v, Payload: "r:" + v})
		group.Edges = append(group.Edges, updategraph.VersionEdge{From: "1.0.0", To: v})
	}
	for i := range g.Nodes {
		g.Nodes[i].Metadata = map[string]string{updategraph.ChannelsKey: "stable-1"}
	}
	for r := range updategraph.MaxRisksPerEdge {
		name := fmt.Sprintf("Risk%02d", r) + strings.Repeat("x", updategraph.MaxRiskNameBytes-6)
		url := "https://example.com/" + strings.Repeat("u", updategraph.MaxRiskURLBytes-20)
		risk := configv1.ConditionalUpdateRisk{Name: name, URL: url, Message: strings.Repeat("m", updategraph.MaxRiskMessageBytes)}
		for q := range updategraph.MaxRulesPerRisk {
			query := fmt.Sprintf("%02d%02d", r, q) + strings.Repeat(" ", updategraph.MaxPromQLBytes-4)
			risk.MatchingRules = append(risk.MatchingRules, configv1.ClusterCondition{Type: "PromQL", PromQL: &configv1.PromQLClusterCondition{PromQL: query}})
		}
		group.Risks = append(group.Risks, risk)
	}
	g.Conditional = []updategraph.ConditionalEdge{group}
	return g
}

func benchmarkWorstConditionalSync(b *testing.B, targets int) {
	c, _ := budgetCluster(b, worstConditionalGraph(targets), nil)
	c.sync(b)
	b.ReportAllocs()
	for b.Loop() {
		c.sync(b)
	}
}

// BenchmarkSyncWorstConditionalGroup25 and ...500 are one pass of a
// cluster whose graph has one conditional group at every per-item cap,
// with edges to 25 and to 500 (MaxConditionalUpdates) targets.
func BenchmarkSyncWorstConditionalGroup25(b *testing.B)  { benchmarkWorstConditionalSync(b, 25) }
func BenchmarkSyncWorstConditionalGroup500(b *testing.B) { benchmarkWorstConditionalSync(b, 500) }
