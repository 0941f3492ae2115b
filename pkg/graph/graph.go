// Package graph orders payload tasks and runs them. It knows nothing of
// Kubernetes: a task is an identity with a run level, a component and a
// position, and the caller supplies the function that executes it.
package graph

import "fmt"

// Mode selects how the apply graph is shaped, as in the CVO.
type Mode string

const (
	// ModeInstall flattens the payload by (run level, component) and runs
	// every node in parallel.
	ModeInstall Mode = "install"
	// ModeUpdate keeps run levels as barriers and runs components inside a
	// run level in parallel.
	ModeUpdate Mode = "update"
	// ModeReconcile flattens like install, permutes node order reproducibly
	// from the attempt number, and runs with little parallelism.
	ModeReconcile Mode = "reconcile"
)

// Task is one manifest as the graph sees it.
type Task struct {
	// Index is the 0-based position in payload order; it identifies the task.
	Index int
	// File is the manifest's file base name, used in messages.
	File string
	// RunLevel and Component come from the file name; RunLevel is -1 and
	// Component is empty when the name does not parse.
	RunLevel  int
	Component string
	// Name labels the task in messages, for example `configmap "ns/name"`.
	Name string
	// Job marks a batch/v1 Job, which splits the update graph as a barrier.
	Job bool
	// Delete marks a manifest that deletes its object. Delete tasks are never
	// part of the apply graph; they form the reverse-ordered delete walk.
	Delete bool
	// Passive marks a task that can affect no neighbour of its component, so
	// it may share a wave with them. The caller decides (the graph knows no
	// kinds); the zero value makes the task a barrier, the safe default.
	Passive bool
}

// Node is a set of tasks that run in order, after every node in In. The
// tasks run one at a time unless WaveStarts splits them into waves.
type Node struct {
	ID    int
	Tasks []*Task
	In    []int
	Out   []int
	// WaveStarts are the positions in Tasks where each wave begins: the
	// tasks of a wave run concurrently, and a wave starts once the one
	// before it is done. Nil means one task per wave, the CVO's order.
	WaveStarts []int
}

// Graph is a DAG of nodes. Node IDs are indexes into Nodes.
type Graph struct {
	Nodes []*Node
}

// String names the task in messages: its Name, else its file, else its
// index, so that every error and summary can point at a manifest.
func (t *Task) String() string {
	switch {
	case t == nil:
		return "<nil task>"
	case t.Name != "":
		return t.Name
	case t.File != "":
		return t.File
	default:
		return fmt.Sprintf("task %d", t.Index)
	}
}

// parsed reports whether the task's file name carried a run level and a
// component; unparsed tasks are never grouped with their neighbours.
func (t *Task) parsed() bool {
	return t.RunLevel >= 0 && t.Component != ""
}

// sameGroup reports whether a and b share a parsed run level and component,
// the unit whose files must keep their order.
func sameGroup(a, b *Task) bool {
	return a.parsed() && b.parsed() && a.RunLevel == b.RunLevel && a.Component == b.Component
}

// TaskCount is the number of tasks across all nodes.
func (g *Graph) TaskCount() int {
	if g == nil {
		return 0
	}
	n := 0
	for _, node := range g.Nodes {
		n += len(node.Tasks)
	}
	return n
}

// Steps groups node IDs by their longest distance from a root, the earliest
// moment each node can run: the nodes of a step may run in parallel. IDs
// are in order within a step. A graph without nodes has no steps.
func (g *Graph) Steps() [][]int {
	if g == nil || len(g.Nodes) == 0 {
		return nil
	}
	depth := make([]int, len(g.Nodes))
	deepest := 0
	for _, id := range g.TopoOrder() {
		for _, p := range g.Nodes[id].In {
			depth[id] = max(depth[id], depth[p]+1)
		}
		deepest = max(deepest, depth[id])
	}
	steps := make([][]int, deepest+1)
	for id := range g.Nodes {
		steps[depth[id]] = append(steps[depth[id]], id)
	}
	return steps
}
