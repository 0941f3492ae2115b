package recordstore

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"sync"
)

// A mergingStore keeps, when a save meets another writer's, the records
// only the other writer has; Foreign hands them over once.
type mergingStore[R any] interface {
	Foreign() []R
}

// Ledger is the in-memory view of a store, one record per key, safe for
// concurrent use. Changes are made in memory (Set, Prune) and reach the
// store on Flush, which commits in groups: one save carries every change
// made before it started, and callers that flush while a save is running
// share the next.
type Ledger[R any] struct {
	store Store[R]
	what  string
	key   func(R) string

	mu      sync.Mutex
	loaded  bool
	records map[string]R
	// changes counts edits; stored is the count the store has seen.
	changes, stored uint64
	// saving is closed when the save in flight ends; nil when none runs.
	saving chan struct{}
}

// NewLedger returns an empty ledger of records in format f on store; Load
// fills it. Only f's What and Key matter here.
func NewLedger[R any](store Store[R], f Format[R]) *Ledger[R] {
	return &Ledger[R]{store: store, what: f.What, key: f.Key, records: map[string]R{}}
}

// Load reads the store once; later calls are no-ops. A failed load is
// tried again by the next call.
func (l *Ledger[R]) Load(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.loaded {
		return nil
	}
	recs, err := l.store.Load(ctx)
	if err != nil {
		return fmt.Errorf("load %s: %w", l.what, err)
	}
	for _, r := range recs {
		l.records[l.key(r)] = r
	}
	l.loaded = true
	return nil
}

// Get returns the record with key, if any.
func (l *Ledger[R]) Get(key string) (R, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r, ok := l.records[key]
	return r, ok
}

// Set stores rec in memory; the next flush persists it.
func (l *Ledger[R]) Set(rec R) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.setLocked(rec)
}

func (l *Ledger[R]) setLocked(rec R) {
	k := l.key(rec)
	if old, ok := l.records[k]; ok && reflect.DeepEqual(old, rec) {
		return
	}
	l.records[k] = rec
	l.changes++
}

// PutAll stores several records and waits until the store has them.
func (l *Ledger[R]) PutAll(ctx context.Context, recs []R) error {
	l.mu.Lock()
	for _, r := range recs {
		l.setLocked(r)
	}
	l.mu.Unlock()
	return l.Flush(ctx)
}

// Prune forgets the records drop says to; the next flush persists that.
func (l *Ledger[R]) Prune(drop func(R) bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, r := range l.records {
		if drop(r) {
			delete(l.records, k)
			l.changes++
		}
	}
}

// Flush returns once every change made before the call is in the store.
func (l *Ledger[R]) Flush(ctx context.Context) error {
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
			return fmt.Errorf("save %s: %w", l.what, err)
		}
		if upTo > l.stored {
			l.stored = upTo
		}
		if ms, ok := l.store.(mergingStore[R]); ok {
			// Another writer's records, kept by the store, join memory
			// so that the next save keeps them too.
			for _, r := range ms.Foreign() {
				l.records[l.key(r)] = r
			}
		}
	}
	l.mu.Unlock()
	return nil
}

func (l *Ledger[R]) snapshotLocked() []R {
	keys := make([]string, 0, len(l.records))
	for k := range l.records {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]R, len(keys))
	for i, k := range keys {
		out[i] = l.records[k]
	}
	return out
}

// All returns every record, sorted by key.
func (l *Ledger[R]) All() []R {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.snapshotLocked()
}
