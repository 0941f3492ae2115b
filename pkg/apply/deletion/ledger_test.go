package deletion

import (
	"context"
	"reflect"
	"testing"

	"github.com/payload-applier/payload-applier/pkg/payload"
)

func TestLedgerRetainKeepsUnfinishedAndWantedRecords(t *testing.T) {
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
	l.Retain(func(r Record) bool { return r.ID.Name == "completed-kept" })
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
	if r, ok := l.Get(id("pending")); !ok || r.State != Pending {
		t.Errorf("Get by object found %+v, %v", r, ok)
	}
	if stored, _ := store.Load(ctx); len(stored) != len(want) {
		t.Errorf("store has %d records after the flush, want %d", len(stored), len(want))
	}
}
