package graph

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
)

// deleteTasks builds a payload in which every file is a delete.
func deleteTasks(files ...string) []*Task {
	tasks := fileTasks(files...)
	for _, t := range tasks {
		t.Delete = true
	}
	return tasks
}

// recorder notes the order in which task functions start, safely from
// several workers.
type recorder struct {
	mu    sync.Mutex
	order []string
}

func (r *recorder) add(t *Task) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.order = append(r.order, t.File)
}

func (r *recorder) started() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.order)
}

func TestBuildDeletes(t *testing.T) {
	tests := map[string]struct {
		tasks []*Task
		want  []string // one line per node, tasks in run order
	}{
		"no deletes give an empty walk": {
			tasks: fileTasks("0000_50_a_00_ns.yaml"),
			want:  nil,
		},
		"apply tasks are left out of the walk": {
			tasks: append(fileTasks("0000_50_a_00_ns.yaml"), &Task{Index: 1, File: "0000_50_a_01_x.yaml", RunLevel: 50, Component: "a", Delete: true}),
			want:  []string{"0000_50_a_01_x.yaml"},
		},
		"an operator is torn down in reverse of its creation": {
			tasks: deleteTasks(
				"0000_50_op_00_namespace.yaml", "0000_50_op_01_crd.yaml",
				"0000_50_op_02_deployment.yaml", "0000_50_op_03_clusteroperator.yaml",
			),
			want: []string{"0000_50_op_03_clusteroperator.yaml 0000_50_op_02_deployment.yaml 0000_50_op_01_crd.yaml 0000_50_op_00_namespace.yaml"},
		},
		"a component spanning run levels is one chain, higher level first": {
			tasks: deleteTasks("0000_50_olm_00_ns.yaml", "0000_50_olm_01_crd.yaml", "0000_90_olm_00_monitor.yaml", "0000_90_olm_01_rule.yaml"),
			want:  []string{"0000_90_olm_01_rule.yaml 0000_90_olm_00_monitor.yaml 0000_50_olm_01_crd.yaml 0000_50_olm_00_ns.yaml"},
		},
		"components are separate chains, higher run levels scheduled first": {
			tasks: deleteTasks("0000_10_a_0.yaml", "0000_10_a_1.yaml", "0000_30_b_0.yaml", "0000_70_c_0.yaml", "0000_70_c_1.yaml"),
			want: []string{
				"0000_70_c_1.yaml 0000_70_c_0.yaml",
				"0000_30_b_0.yaml",
				"0000_10_a_1.yaml 0000_10_a_0.yaml",
			},
		},
		"components in one run level are scheduled in reverse payload order": {
			tasks: deleteTasks("0000_50_a_0.yaml", "0000_50_b_0.yaml", "0000_50_c_0.yaml"),
			want:  []string{"0000_50_c_0.yaml", "0000_50_b_0.yaml", "0000_50_a_0.yaml"},
		},
		"every unparsed name is its own chain, scheduled last": {
			tasks: deleteTasks("0000_10_a_0.yaml", "x.yaml", "y.yaml"),
			want:  []string{"0000_10_a_0.yaml", "y.yaml", "x.yaml"},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := BuildDeletes(tt.tasks, BuildOptions{})
			var got []string
			for _, n := range g.Nodes {
				if len(n.In) > 0 || len(n.Out) > 0 {
					t.Errorf("node %d has edges; chains must be independent", n.ID)
				}
				files := make([]string, len(n.Tasks))
				for i, task := range n.Tasks {
					files[i] = task.File
				}
				got = append(got, strings.Join(files, " "))
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("chains:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			if err := g.Validate(); err != nil {
				t.Errorf("delete walk is invalid: %v", err)
			}
		})
	}
}

func TestBuildDeletesDocumentsInOneFile(t *testing.T) {
	// One file with three documents: three tasks sharing the file name,
	// indexed in document order. The last document goes first.
	tasks := []*Task{
		{Index: 4, File: "0000_50_a_00_rbac.yaml", Name: `serviceaccount "ns/a"`, RunLevel: 50, Component: "a", Delete: true},
		{Index: 5, File: "0000_50_a_00_rbac.yaml", Name: `role "ns/a"`, RunLevel: 50, Component: "a", Delete: true},
		{Index: 6, File: "0000_50_a_00_rbac.yaml", Name: `rolebinding "ns/a"`, RunLevel: 50, Component: "a", Delete: true},
	}
	g := BuildDeletes(tasks, BuildOptions{})
	var got []string
	for _, task := range g.Nodes[0].Tasks {
		got = append(got, task.Name)
	}
	want := []string{`rolebinding "ns/a"`, `role "ns/a"`, `serviceaccount "ns/a"`}
	if len(g.Nodes) != 1 || !slices.Equal(got, want) {
		t.Errorf("got %d nodes, order %v; want one node, order %v", len(g.Nodes), got, want)
	}
}

func TestDeleteWalk(t *testing.T) {
	operator := func() []*Task {
		return deleteTasks(
			"0000_50_op_00_namespace.yaml", "0000_50_op_01_crd.yaml",
			"0000_50_op_02_deployment.yaml", "0000_50_op_03_clusteroperator.yaml",
			"0000_60_other_00_namespace.yaml", "0000_60_other_01_configmap.yaml",
		)
	}
	tests := map[string]struct {
		outcome     map[string]error // by file; absent means done
		parallelism int
		wantStarted []string
		wantState   map[string]State
		wantErrors  int
	}{
		"the ClusterOperator and Deployment go before the CRD and the namespace": {
			parallelism: 1,
			wantStarted: []string{
				"0000_60_other_01_configmap.yaml", "0000_60_other_00_namespace.yaml",
				"0000_50_op_03_clusteroperator.yaml", "0000_50_op_02_deployment.yaml",
				"0000_50_op_01_crd.yaml", "0000_50_op_00_namespace.yaml",
			},
		},
		"a waiting delete stops only its own chain": {
			parallelism: 2,
			outcome:     map[string]error{"0000_50_op_02_deployment.yaml": &WaitingError{On: "finalizer example.com/cleanup"}},
			wantState: map[string]State{
				"0000_50_op_03_clusteroperator.yaml": StateSucceeded,
				"0000_50_op_02_deployment.yaml":      StateWaiting,
				"0000_50_op_01_crd.yaml":             StateHeld,
				"0000_50_op_00_namespace.yaml":       StateHeld,
				"0000_60_other_01_configmap.yaml":    StateSucceeded,
				"0000_60_other_00_namespace.yaml":    StateSucceeded,
			},
		},
		"a failed delete stops only its own chain": {
			parallelism: 2,
			outcome:     map[string]error{"0000_60_other_01_configmap.yaml": errors.New("forbidden")},
			wantState: map[string]State{
				"0000_60_other_01_configmap.yaml":    StateFailed,
				"0000_60_other_00_namespace.yaml":    StateBlocked,
				"0000_50_op_03_clusteroperator.yaml": StateSucceeded,
				"0000_50_op_00_namespace.yaml":       StateSucceeded,
			},
			wantErrors: 1,
		},
		"a wait wrapped in another error still only waits": {
			parallelism: 1,
			outcome:     map[string]error{"0000_50_op_03_clusteroperator.yaml": fmt.Errorf("clusteroperator op: %w", ErrWaiting)},
			wantState: map[string]State{
				"0000_50_op_03_clusteroperator.yaml": StateWaiting,
				"0000_50_op_02_deployment.yaml":      StateHeld,
				"0000_60_other_00_namespace.yaml":    StateSucceeded,
			},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			var rec recorder
			res := Run(context.Background(), BuildDeletes(operator(), BuildOptions{}), RunOptions{Parallelism: tt.parallelism}, func(_ context.Context, task *Task) error {
				rec.add(task)
				return tt.outcome[task.File]
			})
			if tt.wantStarted != nil && !slices.Equal(rec.started(), tt.wantStarted) {
				t.Errorf("started %v\nwant %v", rec.started(), tt.wantStarted)
			}
			states := map[string]TaskStatus{}
			for _, s := range res.Tasks {
				states[s.Task.File] = s
			}
			for file, want := range tt.wantState {
				if got := states[file].State; got != want {
					t.Errorf("%s ended %s, want %s (%s)", file, got, want, states[file].Reason())
				}
			}
			if len(res.Errors) != tt.wantErrors || len(res.Summary()) != tt.wantErrors {
				t.Errorf("errors %v, summary %v; want %d", res.Errors, res.Summary(), tt.wantErrors)
			}
			for _, s := range res.Tasks {
				if s.State == StateHeld && !strings.HasPrefix(s.Reason(), "waiting on ") {
					t.Errorf("held task %s has reason %q", s.Task.File, s.Reason())
				}
			}
		})
	}
}

func TestDeleteWalkHeldTasksNameTheWaitingTask(t *testing.T) {
	tasks := deleteTasks("0000_50_op_00_namespace.yaml", "0000_50_op_01_deployment.yaml")
	tasks[1].Name = `deployment "op/op"`
	res := Run(context.Background(), BuildDeletes(tasks, BuildOptions{}), RunOptions{}, func(_ context.Context, task *Task) error {
		if task.Index == 1 {
			return &WaitingError{On: "finalizer foregroundDeletion"}
		}
		return nil
	})
	waiting, notRun := res.Waiting(), res.NotRun()
	if len(waiting) != 1 || waiting[0].Task != tasks[1] || waiting[0].Reason() != "waiting on finalizer foregroundDeletion" {
		t.Fatalf("waiting = %+v", waiting)
	}
	if len(notRun) != 1 || notRun[0].Task != tasks[0] || notRun[0].Reason() != `waiting on deployment "op/op"` {
		t.Fatalf("not run = %+v", notRun)
	}
	if res.Err() != nil {
		t.Errorf("a waiting delete produced error %v", res.Err())
	}
}
