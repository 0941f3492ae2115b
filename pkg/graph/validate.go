package graph

import "fmt"

// Validate checks what Run relies on: node IDs equal their index, edges
// point at existing nodes and are mirrored (j in i.In exactly when i in
// j.Out), no edge repeats, the graph has no cycle, no task appears twice,
// and waves cut the tasks in order. Build and BuildDeletes always produce
// valid graphs; this guards hand-made ones, for which a cycle would
// otherwise look like cancellation.
func (g *Graph) Validate() error {
	type edge struct{ from, to int }
	out := make(map[edge]bool)
	seen := make(map[*Task]int)
	inEdges := 0
	for i, n := range g.Nodes {
		if n == nil {
			return fmt.Errorf("graph: node %d is nil", i)
		}
		if n.ID != i {
			return fmt.Errorf("graph: node at index %d has ID %d", i, n.ID)
		}
		for _, t := range n.Tasks {
			if t == nil {
				return fmt.Errorf("graph: node %d holds a nil task", i)
			}
			if prev, ok := seen[t]; ok {
				return fmt.Errorf("graph: task %s is in node %d and node %d", t, prev, i)
			}
			seen[t] = i
		}
		if err := n.checkWaves(); err != nil {
			return err
		}
		for _, j := range n.Out {
			if err := g.checkTarget(i, j); err != nil {
				return err
			}
			if out[edge{i, j}] {
				return fmt.Errorf("graph: node %d lists Out node %d twice", i, j)
			}
			out[edge{i, j}] = true
		}
		inEdges += len(n.In)
	}
	// Every In edge must be unique and have its Out mirror; equal counts
	// then rule out Out edges without an In mirror.
	in := make(map[edge]bool, inEdges)
	for i, n := range g.Nodes {
		for _, j := range n.In {
			if err := g.checkTarget(i, j); err != nil {
				return err
			}
			if in[edge{j, i}] {
				return fmt.Errorf("graph: node %d lists In node %d twice", i, j)
			}
			in[edge{j, i}] = true
			if !out[edge{j, i}] {
				return fmt.Errorf("graph: node %d runs after node %d, which does not list it in Out", i, j)
			}
		}
	}
	if inEdges != len(out) {
		return fmt.Errorf("graph: In and Out lists disagree (%d In edges, %d Out edges)", inEdges, len(out))
	}
	if order := g.TopoOrder(); len(order) != len(g.Nodes) {
		return fmt.Errorf("graph: %d nodes are on a cycle", len(g.Nodes)-len(order))
	}
	return nil
}

func (g *Graph) checkTarget(i, j int) error {
	switch {
	case j < 0 || j >= len(g.Nodes) || g.Nodes[j] == nil:
		return fmt.Errorf("graph: node %d names missing node %d", i, j)
	case j == i:
		return fmt.Errorf("graph: node %d depends on itself", i)
	}
	return nil
}

// TopoOrder returns node IDs so that every node follows its In nodes; nodes
// on a cycle are left out. It trusts In and Out to be mirrored, which
// Validate checks first.
func (g *Graph) TopoOrder() []int {
	pending := make([]int, len(g.Nodes))
	order := make([]int, 0, len(g.Nodes))
	for id, n := range g.Nodes {
		pending[id] = len(n.In)
		if pending[id] == 0 {
			order = append(order, id)
		}
	}
	// order doubles as the queue: nodes are appended once ready.
	for k := 0; k < len(order); k++ {
		for _, next := range g.Nodes[order[k]].Out {
			if pending[next]--; pending[next] == 0 {
				order = append(order, next)
			}
		}
	}
	return order
}
