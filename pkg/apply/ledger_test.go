package apply

import (
	"context"
	"errors"
	"testing"

	"github.com/payload-applier/payload-applier/pkg/payload"
)

// failingStore fails the next failures saves, then behaves like MemoryLedger.
type failingStore struct {
	MemoryLedger
	failures int
}

func (s *failingStore) Save(ctx context.Context, recs []DeleteRecord) error {
	if s.failures > 0 {
		s.failures--
		return errors.New("injected save failure")
	}
	return s.MemoryLedger.Save(ctx, recs)
}

func TestLedgerPutSavesARecordWhoseEarlierSaveFailed(t *testing.T) {
	ctx := context.Background()
	store := &failingStore{}
	l := newLedger(store)
	if err := l.load(ctx); err != nil {
		t.Fatal(err)
	}
	id := payload.ObjectID{Kind: "ConfigMap", Namespace: "ns", Name: "x"}
	if err := l.put(ctx, DeleteRecord{ID: id, State: DeleteInProgress}); err != nil {
		t.Fatal(err)
	}
	done := DeleteRecord{ID: id, State: DeleteCompleted}
	store.failures = 1
	if err := l.put(ctx, done); err == nil {
		t.Fatal("the injected save failure was not reported")
	}
	// The next pass records the same outcome again; the store must now
	// get it, or it keeps saying InProgress until something else changes.
	if err := l.put(ctx, done); err != nil {
		t.Fatal(err)
	}
	recs, _ := store.Load(ctx)
	if len(recs) != 1 || recs[0].State != DeleteCompleted {
		t.Fatalf("stored records = %+v, want the one record Completed", recs)
	}
}
