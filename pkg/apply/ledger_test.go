package apply

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/payload-applier/payload-applier/pkg/apply/deletion"
	"github.com/payload-applier/payload-applier/pkg/graph"
)

// countingStore records how many DELETEs the cluster had seen at each save.
type countingStore struct {
	deletion.MemoryStore
	deletes       func() int
	deletesAtSave []int
}

func (s *countingStore) Save(ctx context.Context, recs []deletion.Record) error {
	s.deletesAtSave = append(s.deletesAtSave, s.deletes())
	return s.MemoryStore.Save(ctx, recs)
}

func TestSyncSavesTheLedgerOnceBeforeAndOnceAfterItsDeletes(t *testing.T) {
	const n = 40
	var docs []planDoc
	var objs []runtime.Object
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("old-%02d", i)
		docs = append(docs, planDoc{fmt.Sprintf("0000_50_a_%02d_%s.yaml", i, name), cmYAML(name, "v", deleteAnn)})
		objs = append(objs, liveCM(name, "v"))
	}
	rel := planRelease(t, docs...)

	store := &countingStore{}
	e, writes := writeRecorder(t, store, objs...)
	deleteCount := func() int {
		n := 0
		for _, w := range *writes {
			if w.GetVerb() == "delete" {
				n++
			}
		}
		return n
	}
	store.deletes = deleteCount
	res, err := e.Sync(context.Background(), rel, SyncOptions{Mode: graph.ModeUpdate})
	if err != nil {
		t.Fatal(err)
	}
	if deletes := deleteCount(); deletes != n {
		t.Fatalf("%d DELETEs, want %d", deletes, n)
	}
	// The claim is stored before the first DELETE, the outcomes after the
	// last: two saves, whatever the number of deletes.
	if want := []int{0, n}; !reflect.DeepEqual(store.deletesAtSave, want) {
		t.Errorf("saves happened after %v DELETEs, want %v", store.deletesAtSave, want)
	}
	stored, _ := store.Load(context.Background())
	for _, r := range stored {
		if r.State != deletion.Completed {
			t.Errorf("%s stored as %s, want Completed", r.ID, r.State)
		}
	}
	if len(stored) != n || res.Deletes.Blocking() {
		t.Errorf("%d records stored, deletes blocking %v; want %d, false", len(stored), res.Deletes.Blocking(), n)
	}
}
