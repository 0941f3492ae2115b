package updategraph

import (
	"fmt"
	"slices"
	"strings"
)

// channelMembers maps each channel to its nodes, in node order, and lists
// the channels sorted; a graph without channel metadata has one unnamed
// channel holding every node.
func (g *Graph) channelMembers() (names []string, members map[string][]int) {
	members = map[string][]int{}
	named := false
	for i, n := range g.Nodes {
		for _, c := range n.Channels() {
			named = true
			if _, ok := members[c]; !ok {
				names = append(names, c)
			}
			members[c] = append(members[c], i)
		}
	}
	if !named {
		all := make([]int, len(g.Nodes))
		for i := range all {
			all[i] = i
		}
		return []string{""}, map[string][]int{"": all}
	}
	slices.Sort(names)
	return names, members
}

// successors lists each node's successors, in edge order.
func (g *Graph) successors() [][]int {
	out := make([][]int, len(g.Nodes))
	for _, e := range g.Edges {
		out[e[0]] = append(out[e[0]], e[1])
	}
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
//
// Its cost is linear in the nodes, the edges and the channel memberships:
// a channel is checked by walking only its own members and their edges,
// so each edge is looked at once per channel of the release it leaves.
func (g *Graph) Validate() []error {
	names, members := g.channelMembers()
	out := g.successors()
	// inChannel[n] is k+1 while the k-th channel is checked and n is in
	// it, so that no per-channel set is built or cleared.
	inChannel := make([]int, len(g.Nodes))
	walk := newCycleWalk(len(g.Nodes))
	var errs []error
	for k, c := range names {
		name := fmt.Sprintf("channel %q", c)
		if c == "" {
			name = "the graph"
		}
		nodes := members[c]
		if len(nodes) == 0 {
			continue
		}
		for _, n := range nodes {
			inChannel[n] = k + 1
		}
		next := func(n int) []int { return out[n] }
		in := func(n int) bool { return inChannel[n] == k+1 }
		if cycle := walk.find(nodes, next, in); cycle != nil {
			versions := make([]string, len(cycle))
			for i, n := range cycle {
				versions[i] = g.Nodes[n].Version
			}
			errs = append(errs, fmt.Errorf("%s has a cycle: %s", name, strings.Join(versions, " -> ")))
			continue
		}
		// Without a cycle every release reaches some head, so one head
		// means every release can reach it.
		var heads []string
		for _, n := range nodes {
			if !slices.ContainsFunc(out[n], in) {
				heads = append(heads, g.Nodes[n].Version)
			}
		}
		if len(heads) != 1 {
			errs = append(errs, fmt.Errorf("%s has %d heads, want one: %s", name, len(heads), strings.Join(heads, ", ")))
		}
	}
	return errs
}

// cycleWalk finds cycles by depth-first search, reusing its state from
// one channel to the next. It walks with its own stack, not recursion, as
// a chain may be tens of thousands of releases long.
type cycleWalk struct {
	state []uint8
	// pathAt is a node's position on the current path, while on it.
	pathAt []int
}

const (
	unvisited uint8 = iota
	onPath
	done
)

func newCycleWalk(n int) *cycleWalk {
	return &cycleWalk{state: make([]uint8, n), pathAt: make([]int, n)}
}

// find returns the nodes along a cycle among nodes, the first node
// repeated at the end, or nil. It starts from each node in order and
// follows next in order, counting only the successors that in admits.
func (w *cycleWalk) find(nodes []int, next func(int) []int, in func(int) bool) []int {
	defer func() {
		for _, n := range nodes {
			w.state[n] = unvisited
		}
	}()
	type frame struct{ node, edge int }
	var path []frame
	for _, start := range nodes {
		if w.state[start] != unvisited {
			continue
		}
		w.state[start], w.pathAt[start] = onPath, 0
		path = append(path[:0], frame{start, 0})
		for len(path) > 0 {
			top := &path[len(path)-1]
			succ := next(top.node)
			if top.edge == len(succ) {
				w.state[top.node] = done
				path = path[:len(path)-1]
				continue
			}
			m := succ[top.edge]
			top.edge++
			if !in(m) {
				continue
			}
			switch w.state[m] {
			case onPath:
				cycle := make([]int, 0, len(path)-w.pathAt[m]+1)
				for _, f := range path[w.pathAt[m]:] {
					cycle = append(cycle, f.node)
				}
				return append(cycle, m)
			case unvisited:
				w.state[m], w.pathAt[m] = onPath, len(path)
				path = append(path, frame{m, 0})
			}
		}
	}
	return nil
}
