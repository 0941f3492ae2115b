package deletion

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/payload-applier/payload-applier/pkg/apply/recordstore/recordstoretest"
	"github.com/payload-applier/payload-applier/pkg/payload"
)

func TestConfigMapStoreEncodings(t *testing.T) {
	many := func(n int) []Record {
		now := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
		recs := make([]Record, n)
		for i := range recs {
			recs[i] = Record{
				ID:   payload.ObjectID{Kind: "ConfigMap", Namespace: "bench", Name: fmt.Sprintf("cm-%05d", i)},
				File: fmt.Sprintf("0000_50_bench_00_configmaps.yaml:%d", i*12+1), Release: "2.0.0",
				State: Completed, UID: types.UID(fmt.Sprintf("0a1b2c3d-0000-4000-8000-%012d", i)),
				RequestedAt: &now, CompletedAt: &now,
			}
		}
		return recs
	}
	tests := map[string]struct {
		records  int
		wantKey  string
		wantFail string
	}{
		"empty":                {records: 0, wantKey: "records.json"},
		"small stays readable": {records: 10, wantKey: "records.json"},
		"large is compressed":  {records: 5000, wantKey: "records.json.gz"},
		"too many is refused":  {records: RecordFormat.MaxRecords + 1, wantFail: "the delete ledger holds 20001 records, more than the 20000 it may"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			recs := many(tc.records)
			ctx := context.Background()
			kube := kubefake.NewClientset()
			err := NewConfigMapStore(kube, "ns", "ledger").Save(ctx, recs)
			if tc.wantFail != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantFail) {
					t.Fatalf("err = %v, want %q", err, tc.wantFail)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			cm, err := kube.CoreV1().ConfigMaps("ns").Get(ctx, "ledger", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := cm.Data[tc.wantKey]; !ok {
				if _, ok := cm.BinaryData[tc.wantKey]; !ok {
					t.Fatalf("records stored under %v %v, want key %s", cm.Data, len(cm.BinaryData), tc.wantKey)
				}
			}
			got, err := NewConfigMapStore(kube, "ns", "ledger").Load(ctx)
			if err != nil {
				t.Fatal(err)
			}
			gotJSON, _ := json.Marshal(got)
			wantJSON, _ := json.Marshal(recs)
			if len(recs) > 0 && string(gotJSON) != string(wantJSON) {
				t.Errorf("round trip changed the records: %d of %d back", len(got), len(recs))
			}
		})
	}
}

func TestConfigMapStoreSavesWithOnePutAndRecoversFromConflicts(t *testing.T) {
	ctx := context.Background()
	kube := kubefake.NewClientset()
	l := NewConfigMapStore(kube, "ns", "ledger")
	rec := Record{ID: payload.ObjectID{Kind: "ConfigMap", Namespace: "ns", Name: "x"}, State: Pending}
	if err := l.Save(ctx, []Record{rec}); err != nil {
		t.Fatal(err)
	}
	kube.ClearActions()
	rec.State = Completed
	if err := l.Save(ctx, []Record{rec}); err != nil {
		t.Fatal(err)
	}
	if verbs := recordstoretest.Verbs(kube.Actions()); !reflect.DeepEqual(verbs, []string{"update"}) {
		t.Errorf("second save sent %v, want one update", verbs)
	}

	// Another writer changes the ConfigMap: the save reads it again and
	// writes the records it holds.
	recordstoretest.ConflictNextUpdates(kube, 1)
	kube.ClearActions()
	rec.State = Absent
	if err := l.Save(ctx, []Record{rec}); err != nil {
		t.Fatal(err)
	}
	if verbs := recordstoretest.Verbs(kube.Actions()); !reflect.DeepEqual(verbs, []string{"update", "get", "update"}) {
		t.Errorf("save after a conflict sent %v, want update, get, update", verbs)
	}
	got, err := NewConfigMapStore(kube, "ns", "ledger").Load(ctx)
	if err != nil || len(got) != 1 || got[0].State != Absent {
		t.Errorf("stored %+v (%v), want the record Absent", got, err)
	}
}

func TestAnUnreadableLedgerSaysWhyAndIsBounded(t *testing.T) {
	// Valid JSON past the 64 MiB limit, a few hundred KiB gzipped.
	bomb := recordstoretest.Gzip(t, `[{"lastError":"`, strings.Repeat("a", 1<<20), (RecordFormat.MaxBytes>>20)+1, `"}]`)
	for name, tc := range map[string]struct {
		cm   *corev1.ConfigMap
		want string
	}{
		"garbage":       {&corev1.ConfigMap{Data: map[string]string{"records.json": "{not json"}}, "not a list of records"},
		"not gzip":      {&corev1.ConfigMap{BinaryData: map[string][]byte{"records.json.gz": []byte("plain")}}, "not gzip data"},
		"a gzip bomb":   {&corev1.ConfigMap{BinaryData: map[string][]byte{"records.json.gz": bomb}}, "more than 64 MiB"},
		"a wrong shape": {&corev1.ConfigMap{Data: map[string]string{"records.json": `{"id": 1}`}}, "not a list of records"},
		// 16 KiB of gzip each, that inflate to 5.6 M records or strings.
		"too many records": {&corev1.ConfigMap{BinaryData: map[string][]byte{"records.json.gz": recordstoretest.EmptyRecordsGzip(t, 5_600_000)}}, "more than 20000 records"},
		"too many strings": {&corev1.ConfigMap{BinaryData: map[string][]byte{"records.json.gz": recordstoretest.Gzip(t, `[{"finalizers":[`, `"",`, 5_600_000, `""]}]`)}}, "more than 1048576 list elements"},
	} {
		t.Run(name, func(t *testing.T) {
			tc.cm.Name, tc.cm.Namespace = "ledger", "ns"
			store := NewConfigMapStore(kubefake.NewClientset(tc.cm), "ns", "ledger")
			var err error
			allocated := recordstoretest.AllocatedBytes(func() { _, err = store.Load(context.Background()) })
			var unreadable *UnreadableError
			if !errors.As(err, &unreadable) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "delete ledger in configmap ns/ledger, key records.json") {
				t.Errorf("got %v, want an UnreadableError naming the ConfigMap and %q", err, tc.want)
			}
			t.Logf("refused after allocating %d KiB", allocated>>10)
			if strings.HasPrefix(name, "too many") {
				if allocated > 50<<20 {
					t.Errorf("refusing them allocated %d MiB", allocated>>20)
				}
			}
		})
	}
}

// TestTwoWritersLoseNothing: an apply and an operator each load the
// ledger, claim a delete and save. The second save meets the first's: it
// merges, and the second writer's memory learns the first one's claim,
// so that its next save keeps it too.
func TestTwoWritersLoseNothing(t *testing.T) {
	ctx := context.Background()
	kube := kubefake.NewClientset()
	// The fake does not check resourceVersions: answer a stale one as the
	// apiserver does.
	kube.PrependReactor("update", "configmaps", func(a clienttesting.Action) (bool, runtime.Object, error) {
		obj := a.(clienttesting.UpdateAction).GetObject().(*corev1.ConfigMap)
		live, err := kube.Tracker().Get(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, obj.Namespace, obj.Name)
		if err == nil && live.(*corev1.ConfigMap).ResourceVersion != obj.ResourceVersion {
			return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, obj.Name, errors.New("stale"))
		}
		obj = obj.DeepCopy()
		obj.ResourceVersion = fmt.Sprint(time.Now().UnixNano())
		return true, obj, kube.Tracker().Update(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, obj, obj.Namespace)
	})
	if _, err := kube.CoreV1().ConfigMaps("ns").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "ledger", Namespace: "ns", ResourceVersion: "1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	writer := func() *Ledger {
		l := NewLedger(NewConfigMapStore(kube, "ns", "ledger"))
		if err := l.Load(ctx); err != nil {
			t.Fatal(err)
		}
		return l
	}
	operator, apply := writer(), writer()
	rec := func(name string) Record {
		return Record{ID: payload.ObjectID{Kind: "ConfigMap", Namespace: "ns", Name: name}, Release: "2", State: Pending}
	}
	if err := operator.PutAll(ctx, []Record{rec("a")}); err != nil {
		t.Fatal(err)
	}
	if err := apply.PutAll(ctx, []Record{rec("b")}); err != nil {
		t.Fatal(err)
	}
	apply.Set(Record{ID: rec("b").ID, Release: "2", State: InProgress})
	if err := apply.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	stored, err := NewConfigMapStore(kube, "ns", "ledger").Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range stored {
		names = append(names, r.ID.Name+":"+string(r.State))
	}
	if strings.Join(names, " ") != "a:Pending b:InProgress" {
		t.Errorf("stored %v, want both writers' claims", names)
	}
	if _, ok := apply.Get(rec("a").ID); !ok {
		t.Error("the merging writer's memory must learn the other's claim")
	}
}

// TestAMergeKeepsTheOtherWritersKnowledgeOfAReappearance: two writers
// hold a record of the same object; the one that saves second, after a
// conflict, keeps its own record unless the stored one knows that the
// object reappeared under another UID.
func TestAMergeKeepsTheOtherWritersKnowledgeOfAReappearance(t *testing.T) {
	ctx := context.Background()
	rec := func(name string, state State, uid string) Record {
		return Record{ID: payload.ObjectID{Kind: "ConfigMap", Namespace: "ns", Name: name}, Release: "2", State: state, UID: types.UID(uid)}
	}
	back := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	reappeared := rec("same", Completed, "u2")
	reappeared.ReappearedAt = &back
	kube := kubefake.NewClientset()
	ours := NewConfigMapStore(kube, "ns", "ledger")
	if err := ours.Save(ctx, []Record{rec("same", InProgress, "u1"), rec("both", InProgress, "u1")}); err != nil {
		t.Fatal(err)
	}
	if err := NewConfigMapStore(kube, "ns", "ledger").Save(ctx, []Record{reappeared, rec("both", Pending, "u1")}); err != nil {
		t.Fatal(err)
	}

	recordstoretest.ConflictNextUpdates(kube, 1)
	if err := ours.Save(ctx, []Record{rec("same", Completed, "u1"), rec("both", Completed, "u1")}); err != nil {
		t.Fatal(err)
	}
	stored, err := NewConfigMapStore(kube, "ns", "ledger").Load(ctx)
	if err != nil || len(stored) != 2 {
		t.Fatalf("stored %+v (%v), want both records", stored, err)
	}
	if both := stored[0]; both.ID.Name != "both" || both.State != Completed {
		t.Errorf("for an object both have, this writer's record wins: %+v", both)
	}
	if same := stored[1]; same.ReappearedAt == nil || same.UID != "u2" {
		t.Errorf("the other writer's knowledge that an object reappeared must be kept, as it only ever stops a delete: %+v", same)
	}
	if foreign := ours.Foreign(); len(foreign) != 1 || foreign[0].ReappearedAt == nil {
		t.Errorf("foreign = %+v, want the reappearance handed to the ledger", foreign)
	}
}
