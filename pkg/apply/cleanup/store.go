package cleanup

import (
	"k8s.io/client-go/kubernetes"

	"github.com/payload-applier/payload-applier/pkg/apply/recordstore"
)

// Store persists cleanup records, so that a restart keeps a cleanup's
// start and stall timer; the remaining operands are read again.
type Store = recordstore.Store[Record]

// MemoryStore keeps records in memory: for tests and dry runs.
type MemoryStore = recordstore.MemoryStore[Record]

// RecordFormat is how cleanup records are stored: one per component, as
// the delete ledger stores its records. Releases before it wrote them,
// all on one line, under cleanups.json, which is still read.
var RecordFormat = recordstore.Format[Record]{
	What:      "operand cleanup state",
	Key:       func(r Record) string { return r.Component },
	DataKey:   "records.json",
	GzipKey:   "records.json.gz",
	LegacyKey: "cleanups.json",
	// One record per removed component, each naming at most 50 operands
	// in some 200 items.
	MaxRecords: 1000,
	MaxItems:   1 << 18,
	MaxBytes:   16 << 20,
}

// ConfigMapStore keeps the records in a ConfigMap beside the delete ledger.
type ConfigMapStore = recordstore.ConfigMapStore[Record]

// NewConfigMapStore returns the cleanup state's store in the ConfigMap
// namespace/name.
func NewConfigMapStore(client kubernetes.Interface, namespace, name string) *ConfigMapStore {
	return recordstore.NewConfigMapStore(client, namespace, name, RecordFormat)
}
