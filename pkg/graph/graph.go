// Package graph orders payload tasks and runs them. It knows nothing of
// Kubernetes: a task is an identity with a run level, a component and a
// position, and the caller supplies the function that executes it.
package graph

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
}

// Node is a set of tasks that run serially, after every node in In.
type Node struct {
	ID    int
	Tasks []*Task
	In    []int
	Out   []int
}

// Graph is a DAG of nodes. Node IDs are indexes into Nodes.
type Graph struct {
	Nodes []*Node
}
