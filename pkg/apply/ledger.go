package apply

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"sort"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/payload-applier/payload-applier/pkg/payload"
)

// DeleteState is where a delete stands. DeleteRecord documents the transitions.
type DeleteState string

const (
	// DeletePending: an update asked for the delete, but pacing has not let
	// it be issued yet. Later passes, in any mode, issue it.
	DeletePending DeleteState = "Pending"
	// DeleteInProgress: the DELETE was issued (or the object was already
	// terminating) and the object still exists.
	DeleteInProgress DeleteState = "InProgress"
	// DeleteCompleted: the object was seen NotFound after the delete.
	DeleteCompleted DeleteState = "Completed"
	// DeleteAbsent: the object was NotFound at first look: already removed or
	// never installed.
	DeleteAbsent DeleteState = "Absent"
	// DeleteAbandoned: pacing held the delete back and a later release
	// dropped its delete manifest, so it is never issued.
	DeleteAbandoned DeleteState = "Abandoned"
)

// DeleteRecord is the ledger's memory of one delete manifest's object.
//
// Transitions: (none) → Pending when an update walks the manifest;
// Pending → InProgress when the DELETE is issued or the object is already
// terminating; InProgress → Completed once NotFound; (none)/Pending → Absent
// when NotFound at first look; Pending → Abandoned when a pass applies a
// release that no longer carries the delete manifest (a release that carries
// it again starts anew). Completed and Absent are final for a release:
// an object that shows up again sets ReappearedAt and is reported, not
// deleted again, until an update to another release asks anew.
type DeleteRecord struct {
	ID payload.ObjectID `json:"id"`
	// File is the manifest that asked for the delete, as file:line.
	File string `json:"file"`
	// Release is the version of the update that asked for the delete.
	Release           string       `json:"release"`
	State             DeleteState  `json:"state"`
	UID               types.UID    `json:"uid,omitempty"`
	RequestedAt       *metav1.Time `json:"requestedAt,omitempty"`
	DeletionTimestamp *metav1.Time `json:"deletionTimestamp,omitempty"`
	Finalizers        []string     `json:"finalizers,omitempty"`
	CompletedAt       *metav1.Time `json:"completedAt,omitempty"`
	ReappearedAt      *metav1.Time `json:"reappearedAt,omitempty"`
	// LastError is the most recent failure to issue the delete, if any.
	LastError string `json:"lastError,omitempty"`
}

// Done reports whether the object is known to be gone.
func (r *DeleteRecord) Done() bool {
	return r.State == DeleteCompleted || r.State == DeleteAbsent
}

// LedgerStore persists delete records. The engine loads them once and edits
// them in memory; it saves the whole set, coalescing changes.
type LedgerStore interface {
	Load(ctx context.Context) ([]DeleteRecord, error)
	Save(ctx context.Context, records []DeleteRecord) error
}

// ledger is the in-memory view of the store, safe for concurrent delete
// chains. Changes are made in memory (set) and reach the store on flush,
// which commits in groups: one save carries every change made before it
// started, and callers that flush while a save is running share the next.
// Only claims are flushed before the deletes they allow; outcomes are
// flushed at the end of a pass, because a lost outcome is found again by
// reading the cluster.
type ledger struct {
	store LedgerStore

	mu      sync.Mutex
	loaded  bool
	records map[payload.ObjectID]*DeleteRecord
	// changes counts edits; stored is the count the store has seen.
	changes, stored uint64
	// saving is closed when the save in flight ends; nil when none runs.
	saving chan struct{}
}

func newLedger(store LedgerStore) *ledger {
	return &ledger{store: store, records: map[payload.ObjectID]*DeleteRecord{}}
}

// load reads the store once; later calls are no-ops.
func (l *ledger) load(ctx context.Context) error {
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

// get returns a copy of the record for id, if any.
func (l *ledger) get(id payload.ObjectID) (DeleteRecord, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r, ok := l.records[id]
	if !ok {
		return DeleteRecord{}, false
	}
	return *r, true
}

// set stores rec in memory; the next flush persists it.
func (l *ledger) set(rec DeleteRecord) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.setLocked(rec)
}

func (l *ledger) setLocked(rec DeleteRecord) {
	if old, ok := l.records[rec.ID]; ok && reflect.DeepEqual(*old, rec) {
		return
	}
	l.records[rec.ID] = &rec
	l.changes++
}

// putAll stores several records and waits until the store has them.
func (l *ledger) putAll(ctx context.Context, recs []DeleteRecord) error {
	l.mu.Lock()
	for _, r := range recs {
		l.setLocked(r)
	}
	l.mu.Unlock()
	return l.flush(ctx)
}

// prune forgets finished records that keep does not want, so that the
// ledger holds what the current release needs and not every delete ever
// made.
func (l *ledger) prune(keep func(DeleteRecord) bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for id, r := range l.records {
		if (r.Done() || r.State == DeleteAbandoned) && !keep(*r) {
			delete(l.records, id)
			l.changes++
		}
	}
}

// flush returns once every change made before the call is in the store.
func (l *ledger) flush(ctx context.Context) error {
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
	}
	l.mu.Unlock()
	return nil
}

func (l *ledger) snapshotLocked() []DeleteRecord {
	out := make([]DeleteRecord, 0, len(l.records))
	for _, r := range l.records {
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID.String() < out[j].ID.String() })
	return out
}

// all returns a sorted copy of every record.
func (l *ledger) all() []DeleteRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.snapshotLocked()
}

// MemoryLedger keeps records in memory: for tests and dry runs.
type MemoryLedger struct {
	mu      sync.Mutex
	records []DeleteRecord
	Saves   int
}

func (m *MemoryLedger) Load(context.Context) ([]DeleteRecord, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]DeleteRecord(nil), m.records...), nil
}

func (m *MemoryLedger) Save(_ context.Context, recs []DeleteRecord) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.records = append([]DeleteRecord(nil), recs...)
	m.Saves++
	return nil
}

// The ConfigMap keys that hold the records: JSON, one record per line, or
// the same gzipped once it is too large to keep plain.
const (
	ledgerDataKey   = "records.json"
	ledgerGzipKey   = "records.json.gz"
	ledgerPlainMax  = 256 << 10
	configMapMaxLen = 1 << 20
)

// ConfigMapLedger keeps the records in a ConfigMap, so that they survive
// restarts of the applier. The CVO keeps them in memory and loses them.
type ConfigMapLedger struct {
	Client    kubernetes.Interface
	Namespace string
	Name      string

	// cached is the ConfigMap as last read or written, so that a save is
	// one PUT rather than a GET and a PUT.
	mu     sync.Mutex
	cached *corev1.ConfigMap
}

func (c *ConfigMapLedger) Load(ctx context.Context) ([]DeleteRecord, error) {
	cm, err := c.Client.CoreV1().ConfigMaps(c.Namespace).Get(ctx, c.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	c.remember(cm)
	recs, err := decodeLedger(cm)
	if err != nil {
		return nil, fmt.Errorf("configmap %s/%s: %w", c.Namespace, c.Name, err)
	}
	return recs, nil
}

func (c *ConfigMapLedger) remember(cm *corev1.ConfigMap) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cached = cm
}

func (c *ConfigMapLedger) Save(ctx context.Context, recs []DeleteRecord) error {
	data, binary, err := encodeLedger(recs)
	if err != nil {
		return fmt.Errorf("configmap %s/%s: %w", c.Namespace, c.Name, err)
	}
	cms := c.Client.CoreV1().ConfigMaps(c.Namespace)
	c.mu.Lock()
	cm := c.cached
	c.mu.Unlock()
	for attempt := 0; ; attempt++ {
		if cm == nil {
			cm, err = cms.Get(ctx, c.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
					Name:      c.Name,
					Namespace: c.Namespace,
					Labels:    map[string]string{"app.kubernetes.io/managed-by": FieldManager},
				}}
				cm.Data, cm.BinaryData = data, binary
				created, err := cms.Create(ctx, cm, metav1.CreateOptions{})
				if err != nil {
					return err
				}
				c.remember(created)
				return nil
			}
			if err != nil {
				return err
			}
		}
		cm = cm.DeepCopy()
		cm.Data, cm.BinaryData = data, binary
		updated, err := cms.Update(ctx, cm, metav1.UpdateOptions{})
		if err == nil {
			c.remember(updated)
			return nil
		}
		// Someone else wrote it (or removed it) since we last looked: the
		// records in memory are the truth, so read the latest version and
		// write them again.
		if attempt == 0 && (apierrors.IsConflict(err) || apierrors.IsNotFound(err)) {
			cm = nil
			continue
		}
		c.remember(nil)
		return err
	}
}

// encodeLedger renders records as the ConfigMap's data: plain JSON while it
// is small enough to read with kubectl, gzipped beyond that.
func encodeLedger(recs []DeleteRecord) (map[string]string, map[string][]byte, error) {
	var buf bytes.Buffer
	buf.WriteString("[")
	for i, r := range recs {
		line, err := json.Marshal(r)
		if err != nil {
			return nil, nil, err
		}
		if i > 0 {
			buf.WriteString(",")
		}
		buf.WriteString("\n")
		buf.Write(line)
	}
	buf.WriteString("\n]\n")
	if buf.Len() <= ledgerPlainMax {
		return map[string]string{ledgerDataKey: buf.String()}, nil, nil
	}
	var zbuf bytes.Buffer
	zw := gzip.NewWriter(&zbuf)
	if _, err := zw.Write(buf.Bytes()); err != nil {
		return nil, nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, nil, err
	}
	if zbuf.Len() > configMapMaxLen-4096 {
		return nil, nil, fmt.Errorf("the delete ledger holds %d records, %d bytes compressed, more than a ConfigMap can hold", len(recs), zbuf.Len())
	}
	return nil, map[string][]byte{ledgerGzipKey: zbuf.Bytes()}, nil
}

// decodeLedger reads the records back from either encoding.
func decodeLedger(cm *corev1.ConfigMap) ([]DeleteRecord, error) {
	var raw []byte
	key := ledgerDataKey
	if z, ok := cm.BinaryData[ledgerGzipKey]; ok {
		key = ledgerGzipKey
		zr, err := gzip.NewReader(bytes.NewReader(z))
		if err != nil {
			return nil, fmt.Errorf("key %s: %w", key, err)
		}
		if raw, err = io.ReadAll(zr); err != nil {
			return nil, fmt.Errorf("key %s: %w", key, err)
		}
	} else {
		raw = []byte(cm.Data[ledgerDataKey])
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil
	}
	var recs []DeleteRecord
	if err := json.Unmarshal(raw, &recs); err != nil {
		return nil, fmt.Errorf("key %s: %w", key, err)
	}
	return recs, nil
}
