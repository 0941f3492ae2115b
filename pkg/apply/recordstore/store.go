// Package recordstore persists the applier's own records across restarts:
// the delete ledger and the operand cleanup state, each a list of records
// of one type. A Ledger holds the records in memory and saves them in
// groups; a ConfigMapStore keeps them in one ConfigMap and writes nothing
// else in the cluster.
package recordstore

import (
	"context"
	"fmt"
	"sync"
)

// Store persists records. A Ledger loads them once and edits them in
// memory; it saves the whole set, coalescing changes.
type Store[R any] interface {
	Load(ctx context.Context) ([]R, error)
	Save(ctx context.Context, records []R) error
}

// Format describes one kind of record and how it is stored.
type Format[R any] struct {
	// What names the records in messages: "delete ledger".
	What string
	// Key identifies a record: a Ledger holds one record per key, sorted
	// by key, and a merge matches records by key.
	Key func(R) string
	// DataKey holds the records as plain JSON while they are small;
	// GzipKey, in binaryData, holds them gzipped beyond that.
	DataKey, GzipKey string
	// LegacyKey, when set, is read when neither key is present, so that
	// records written by an older release are not lost. A save drops it.
	LegacyKey string
	// MaxRecords, MaxItems and MaxBytes bound what a read decodes and a
	// save writes: the records, the list elements and object members they
	// hold in all, and their JSON once decompressed. A few KiB of gzip
	// could otherwise inflate to gigabytes, millions of empty records, or
	// a record with millions of empty strings, each a 16-byte header.
	// All three are required: zero admits nothing.
	MaxRecords, MaxItems, MaxBytes int
	// PreferStored, when set, says whether a stored record wins over this
	// writer's for the same key in a merge; by default this writer's wins,
	// as it acted last.
	PreferStored func(ours, stored R) bool
}

// UnreadableError is stored data that cannot be decoded. It is not
// transient: someone has to repair or remove the ConfigMap.
type UnreadableError struct {
	Namespace, Name, Key string
	// What names the records, from their Format.
	What string
	Err  error
}

func (e *UnreadableError) Error() string {
	where := fmt.Sprintf("configmap %s/%s, key %s", e.Namespace, e.Name, e.Key)
	if e.What != "" {
		where = e.What + " in " + where
	}
	return fmt.Sprintf("%s: %v", where, e.Err)
}

func (e *UnreadableError) Unwrap() error { return e.Err }

// MemoryStore keeps records in memory: for tests and dry runs.
type MemoryStore[R any] struct {
	mu      sync.Mutex
	records []R
	// Saves counts the saves.
	Saves int
}

// Load implements Store.
func (m *MemoryStore[R]) Load(context.Context) ([]R, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]R(nil), m.records...), nil
}

// Save implements Store.
func (m *MemoryStore[R]) Save(_ context.Context, recs []R) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.records = append([]R(nil), recs...)
	m.Saves++
	return nil
}
