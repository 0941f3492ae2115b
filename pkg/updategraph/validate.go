package updategraph

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// channelNames lists the graph's channels, sorted; a graph without
// channel metadata has one unnamed channel holding every node.
func (g *Graph) channelNames() []string {
	if !g.HasChannels() {
		return []string{""}
	}
	var out []string
	for _, n := range g.Nodes {
		for _, c := range n.Channels() {
			if !slices.Contains(out, c) {
				out = append(out, c)
			}
		}
	}
	sort.Strings(out)
	return out
}

// Heads lists the versions in channel that update to nothing else in it.
func (g *Graph) Heads(channel string) []string {
	sub := g.InChannel(channel)
	hasOut := make([]bool, len(sub.Nodes))
	for _, e := range sub.Edges {
		hasOut[e[0]] = true
	}
	var heads []string
	for i, n := range sub.Nodes {
		if !hasOut[i] {
			heads = append(heads, n.Version)
		}
	}
	return heads
}

// Validate checks every channel: no cycle and exactly one head, which
// every release then reaches. It returns every problem found.
func (g *Graph) Validate() []error {
	var errs []error
	for _, c := range g.channelNames() {
		name := fmt.Sprintf("channel %q", c)
		if c == "" {
			name = "the graph"
		}
		sub := g.InChannel(c)
		if len(sub.Nodes) == 0 {
			continue
		}
		if cycle := sub.cycle(); cycle != nil {
			errs = append(errs, fmt.Errorf("%s has a cycle: %s", name, strings.Join(cycle, " -> ")))
			continue
		}
		// Without a cycle every release reaches some head, so one head
		// means every release can reach it.
		if heads := g.Heads(c); len(heads) != 1 {
			errs = append(errs, fmt.Errorf("%s has %d heads, want one: %s", name, len(heads), strings.Join(heads, ", ")))
		}
	}
	return errs
}

// cycle returns the versions along a cycle, or nil when there is none.
func (g *Graph) cycle() []string {
	out := make([][]int, len(g.Nodes))
	for _, e := range g.Edges {
		out[e[0]] = append(out[e[0]], e[1])
	}
	const (
		unvisited = iota
		onPath
		done
	)
	state := make([]int, len(g.Nodes))
	var path []int
	var visit func(n int) []string
	visit = func(n int) []string {
		state[n] = onPath
		path = append(path, n)
		for _, m := range out[n] {
			switch state[m] {
			case onPath:
				start := slices.Index(path, m)
				var versions []string
				for _, p := range append(path[start:], m) {
					versions = append(versions, g.Nodes[p].Version)
				}
				return versions
			case unvisited:
				if c := visit(m); c != nil {
					return c
				}
			}
		}
		path = path[:len(path)-1]
		state[n] = done
		return nil
	}
	for i := range g.Nodes {
		if state[i] == unvisited {
			if c := visit(i); c != nil {
				return c
			}
		}
	}
	return nil
}
