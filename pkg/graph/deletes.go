package graph

import (
	"cmp"
	"slices"
)

// BuildDeletes returns the delete walk: the payload's delete tasks in reverse
// of their creation order, so that an operator's ClusterOperator and
// Deployment go before its CRD and its namespace.
//
// Each component becomes one node whose tasks run in reverse: run levels
// descending, then files and the documents inside a file descending (by
// Task.Index). A component that spans run levels, such as 0000_50_olm_* and
// 0000_90_olm_*, is still one node, and a task with an unparsed file name is
// a node of its own. Nodes have no edges, so one component's teardown never
// blocks another's; they are ordered so that higher run levels are scheduled
// first, and Run takes the lowest ready ID first.
//
// Pacing lives in the node: Run issues a wave only after every task of the
// wave before it returned nil, meaning its objects are gone. Waves follow
// the apply rule in reverse: passive deletes of one run level go together,
// a barrier alone (opts.StrictOrder: one delete at a time). A task that
// returns an error wrapping ErrWaiting stops its node, after its wave,
// without failing it.
func BuildDeletes(tasks []*Task, opts BuildOptions) *Graph {
	chains := make(map[string][]*Task)
	var keys []string
	var singles [][]*Task
	for _, t := range tasks {
		if !t.Delete {
			continue
		}
		if !t.parsed() {
			singles = append(singles, []*Task{t})
			continue
		}
		if _, seen := chains[t.Component]; !seen {
			keys = append(keys, t.Component)
		}
		chains[t.Component] = append(chains[t.Component], t)
	}

	all := make([][]*Task, 0, len(keys)+len(singles))
	for _, k := range keys {
		chain := chains[k]
		slices.SortStableFunc(chain, reverseOrder)
		all = append(all, chain)
	}
	all = append(all, singles...)
	// Heads are the first task of each chain: schedule the chain whose head
	// comes last in the payload first.
	slices.SortStableFunc(all, func(a, b []*Task) int {
		return reverseOrder(a[0], b[0])
	})

	g := &Graph{Nodes: make([]*Node, 0, len(all))}
	for _, chain := range all {
		g.add(&Node{Tasks: chain})
	}
	if !opts.StrictOrder {
		g.splitWaves()
	}
	return g
}

// reverseOrder sorts tasks last-created first: higher run levels, then
// higher payload indexes. Unparsed tasks (run level -1) sort last.
func reverseOrder(a, b *Task) int {
	if c := cmp.Compare(b.RunLevel, a.RunLevel); c != 0 {
		return c
	}
	return cmp.Compare(b.Index, a.Index)
}
