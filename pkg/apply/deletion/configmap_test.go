package deletion

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
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
		records int
		// noise adds incompressible bytes to each record's LastError.
		noise    int
		wantKey  string
		wantFail bool
	}{
		"empty":                         {records: 0, wantKey: ledgerDataKey},
		"small stays readable":          {records: 10, wantKey: ledgerDataKey},
		"large is compressed":           {records: 5000, wantKey: ledgerGzipKey},
		"beyond a ConfigMap is refused": {records: 300, noise: 8192, wantFail: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			recs := many(tc.records)
			rnd := rand.New(rand.NewPCG(1, 2))
			for i := range recs {
				b := make([]byte, tc.noise)
				for j := range b {
					b[j] = byte('a' + rnd.IntN(26))
				}
				recs[i].LastError = string(b)
			}
			data, bin, err := encodeLedger(recs)
			if tc.wantFail {
				if err == nil || !strings.Contains(err.Error(), "more than a ConfigMap can hold") {
					t.Fatalf("err = %v, want the size refused", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := data[tc.wantKey]; !ok {
				if _, ok := bin[tc.wantKey]; !ok {
					t.Fatalf("records stored under %v %v, want key %s", keys(data), len(bin), tc.wantKey)
				}
			}
			got, _, err := decodeLedger(&corev1.ConfigMap{Data: data, BinaryData: bin})
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

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestConfigMapStoreSavesWithOnePutAndRecoversFromConflicts(t *testing.T) {
	ctx := context.Background()
	kube := kubefake.NewSimpleClientset()
	l := &ConfigMapStore{Client: kube, Namespace: "ns", Name: "ledger"}
	rec := Record{ID: payload.ObjectID{Kind: "ConfigMap", Namespace: "ns", Name: "x"}, State: Pending}
	if err := l.Save(ctx, []Record{rec}); err != nil {
		t.Fatal(err)
	}
	kube.ClearActions()
	rec.State = Completed
	if err := l.Save(ctx, []Record{rec}); err != nil {
		t.Fatal(err)
	}
	if verbs := actionVerbs(kube.Actions()); !reflect.DeepEqual(verbs, []string{"update"}) {
		t.Errorf("second save sent %v, want one update", verbs)
	}

	// Another writer changes the ConfigMap: the save reads it again and
	// writes the records it holds.
	conflicts := 1
	kube.PrependReactor("update", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
		if conflicts == 0 {
			return false, nil, nil
		}
		conflicts--
		return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, "ledger", errors.New("stale"))
	})
	kube.ClearActions()
	rec.State = Absent
	if err := l.Save(ctx, []Record{rec}); err != nil {
		t.Fatal(err)
	}
	if verbs := actionVerbs(kube.Actions()); !reflect.DeepEqual(verbs, []string{"update", "get", "update"}) {
		t.Errorf("save after a conflict sent %v, want update, get, update", verbs)
	}
	got, err := (&ConfigMapStore{Client: kube, Namespace: "ns", Name: "ledger"}).Load(ctx)
	if err != nil || len(got) != 1 || got[0].State != Absent {
		t.Errorf("stored %+v (%v), want the record Absent", got, err)
	}
}

func actionVerbs(as []clienttesting.Action) []string {
	var out []string
	for _, a := range as {
		out = append(out, a.GetVerb())
	}
	return out
}

func TestAnUnreadableLedgerSaysWhyAndIsBounded(t *testing.T) {
	var bomb bytes.Buffer
	zw := gzip.NewWriter(&bomb)
	zeros := make([]byte, 1<<20)
	for range (maxLedgerBytes >> 20) + 1 {
		if _, err := zw.Write(zeros); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		cm   *corev1.ConfigMap
		want string
	}{
		"garbage":       {&corev1.ConfigMap{Data: map[string]string{ledgerDataKey: "{not json"}}, "not a list of delete records"},
		"not gzip":      {&corev1.ConfigMap{BinaryData: map[string][]byte{ledgerGzipKey: []byte("plain")}}, "gzip"},
		"a gzip bomb":   {&corev1.ConfigMap{BinaryData: map[string][]byte{ledgerGzipKey: bomb.Bytes()}}, "more than 64 MiB"},
		"a wrong shape": {&corev1.ConfigMap{Data: map[string]string{ledgerDataKey: `{"id": 1}`}}, "not a list of delete records"},
	} {
		t.Run(name, func(t *testing.T) {
			tc.cm.Name, tc.cm.Namespace = "ledger", "ns"
			store := &ConfigMapStore{Client: kubefake.NewClientset(tc.cm), Namespace: "ns", Name: "ledger"}
			_, err := store.Load(context.Background())
			var unreadable *UnreadableError
			if !errors.As(err, &unreadable) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "configmap ns/ledger") {
				t.Errorf("got %v, want an UnreadableError naming the ConfigMap and %q", err, tc.want)
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
		l := NewLedger(&ConfigMapStore{Client: kube, Namespace: "ns", Name: "ledger"})
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
	stored, err := (&ConfigMapStore{Client: kube, Namespace: "ns", Name: "ledger"}).Load(ctx)
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

func TestMergeRecords(t *testing.T) {
	id := func(name string) payload.ObjectID {
		return payload.ObjectID{Kind: "ConfigMap", Namespace: "ns", Name: name}
	}
	rec := func(name string, state State, uid string) Record {
		return Record{ID: id(name), Release: "2", State: state, UID: types.UID(uid)}
	}
	back := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	reappeared := rec("same", Completed, "u2")
	reappeared.ReappearedAt = &back
	pruned := rec("pruned", Completed, "u1")
	ours := []Record{rec("mine", InProgress, "u1"), rec("same", InProgress, "u1"), rec("both", InProgress, "u1")}
	stored := []Record{rec("theirs", Pending, "u1"), reappeared, rec("both", Pending, "u1"), pruned}
	base := map[payload.ObjectID]Record{pruned.ID: pruned}

	merged, foreign := mergeRecords(ours, stored, base)
	got := map[string]Record{}
	for _, r := range merged {
		got[r.ID.Name] = r
	}
	if _, ok := got["pruned"]; ok {
		t.Error("a record this writer pruned must not come back")
	}
	if got["theirs"].State != Pending || got["mine"].State != InProgress {
		t.Errorf("each writer's own objects must be kept: %+v", got)
	}
	if got["both"].State != InProgress {
		t.Errorf("for an object both have, this writer's record wins: %+v", got["both"])
	}
	if got["same"].ReappearedAt == nil {
		t.Error("the other writer's knowledge that an object reappeared must be kept: it only ever stops a delete")
	}
	if len(foreign) != 2 {
		t.Errorf("foreign = %v, want the other writer's new record and its reappearance", foreign)
	}
}
