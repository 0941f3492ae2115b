package deletion

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
	"k8s.io/client-go/kubernetes"

	"github.com/payload-applier/payload-applier/pkg/payload"
)

// The ConfigMap keys that hold the records: JSON, one record per line, or
// the same gzipped once it is too large to keep plain.
const (
	// managedBy labels the ConfigMap as the applier's, whose field manager
	// has the same name.
	managedBy = "payload-applier"

	ledgerDataKey   = "records.json"
	ledgerGzipKey   = "records.json.gz"
	ledgerPlainMax  = 256 << 10
	configMapMaxLen = 1 << 20
	// maxLedgerBytes bounds the records once decompressed: a ConfigMap's
	// 1 MiB of gzip could otherwise inflate to gigabytes.
	maxLedgerBytes = 64 << 20
)

// UnreadableError is a ledger whose stored data cannot be decoded. It is
// not transient: someone has to repair or remove the ConfigMap, and
// until then no new delete starts.
type UnreadableError struct {
	Namespace, Name, Key string
	Err                  error
}

func (e *UnreadableError) Error() string {
	return fmt.Sprintf("configmap %s/%s, key %s: %v", e.Namespace, e.Name, e.Key, e.Err)
}

func (e *UnreadableError) Unwrap() error { return e.Err }

// ConfigMapStore keeps the records in a ConfigMap, so that they survive
// restarts of the applier. The CVO keeps them in memory and loses them.
type ConfigMapStore struct {
	Client    kubernetes.Interface
	Namespace string
	Name      string

	// cached is the ConfigMap as last read or written, so that a save is
	// one PUT rather than a GET and a PUT.
	mu     sync.Mutex
	cached *corev1.ConfigMap
	// foreign are records another writer stored that a merge kept.
	foreign []Record
	// base is the records as this writer last read or wrote them: a
	// merge tells from it what this writer pruned and what the other
	// writer changed.
	base map[payload.ObjectID]Record
}

// Load implements Store.
func (c *ConfigMapStore) Load(ctx context.Context) ([]Record, error) {
	cm, err := c.Client.CoreV1().ConfigMaps(c.Namespace).Get(ctx, c.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	c.remember(cm)
	recs, key, err := decodeLedger(cm)
	if err != nil {
		return nil, &UnreadableError{Namespace: c.Namespace, Name: c.Name, Key: key, Err: err}
	}
	c.setBase(recs)
	return recs, nil
}

func (c *ConfigMapStore) remember(cm *corev1.ConfigMap) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cached = cm
}

// Save implements Store. When another writer saved since this one last
// read (an apply beside a running operator), it merges rather than
// overwrites: the stored records of objects this writer has no record of
// are kept, and this writer's records win for the objects it has, as it
// acted on them last. Foreign hands the kept records to the ledger, so
// that its next save keeps them too.
func (c *ConfigMapStore) Save(ctx context.Context, recs []Record) error {
	cms := c.Client.CoreV1().ConfigMaps(c.Namespace)
	c.mu.Lock()
	cm := c.cached
	c.mu.Unlock()
	merged := recs
	for attempt := 0; ; attempt++ {
		if cm == nil {
			var err error
			cm, err = cms.Get(ctx, c.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return c.create(ctx, merged)
			}
			if err != nil {
				return err
			}
			if attempt > 0 {
				stored, key, err := decodeLedger(cm)
				if err != nil {
					return &UnreadableError{Namespace: c.Namespace, Name: c.Name, Key: key, Err: err}
				}
				c.mu.Lock()
				var foreign []Record
				merged, foreign = mergeRecords(recs, stored, c.base)
				c.foreign = append(c.foreign, foreign...)
				c.mu.Unlock()
			}
		}
		data, binary, err := encodeLedger(merged)
		if err != nil {
			return fmt.Errorf("configmap %s/%s: %w", c.Namespace, c.Name, err)
		}
		cm = cm.DeepCopy()
		cm.Data, cm.BinaryData = data, binary
		updated, err := cms.Update(ctx, cm, metav1.UpdateOptions{})
		if err == nil {
			c.remember(updated)
			c.setBase(merged)
			return nil
		}
		// Someone else wrote it (or removed it) since this writer last
		// looked: read the latest version and merge.
		if attempt < 3 && (apierrors.IsConflict(err) || apierrors.IsNotFound(err)) {
			cm = nil
			continue
		}
		c.remember(nil)
		return err
	}
}

// create writes the ConfigMap for the first time.
func (c *ConfigMapStore) create(ctx context.Context, recs []Record) error {
	data, binary, err := encodeLedger(recs)
	if err != nil {
		return fmt.Errorf("configmap %s/%s: %w", c.Namespace, c.Name, err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name:      c.Name,
		Namespace: c.Namespace,
		Labels:    map[string]string{"app.kubernetes.io/managed-by": managedBy},
	}}
	cm.Data, cm.BinaryData = data, binary
	created, err := c.Client.CoreV1().ConfigMaps(c.Namespace).Create(ctx, cm, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	c.remember(created)
	c.setBase(recs)
	return nil
}

func (c *ConfigMapStore) setBase(recs []Record) {
	base := make(map[payload.ObjectID]Record, len(recs))
	for _, r := range recs {
		base[r.ID] = r
	}
	c.mu.Lock()
	c.base = base
	c.mu.Unlock()
}

// Foreign returns, once, the records another writer stored that a merge
// kept: the ledger adds them to memory.
func (c *ConfigMapStore) Foreign() []Record {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.foreign
	c.foreign = nil
	return out
}

// mergeRecords merges this writer's records with the stored ones, against
// base, what this writer last read or wrote. For an object both have, this
// writer's record wins, as it acted on it last, unless the stored one
// knows of an object that reappeared under another UID: that knowledge
// only ever stops a delete. A stored record this writer has none of is
// kept unless this writer pruned it (base holds it unchanged). foreign
// lists what this writer learns.
func mergeRecords(ours, stored []Record, base map[payload.ObjectID]Record) (merged, foreign []Record) {
	mine := make(map[payload.ObjectID]int, len(ours))
	merged = append([]Record(nil), ours...)
	for i, r := range merged {
		mine[r.ID] = i
	}
	for _, theirs := range stored {
		i, have := mine[theirs.ID]
		switch {
		case have:
			if o := merged[i]; theirs.ReappearedAt != nil && o.ReappearedAt == nil && theirs.UID != "" && o.UID != "" && theirs.UID != o.UID {
				merged[i] = theirs
				foreign = append(foreign, theirs)
			}
		case reflect.DeepEqual(base[theirs.ID], theirs):
			// Pruned by this writer since it last looked.
		default:
			merged = append(merged, theirs)
			foreign = append(foreign, theirs)
		}
	}
	sort.Slice(merged, func(i, j int) bool { return merged[i].ID.String() < merged[j].ID.String() })
	return merged, foreign
}

// encodeLedger renders records as the ConfigMap's data: plain JSON while it
// is small enough to read with kubectl, gzipped beyond that.
func encodeLedger(recs []Record) (map[string]string, map[string][]byte, error) {
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

// decodeLedger reads the records back from either encoding, through a
// size limit; key names the key it read.
func decodeLedger(cm *corev1.ConfigMap) ([]Record, string, error) {
	var raw []byte
	key := ledgerDataKey
	if z, ok := cm.BinaryData[ledgerGzipKey]; ok {
		key = ledgerGzipKey
		zr, err := gzip.NewReader(bytes.NewReader(z))
		if err != nil {
			return nil, key, fmt.Errorf("not gzip data: %w", err)
		}
		if raw, err = io.ReadAll(io.LimitReader(zr, maxLedgerBytes+1)); err != nil {
			return nil, key, fmt.Errorf("corrupt gzip data: %w", err)
		}
		if len(raw) > maxLedgerBytes {
			return nil, key, fmt.Errorf("the records decompress to more than %d MiB", maxLedgerBytes>>20)
		}
	} else {
		raw = []byte(cm.Data[ledgerDataKey])
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, key, nil
	}
	var recs []Record
	if err := json.Unmarshal(raw, &recs); err != nil {
		return nil, key, fmt.Errorf("not a list of delete records: %w", err)
	}
	return recs, key, nil
}
