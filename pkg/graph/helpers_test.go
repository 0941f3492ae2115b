package graph

import (
	"fmt"
	"strings"

	"github.com/payload-applier/payload-applier/pkg/payload"
)

// fileTask builds the task at a payload index from its file name, parsing
// run level and component with the loader's rule, so that tests order
// tasks exactly as production does.
func fileTask(index int, file string) *Task {
	level, component := payload.ParseFileName(file)
	return &Task{Index: index, File: file, RunLevel: level, Component: component}
}

// fileTasks builds one task per file name, in payload order.
func fileTasks(names ...string) []*Task {
	tasks := make([]*Task, len(names))
	for i, name := range names {
		tasks[i] = fileTask(i, name)
	}
	return tasks
}

// nodeSpec is a node written by hand in a test: its task files and edges.
type nodeSpec struct {
	tasks   []string
	in, out []int
}

// specOf renders a node the way tests write expectations, so that a
// mismatch prints as a readable diff rather than pointer soup.
func specOf(n *Node) string {
	files := make([]string, len(n.Tasks))
	for i, t := range n.Tasks {
		files[i] = t.File
	}
	return fmt.Sprintf("%d: [%s] in%v out%v", n.ID, strings.Join(files, " "), orEmpty(n.In), orEmpty(n.Out))
}

func (s nodeSpec) render(id int) string {
	return fmt.Sprintf("%d: [%s] in%v out%v", id, strings.Join(s.tasks, " "), orEmpty(s.in), orEmpty(s.out))
}

func orEmpty(ids []int) []int {
	if ids == nil {
		return []int{}
	}
	return ids
}

func renderNodes(nodes []*Node) string {
	lines := make([]string, len(nodes))
	for i, n := range nodes {
		lines[i] = specOf(n)
	}
	return strings.Join(lines, "\n")
}

func renderSpecs(specs []nodeSpec) string {
	lines := make([]string, len(specs))
	for i, s := range specs {
		lines[i] = s.render(i)
	}
	return strings.Join(lines, "\n")
}

// renderBuckets renders a BreakFunc result: one line per bucket, nodes as
// bracketed file lists.
func renderBuckets(buckets [][]*Node) string {
	if buckets == nil {
		return "<nil>"
	}
	lines := make([]string, len(buckets))
	for i, bucket := range buckets {
		parts := make([]string, len(bucket))
		for j, n := range bucket {
			files := make([]string, len(n.Tasks))
			for k, t := range n.Tasks {
				files[k] = t.File
			}
			parts[j] = "[" + strings.Join(files, " ") + "]"
		}
		lines[i] = strings.Join(parts, " ")
	}
	return strings.Join(lines, "\n")
}

// graphOf builds a graph from specs, giving each named task a payload
// index in order of first appearance.
func graphOf(specs ...nodeSpec) *Graph {
	g := &Graph{}
	index := 0
	for i, s := range specs {
		n := &Node{ID: i, In: s.in, Out: s.out}
		for _, file := range s.tasks {
			n.Tasks = append(n.Tasks, fileTask(index, file))
			index++
		}
		g.Nodes = append(g.Nodes, n)
	}
	return g
}
