package graph

import (
	"math/rand"
	"strings"
	"testing"
)

func TestByNumberAndComponent(t *testing.T) {
	tests := map[string]struct {
		files []string
		want  []string // one line per bucket
	}{
		"no tasks give no buckets": {
			files: nil,
			want:  nil,
		},
		"a single unparsed task gives no buckets": {
			files: []string{"a"},
			want:  nil,
		},
		"a single parsed task gives no buckets": {
			files: []string{"0000_01_x-y-z_file1"},
			want:  nil,
		},
		"unparsed names merge into one serial node": {
			files: []string{"a", "b", "c"},
			want:  []string{"[a b c]"},
		},
		"files of one component in one run level form one node": {
			files: []string{"0000_01_x-y-z_file1", "0000_01_x-y-z_file2"},
			want:  []string{"[0000_01_x-y-z_file1 0000_01_x-y-z_file2]"},
		},
		"a single-component run level between unparsed names stays serial": {
			files: []string{"a", "0000_01_x-y-z_file1", "c"},
			want:  []string{"[a 0000_01_x-y-z_file1 c]"},
		},
		"two components in one run level run in parallel": {
			files: []string{"0000_01_a-b-c_file1", "0000_01_x-y-z_file2"},
			want:  []string{"[0000_01_a-b-c_file1] [0000_01_x-y-z_file2]"},
		},
		"an unparsed name ends the parallel bucket and starts a serial node": {
			files: []string{
				"0000_01_a-b-c_file1", "0000_01_x-y-z_file1", "0000_01_x-y-z_file2",
				"a", "0000_01_x-y-z_file2", "0000_01_x-y-z_file3",
			},
			want: []string{
				"[0000_01_a-b-c_file1] [0000_01_x-y-z_file1 0000_01_x-y-z_file2]",
				"[a 0000_01_x-y-z_file2 0000_01_x-y-z_file3]",
			},
		},
		"consecutive single-component run levels merge across run levels": {
			files: []string{"0000_07_a_0", "0000_08_a_0", "0000_09_a_0", "0000_09_b_0", "0000_10_a_0", "0000_11_b_0"},
			want: []string{
				"[0000_07_a_0 0000_08_a_0]",
				"[0000_09_a_0] [0000_09_b_0]",
				"[0000_10_a_0 0000_11_b_0]",
			},
		},
		"a component that reappears later in its run level gets a second chunk": {
			files: []string{"0000_01_a_0", "0000_01_b_0", "0000_01_a_1"},
			want:  []string{"[0000_01_a_0] [0000_01_b_0] [0000_01_a_1]"},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			got := renderBuckets(ByNumberAndComponent(fileTasks(tt.files...)))
			want := "<nil>"
			if tt.want != nil {
				want = strings.Join(tt.want, "\n")
			}
			if got != want {
				t.Errorf("buckets:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

func TestFlattenByNumberAndComponent(t *testing.T) {
	tests := map[string]struct {
		files []string
		want  string // the single bucket, or <nil>
	}{
		"no tasks give no buckets": {
			want: "<nil>",
		},
		"a single unparsed task gives no buckets": {
			files: []string{"a"},
			want:  "<nil>",
		},
		"a single parsed task gives no buckets": {
			files: []string{"0000_01_x-y-z_file1"},
			want:  "<nil>",
		},
		"every unparsed name is its own node": {
			files: []string{"a", "b", "c"},
			want:  "[a] [b] [c]",
		},
		"files of one component in one run level form one node": {
			files: []string{"0000_01_x-y-z_file1", "0000_01_x-y-z_file2"},
			want:  "[0000_01_x-y-z_file1 0000_01_x-y-z_file2]",
		},
		"unparsed names around a component are separate nodes": {
			files: []string{"a", "0000_01_x-y-z_file1", "c"},
			want:  "[a] [0000_01_x-y-z_file1] [c]",
		},
		"two components in one run level are two nodes": {
			files: []string{"0000_01_a-b-c_file1", "0000_01_x-y-z_file2"},
			want:  "[0000_01_a-b-c_file1] [0000_01_x-y-z_file2]",
		},
		"an unparsed name splits a component's run into two nodes": {
			files: []string{
				"0000_01_a-b-c_file1", "0000_01_x-y-z_file1", "0000_01_x-y-z_file2",
				"a", "0000_01_x-y-z_file2", "0000_01_x-y-z_file3",
			},
			want: "[0000_01_a-b-c_file1] [0000_01_x-y-z_file1 0000_01_x-y-z_file2] [a] [0000_01_x-y-z_file2 0000_01_x-y-z_file3]",
		},
		"one component in two run levels is two nodes": {
			files: []string{
				"0000_01_a-b-c_file1", "0000_01_x-y-z_file1", "0000_01_x-y-z_file2",
				"0000_02_x-y-z_file2", "0000_02_x-y-z_file3",
			},
			want: "[0000_01_a-b-c_file1] [0000_01_x-y-z_file1 0000_01_x-y-z_file2] [0000_02_x-y-z_file2 0000_02_x-y-z_file3]",
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			got := renderBuckets(FlattenByNumberAndComponent(fileTasks(tt.files...)))
			if got != tt.want {
				t.Errorf("buckets:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

// fixedBuckets is a BreakFunc that returns one bucket of one-task nodes,
// named 1..n, so that reorderings are easy to read.
func fixedBuckets(n int) BreakFunc {
	return func([]*Task) [][]*Node {
		bucket := make([]*Node, n)
		for i := range bucket {
			bucket[i] = &Node{Tasks: []*Task{{File: string(rune('1' + i))}}}
		}
		return [][]*Node{bucket}
	}
}

func TestShiftOrder(t *testing.T) {
	tests := map[string]struct {
		nodes, step, stride int
		want                string
	}{
		"step 0 keeps two nodes in order":                  {nodes: 2, step: 0, stride: 8, want: "[1] [2]"},
		"step 1 swaps two nodes":                           {nodes: 2, step: 1, stride: 8, want: "[2] [1]"},
		"step 2 brings two nodes back in order":            {nodes: 2, step: 2, stride: 8, want: "[1] [2]"},
		"three nodes with stride 2 rotate by step*3/2":     {nodes: 3, step: 1, stride: 2, want: "[2] [3] [1]"},
		"three nodes with stride 3 rotate by step*3/3":     {nodes: 3, step: 2, stride: 3, want: "[3] [1] [2]"},
		"an empty bucket is left alone":                    {nodes: 0, step: 3, stride: 8, want: ""},
		"a step larger than the bucket wraps around":       {nodes: 3, step: 7, stride: 8, want: "[2] [3] [1]"},
		"a single node is never moved whatever the step":   {nodes: 1, step: 5, stride: 8, want: "[1]"},
		"many nodes rotate in proportion to the stride":    {nodes: 16, step: 1, stride: 8, want: "[3] [4] [5] [6] [7] [8] [9] [:] [;] [<] [=] [>] [?] [@] [1] [2]"},
		"a stride equal to the bucket rotates by the step": {nodes: 4, step: 1, stride: 4, want: "[2] [3] [4] [1]"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			got := renderBuckets(ShiftOrder(fixedBuckets(tt.nodes), tt.step, tt.stride)(nil))
			if got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

func TestPermuteOrder(t *testing.T) {
	permute := func(seed int64) string {
		return renderBuckets(PermuteOrder(fixedBuckets(8), rand.New(rand.NewSource(seed)))(nil))
	}
	t.Run("the same seed gives the same order", func(t *testing.T) {
		if a, b := permute(3), permute(3); a != b {
			t.Errorf("seed 3 gave %s then %s", a, b)
		}
	})
	t.Run("different seeds give different orders", func(t *testing.T) {
		seen := map[string]bool{}
		for seed := range int64(5) {
			seen[permute(seed)] = true
		}
		if len(seen) < 2 {
			t.Errorf("5 seeds gave %d distinct orders", len(seen))
		}
	})
	t.Run("a permutation keeps every node exactly once", func(t *testing.T) {
		got := strings.Fields(strings.NewReplacer("[", "", "]", "").Replace(permute(11)))
		seen := map[string]int{}
		for _, s := range got {
			seen[s]++
		}
		if len(got) != 8 || len(seen) != 8 {
			t.Errorf("permutation %v is not of 8 distinct nodes", got)
		}
	})
}
