package apply

import (
	"context"
	"errors"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/payload-applier/payload-applier/pkg/apply/deletion"
	"github.com/payload-applier/payload-applier/pkg/graph"
)

// The retry policy, one test per path: applies retry inside a pass; a
// delete waits for the next pass's look; between passes only in-progress
// deletes are polled.

// failFirst makes the first n verb requests on configmaps fail with a
// transient error, and counts every one.
func failFirst(dyn *dynamicfake.FakeDynamicClient, verb string, n int) *int {
	calls := 0
	dyn.PrependReactor(verb, "configmaps", func(a clienttesting.Action) (bool, runtime.Object, error) {
		calls++
		if calls <= n {
			return true, nil, apierrors.NewServiceUnavailable("the apiserver is restarting")
		}
		return false, nil, nil
	})
	return &calls
}

func TestAnApplyRetriesInsideThePass(t *testing.T) {
	e, _ := writeRecorder(t, &deletion.MemoryStore{})
	calls := failFirst(e.dynamic.(*dynamicfake.FakeDynamicClient), "create", 2)
	rel := planRelease(t, planDoc{"0000_50_a_01_cm.yaml", cmYAML("cm", "v")})
	res, err := e.Sync(context.Background(), rel, SyncOptions{Mode: graph.ModeUpdate, Backoff: &wait.Backoff{Duration: time.Millisecond, Steps: 4}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Complete() || *calls != 3 {
		t.Errorf("complete %v after %d creates, want the third try of the same pass to apply", res.Complete(), *calls)
	}
}

func TestAFailedDeleteWaitsForTheNextPass(t *testing.T) {
	ctx := context.Background()
	e, _ := writeRecorder(t, &deletion.MemoryStore{}, liveCM("old", "v"))
	calls := failFirst(e.dynamic.(*dynamicfake.FakeDynamicClient), "delete", 1)
	rel := planRelease(t, planDoc{"0000_50_a_01_old.yaml", cmYAML("old", "v", deleteAnn)})
	opts := SyncOptions{Mode: graph.ModeUpdate, DeleteSettle: time.Millisecond, Backoff: &wait.Backoff{Duration: time.Millisecond, Steps: 4}}
	res, err := e.Sync(ctx, rel, opts)
	if err != nil {
		t.Fatal(err)
	}
	var te *TaskError
	if *calls != 1 || !errors.As(res.Objects[0].Err, &te) || te.Reason != ReasonDeletionFailed {
		t.Fatalf("%d DELETEs, result %+v: want one failed DELETE and no retry inside the pass", *calls, res.Objects[0])
	}
	if rec, _ := e.ledger.Get(res.Objects[0].ID); rec.State != deletion.Pending || rec.LastError == "" {
		t.Fatalf("record %+v, want the delete still asked for, with its error", rec)
	}
	if err := e.RefreshDeletes(ctx); err != nil || *calls != 1 {
		t.Fatalf("RefreshDeletes sent a DELETE (%d in all, %v): only a pass's look issues", *calls, err)
	}
	opts.Mode = graph.ModeReconcile
	res, err = e.Sync(ctx, rel, opts)
	if err != nil {
		t.Fatal(err)
	}
	if *calls != 2 || res.Objects[0].Action != ActionDeleted {
		t.Errorf("%d DELETEs, action %s: want the next pass, even a reconcile, to issue the claimed delete again", *calls, res.Objects[0].Action)
	}
}

func TestRefreshDeletesPollsOnlyDeletesInProgress(t *testing.T) {
	ctx := context.Background()
	store := &deletion.MemoryStore{}
	pending := planRelease(t, planDoc{"0000_50_a_01_p.yaml", cmYAML("p", "v", deleteAnn)}).Manifests[0].ID()
	issued := planRelease(t, planDoc{"0000_50_a_01_i.yaml", cmYAML("i", "v", deleteAnn)}).Manifests[0].ID()
	if err := store.Save(ctx, []deletion.Record{{ID: pending, State: deletion.Pending, UID: "uid-p"}, {ID: issued, State: deletion.InProgress, UID: "uid-i"}}); err != nil {
		t.Fatal(err)
	}
	e, writes := writeRecorder(t, store) // both objects are gone
	var reads []string
	e.dynamic.(*dynamicfake.FakeDynamicClient).PrependReactor("get", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		reads = append(reads, a.(clienttesting.GetAction).GetName())
		return false, nil, nil
	})
	if err := e.RefreshDeletes(ctx); err != nil {
		t.Fatal(err)
	}
	if p, _ := e.ledger.Get(pending); p.State != deletion.Pending {
		t.Errorf("the pending delete is %s, want it left to the walk", p.State)
	}
	if i, _ := e.ledger.Get(issued); i.State != deletion.Completed {
		t.Errorf("the delete in progress is %s, want Completed once its object is gone", i.State)
	}
	if len(reads) != 1 || reads[0] != "i" || len(*writes) != 0 {
		t.Errorf("reads %v, writes %v: want one read, of the delete in progress, and no write to the cluster", reads, *writes)
	}
}
