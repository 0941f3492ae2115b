package cleanup

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"github.com/payload-applier/payload-applier/pkg/apply/recordstore"
	"github.com/payload-applier/payload-applier/pkg/apply/recordstore/recordstoretest"
)

func stateConfigMap(data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cleanup"}, Data: data}
}

// TestStateAnOlderReleaseWroteIsKept: the records an older release kept
// under cleanups.json are read, and the next save moves them to the
// delete ledger's keys.
func TestStateAnOlderReleaseWroteIsKept(t *testing.T) {
	ctx := context.Background()
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Local())
	old := []Record{{Component: "widgets", Release: "2.0.0", State: Running, StartedAt: &t0, ProgressAt: &t0, Remaining: map[string]int{"Widget": 3}}}
	legacy, err := json.Marshal(old)
	if err != nil {
		t.Fatal(err)
	}
	kube := kubefake.NewClientset(stateConfigMap(map[string]string{"cleanups.json": string(legacy)}))
	state := recordstore.NewLedger(NewConfigMapStore(kube, "ns", "cleanup"), RecordFormat)
	if err := state.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if got, ok := state.Get("widgets"); !ok || got.State != Running || got.Remaining["Widget"] != 3 || !got.StartedAt.Equal(&t0) {
		t.Fatalf("read %+v, want the older release's record %+v", got, old[0])
	}
	next := progressed(&old[0], "widgets", "2.0.0", Count{}, t0.Add(time.Minute))
	state.Set(next)
	if err := state.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	cm, err := kube.CoreV1().ConfigMaps("ns").Get(ctx, "cleanup", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := cm.Data["cleanups.json"]; ok || !strings.Contains(cm.Data["records.json"], `"state":"Completed"`) {
		t.Errorf("the save must write records.json alone: %v", cm.Data)
	}
}

// TestCleanupStateSavesMergeWithAnotherWriter: an apply and an operator
// each track a cleanup; the second save conflicts, reads again and keeps
// both, and its own record of the component both track.
func TestCleanupStateSavesMergeWithAnotherWriter(t *testing.T) {
	ctx := context.Background()
	kube := kubefake.NewClientset()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	apply := recordstore.NewLedger(NewConfigMapStore(kube, "ns", "cleanup"), RecordFormat)
	if err := apply.PutAll(ctx, []Record{waiting(nil, "widgets", "2.0.0", "operator not Available", now)}); err != nil {
		t.Fatal(err)
	}
	operator := recordstore.NewLedger(NewConfigMapStore(kube, "ns", "cleanup"), RecordFormat)
	if err := operator.Load(ctx); err != nil {
		t.Fatal(err)
	}
	operator.Set(Record{Component: "gadgets", Release: "2.0.0", State: Skipped, Skips: []string{"rule 4"}})
	operator.Set(Record{Component: "widgets", Release: "2.0.0", State: Aborted})
	if err := operator.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	apply.Set(progressed(nil, "widgets", "2.0.0", count(2, "Widget"), now))
	recordstoretest.ConflictNextUpdates(kube, 1)
	if err := apply.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	reread := recordstore.NewLedger(NewConfigMapStore(kube, "ns", "cleanup"), RecordFormat)
	if err := reread.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if gadgets, _ := reread.Get("gadgets"); gadgets.State != Skipped {
		t.Errorf("the other writer's record of gadgets must be kept: %+v", gadgets)
	}
	if widgets, _ := reread.Get("widgets"); widgets.State != Running || widgets.Total() != 2 {
		t.Errorf("for widgets, which both track, the last writer's record wins: %+v", widgets)
	}
	if _, ok := apply.Get("gadgets"); !ok {
		t.Error("the writer that merged must learn the other's record")
	}
}

func TestUnreadableCleanupStateIsAnUnreadableError(t *testing.T) {
	tooMany, err := json.Marshal(make([]Record, RecordFormat.MaxRecords+1))
	if err != nil {
		t.Fatal(err)
	}
	for data, want := range map[string]string{
		`{"component": "widgets"}`: "not a list of records",
		string(tooMany):            "more than 1000 records",
	} {
		kube := kubefake.NewClientset(stateConfigMap(map[string]string{"records.json": data}))
		_, err := NewConfigMapStore(kube, "ns", "cleanup").Load(context.Background())
		var unreadable *recordstore.UnreadableError
		if !errors.As(err, &unreadable) || !strings.Contains(err.Error(), "operand cleanup state in configmap ns/cleanup, key records.json: ") || !strings.Contains(err.Error(), want) {
			t.Errorf("got %v, want an UnreadableError that says %q", err, want)
		}
	}
}
