package graph

import (
	"context"
	"errors"
	"testing"
)

// passPayload is a payload with applies and deletes in several components.
func passPayload() []*Task {
	tasks := fileTasks(
		"0000_10_a_00_ns.yaml", "0000_10_a_01_old-deploy.yaml", "0000_10_a_02_deploy.yaml",
		"0000_10_b_00_ns.yaml", "0000_10_b_01_old-sa.yaml",
		"0000_50_c_00_ns.yaml", "0000_50_c_01_old-crd.yaml", "0000_50_c_02_old-cr.yaml",
		"0000_90_d_00_monitor.yaml",
	)
	for _, i := range []int{1, 4, 6, 7} {
		tasks[i].Delete = true
	}
	return tasks
}

func TestRunPass(t *testing.T) {
	tests := map[string]struct {
		applyErr     map[string]error
		deleteErr    map[string]error
		wantApplied  int // apply tasks that succeeded
		wantDeleted  int // delete tasks that succeeded
		wantWaiting  int
		wantApplyErr bool
	}{
		"every apply finishes before any delete starts": {
			wantApplied: 5, wantDeleted: 4,
		},
		"a failed apply does not stop the deletes": {
			applyErr:     map[string]error{"0000_10_a_00_ns.yaml": errors.New("conflict")},
			wantApplied:  1, // b's namespace, beside a; the barrier holds run levels 50 and 90
			wantDeleted:  4,
			wantApplyErr: true,
		},
		"a waiting delete produces no error in either walk": {
			deleteErr:   map[string]error{"0000_50_c_02_old-cr.yaml": &WaitingError{On: "finalizer"}},
			wantApplied: 5, wantDeleted: 2, wantWaiting: 1,
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			tasks := passPayload()
			tr := newTrace()
			fn := func(errs map[string]error) TaskFunc {
				return func(_ context.Context, task *Task) error {
					tr.begin(task.File)
					err := errs[task.File]
					tr.end(task.File, err)
					return err
				}
			}
			res := RunPass(context.Background(), Pass{
				Apply:         Build(tasks, BuildOptions{Mode: ModeUpdate}),
				ApplyFn:       fn(tt.applyErr),
				ApplyOptions:  RunOptions{Parallelism: 4},
				Delete:        BuildDeletes(tasks, BuildOptions{}),
				DeleteFn:      fn(tt.deleteErr),
				DeleteOptions: RunOptions{Parallelism: 4},
			})

			lastApply, firstDelete := 0, 1<<30
			for _, task := range tasks {
				if task.Delete {
					if s, ok := tr.start[task.File]; ok {
						firstDelete = min(firstDelete, s)
					}
				} else if f, ok := tr.finish[task.File]; ok {
					lastApply = max(lastApply, f)
				}
			}
			if lastApply > firstDelete {
				t.Errorf("a delete started at %d before the last apply returned at %d", firstDelete, lastApply)
			}
			if got := res.Apply.Count(StateSucceeded); got != tt.wantApplied {
				t.Errorf("%d applies succeeded, want %d", got, tt.wantApplied)
			}
			if got := res.Delete.Count(StateSucceeded); got != tt.wantDeleted {
				t.Errorf("%d deletes succeeded, want %d", got, tt.wantDeleted)
			}
			if got := len(res.Delete.Waiting()); got != tt.wantWaiting {
				t.Errorf("%d deletes waiting, want %d", got, tt.wantWaiting)
			}
			if (res.Apply.Err() != nil) != tt.wantApplyErr {
				t.Errorf("apply error %v, want error: %v", res.Apply.Err(), tt.wantApplyErr)
			}
			if err := res.Delete.Err(); err != nil {
				t.Errorf("delete walk failed: %v", err)
			}
		})
	}
}

func TestRunPassCancelled(t *testing.T) {
	t.Run("cancelling during the apply walk starts no delete", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		tasks := passPayload()
		deleted := 0
		res := RunPass(ctx, Pass{
			Apply: Build(tasks, BuildOptions{}),
			ApplyFn: func(context.Context, *Task) error {
				cancel()
				return nil
			},
			Delete:   BuildDeletes(tasks, BuildOptions{}),
			DeleteFn: func(context.Context, *Task) error { deleted++; return nil },
		})
		if deleted != 0 || res.Delete.Count(StateCancelled) != 4 {
			t.Errorf("%d deletes ran; delete result %+v", deleted, res.Delete.Tasks)
		}
	})
	t.Run("a pass without deletes needs no delete function", func(t *testing.T) {
		res := RunPass(context.Background(), Pass{
			Apply:   Build(fileTasks("0000_10_a_0.yaml"), BuildOptions{}),
			ApplyFn: func(context.Context, *Task) error { return nil },
		})
		if res.Apply.Err() != nil || res.Delete.Err() != nil || res.Apply.Count(StateSucceeded) != 1 {
			t.Errorf("apply %+v, delete %+v", res.Apply, res.Delete)
		}
	})
}
