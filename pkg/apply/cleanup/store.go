package cleanup

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Store persists cleanup records, so that a restart keeps a cleanup's
// start and stall timer; the remaining operands are read again.
type Store interface {
	Load(ctx context.Context) ([]Record, error)
	Save(ctx context.Context, recs []Record) error
}

// MemoryStore keeps records in memory: for tests and dry runs.
type MemoryStore struct {
	mu   sync.Mutex
	recs []Record
}

// Load implements Store.
func (m *MemoryStore) Load(context.Context) ([]Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Record(nil), m.recs...), nil
}

// Save implements Store.
func (m *MemoryStore) Save(_ context.Context, recs []Record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.recs = append([]Record(nil), recs...)
	return nil
}

// configMapKey holds the records as JSON; a record names at most 50
// operands, and there is one per removed component, so it stays small.
const (
	configMapKey = "cleanups.json"
	maxStoreSize = 512 << 10
)

// ConfigMapStore keeps the records in a ConfigMap beside the delete ledger.
type ConfigMapStore struct {
	Client    kubernetes.Interface
	Namespace string
	Name      string
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
	data := cm.Data[configMapKey]
	if data == "" {
		return nil, nil
	}
	if len(data) > maxStoreSize {
		return nil, fmt.Errorf("configmap %s/%s: key %s holds %d bytes, more than %d", c.Namespace, c.Name, configMapKey, len(data), maxStoreSize)
	}
	var recs []Record
	if err := json.Unmarshal([]byte(data), &recs); err != nil {
		return nil, fmt.Errorf("configmap %s/%s: key %s: %w", c.Namespace, c.Name, configMapKey, err)
	}
	return recs, nil
}

// Save implements Store: one write of the whole set, created if missing.
func (c *ConfigMapStore) Save(ctx context.Context, recs []Record) error {
	sort.Slice(recs, func(i, j int) bool { return recs[i].Component < recs[j].Component })
	data, err := json.Marshal(recs)
	if err != nil {
		return err
	}
	cms := c.Client.CoreV1().ConfigMaps(c.Namespace)
	cm, err := cms.Get(ctx, c.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: c.Name, Namespace: c.Namespace,
			Labels: map[string]string{"app.kubernetes.io/managed-by": "payload-applier"}},
			Data: map[string]string{configMapKey: string(data)}}
		_, err = cms.Create(ctx, cm, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	cm.Data = map[string]string{configMapKey: string(data)}
	_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	return err
}
