package apply

import (
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

	"github.com/payload-applier/payload-applier/pkg/graph"
	"github.com/payload-applier/payload-applier/pkg/payload"
)

// failingStore fails the next failures saves, then behaves like MemoryLedger.
type failingStore struct {
	MemoryLedger
	failures int
}

func (s *failingStore) Save(ctx context.Context, recs []DeleteRecord) error {
	if s.failures > 0 {
		s.failures--
		return errors.New("injected save failure")
	}
	return s.MemoryLedger.Save(ctx, recs)
}

func TestLedgerSavesARecordWhoseEarlierSaveFailed(t *testing.T) {
	ctx := context.Background()
	store := &failingStore{}
	l := newLedger(store)
	if err := l.load(ctx); err != nil {
		t.Fatal(err)
	}
	id := payload.ObjectID{Kind: "ConfigMap", Namespace: "ns", Name: "x"}
	if err := l.putAll(ctx, []DeleteRecord{{ID: id, State: DeleteInProgress}}); err != nil {
		t.Fatal(err)
	}
	done := DeleteRecord{ID: id, State: DeleteCompleted}
	store.failures = 1
	if err := l.putAll(ctx, []DeleteRecord{done}); err == nil {
		t.Fatal("the injected save failure was not reported")
	}
	// The next pass records the same outcome again; the store must now
	// get it, or it keeps saying InProgress until something else changes.
	if err := l.putAll(ctx, []DeleteRecord{done}); err != nil {
		t.Fatal(err)
	}
	recs, _ := store.Load(ctx)
	if len(recs) != 1 || recs[0].State != DeleteCompleted {
		t.Fatalf("stored records = %+v, want the one record Completed", recs)
	}
}

// gatedStore blocks each save until the test releases it, and counts saves.
type gatedStore struct {
	MemoryLedger
	started chan struct{}
	release chan struct{}
}

func (s *gatedStore) Save(ctx context.Context, recs []DeleteRecord) error {
	s.started <- struct{}{}
	<-s.release
	return s.MemoryLedger.Save(ctx, recs)
}

func TestLedgerFlushCommitsWaitingChangesTogether(t *testing.T) {
	ctx := context.Background()
	store := &gatedStore{started: make(chan struct{}), release: make(chan struct{})}
	l := newLedger(store)
	if err := l.load(ctx); err != nil {
		t.Fatal(err)
	}
	rec := func(name string) DeleteRecord {
		return DeleteRecord{ID: payload.ObjectID{Kind: "ConfigMap", Namespace: "ns", Name: name}, State: DeleteCompleted}
	}
	first := make(chan error, 1)
	go func() { first <- l.putAll(ctx, []DeleteRecord{rec("a")}) }()
	<-store.started // the first save runs and holds the store

	const waiters = 10
	errs := make(chan error, waiters)
	for i := 0; i < waiters; i++ {
		l.set(rec(fmt.Sprintf("w%d", i)))
		go func() { errs <- l.flush(ctx) }()
	}
	store.release <- struct{}{}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	// Every waiter's change was made after the first save began, so one
	// more save must carry them all.
	<-store.started
	store.release <- struct{}{}
	for i := 0; i < waiters; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if store.Saves != 2 {
		t.Errorf("%d saves for 11 changes in two groups, want 2", store.Saves)
	}
	recs, _ := store.Load(ctx)
	if len(recs) != waiters+1 {
		t.Errorf("store has %d records, want %d", len(recs), waiters+1)
	}
	if err := l.flush(ctx); err != nil || store.Saves != 2 {
		t.Errorf("a flush with nothing new saved again (saves %d, err %v)", store.Saves, err)
	}
}

func TestLedgerPruneKeepsUnfinishedAndWantedRecords(t *testing.T) {
	ctx := context.Background()
	store := &MemoryLedger{}
	l := newLedger(store)
	if err := l.load(ctx); err != nil {
		t.Fatal(err)
	}
	id := func(n string) payload.ObjectID { return payload.ObjectID{Kind: "ConfigMap", Namespace: "ns", Name: n} }
	for n, st := range map[string]DeleteState{
		"pending": DeletePending, "in-progress": DeleteInProgress,
		"completed-kept": DeleteCompleted, "completed-dropped": DeleteCompleted,
		"absent-dropped": DeleteAbsent, "abandoned-dropped": DeleteAbandoned,
	} {
		l.set(DeleteRecord{ID: id(n), State: st})
	}
	l.prune(func(r DeleteRecord) bool { return r.ID.Name == "completed-kept" })
	if err := l.flush(ctx); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range l.all() {
		got = append(got, r.ID.Name)
	}
	want := []string{"completed-kept", "in-progress", "pending"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("kept %v, want %v", got, want)
	}
	if stored, _ := store.Load(ctx); len(stored) != len(want) {
		t.Errorf("store has %d records after the flush, want %d", len(stored), len(want))
	}
}

func TestConfigMapLedgerEncodings(t *testing.T) {
	many := func(n int) []DeleteRecord {
		now := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
		recs := make([]DeleteRecord, n)
		for i := range recs {
			recs[i] = DeleteRecord{
				ID:   payload.ObjectID{Kind: "ConfigMap", Namespace: "bench", Name: fmt.Sprintf("cm-%05d", i)},
				File: fmt.Sprintf("0000_50_bench_00_configmaps.yaml:%d", i*12+1), Release: "2.0.0",
				State: DeleteCompleted, UID: types.UID(fmt.Sprintf("0a1b2c3d-0000-4000-8000-%012d", i)),
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
			got, err := decodeLedger(&corev1.ConfigMap{Data: data, BinaryData: bin})
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

func TestConfigMapLedgerSavesWithOnePutAndRecoversFromConflicts(t *testing.T) {
	ctx := context.Background()
	kube := kubefake.NewSimpleClientset()
	l := &ConfigMapLedger{Client: kube, Namespace: "ns", Name: "ledger"}
	rec := DeleteRecord{ID: payload.ObjectID{Kind: "ConfigMap", Namespace: "ns", Name: "x"}, State: DeletePending}
	if err := l.Save(ctx, []DeleteRecord{rec}); err != nil {
		t.Fatal(err)
	}
	kube.ClearActions()
	rec.State = DeleteCompleted
	if err := l.Save(ctx, []DeleteRecord{rec}); err != nil {
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
	rec.State = DeleteAbsent
	if err := l.Save(ctx, []DeleteRecord{rec}); err != nil {
		t.Fatal(err)
	}
	if verbs := actionVerbs(kube.Actions()); !reflect.DeepEqual(verbs, []string{"update", "get", "update"}) {
		t.Errorf("save after a conflict sent %v, want update, get, update", verbs)
	}
	got, err := (&ConfigMapLedger{Client: kube, Namespace: "ns", Name: "ledger"}).Load(ctx)
	if err != nil || len(got) != 1 || got[0].State != DeleteAbsent {
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

// countingStore records how many DELETEs the cluster had seen at each save.
type countingStore struct {
	MemoryLedger
	deletes       func() int
	deletesAtSave []int
}

func (s *countingStore) Save(ctx context.Context, recs []DeleteRecord) error {
	s.deletesAtSave = append(s.deletesAtSave, s.deletes())
	return s.MemoryLedger.Save(ctx, recs)
}

func TestSyncSavesTheLedgerOnceBeforeAndOnceAfterItsDeletes(t *testing.T) {
	const n = 40
	var docs []planDoc
	var objs []runtime.Object
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("old-%02d", i)
		docs = append(docs, planDoc{fmt.Sprintf("0000_50_a_%02d_%s.yaml", i, name), cmYAML(name, "v", deleteAnn)})
		objs = append(objs, liveCM(name, "v"))
	}
	rel := planRelease(t, docs...)

	store := &countingStore{}
	e, writes := writeRecorder(t, store, objs...)
	deleteCount := func() int {
		n := 0
		for _, w := range *writes {
			if w.GetVerb() == "delete" {
				n++
			}
		}
		return n
	}
	store.deletes = deleteCount
	res, err := e.Sync(context.Background(), rel, SyncOptions{Mode: graph.ModeUpdate})
	if err != nil {
		t.Fatal(err)
	}
	if deletes := deleteCount(); deletes != n {
		t.Fatalf("%d DELETEs, want %d", deletes, n)
	}
	// The claim is stored before the first DELETE, the outcomes after the
	// last: two saves, whatever the number of deletes.
	if want := []int{0, n}; !reflect.DeepEqual(store.deletesAtSave, want) {
		t.Errorf("saves happened after %v DELETEs, want %v", store.deletesAtSave, want)
	}
	stored, _ := store.Load(context.Background())
	for _, r := range stored {
		if r.State != DeleteCompleted {
			t.Errorf("%s stored as %s, want Completed", r.ID, r.State)
		}
	}
	if len(stored) != n || res.Deletes.Blocking() {
		t.Errorf("%d records stored, deletes blocking %v; want %d, false", len(stored), res.Deletes.Blocking(), n)
	}
}
