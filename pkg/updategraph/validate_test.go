package updategraph

import (
	"strings"
	"testing"
)

// Validate once built every channel's subgraph from the whole graph, so
// its work, and its allocations, grew with channels × releases. A guard
// on allocations, which unlike time do not depend on the machine: four
// times the channels may cost about four times as much, not sixteen.
func TestValidateGrowsLinearlyWithChannels(t *testing.T) {
	allocs := func(n int) float64 {
		g := mustParse(t, chainJSON(n, false, true))
		return testing.AllocsPerRun(3, func() {
			if errs := g.Validate(); len(errs) > 0 {
				t.Fatal(errs)
			}
		})
	}
	small, large := allocs(500), allocs(2000)
	t.Logf("allocations: %.0f for 500 channels, %.0f for 2,000", small, large)
	if large > 4.5*small {
		t.Errorf("Validate allocated %.0f times for 500 channels and %.0f for 2,000: %.1fx, want at most 4.5x", small, large, large/small)
	}
}

// The cycle search walks with its own stack: a cycle through a long chain
// is found and named whole.
func TestValidateFindsACycleThroughALongChain(t *testing.T) {
	const n = 20_000
	g := mustParse(t, chainJSON(n, false, false))
	g.Edges = append(g.Edges, [2]int{n - 1, 0})
	errs := g.Validate()
	if len(errs) != 1 {
		t.Fatalf("got %d errors, want the cycle: %v", len(errs), errs)
	}
	cycle := strings.Split(strings.TrimPrefix(errs[0].Error(), `channel "stable" has a cycle: `), " -> ")
	if len(cycle) != n+1 || cycle[0] != "1.0.0" || cycle[n] != "1.0.0" || cycle[1] != "1.0.1" {
		t.Errorf("cycle of %d versions from %s, want all %d releases from 1.0.0 back to it", len(cycle), cycle[0], n)
	}
}
