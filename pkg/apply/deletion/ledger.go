package deletion

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"sync"

	"github.com/payload-applier/payload-applier/pkg/payload"
)

// Store persists delete records. The engine loads them once and edits
// them in memory; it saves the whole set, coalescing changes.
type Store interface {
	Load(ctx context.Context) ([]Record, error)
	Save(ctx context.Context, records []Record) error
}

// A mergingStore keeps, when a save meets another writer's, the records
// only the other writer has; Foreign hands them over once.
type mergingStore interface {
	Foreign() []Record
}

// Ledger is the in-memory view of the store, safe for concurrent delete
// chains. Changes are made in memory (Set) and reach the store on Flush,
// which commits in groups: one save carries every change made before it
// started, and callers that flush while a save is running share the next.
// Only claims are flushed before the deletes they allow; outcomes are
// flushed at the end of a pass, because a lost outcome is found again by
// reading the cluster.
type Ledger struct {
	store Store

	mu      sync.Mutex
	loaded  bool
	records map[payload.ObjectID]*Record
	// changes counts edits; stored is the count the store has seen.
	changes, stored uint64
	// saving is closed when the save in flight ends; nil when none runs.
	saving chan struct{}
}

// NewLedger returns an empty ledger on store; Load fills it.
func NewLedger(store Store) *Ledger {
	return &Ledger{store: store, records: map[payload.ObjectID]*Record{}}
}

// Load reads the store once; later calls are no-ops.
func (l *Ledger) Load(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.loaded {
		return nil
	}
	recs, err := l.store.Load(ctx)
	if err != nil {
		return fmt.Errorf("load delete ledger: %w", err)
	}
	for i := range recs {
		r := recs[i]
		l.records[r.ID] = &r
	}
	l.loaded = true
	return nil
}

// Get returns a copy of the record for id, if any.
func (l *Ledger) Get(id payload.ObjectID) (Record, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r, ok := l.records[id]
	if !ok {
		return Record{}, false
	}
	return *r, true
}

// Set stores rec in memory; the next flush persists it.
func (l *Ledger) Set(rec Record) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.setLocked(rec)
}

func (l *Ledger) setLocked(rec Record) {
	if old, ok := l.records[rec.ID]; ok && reflect.DeepEqual(*old, rec) {
		return
	}
	l.records[rec.ID] = &rec
	l.changes++
}

// PutAll stores several records and waits until the store has them.
func (l *Ledger) PutAll(ctx context.Context, recs []Record) error {
	l.mu.Lock()
	for _, r := range recs {
		l.setLocked(r)
	}
	l.mu.Unlock()
	return l.Flush(ctx)
}

// Prune forgets finished records that keep does not want, so that the
// ledger holds what the current release needs and not every delete ever
// made.
func (l *Ledger) Prune(keep func(Record) bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for id, r := range l.records {
		if (r.Finished() || r.State == Refused) && !keep(*r) {
			delete(l.records, id)
			l.changes++
		}
	}
}

// Flush returns once every change made before the call is in the store.
func (l *Ledger) Flush(ctx context.Context) error {
	l.mu.Lock()
	target := l.changes
	for l.stored < target {
		if l.saving != nil {
			// Another caller is saving; its save may predate our changes,
			// so wait and look again.
			done := l.saving
			l.mu.Unlock()
			select {
			case <-done:
			case <-ctx.Done():
				return ctx.Err()
			}
			l.mu.Lock()
			continue
		}
		snap, upTo := l.snapshotLocked(), l.changes
		l.saving = make(chan struct{})
		l.mu.Unlock()
		err := l.store.Save(ctx, snap)
		l.mu.Lock()
		close(l.saving)
		l.saving = nil
		if err != nil {
			l.mu.Unlock()
			return fmt.Errorf("save delete ledger: %w", err)
		}
		if upTo > l.stored {
			l.stored = upTo
		}
		if ms, ok := l.store.(mergingStore); ok {
			// Another writer's records, kept by the store, join memory
			// so that the next save keeps them too.
			for _, r := range ms.Foreign() {
				r := r
				l.records[r.ID] = &r
			}
		}
	}
	l.mu.Unlock()
	return nil
}

func (l *Ledger) snapshotLocked() []Record {
	out := make([]Record, 0, len(l.records))
	for _, r := range l.records {
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID.String() < out[j].ID.String() })
	return out
}

// All returns a sorted copy of every record.
func (l *Ledger) All() []Record {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.snapshotLocked()
}

// MemoryStore keeps records in memory: for tests and dry runs.
type MemoryStore struct {
	mu      sync.Mutex
	records []Record
	Saves   int
}

// Load implements Store.
func (m *MemoryStore) Load(context.Context) ([]Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Record(nil), m.records...), nil
}

// Save implements Store.
func (m *MemoryStore) Save(_ context.Context, recs []Record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.records = append([]Record(nil), recs...)
	m.Saves++
	return nil
}
