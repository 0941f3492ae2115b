package graph

import (
	"math/rand"
	"slices"
)

// BuildOptions selects the shape of the apply graph.
type BuildOptions struct {
	// Mode picks the ordering; the zero value builds an update graph, the
	// strictest order.
	Mode Mode
	// Attempt counts consecutive reconcile attempts of one payload. It seeds
	// the reconcile permutation (Attempt/8) and its rotation (Attempt%8), as
	// the CVO does, so retries vary the order reproducibly.
	Attempt int
	// StrictOrder runs each component's manifests one at a time, as the
	// CVO does, instead of in waves (Task.Passive).
	StrictOrder bool
}

// Update and reconcile parallelism, as in the CVO; install's is one worker
// per node as in the CVO, up to maxInstallParallelism.
const (
	updateParallelism    = 16
	reconcileParallelism = 2
	reconcileStride      = 8
	// maxInstallParallelism bounds install: the CVO's worker per node
	// made 391 workers at 20,000 manifests, more than an apiserver serves
	// at once (kube-apiserver's default is 400 requests in flight for the
	// whole cluster), for no gain past a few dozen.
	maxInstallParallelism = 32
)

// Build returns the apply graph of a payload: the tasks, in payload order,
// without the delete tasks, split on Jobs and parallelized for opts.Mode.
// Delete tasks are left out because they form their own reverse-ordered
// walk (BuildDeletes) that must never hold back an apply.
func Build(tasks []*Task, opts BuildOptions) *Graph {
	var applies []*Task
	for _, t := range tasks {
		if !t.Delete {
			applies = append(applies, t)
		}
	}
	g := New(applies)
	g.Split(SplitOnJobs)
	switch opts.Mode {
	case ModeInstall:
		g.Parallelize(FlattenByNumberAndComponent)
	case ModeReconcile:
		r := rand.New(rand.NewSource(int64(opts.Attempt / reconcileStride)))
		g.Parallelize(ShiftOrder(PermuteOrder(FlattenByNumberAndComponent, r), opts.Attempt%reconcileStride, reconcileStride))
	default:
		g.Parallelize(ByNumberAndComponent)
	}
	if !opts.StrictOrder {
		g.splitWaves()
	}
	return g
}

// RecommendedParallelism is the worker count for a mode: 16 for update, 2
// for reconcile (a background check should not load the apiserver), as the
// CVO; for install one per node or per task of a node's widest wave
// (nothing to protect yet), at most 32.
func RecommendedParallelism(mode Mode, g *Graph) int {
	switch mode {
	case ModeInstall:
		if g == nil || len(g.Nodes) == 0 {
			return 1
		}
		width := 0
		for _, n := range g.Nodes {
			width += n.widestWave()
			if width >= maxInstallParallelism {
				return maxInstallParallelism
			}
		}
		return width
	case ModeReconcile:
		return reconcileParallelism
	default:
		return updateParallelism
	}
}

// New returns a graph with a single node holding the tasks in order, the
// starting point that Split and Parallelize refine. No tasks, no nodes.
func New(tasks []*Task) *Graph {
	if len(tasks) == 0 {
		return &Graph{}
	}
	return &Graph{Nodes: []*Node{{ID: 0, Tasks: tasks}}}
}

// Unordered returns a graph of one node per task and no edges: work whose
// items have no order and whose failures must not hold each other back.
func Unordered(tasks []*Task) *Graph {
	g := &Graph{Nodes: make([]*Node, len(tasks))}
	for i, t := range tasks {
		g.Nodes[i] = &Node{ID: i, Tasks: []*Task{t}}
	}
	return g
}

// SplitOnJobs marks Jobs as barriers: a Job may migrate data or remove an
// old component, so nothing is reordered or parallelized across it.
func SplitOnJobs(t *Task) bool {
	return t.Job
}

// Split cuts every node at the first task for which onFn is true into up to
// three chained nodes, [before] -> [task] -> [after], and repeats on the
// remainder, so [a,b,J,c] becomes [a,b] -> [J] -> [c]. The matched task keeps
// the node's ID; the pieces before and after get new IDs, as in the CVO.
func (g *Graph) Split(onFn func(*Task) bool) {
	for i := 0; i < len(g.Nodes); i++ {
		node := g.Nodes[i]
		tasks := node.Tasks
		if len(tasks) <= 1 {
			continue
		}
		at := slices.IndexFunc(tasks, onFn)
		if at < 0 {
			continue
		}
		if at > 0 {
			before := g.add(&Node{Tasks: tasks[:at:at], In: node.In, Out: []int{i}})
			for _, p := range node.In {
				replaceEdge(g.Nodes[p].Out, i, before)
			}
			node.In = []int{before}
		}
		if at < len(tasks)-1 {
			after := g.add(&Node{Tasks: tasks[at+1:], In: []int{i}, Out: node.Out})
			for _, s := range node.Out {
				replaceEdge(g.Nodes[s].In, i, after)
			}
			node.Out = []int{after}
		}
		node.Tasks = tasks[at : at+1 : at+1]
	}
}

// Parallelize replaces each node's serial tasks by the buckets breakFn
// returns. The node itself stays, empty, as the left anchor that keeps its
// In edges; the buckets follow it as a chain. Between two buckets that both
// hold several nodes, an empty spacer node joins them, so M×N edges become
// M+N. When the node had Out edges, an empty right anchor takes them over.
// Nodes that breakFn creates are not broken again.
func (g *Graph) Parallelize(breakFn BreakFunc) {
	count := len(g.Nodes)
	for i := 0; i < count; i++ {
		node := g.Nodes[i]
		buckets := breakFn(node.Tasks)
		if len(buckets) == 0 || (len(buckets) == 1 && len(buckets[0]) == 1) {
			continue
		}
		node.Tasks = nil
		out := node.Out
		node.Out = nil

		prev := []int{i}
		for _, bucket := range buckets {
			if len(bucket) == 0 {
				continue
			}
			if len(prev) > 1 && len(bucket) > 1 {
				prev = g.link([]*Node{{}}, prev)
			}
			prev = g.link(bucket, prev)
		}

		if len(out) > 0 {
			anchor := g.add(&Node{Out: out})
			for _, s := range out {
				replaceEdge(g.Nodes[s].In, i, anchor)
			}
			for _, p := range prev {
				g.Nodes[p].Out = []int{anchor}
				g.Nodes[anchor].In = append(g.Nodes[anchor].In, p)
			}
		}
	}
}

// add appends a node, giving it the next ID, and returns that ID.
func (g *Graph) add(n *Node) int {
	n.ID = len(g.Nodes)
	g.Nodes = append(g.Nodes, n)
	return n.ID
}

// link appends nodes that each run after every node in in, and returns
// their IDs.
func (g *Graph) link(nodes []*Node, in []int) []int {
	ids := make([]int, 0, len(nodes))
	for _, n := range nodes {
		n.In = append([]int(nil), in...)
		ids = append(ids, g.add(n))
	}
	// The IDs are new, so no Out list can hold them yet.
	for _, p := range in {
		g.Nodes[p].Out = append(g.Nodes[p].Out, ids...)
	}
	return ids
}

// replaceEdge rewrites every occurrence of from in edges to to.
func replaceEdge(edges []int, from, to int) {
	for k, e := range edges {
		if e == from {
			edges[k] = to
		}
	}
}
