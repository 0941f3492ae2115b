package graph

import "math/rand"

// BreakFunc splits a serial list of tasks into buckets that run one after
// the other; the nodes inside one bucket may run in parallel. Ordering
// strategies are BreakFuncs so that they compose, as in the CVO:
// ShiftOrder(PermuteOrder(FlattenByNumberAndComponent, r), step, 8).
// Returning nil, or one bucket holding one node, leaves the tasks serial.
type BreakFunc func(tasks []*Task) [][]*Node

// ByNumberAndComponent is the update ordering. It walks the tasks in payload
// order: a maximal run of one run level that holds two or more components
// becomes a parallel bucket with one node per contiguous component chunk,
// so components inside a run level run in parallel while each keeps its
// file order. A run level with a single component and an unparsed file name
// are serial, and consecutive serial segments merge into one node, because
// splitting them would add barriers without adding parallelism.
// It returns nil for fewer than two tasks.
func ByNumberAndComponent(tasks []*Task) [][]*Node {
	if len(tasks) <= 1 {
		return nil
	}
	var buckets [][]*Node
	var serial *Node // the serial node that the next serial segment joins
	for i := 0; i < len(tasks); {
		end := runLevelRunEnd(tasks, i)
		chunks := componentChunks(tasks[i:end])
		switch {
		case len(chunks) > 1:
			buckets = append(buckets, chunks)
			serial = nil
		case serial == nil:
			// Copied: later serial segments are appended to this node.
			serial = &Node{Tasks: append([]*Task(nil), tasks[i:end]...)}
			buckets = append(buckets, []*Node{serial})
		default:
			serial.Tasks = append(serial.Tasks, tasks[i:end]...)
		}
		i = end
	}
	return buckets
}

// FlattenByNumberAndComponent is the install and reconcile ordering: one
// bucket in which every maximal run sharing a run level and a component is
// its own node and every unparsed file is a node of its own. Order across run
// levels is not kept; install and reconcile only need each component's files
// in order. It returns nil for fewer than two tasks.
func FlattenByNumberAndComponent(tasks []*Task) [][]*Node {
	if len(tasks) <= 1 {
		return nil
	}
	var nodes []*Node
	for i := 0; i < len(tasks); {
		end := i + 1
		for end < len(tasks) && sameGroup(tasks[i], tasks[end]) {
			end++
		}
		nodes = append(nodes, &Node{Tasks: tasks[i:end:end]})
		i = end
	}
	return [][]*Node{nodes}
}

// runLevelRunEnd returns the end of the maximal run of parsed tasks that
// share tasks[start]'s run level; an unparsed task is a run of one.
func runLevelRunEnd(tasks []*Task, start int) int {
	end := start + 1
	if !tasks[start].parsed() {
		return end
	}
	for end < len(tasks) && tasks[end].parsed() && tasks[end].RunLevel == tasks[start].RunLevel {
		end++
	}
	return end
}

// componentChunks cuts a run into nodes of contiguous equal components. The
// slices are capped so that appending to one can never overwrite the next.
func componentChunks(run []*Task) []*Node {
	var nodes []*Node
	start := 0
	for i := 1; i <= len(run); i++ {
		if i == len(run) || run[i].Component != run[start].Component {
			nodes = append(nodes, &Node{Tasks: run[start:i:i]})
			start = i
		}
	}
	return nodes
}

// ShiftOrder rotates each bucket of N nodes left by step%N when N < stride,
// else by floor(step*N/stride)%N, so that successive reconcile attempts
// start from different nodes and one stuck node cannot starve the rest.
func ShiftOrder(breakFn BreakFunc, step, stride int) BreakFunc {
	return func(tasks []*Task) [][]*Node {
		buckets := breakFn(tasks)
		for i, bucket := range buckets {
			n := len(bucket)
			if n == 0 {
				continue
			}
			var shift int
			if n < stride {
				shift = step % n
			} else {
				shift = int(float64(step)*float64(n)/float64(stride)) % n
			}
			if shift < 0 {
				shift += n
			}
			rotated := make([]*Node, 0, n)
			rotated = append(rotated, bucket[shift:]...)
			rotated = append(rotated, bucket[:shift]...)
			buckets[i] = rotated
		}
		return buckets
	}
}

// PermuteOrder shuffles each bucket with r. Seeding r from the attempt number
// makes the order random across attempts yet reproducible for one attempt.
func PermuteOrder(breakFn BreakFunc, r *rand.Rand) BreakFunc {
	return func(tasks []*Task) [][]*Node {
		buckets := breakFn(tasks)
		for _, bucket := range buckets {
			r.Shuffle(len(bucket), func(i, j int) {
				bucket[i], bucket[j] = bucket[j], bucket[i]
			})
		}
		return buckets
	}
}
