package deletion

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/payload-applier/payload-applier/pkg/payload"
)

// failingStore fails the next failures saves, then behaves like MemoryStore.
type failingStore struct {
	MemoryStore
	failures int
}

func (s *failingStore) Save(ctx context.Context, recs []Record) error {
	if s.failures > 0 {
		s.failures--
		return errors.New("injected save failure")
	}
	return s.MemoryStore.Save(ctx, recs)
}

func TestLedgerSavesARecordWhoseEarlierSaveFailed(t *testing.T) {
	ctx := context.Background()
	store := &failingStore{}
	l := NewLedger(store)
	if err := l.Load(ctx); err != nil {
		t.Fatal(err)
	}
	id := payload.ObjectID{Kind: "ConfigMap", Namespace: "ns", Name: "x"}
	if err := l.PutAll(ctx, []Record{{ID: id, State: InProgress}}); err != nil {
		t.Fatal(err)
	}
	done := Record{ID: id, State: Completed}
	store.failures = 1
	if err := l.PutAll(ctx, []Record{done}); err == nil {
		t.Fatal("the injected save failure was not reported")
	}
	// The next pass records the same outcome again; the store must now
	// get it, or it keeps saying InProgress until something else changes.
	if err := l.PutAll(ctx, []Record{done}); err != nil {
		t.Fatal(err)
	}
	recs, _ := store.Load(ctx)
	if len(recs) != 1 || recs[0].State != Completed {
		t.Fatalf("stored records = %+v, want the one record Completed", recs)
	}
}

// gatedStore blocks each save until the test releases it, and counts saves.
type gatedStore struct {
	MemoryStore
	started chan struct{}
	release chan struct{}
}

func (s *gatedStore) Save(ctx context.Context, recs []Record) error {
	s.started <- struct{}{}
	<-s.release
	return s.MemoryStore.Save(ctx, recs)
}

func TestLedgerFlushCommitsWaitingChangesTogether(t *testing.T) {
	ctx := context.Background()
	store := &gatedStore{started: make(chan struct{}), release: make(chan struct{})}
	l := NewLedger(store)
	if err := l.Load(ctx); err != nil {
		t.Fatal(err)
	}
	rec := func(name string) Record {
		return Record{ID: payload.ObjectID{Kind: "ConfigMap", Namespace: "ns", Name: name}, State: Completed}
	}
	first := make(chan error, 1)
	go func() { first <- l.PutAll(ctx, []Record{rec("a")}) }()
	<-store.started // the first save runs and holds the store

	const waiters = 10
	errs := make(chan error, waiters)
	for i := 0; i < waiters; i++ {
		l.Set(rec(fmt.Sprintf("w%d", i)))
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

func TestLedgerPruneKeepsUnfinishedAndWantedRecords(t *testing.T) {
	ctx := context.Background()
	store := &MemoryStore{}
	l := NewLedger(store)
	if err := l.Load(ctx); err != nil {
		t.Fatal(err)
	}
	id := func(n string) payload.ObjectID { return payload.ObjectID{Kind: "ConfigMap", Namespace: "ns", Name: n} }
	for n, st := range map[string]State{
		"pending": Pending, "in-progress": InProgress,
		"completed-kept": Completed, "completed-dropped": Completed,
		"absent-dropped": Absent, "abandoned-dropped": Abandoned, "refused-dropped": Refused,
	} {
		l.Set(Record{ID: id(n), State: st})
	}
	l.Prune(func(r Record) bool { return r.ID.Name == "completed-kept" })
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range l.All() {
		got = append(got, r.ID.Name)
	}
	want := []string{"completed-kept", "in-progress", "pending"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("kept %v, want %v", got, want)
	}
	if stored, _ := store.Load(ctx); len(stored) != len(want) {
		t.Errorf("store has %d records after the flush, want %d", len(stored), len(want))
	}
}
