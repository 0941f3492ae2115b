package graph

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// waveTasks builds tasks from file names; a name ending in "!" is a
// barrier, any other is passive.
func waveTasks(names ...string) []*Task {
	tasks := make([]*Task, len(names))
	for i, name := range names {
		file := strings.TrimSuffix(name, "!")
		tasks[i] = fileTask(i, file)
		tasks[i].Passive = file == name
	}
	return tasks
}

// renderWaves writes a node's waves as "[a b] [c]" by file name.
func renderWaves(n *Node) string {
	var parts []string
	for _, w := range n.Waves() {
		files := make([]string, len(w))
		for i, t := range w {
			files[i] = t.File
		}
		parts = append(parts, "["+strings.Join(files, " ")+"]")
	}
	return strings.Join(parts, " ")
}

func TestWaveStarts(t *testing.T) {
	tests := map[string]struct {
		names []string
		want  string
	}{
		"passive tasks of one component share a wave": {
			[]string{"0000_10_a_0", "0000_10_a_1", "0000_10_a_2"},
			"[0000_10_a_0 0000_10_a_1 0000_10_a_2]"},
		"a barrier ends the wave before it and runs alone": {
			[]string{"0000_10_a_0", "0000_10_a_1", "0000_10_a_ns!", "0000_10_a_2", "0000_10_a_3"},
			"[0000_10_a_0 0000_10_a_1] [0000_10_a_ns] [0000_10_a_2 0000_10_a_3]"},
		"consecutive barriers are one wave each": {
			[]string{"0000_10_a_crd!", "0000_10_a_dep!", "0000_10_a_0"},
			"[0000_10_a_crd] [0000_10_a_dep] [0000_10_a_0]"},
		"a wave never spans run levels or components": {
			[]string{"0000_10_a_0", "0000_10_a_1", "0000_20_a_0", "0000_20_b_0", "0000_20_b_1"},
			"[0000_10_a_0 0000_10_a_1] [0000_20_a_0] [0000_20_b_0 0000_20_b_1]"},
		"unparsed files are waves of their own": {
			[]string{"x.yaml", "y.yaml"},
			"[x.yaml] [y.yaml]"},
		"all barriers: one task per wave": {
			[]string{"0000_10_a_0!", "0000_10_a_1!"},
			"[0000_10_a_0] [0000_10_a_1]"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			n := &Node{Tasks: waveTasks(tt.names...)}
			n.WaveStarts = waveStarts(n.Tasks)
			if got := renderWaves(n); got != tt.want {
				t.Errorf("waves %s, want %s", got, tt.want)
			}
			if err := n.checkWaves(); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestBuildWavesAndStrictOrder(t *testing.T) {
	names := []string{"0000_10_a_0", "0000_10_a_1", "0000_10_a_ns!", "0000_10_a_2", "0000_10_a_3"}
	for _, mode := range []Mode{ModeInstall, ModeUpdate, ModeReconcile} {
		g := Build(waveTasks(names...), BuildOptions{Mode: mode})
		if len(g.Nodes) != 1 || renderWaves(g.Nodes[0]) != "[0000_10_a_0 0000_10_a_1] [0000_10_a_ns] [0000_10_a_2 0000_10_a_3]" {
			t.Errorf("%s: waves %s", mode, renderNodes(g.Nodes))
		}
		strict := Build(waveTasks(names...), BuildOptions{Mode: mode, StrictOrder: true})
		if n := strict.Nodes[0]; n.WaveStarts != nil || len(n.Waves()) != len(names) {
			t.Errorf("%s: strict order has waves %s", mode, renderWaves(n))
		}
	}
	// Deletes go in reverse: the barrier that came first goes last.
	tasks := waveTasks(names...)
	for _, task := range tasks {
		task.Delete = true
	}
	g := BuildDeletes(tasks, BuildOptions{})
	if got, want := renderWaves(g.Nodes[0]), "[0000_10_a_3 0000_10_a_2] [0000_10_a_ns] [0000_10_a_1 0000_10_a_0]"; got != want {
		t.Errorf("delete waves %s, want %s", got, want)
	}
	if n := BuildDeletes(tasks, BuildOptions{StrictOrder: true}).Nodes[0]; n.WaveStarts != nil {
		t.Errorf("strict delete waves %s", renderWaves(n))
	}
}

func TestRecommendedParallelismCountsWaves(t *testing.T) {
	var names []string
	for i := range 100 {
		names = append(names, fmt.Sprintf("0000_10_a_%03d", i))
	}
	if got := RecommendedParallelism(ModeInstall, Build(waveTasks(names...), BuildOptions{Mode: ModeInstall})); got != maxInstallParallelism {
		t.Errorf("one component of 100 passive tasks: %d workers, want %d", got, maxInstallParallelism)
	}
	if got := RecommendedParallelism(ModeInstall, Build(waveTasks(names[:5]...), BuildOptions{Mode: ModeInstall})); got != 5 {
		t.Errorf("one wave of 5: %d workers, want 5", got)
	}
	if got := RecommendedParallelism(ModeInstall, Build(waveTasks(names...), BuildOptions{Mode: ModeInstall, StrictOrder: true})); got != 1 {
		t.Errorf("strict order: %d workers, want 1", got)
	}
}

// TestRunWaveConcurrently shows that a wave's tasks run at once, bounded
// by Parallelism, and that the barrier after it waits for all of them.
func TestRunWaveConcurrently(t *testing.T) {
	g := Build(waveTasks("0000_10_a_0", "0000_10_a_1", "0000_10_a_2", "0000_10_a_3", "0000_10_a_ns!", "0000_10_a_4"), BuildOptions{})
	var running, peak atomic.Int32
	var mu sync.Mutex
	var order []string
	release := make(chan struct{})
	go func() {
		// Let the first wave fill its three slots before any finishes; a
		// runner that never does fails the peak check below, not by hanging.
		deadline := time.Now().Add(10 * time.Second)
		for running.Load() < 3 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		close(release)
	}()
	res := Run(context.Background(), g, RunOptions{Parallelism: 3}, func(_ context.Context, task *Task) error {
		n := running.Add(1)
		defer running.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		<-release
		mu.Lock()
		order = append(order, task.File)
		mu.Unlock()
		return nil
	})
	if err := res.Err(); err != nil {
		t.Fatal(err)
	}
	if peak.Load() != 3 {
		t.Errorf("peak concurrency %d, want the bound 3", peak.Load())
	}
	if len(order) != 6 || order[4] != "0000_10_a_ns" || order[5] != "0000_10_a_4" {
		t.Errorf("order %v: the barrier must follow the whole first wave, and precede the rest", order)
	}
}

// TestRunWaveFailure: a failure lets the rest of its wave finish, stops
// the later waves of its node, and leaves other nodes alone.
func TestRunWaveFailure(t *testing.T) {
	tasks := waveTasks("0000_10_a_0", "0000_10_a_bad", "0000_10_a_2", "0000_10_a_ns!", "0000_10_a_3", "0000_10_b_0", "0000_10_b_1")
	g := Build(tasks, BuildOptions{Mode: ModeInstall})
	boom := errors.New("boom")
	res := Run(context.Background(), g, RunOptions{Parallelism: 4}, func(_ context.Context, task *Task) error {
		if task.File == "0000_10_a_bad" {
			return boom
		}
		return nil
	})
	want := map[string]State{
		"0000_10_a_0": StateSucceeded, "0000_10_a_bad": StateFailed, "0000_10_a_2": StateSucceeded,
		"0000_10_a_ns": StateBlocked, "0000_10_a_3": StateBlocked,
		"0000_10_b_0": StateSucceeded, "0000_10_b_1": StateSucceeded,
	}
	for _, s := range res.Tasks {
		if s.State != want[s.Task.File] {
			t.Errorf("%s: %s, want %s", s.Task.File, s.State, want[s.Task.File])
		}
		if s.State == StateBlocked && s.Cause != tasks[1] {
			t.Errorf("%s blocked by %v, want the failed task", s.Task.File, s.Cause)
		}
	}
	if len(res.Errors) != 1 || !errors.Is(res.Errors[0], boom) {
		t.Errorf("errors %v", res.Errors)
	}
}

// TestRunWaveCancelled: no task of a wave starts once ctx is done.
func TestRunWaveCancelled(t *testing.T) {
	g := Build(waveTasks("0000_10_a_0", "0000_10_a_1", "0000_10_a_2", "0000_10_a_3"), BuildOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	var calls atomic.Int32
	res := Run(ctx, g, RunOptions{Parallelism: 1}, func(context.Context, *Task) error {
		calls.Add(1)
		cancel()
		return nil
	})
	if calls.Load() != 1 {
		t.Errorf("%d tasks ran after cancellation, want only the first", calls.Load())
	}
	for _, s := range res.Tasks[1:] {
		if s.State != StateCancelled {
			t.Errorf("%s: %s, want cancelled", s.Task.File, s.State)
		}
	}
}
