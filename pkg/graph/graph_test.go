package graph

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

func TestSteps(t *testing.T) {
	tests := map[string]struct {
		graph *Graph
		want  string
	}{
		"a nil graph has no steps":    {nil, "[]"},
		"an empty graph has no steps": {&Graph{}, "[]"},
		"a chain takes a step per node": {graphOf(
			nodeSpec{tasks: []string{"a"}, out: []int{1}},
			nodeSpec{in: []int{0}, out: []int{2}},
			nodeSpec{tasks: []string{"b"}, in: []int{1}},
		), "[[0] [1] [2]]"},
		"a node waits for its longest path, and roots share the first step": {graphOf(
			nodeSpec{tasks: []string{"c"}, in: []int{2}, out: []int{3}},
			nodeSpec{tasks: []string{"a"}, out: []int{2, 3}},
			nodeSpec{tasks: []string{"b"}, in: []int{1}, out: []int{0}},
			nodeSpec{in: []int{0, 1}},
			nodeSpec{tasks: []string{"d"}},
		), "[[1 4] [2] [0] [3]]"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if got := fmt.Sprint(tt.graph.Steps()); got != tt.want {
				t.Errorf("Steps() = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestUnorderedRunsEveryTaskWhateverFails(t *testing.T) {
	tasks := []*Task{{Index: 0}, {Index: 1}, {Index: 2}}
	g := Unordered(tasks)
	if err := g.Validate(); err != nil || len(g.Nodes) != 3 {
		t.Fatalf("%d nodes, %v", len(g.Nodes), err)
	}
	for i, n := range g.Nodes {
		if n.ID != i || len(n.Tasks) != 1 || n.Tasks[0] != tasks[i] || len(n.In)+len(n.Out) != 0 {
			t.Errorf("node %d: %+v, want task %d alone without edges", i, n, i)
		}
	}
	res := Run(context.Background(), g, RunOptions{Parallelism: 2}, func(_ context.Context, task *Task) error {
		if task.Index == 0 {
			return errors.New("boom")
		}
		return nil
	})
	if res.Count(StateSucceeded) != 2 || res.Count(StateFailed) != 1 {
		t.Errorf("one failure must hold back nothing: %+v", res.Tasks)
	}
	if len(Unordered(nil).Nodes) != 0 {
		t.Error("no tasks, no nodes")
	}
}
