package graph

import (
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
