package graph

import (
	"fmt"
	"strings"
)

// Tree renders the graph as text for `payload-applier plan`: nodes grouped
// into steps (a node's step is one more than its latest In node's), each
// node with its run levels and components, its In nodes and its tasks.
// Nodes within a step may run in parallel; within a step they are listed in
// ID order, which is also the order Run prefers. Output is stable.
func (g *Graph) Tree() string {
	var b strings.Builder
	if g == nil || len(g.Nodes) == 0 {
		b.WriteString("0 nodes, 0 tasks\n") // no steps either
		return b.String()
	}
	steps := g.Steps()
	fmt.Fprintf(&b, "%s, %s, %s\n", plural(len(g.Nodes), "node"), plural(g.TaskCount(), "task"), plural(len(steps), "step"))
	for s, ids := range steps {
		fmt.Fprintf(&b, "step %d", s+1)
		if len(ids) > 1 {
			fmt.Fprintf(&b, ": %d nodes in parallel", len(ids))
		}
		b.WriteString("\n")
		for _, id := range ids {
			n := g.Nodes[id]
			fmt.Fprintf(&b, "  node %d: %s", id, n.label())
			if len(n.In) > 0 {
				fmt.Fprintf(&b, ", after %s", joinInts(n.In))
			}
			b.WriteString("\n")
			for _, t := range n.Tasks {
				fmt.Fprintf(&b, "    %s\n", t.line())
			}
		}
	}
	return b.String()
}

// DOT renders the graph in Graphviz DOT, one box per node and one arrow per
// edge; empty join nodes are drawn as points. Output is stable.
func (g *Graph) DOT() string {
	var b strings.Builder
	b.WriteString("digraph tasks {\n  labelloc=t;\n  rankdir=TB;\n")
	if g != nil {
		for id, n := range g.Nodes {
			if len(n.Tasks) == 0 {
				fmt.Fprintf(&b, "  %d [ label=\"\" shape=\"point\" ];\n", id)
				continue
			}
			fmt.Fprintf(&b, "  %d [ label=\"%s\" shape=\"box\" ];\n", id, dotEscape(n.label()))
		}
		for id, n := range g.Nodes {
			for _, to := range n.Out {
				fmt.Fprintf(&b, "  %d -> %d;\n", id, to)
			}
		}
	}
	b.WriteString("}\n")
	return b.String()
}

// label names a node by the run levels and components of its tasks, in
// order and without repeats, and its task count; empty nodes are joins.
func (n *Node) label() string {
	if len(n.Tasks) == 0 {
		return "join"
	}
	var groups []string
	for _, t := range n.Tasks {
		g := "unparsed"
		if t.parsed() {
			g = fmt.Sprintf("%02d-%s", t.RunLevel, t.Component)
		}
		if len(groups) == 0 || groups[len(groups)-1] != g {
			groups = append(groups, g)
		}
	}
	return fmt.Sprintf("%s (%s)", strings.Join(groups, ", "), plural(len(n.Tasks), "task"))
}

// line describes one task: its file, its name when that adds something,
// and the flags that change how it is ordered.
func (t *Task) line() string {
	s := t.File
	if s == "" {
		s = fmt.Sprintf("task %d", t.Index)
	}
	if t.Name != "" && t.Name != t.File {
		s += " " + t.Name
	}
	if t.Job {
		s += " [job]"
	}
	if t.Delete {
		s += " [delete]"
	}
	return s
}

func joinInts(ids []int) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = fmt.Sprint(id)
	}
	return strings.Join(parts, ", ")
}

func dotEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}

// plural formats a count with its noun, adding an s unless the count is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
