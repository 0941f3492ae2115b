package graph

import (
	"container/heap"
	"context"
	"errors"
	"runtime/debug"
	"sync"
)

// TaskFunc executes one task. It returns nil when the task is done, an error
// wrapping ErrWaiting when the work was issued but is not finished, and any
// other error when it failed. It must return promptly once ctx is done.
type TaskFunc func(ctx context.Context, t *Task) error

// RunOptions are the per-run settings; the zero value runs one node at a
// time without callbacks.
type RunOptions struct {
	// Parallelism bounds how many task functions, and so nodes, run at
	// once. Values below 1 mean 1.
	// RecommendedParallelism gives the CVO's value for each mode.
	Parallelism int
	// OnTaskStart, when set, is called just before a task function runs.
	// It is called concurrently from several workers and must be safe for
	// that; it must not block for long, since it delays the task.
	OnTaskStart func(t *Task)
	// OnTaskDone, when set, is called after each task function returns, with
	// its error (nil, waiting, or failure; a panic arrives as *PanicError).
	// It is called concurrently from several workers, like OnTaskStart.
	// Tasks that never start get no call; Result lists them.
	OnTaskDone func(t *Task, err error)
	// OnNodeStart, when set, is called on a node's worker before its first
	// wave, unless ctx is done. It delays the node's tasks, and only its.
	OnNodeStart func(ctx context.Context, n *Node)
}

// Run executes the graph with a fixed pool of workers and returns what
// happened to every task. The waves inside a node run in order, the tasks
// of a wave concurrently (Parallelism bounds the task functions running at
// once, across all nodes), and the first failure or wait stops the waves
// after its own. A node runs once every node
// in its In list succeeded; the lowest ready node ID goes first. A failed
// node blocks only what depends on it, so independent branches keep going.
//
// Cancelling ctx stops new work: no node and no task starts after the
// context is done, and Run returns once the running task functions return.
// It cannot interrupt a task function that ignores ctx.
func Run(ctx context.Context, g *Graph, opts RunOptions, fn TaskFunc) *Result {
	r := newResult(g)
	if g == nil || len(g.Nodes) == 0 {
		r.ContextErr = ctx.Err()
		return r
	}
	if fn == nil {
		r.refuse(errors.New("graph: no task function"))
		return r
	}
	if err := g.Validate(); err != nil {
		r.refuse(err)
		return r
	}

	// sem bounds the task functions running at once, across nodes and the
	// waves inside them; workers bound the nodes in flight.
	sem := make(chan struct{}, max(opts.Parallelism, 1))
	workers := min(cap(sem), len(g.Nodes))
	work := make(chan int, workers)
	done := make(chan int, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range work {
				r.runNode(ctx, g.Nodes[id], opts, fn, sem)
				done <- id
			}
		}()
	}

	pending := make([]int, len(g.Nodes)) // In nodes not yet succeeded
	ready := &idHeap{}
	for id, n := range g.Nodes {
		pending[id] = len(n.In)
		if pending[id] == 0 {
			ready.ids = append(ready.ids, id)
		}
	}
	heap.Init(ready)
	succeed := func(id int) {
		for _, next := range g.Nodes[id].Out {
			if pending[next]--; pending[next] == 0 {
				heap.Push(ready, next)
			}
		}
	}

	inflight := 0
	for {
		// Check the context before taking new work, so that a cancelled run
		// starts nothing even while nodes are ready.
		for ctx.Err() == nil && inflight < workers && ready.Len() > 0 {
			id := heap.Pop(ready).(int)
			if len(g.Nodes[id].Tasks) == 0 {
				r.Nodes[id].State = StateSucceeded
				succeed(id)
				continue
			}
			work <- id // never blocks: at most workers are in flight
			inflight++
		}
		if inflight == 0 {
			break
		}
		id := <-done
		inflight--
		if r.Nodes[id].State == StateSucceeded {
			succeed(id)
		}
	}
	close(work)
	wg.Wait()

	r.ContextErr = ctx.Err()
	r.settle(g)
	return r
}

// newResult lays out one status per task, in node order, so that each
// worker writes only its own node's slots and needs no lock.
func newResult(g *Graph) *Result {
	r := &Result{}
	if g == nil {
		return r
	}
	r.Nodes = make([]NodeStatus, len(g.Nodes))
	r.Tasks = make([]TaskStatus, 0, g.TaskCount())
	r.offsets = make([]int, len(g.Nodes))
	for id, n := range g.Nodes {
		r.offsets[id] = len(r.Tasks)
		for _, t := range n.Tasks {
			r.Tasks = append(r.Tasks, TaskStatus{Task: t, Node: id})
		}
	}
	return r
}

// refuse records that nothing ran because Run could not start.
func (r *Result) refuse(err error) {
	r.Errors = append(r.Errors, err)
	for i := range r.Tasks {
		r.Tasks[i].State = StateBlocked
	}
	for i := range r.Nodes {
		r.Nodes[i].State = StateBlocked
	}
}

// runNode runs one node's waves in order on a worker; the tasks of a wave
// run concurrently, each holding one of sem's slots. The first failure or
// wait lets the rest of its wave finish and stops the waves after it. It
// writes only the node's own task slots and NodeStatus; Run reads them
// after the node's ID comes back on the done channel.
func (r *Result) runNode(ctx context.Context, n *Node, opts RunOptions, fn TaskFunc, sem chan struct{}) {
	slots := r.slotsOf(n)
	r.Nodes[n.ID].State = StateSucceeded
	if opts.OnNodeStart != nil && ctx.Err() == nil {
		opts.OnNodeStart(ctx, n)
	}
	k := 0
	for _, wave := range n.Waves() {
		ws := slots[k : k+len(wave)]
		started := runWave(ctx, wave, ws, opts, fn, sem)
		k += len(wave)
		if stop := firstStop(wave, ws); stop >= 0 {
			t := wave[stop]
			if ws[stop].State == StateFailed {
				r.Nodes[n.ID] = NodeStatus{State: StateFailed, Cause: t}
				markRest(ws[started:], StateBlocked, t)
				markRest(slots[k:], StateBlocked, t)
			} else {
				r.Nodes[n.ID] = NodeStatus{State: StateWaiting, Cause: t}
				markRest(ws[started:], StateHeld, t)
				markRest(slots[k:], StateHeld, t)
			}
			return
		}
		if started < len(wave) {
			r.Nodes[n.ID] = NodeStatus{State: StateCancelled}
			markRest(slots[k-len(wave)+started:], StateCancelled, nil)
			return
		}
	}
}

// runWave starts the wave's tasks in order, each once a slot of sem is
// free, and waits for those it started; it starts none once ctx is done.
// It returns how many it started. A one-task wave runs on the caller.
func runWave(ctx context.Context, wave []*Task, slots []TaskStatus, opts RunOptions, fn TaskFunc, sem chan struct{}) int {
	var wg sync.WaitGroup
	started := 0
	for i, t := range wave {
		if !acquire(ctx, sem) {
			break
		}
		started++
		if len(wave) == 1 {
			runTask(ctx, t, &slots[i], opts, fn)
			<-sem
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			runTask(ctx, t, &slots[i], opts, fn)
		}()
	}
	wg.Wait()
	return started
}

// acquire takes a slot of sem unless ctx is done first; a done ctx wins
// even when a slot is free, so that no task starts after cancellation.
func acquire(ctx context.Context, sem chan struct{}) bool {
	if ctx.Err() != nil {
		return false
	}
	select {
	case sem <- struct{}{}:
		if ctx.Err() != nil {
			<-sem
			return false
		}
		return true
	case <-ctx.Done():
		return false
	}
}

// runTask runs one task and records its outcome in its own slot.
func runTask(ctx context.Context, t *Task, slot *TaskStatus, opts RunOptions, fn TaskFunc) {
	if opts.OnTaskStart != nil {
		opts.OnTaskStart(t)
	}
	err := call(ctx, fn, t)
	if opts.OnTaskDone != nil {
		opts.OnTaskDone(t, err)
	}
	switch {
	case err == nil:
		slot.State = StateSucceeded
	case errors.Is(err, ErrWaiting):
		slot.State, slot.Err = StateWaiting, err
	default:
		slot.State, slot.Err = StateFailed, err
	}
}

// firstStop returns the position of the wave's first failed task, else of
// its first waiting one, else -1: a failure outranks a wait as the cause.
func firstStop(wave []*Task, slots []TaskStatus) int {
	waiting := -1
	for i := range wave {
		switch slots[i].State {
		case StateFailed:
			return i
		case StateWaiting:
			if waiting < 0 {
				waiting = i
			}
		}
	}
	return waiting
}

// slotsOf returns the node's task statuses, which are contiguous because
// newResult lays tasks out in node order.
func (r *Result) slotsOf(n *Node) []TaskStatus {
	return r.Tasks[r.offsets[n.ID] : r.offsets[n.ID]+len(n.Tasks)]
}

func markRest(slots []TaskStatus, s State, cause *Task) {
	for i := range slots {
		slots[i].State, slots[i].Cause = s, cause
	}
}

// call runs fn, turning a panic into a *PanicError so that one bad task
// fails its node instead of crashing the process.
func call(ctx context.Context, fn TaskFunc, t *Task) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	return fn(ctx, t)
}

// settle gives every node that never ran its reason, in dependency order: a
// failure upstream blocks it, else a wait upstream holds it, else the run
// was cancelled before it. It then collects the failures.
func (r *Result) settle(g *Graph) {
	for _, id := range g.TopoOrder() {
		if r.Nodes[id].State != "" {
			continue
		}
		status := NodeStatus{State: StateCancelled}
		for _, p := range g.Nodes[id].In {
			up := r.Nodes[p]
			switch up.State {
			case StateFailed, StateBlocked:
				if status.State != StateBlocked {
					status = NodeStatus{State: StateBlocked, Cause: up.Cause}
				}
			case StateWaiting, StateHeld:
				if status.State == StateCancelled {
					status = NodeStatus{State: StateHeld, Cause: up.Cause}
				}
			}
		}
		r.Nodes[id] = status
		markRest(r.slotsOf(g.Nodes[id]), status.State, status.Cause)
	}
	for _, s := range r.Tasks {
		if s.State == StateFailed {
			r.Errors = append(r.Errors, s.Err)
		}
	}
}

// idHeap is a min-heap of node IDs: the lowest ready ID runs first, which
// keeps runs reproducible and lets node order express priority.
type idHeap struct{ ids []int }

func (h *idHeap) Len() int           { return len(h.ids) }
func (h *idHeap) Less(i, j int) bool { return h.ids[i] < h.ids[j] }
func (h *idHeap) Swap(i, j int)      { h.ids[i], h.ids[j] = h.ids[j], h.ids[i] }
func (h *idHeap) Push(x any)         { h.ids = append(h.ids, x.(int)) }
func (h *idHeap) Pop() any {
	last := h.ids[len(h.ids)-1]
	h.ids = h.ids[:len(h.ids)-1]
	return last
}
