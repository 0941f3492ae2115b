package deletion

import (
	"k8s.io/client-go/kubernetes"

	"github.com/payload-applier/payload-applier/pkg/apply/recordstore"
)

// RecordFormat is how the ledger stores delete records: JSON, one record
// per line, under records.json, gzipped under records.json.gz once it is
// too large to keep plain.
var RecordFormat = recordstore.Format[Record]{
	What:    "delete ledger",
	Key:     func(r Record) string { return r.ID.String() },
	DataKey: "records.json",
	GzipKey: "records.json.gz",
	// The ledger holds one release's deletes, a few hundred at most, each
	// a record of some 20 items.
	MaxRecords:   20000,
	MaxItems:     1 << 20,
	MaxBytes:     64 << 20,
	PreferStored: knowsReappearance,
}

// knowsReappearance: in a merge, the stored record of an object wins when
// it knows that the object reappeared under another UID and this writer
// does not, as that knowledge only ever stops a delete.
func knowsReappearance(ours, stored Record) bool {
	return stored.ReappearedAt != nil && ours.ReappearedAt == nil && stored.UID != "" && ours.UID != "" && stored.UID != ours.UID
}

// ConfigMapStore keeps the records in a ConfigMap, so that they survive
// restarts of the applier. The CVO keeps them in memory and loses them.
type ConfigMapStore = recordstore.ConfigMapStore[Record]

// NewConfigMapStore returns the ledger's store in the ConfigMap
// namespace/name.
func NewConfigMapStore(client kubernetes.Interface, namespace, name string) *ConfigMapStore {
	return recordstore.NewConfigMapStore(client, namespace, name, RecordFormat)
}

// UnreadableError is a ledger whose stored data cannot be decoded. It is
// not transient: someone has to repair or remove the ConfigMap, and until
// then no new delete starts.
type UnreadableError = recordstore.UnreadableError
