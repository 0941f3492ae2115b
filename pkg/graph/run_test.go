package graph

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// trace records, per task file, the sequence numbers at which its function
// started and returned, so tests assert order without timing.
type trace struct {
	mu       sync.Mutex
	seq      int
	start    map[string]int
	finish   map[string]int
	executed []string // tasks whose function returned nil, in order
}

func newTrace() *trace {
	return &trace{start: map[string]int{}, finish: map[string]int{}}
}

func (tr *trace) begin(name string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.seq++
	tr.start[name] = tr.seq
}

func (tr *trace) end(name string, err error) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.seq++
	tr.finish[name] = tr.seq
	if err == nil {
		tr.executed = append(tr.executed, name)
	}
}

func TestRunGraph(t *testing.T) {
	tests := map[string]struct {
		nodes       []nodeSpec
		parallelism int
		errorOn     func(name string, ctx context.Context, cancel func(), tr *trace) error
		order       []string    // exact execution order, when serial
		want        []string    // executed tasks, in any order
		before      [][2]string // x returned before y started
		wantErrs    []string    // substrings of Summary, sorted
	}{
		"tasks in one node run in the given order": {
			nodes: []nodeSpec{{tasks: []string{"b", "a"}}},
			order: []string{"b", "a"},
		},
		"dependents run after their prerequisites with two workers": {
			nodes: []nodeSpec{
				{tasks: []string{"c"}, in: []int{3}},
				{tasks: []string{"d", "e"}, in: []int{3}},
				{tasks: []string{"f"}, in: []int{3}, out: []int{4}},
				{tasks: []string{"a", "b"}, out: []int{0, 1, 2}},
				{tasks: []string{"g"}, in: []int{2}},
			},
			parallelism: 2,
			want:        []string{"a", "b", "c", "d", "e", "f", "g"},
			before:      [][2]string{{"a", "b"}, {"b", "c"}, {"b", "d"}, {"b", "f"}, {"d", "e"}, {"f", "g"}},
		},
		"an error in one branch skips only its dependents": {
			nodes: []nodeSpec{
				{tasks: []string{"c"}, in: []int{2}},
				{tasks: []string{"d"}, in: []int{2}, out: []int{3}},
				{tasks: []string{"a", "b"}, out: []int{0, 1}},
				{tasks: []string{"e"}, in: []int{1}},
			},
			parallelism: 2,
			errorOn: func(name string, _ context.Context, _ func(), _ *trace) error {
				if name == "d" {
					return errors.New("d: error A")
				}
				return nil
			},
			want:     []string{"a", "b", "c"},
			wantErrs: []string{"d: error A"},
		},
		"cancelling during a task reports the context error and skips dependents": {
			nodes: []nodeSpec{
				{tasks: []string{"c"}, in: []int{2}},
				{tasks: []string{"d"}, in: []int{2}, out: []int{3}},
				{tasks: []string{"a", "b"}, out: []int{0, 1}},
				{tasks: []string{"e"}, in: []int{1}},
			},
			parallelism: 2,
			errorOn: func(name string, ctx context.Context, cancel func(), tr *trace) error {
				if name != "d" {
					return nil
				}
				waitFor(tr, "c") // c runs beside d; cancel once it is done
				cancel()
				<-ctx.Done()
				return ctx.Err()
			},
			want:     []string{"a", "b", "c"},
			wantErrs: []string{"context canceled"},
		},
		"cancelling mid-node with work queued does not deadlock": {
			nodes: []nodeSpec{
				{tasks: []string{"a1", "a2", "a3"}, out: []int{2}},
				{tasks: []string{"b1"}},
				{tasks: []string{"c1"}, in: []int{0}},
			},
			parallelism: 1,
			errorOn: func(name string, _ context.Context, cancel func(), _ *trace) error {
				if name == "a2" {
					cancel()
				}
				return nil
			},
			order:    []string{"a1", "a2"},
			wantErrs: []string{"3 incomplete task nodes, beginning with a3", "context canceled"},
		},
		"errors in two parallel branches are both reported and an independent chain completes": {
			nodes: []nodeSpec{
				{tasks: []string{"a"}, out: []int{1}},
				{tasks: []string{"b"}, in: []int{0}, out: []int{2, 4, 8}},
				{tasks: []string{"c1"}, in: []int{1}, out: []int{3}},
				{tasks: []string{"c2"}, in: []int{2}, out: []int{7}},
				{tasks: []string{"d1"}, in: []int{1}, out: []int{5}},
				{tasks: []string{"d2"}, in: []int{4}, out: []int{6}},
				{tasks: []string{"d3"}, in: []int{5}, out: []int{7}},
				{tasks: []string{"e"}, in: []int{3, 6}},
				{tasks: []string{"f"}, in: []int{1}},
			},
			parallelism: 2,
			errorOn: func(name string, _ context.Context, _ func(), _ *trace) error {
				if name == "c1" || name == "f" {
					return fmt.Errorf("error - %s", name)
				}
				return nil
			},
			want:     []string{"a", "b", "d1", "d2", "d3"},
			before:   [][2]string{{"d1", "d2"}, {"d2", "d3"}},
			wantErrs: []string{"error - c1", "error - f"},
		},
		"cancellation without a task error reports the incomplete nodes": {
			nodes: []nodeSpec{
				{tasks: []string{"a"}, out: []int{1}},
				{tasks: []string{`configmap "default/b"`}, in: []int{0}},
			},
			parallelism: 1,
			errorOn: func(name string, _ context.Context, cancel func(), _ *trace) error {
				if name == "a" {
					cancel()
				}
				return nil
			},
			order:    []string{"a"},
			wantErrs: []string{`1 incomplete task nodes, beginning with configmap "default/b"`, "context canceled"},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			tr := newTrace()
			res := Run(ctx, graphOf(tt.nodes...), RunOptions{Parallelism: tt.parallelism}, func(ctx context.Context, task *Task) error {
				tr.begin(task.File)
				var err error
				if tt.errorOn != nil {
					err = tt.errorOn(task.File, ctx, cancel, tr)
				}
				tr.end(task.File, err)
				return err
			})
			if tt.order != nil && !slices.Equal(tr.executed, tt.order) {
				t.Errorf("executed %v, want exactly %v", tr.executed, tt.order)
			}
			if tt.want != nil {
				got := slices.Sorted(slices.Values(tr.executed))
				if want := slices.Sorted(slices.Values(tt.want)); !slices.Equal(got, want) {
					t.Errorf("executed %v, want %v", got, want)
				}
			}
			for _, pair := range tt.before {
				if tr.finish[pair[0]] == 0 || tr.finish[pair[0]] > tr.start[pair[1]] {
					t.Errorf("%s (finished %d) did not return before %s started (%d)", pair[0], tr.finish[pair[0]], pair[1], tr.start[pair[1]])
				}
			}
			var messages []string
			for _, err := range res.Summary() {
				messages = append(messages, err.Error())
			}
			sort.Strings(messages)
			if len(messages) != len(tt.wantErrs) {
				t.Fatalf("summary %q, want %q", messages, tt.wantErrs)
			}
			for i, want := range tt.wantErrs {
				if !strings.Contains(messages[i], want) {
					t.Errorf("error %d %q does not contain %q", i, messages[i], want)
				}
			}
		})
	}
}

// waitFor blocks until the named task has returned.
func waitFor(tr *trace, name string) {
	for {
		tr.mu.Lock()
		_, done := tr.finish[name]
		tr.mu.Unlock()
		if done {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

func TestRunResult(t *testing.T) {
	errBoom := errors.New("boom")
	chain := func() *Graph {
		return graphOf(
			nodeSpec{tasks: []string{"a1", "a2", "a3"}, out: []int{1}},
			nodeSpec{tasks: []string{"b"}, in: []int{0}, out: []int{2}},
			nodeSpec{tasks: []string{"c"}, in: []int{1}},
			nodeSpec{tasks: []string{"x"}},
		)
	}
	tests := map[string]struct {
		fn        TaskFunc
		want      map[string]State
		wantCause map[string]string
		errs      int
	}{
		"a failure blocks the rest of its node and its dependents transitively": {
			fn: func(_ context.Context, task *Task) error {
				if task.File == "a2" {
					return errBoom
				}
				return nil
			},
			want:      map[string]State{"a1": StateSucceeded, "a2": StateFailed, "a3": StateBlocked, "b": StateBlocked, "c": StateBlocked, "x": StateSucceeded},
			wantCause: map[string]string{"a3": "a2", "b": "a2", "c": "a2"},
			errs:      1,
		},
		"a panic becomes a failure of its task": {
			fn: func(_ context.Context, task *Task) error {
				if task.File == "b" {
					panic("nil map")
				}
				return nil
			},
			want:      map[string]State{"a3": StateSucceeded, "b": StateFailed, "c": StateBlocked, "x": StateSucceeded},
			wantCause: map[string]string{"c": "b"},
			errs:      1,
		},
		"a wait holds the rest of its node and its dependents without an error": {
			fn: func(_ context.Context, task *Task) error {
				if task.File == "a1" {
					return &WaitingError{On: "the object to go"}
				}
				return nil
			},
			want:      map[string]State{"a1": StateWaiting, "a2": StateHeld, "a3": StateHeld, "b": StateHeld, "c": StateHeld, "x": StateSucceeded},
			wantCause: map[string]string{"a2": "a1", "b": "a1", "c": "a1"},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			res := Run(context.Background(), chain(), RunOptions{Parallelism: 2}, tt.fn)
			byFile := map[string]TaskStatus{}
			for _, s := range res.Tasks {
				byFile[s.Task.File] = s
			}
			for file, want := range tt.want {
				if got := byFile[file]; got.State != want {
					t.Errorf("%s ended %s (%s), want %s", file, got.State, got.Reason(), want)
				}
			}
			for file, cause := range tt.wantCause {
				if got := byFile[file].Cause; got == nil || got.File != cause {
					t.Errorf("%s cause %v, want %s", file, got, cause)
				}
			}
			if len(res.Errors) != tt.errs {
				t.Fatalf("errors %v, want %d", res.Errors, tt.errs)
			}
			failed := res.filter(StateFailed)
			for i, err := range res.Errors {
				if i >= len(failed) || failed[i].Err != err || failed[i].Task == nil {
					t.Errorf("error %v is not the error of a failed task's status", err)
				}
			}
		})
	}
}

func TestRunErrors(t *testing.T) {
	t.Run("a failure is the task function's own error, and its status names the task", func(t *testing.T) {
		errBoom := errors.New("boom")
		g := graphOf(nodeSpec{tasks: []string{"a"}})
		g.Nodes[0].Tasks[0].Name = `deployment "ns/a"`
		res := Run(context.Background(), g, RunOptions{}, func(context.Context, *Task) error { return errBoom })
		if len(res.Errors) != 1 || res.Errors[0] != errBoom {
			t.Errorf("errors %v", res.Errors)
		}
		if s := res.Tasks[0]; s.State != StateFailed || s.Err != errBoom || s.Task.String() != `deployment "ns/a"` || s.Reason() != "boom" {
			t.Errorf("status %+v", s)
		}
		if !errors.Is(res.Err(), errBoom) {
			t.Errorf("Err() %v does not wrap the cause", res.Err())
		}
	})
	t.Run("a panic is reported as a *PanicError", func(t *testing.T) {
		res := Run(context.Background(), graphOf(nodeSpec{tasks: []string{"a"}}), RunOptions{}, func(context.Context, *Task) error { panic("oops") })
		var pe *PanicError
		if len(res.Errors) != 1 || !errors.As(res.Errors[0], &pe) || pe.Value != "oops" || len(pe.Stack) == 0 {
			t.Errorf("errors %v", res.Errors)
		}
	})
	t.Run("a cyclic graph runs nothing and says why", func(t *testing.T) {
		g := graphOf(nodeSpec{tasks: []string{"a"}, in: []int{1}, out: []int{1}}, nodeSpec{tasks: []string{"b"}, in: []int{0}, out: []int{0}})
		ran := false
		res := Run(context.Background(), g, RunOptions{}, func(context.Context, *Task) error { ran = true; return nil })
		if ran || len(res.Errors) != 1 || !strings.Contains(res.Errors[0].Error(), "cycle") || res.Count(StateBlocked) != 2 {
			t.Errorf("ran %v, errors %v, tasks %+v", ran, res.Errors, res.Tasks)
		}
	})
	t.Run("a missing task function runs nothing and says why", func(t *testing.T) {
		res := Run(context.Background(), graphOf(nodeSpec{tasks: []string{"a"}}), RunOptions{}, nil)
		if len(res.Errors) != 1 || res.Count(StateBlocked) != 1 {
			t.Errorf("errors %v", res.Errors)
		}
	})
	t.Run("a nil graph runs nothing and fails nothing", func(t *testing.T) {
		res := Run(context.Background(), nil, RunOptions{}, nil)
		if res.Err() != nil || len(res.Tasks) != 0 {
			t.Errorf("result %+v", res)
		}
	})
	t.Run("a cancelled context starts nothing", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		var ran atomic.Bool
		res := Run(ctx, graphOf(nodeSpec{tasks: []string{"a"}, out: []int{1}}, nodeSpec{tasks: []string{"b"}, in: []int{0}}), RunOptions{Parallelism: 4}, func(context.Context, *Task) error {
			ran.Store(true)
			return nil
		})
		if ran.Load() || res.Count(StateCancelled) != 2 || !errors.Is(res.Err(), context.Canceled) {
			t.Errorf("ran %v, result %+v, err %v", ran.Load(), res.Tasks, res.Err())
		}
	})
}

func TestRunScheduling(t *testing.T) {
	t.Run("with one worker the lowest ready node goes first", func(t *testing.T) {
		g := graphOf(
			nodeSpec{tasks: []string{"n0"}, in: []int{3}},
			nodeSpec{tasks: []string{"n1"}},
			nodeSpec{tasks: []string{"n2"}},
			nodeSpec{tasks: []string{"n3"}, out: []int{0}},
		)
		for _, p := range []int{-3, 0, 1} {
			tr := newTrace()
			Run(context.Background(), g, RunOptions{Parallelism: p}, func(_ context.Context, task *Task) error {
				tr.begin(task.File)
				tr.end(task.File, nil)
				return nil
			})
			if want := []string{"n1", "n2", "n3", "n0"}; !slices.Equal(tr.executed, want) {
				t.Errorf("parallelism %d ran %v, want %v", p, tr.executed, want)
			}
		}
	})
	t.Run("no more nodes run at once than the parallelism allows", func(t *testing.T) {
		var specs []nodeSpec
		for i := range 40 {
			specs = append(specs, nodeSpec{tasks: []string{fmt.Sprint("t", i)}})
		}
		var running, peak atomic.Int32
		Run(context.Background(), graphOf(specs...), RunOptions{Parallelism: 3}, func(context.Context, *Task) error {
			now := running.Add(1)
			for {
				old := peak.Load()
				if now <= old || peak.CompareAndSwap(old, now) {
					break
				}
			}
			time.Sleep(100 * time.Microsecond) // give others a chance to overlap
			running.Add(-1)
			return nil
		})
		if peak.Load() > 3 {
			t.Errorf("%d nodes ran at once with parallelism 3", peak.Load())
		}
	})
	t.Run("independent nodes really run in parallel", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		var arrived sync.WaitGroup
		arrived.Add(3)
		res := Run(ctx, graphOf(nodeSpec{tasks: []string{"a"}}, nodeSpec{tasks: []string{"b"}}, nodeSpec{tasks: []string{"c"}}), RunOptions{Parallelism: 3}, func(ctx context.Context, _ *Task) error {
			arrived.Done()
			all := make(chan struct{})
			go func() { arrived.Wait(); close(all) }()
			select {
			case <-all: // all three are inside their task function at once
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
		if res.Err() != nil {
			t.Errorf("three workers did not overlap: %v", res.Err())
		}
	})
	t.Run("callbacks see every task that starts, with its result", func(t *testing.T) {
		var mu sync.Mutex
		started, done := map[string]int{}, map[string]error{}
		errBoom := errors.New("boom")
		g := graphOf(nodeSpec{tasks: []string{"a", "b", "c"}}, nodeSpec{tasks: []string{"d"}}, nodeSpec{tasks: []string{"e"}})
		Run(context.Background(), g, RunOptions{
			Parallelism: 3,
			OnTaskStart: func(task *Task) { mu.Lock(); started[task.File]++; mu.Unlock() },
			OnTaskDone:  func(task *Task, err error) { mu.Lock(); done[task.File] = err; mu.Unlock() },
		}, func(_ context.Context, task *Task) error {
			if task.File == "b" {
				return errBoom
			}
			return nil
		})
		if len(started) != 4 || started["c"] != 0 || len(done) != 4 || done["b"] != errBoom || done["a"] != nil {
			t.Errorf("started %v, done %v", started, done)
		}
		for file, n := range started {
			if n != 1 {
				t.Errorf("%s started %d times", file, n)
			}
		}
	})
}

// OnNodeStart runs once per node, before any of its tasks, and after every
// task of the nodes it depends on; a cancelled run starts no node.
func TestOnNodeStartRunsBeforeTheNodesTasks(t *testing.T) {
	g := graphOf(
		nodeSpec{tasks: []string{"a1", "a2"}, out: []int{1}},
		nodeSpec{tasks: []string{"b1"}, in: []int{0}},
	)
	tr := newTrace()
	starts := map[int]int{}
	Run(context.Background(), g, RunOptions{Parallelism: 2, OnNodeStart: func(_ context.Context, n *Node) {
		tr.begin(fmt.Sprint("node", n.ID))
		starts[n.ID]++
	}}, func(_ context.Context, task *Task) error {
		tr.begin(task.File)
		tr.end(task.File, nil)
		return nil
	})
	if starts[0] != 1 || starts[1] != 1 {
		t.Fatalf("node starts %v, want one each", starts)
	}
	if !(tr.start["node0"] < tr.start["a1"] && tr.finish["a2"] < tr.start["node1"] && tr.start["node1"] < tr.start["b1"]) {
		t.Errorf("order %v / %v: want node0, a1, a2, node1, b1", tr.start, tr.finish)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	called := false
	Run(ctx, g, RunOptions{OnNodeStart: func(context.Context, *Node) { called = true }}, func(context.Context, *Task) error { return nil })
	if called {
		t.Error("a cancelled run started a node")
	}
}
