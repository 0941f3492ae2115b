package apply

import (
	"context"
	"encoding/json"
	"fmt"
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

// LedgerStore persists delete records. The engine loads them once, edits them
// in memory and saves them explicitly after each change of substance.
type LedgerStore interface {
	Load(ctx context.Context) ([]DeleteRecord, error)
	Save(ctx context.Context, records []DeleteRecord) error
}

// ledger is the in-memory view of the store, safe for concurrent delete chains.
type ledger struct {
	store LedgerStore

	mu      sync.Mutex
	loaded  bool
	records map[payload.ObjectID]*DeleteRecord
	saved   []DeleteRecord
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
	l.saved = recs
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

// put stores rec and persists the ledger when anything changed.
func (l *ledger) put(ctx context.Context, rec DeleteRecord) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if old, ok := l.records[rec.ID]; ok && reflect.DeepEqual(*old, rec) {
		// Unchanged in memory, but an earlier save may have failed: saving
		// is a no-op unless the store lags behind.
		return l.saveLocked(ctx)
	}
	l.records[rec.ID] = &rec
	return l.saveLocked(ctx)
}

func (l *ledger) snapshotLocked() []DeleteRecord {
	out := make([]DeleteRecord, 0, len(l.records))
	for _, r := range l.records {
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID.String() < out[j].ID.String() })
	return out
}

func (l *ledger) saveLocked(ctx context.Context) error {
	snap := l.snapshotLocked()
	if reflect.DeepEqual(snap, l.saved) {
		return nil
	}
	if err := l.store.Save(ctx, snap); err != nil {
		return fmt.Errorf("save delete ledger: %w", err)
	}
	l.saved = snap
	return nil
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

// ledgerDataKey is the ConfigMap key that holds the JSON records.
const ledgerDataKey = "records.json"

// ConfigMapLedger keeps the records in a ConfigMap, so that they survive
// restarts of the applier. The CVO keeps them in memory and loses them.
type ConfigMapLedger struct {
	Client    kubernetes.Interface
	Namespace string
	Name      string
}

func (c *ConfigMapLedger) Load(ctx context.Context) ([]DeleteRecord, error) {
	cm, err := c.Client.CoreV1().ConfigMaps(c.Namespace).Get(ctx, c.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var recs []DeleteRecord
	if data := cm.Data[ledgerDataKey]; data != "" {
		if err := json.Unmarshal([]byte(data), &recs); err != nil {
			return nil, fmt.Errorf("configmap %s/%s key %s: %w", c.Namespace, c.Name, ledgerDataKey, err)
		}
	}
	return recs, nil
}

func (c *ConfigMapLedger) Save(ctx context.Context, recs []DeleteRecord) error {
	data, err := json.MarshalIndent(recs, "", "  ")
	if err != nil {
		return err
	}
	cms := c.Client.CoreV1().ConfigMaps(c.Namespace)
	cm, err := cms.Get(ctx, c.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		cm = &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{
				Name:      c.Name,
				Namespace: c.Namespace,
				Labels:    map[string]string{"app.kubernetes.io/managed-by": FieldManager},
			},
			Data: map[string]string{ledgerDataKey: string(data)},
		}
		_, err = cms.Create(ctx, cm, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	cm.Data[ledgerDataKey] = string(data)
	_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	return err
}

// putAll stores several records with one save.
func (l *ledger) putAll(ctx context.Context, recs []DeleteRecord) error {
	if len(recs) == 0 {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range recs {
		r := recs[i]
		l.records[r.ID] = &r
	}
	return l.saveLocked(ctx)
}
