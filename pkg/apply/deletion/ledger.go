package deletion

import (
	"github.com/payload-applier/payload-applier/pkg/apply/recordstore"
	"github.com/payload-applier/payload-applier/pkg/payload"
)

// Store persists delete records. The engine loads them once and edits
// them in memory; it saves the whole set, coalescing changes.
type Store = recordstore.Store[Record]

// MemoryStore keeps records in memory: for tests and dry runs.
type MemoryStore = recordstore.MemoryStore[Record]

// Ledger is the in-memory view of the store, safe for concurrent delete
// chains, one record per object (see recordstore.Ledger). Only claims are
// flushed before the deletes they allow; outcomes are flushed at the end
// of a pass, because a lost outcome is found again by reading the
// cluster.
type Ledger struct {
	*recordstore.Ledger[Record]
}

// NewLedger returns an empty ledger on store; Load fills it.
func NewLedger(store Store) *Ledger {
	return &Ledger{recordstore.NewLedger(store, RecordFormat)}
}

// Get returns a copy of the record for id, if any.
func (l *Ledger) Get(id payload.ObjectID) (Record, bool) {
	return l.Ledger.Get(id.String())
}

// Retain keeps unfinished records and those keep wants, and forgets the
// other finished or refused ones, so that the ledger holds what the
// current release needs and not every delete ever made.
func (l *Ledger) Retain(keep func(Record) bool) {
	l.Ledger.Prune(func(r Record) bool {
		return (r.Finished() || r.State == Refused) && !keep(r)
	})
}
