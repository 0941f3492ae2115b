package recordstore

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
)

// failingStore fails the next loads and saves it is told to, then behaves
// like MemoryStore.
type failingStore struct {
	MemoryStore[item]
	loadFailures, saveFailures int
}

func (s *failingStore) Load(ctx context.Context) ([]item, error) {
	if s.loadFailures > 0 {
		s.loadFailures--
		return nil, errors.New("injected load failure")
	}
	return s.MemoryStore.Load(ctx)
}

func (s *failingStore) Save(ctx context.Context, recs []item) error {
	if s.saveFailures > 0 {
		s.saveFailures--
		return errors.New("injected save failure")
	}
	return s.MemoryStore.Save(ctx, recs)
}

func TestLedgerLoadsAgainAfterAFailedLoad(t *testing.T) {
	ctx := context.Background()
	store := &failingStore{loadFailures: 1}
	if err := store.MemoryStore.Save(ctx, named("a")); err != nil {
		t.Fatal(err)
	}
	l := NewLedger(store, items)
	if err := l.Load(ctx); err == nil || err.Error() != "load test items: injected load failure" {
		t.Fatalf("err = %v, want the load failure, naming the records", err)
	}
	if err := l.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := l.Get("a"); !ok {
		t.Error("the second load must read the store")
	}
	if err := store.MemoryStore.Save(ctx, named("b")); err != nil {
		t.Fatal(err)
	}
	if err := l.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := l.Get("b"); ok {
		t.Error("a ledger loads once")
	}
}

func TestLedgerSavesARecordWhoseEarlierSaveFailed(t *testing.T) {
	ctx := context.Background()
	store := &failingStore{}
	l := NewLedger(store, items)
	if err := l.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.PutAll(ctx, []item{{Name: "x", Value: "started"}}); err != nil {
		t.Fatal(err)
	}
	done := item{Name: "x", Value: "done"}
	store.saveFailures = 1
	if err := l.PutAll(ctx, []item{done}); err == nil || err.Error() != "save test items: injected save failure" {
		t.Fatalf("err = %v, want the save failure, naming the records", err)
	}
	// The next pass records the same outcome again; the store must now
	// get it, or it keeps the old value until something else changes.
	if err := l.PutAll(ctx, []item{done}); err != nil {
		t.Fatal(err)
	}
	recs, _ := store.Load(ctx)
	if !reflect.DeepEqual(recs, []item{done}) {
		t.Fatalf("stored records = %+v, want %+v", recs, done)
	}
}

// gatedStore blocks each save until the test releases it, and counts saves.
type gatedStore struct {
	MemoryStore[item]
	started chan struct{}
	release chan struct{}
}

func (s *gatedStore) Save(ctx context.Context, recs []item) error {
	s.started <- struct{}{}
	<-s.release
	return s.MemoryStore.Save(ctx, recs)
}

func TestLedgerFlushCommitsWaitingChangesTogether(t *testing.T) {
	ctx := context.Background()
	store := &gatedStore{started: make(chan struct{}), release: make(chan struct{})}
	l := NewLedger(store, items)
	if err := l.Load(ctx); err != nil {
		t.Fatal(err)
	}
	first := make(chan error, 1)
	go func() { first <- l.PutAll(ctx, named("a")) }()
	<-store.started // the first save runs and holds the store

	const waiters = 10
	errs := make(chan error, waiters)
	for i := 0; i < waiters; i++ {
		l.Set(item{Name: fmt.Sprintf("w%d", i)})
		go func() { errs <- l.Flush(ctx) }()
	}
	store.release <- struct{}{}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	// Every waiter's change was made after the first save began, so one
	// more save must carry them all.
	<-store.started
	store.release <- struct{}{}
	for i := 0; i < waiters; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if store.Saves != 2 {
		t.Errorf("%d saves for 11 changes in two groups, want 2", store.Saves)
	}
	recs, _ := store.Load(ctx)
	if len(recs) != waiters+1 {
		t.Errorf("store has %d records, want %d", len(recs), waiters+1)
	}
	if err := l.Flush(ctx); err != nil || store.Saves != 2 {
		t.Errorf("a flush with nothing new saved again (saves %d, err %v)", store.Saves, err)
	}
}

func TestLedgerPrunesWhatTheCallerDrops(t *testing.T) {
	ctx := context.Background()
	store := &MemoryStore[item]{}
	l := NewLedger(store, items)
	if err := l.PutAll(ctx, named("c", "a", "drop-1", "b", "drop-2")); err != nil {
		t.Fatal(err)
	}
	l.Prune(func(i item) bool { return i.Name[0] == 'x' })
	if err := l.Flush(ctx); err != nil || store.Saves != 1 {
		t.Fatalf("a prune that drops nothing saved again (saves %d, err %v)", store.Saves, err)
	}
	l.Prune(func(i item) bool { return len(i.Name) > 1 })
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	want := named("a", "b", "c")
	if got := l.All(); !reflect.DeepEqual(got, want) {
		t.Errorf("ledger holds %v, want %v, sorted by key", got, want)
	}
	if stored, _ := store.Load(ctx); !reflect.DeepEqual(stored, want) {
		t.Errorf("store holds %v, want %v", stored, want)
	}
}

func TestLedgerSetOfAnUnchangedRecordSavesNothing(t *testing.T) {
	ctx := context.Background()
	store := &MemoryStore[item]{}
	l := NewLedger(store, items)
	if err := l.PutAll(ctx, named("a")); err != nil {
		t.Fatal(err)
	}
	l.Set(named("a")[0])
	if err := l.Flush(ctx); err != nil || store.Saves != 1 {
		t.Errorf("saves %d (err %v), want the one before", store.Saves, err)
	}
}
