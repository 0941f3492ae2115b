package apply

import (
	"testing"
	"time"

	"github.com/openshift/library-go/pkg/manifest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/payload-applier/payload-applier/pkg/graph"
	"github.com/payload-applier/payload-applier/pkg/payload"
)

func deleteManifest(kind, ns, name string) *payload.Manifest {
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion("v1")
	obj.SetKind(kind)
	obj.SetNamespace(ns)
	obj.SetName(name)
	obj.SetAnnotations(map[string]string{payload.DeleteAnnotation: "true"})
	return &payload.Manifest{
		Manifest: manifest.Manifest{Obj: obj, GVK: schema.GroupVersionKind{Version: "v1", Kind: kind}, OriginalFilename: "0000_50_a_01_x.yaml"},
		File:     "0000_50_a_01_x.yaml", Line: 1, RunLevel: 50, Component: "a",
	}
}

func liveObject(uid string, deleting bool, finalizers ...string) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion("v1")
	obj.SetKind("ConfigMap")
	obj.SetName("x")
	obj.SetUID(types.UID(uid))
	if deleting {
		ts := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		obj.SetDeletionTimestamp(&ts)
	}
	obj.SetFinalizers(finalizers)
	return obj
}

func TestNextDelete(t *testing.T) {
	now := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	m := deleteManifest("ConfigMap", "ns", "x")
	rec := func(state DeleteState, release, uid string) *DeleteRecord {
		return &DeleteRecord{ID: m.ID(), File: m.Position(), Release: release, State: state, UID: types.UID(uid)}
	}
	tests := []struct {
		name      string
		mode      graph.Mode
		record    *DeleteRecord
		live      *unstructured.Unstructured
		want      deleteOutcome
		wantState DeleteState
	}{
		{"an update issues the delete of a present object", graph.ModeUpdate, nil, liveObject("u1", false), outcomeIssue, DeletePending},
		{"an update issues a delete it claimed earlier", graph.ModeUpdate, rec(DeletePending, "2", ""), liveObject("u1", false), outcomeIssue, DeletePending},
		{"reconcile starts no new delete", graph.ModeReconcile, nil, liveObject("u1", false), outcomeNotDeleting, ""},
		{"install starts no delete", graph.ModeInstall, nil, liveObject("u1", false), outcomeNotDeleting, ""},
		{"reconcile issues a delete an update claimed but pacing held back", graph.ModeReconcile, rec(DeletePending, "2", ""), liveObject("u1", false), outcomeIssue, DeletePending},
		{"a terminating object is never deleted again", graph.ModeUpdate, nil, liveObject("u1", true, "f"), outcomeOngoing, DeleteInProgress},
		{"an in-progress delete stays ongoing while terminating", graph.ModeReconcile, rec(DeleteInProgress, "2", "u1"), liveObject("u1", true, "f"), outcomeOngoing, DeleteInProgress},
		{"not found at first look is absent", graph.ModeUpdate, nil, nil, outcomeAbsent, DeleteAbsent},
		{"not found after our delete is completed", graph.ModeReconcile, rec(DeleteInProgress, "2", "u1"), nil, outcomeCompleted, DeleteCompleted},
		{"a completed delete stays done", graph.ModeReconcile, rec(DeleteCompleted, "2", "u1"), nil, outcomeDone, DeleteCompleted},
		{"an object back after completion is reported in reconcile", graph.ModeReconcile, rec(DeleteCompleted, "2", "u1"), liveObject("u2", false), outcomeReappeared, DeleteCompleted},
		{"an object back within the same release's update is reported", graph.ModeUpdate, rec(DeleteCompleted, "2", "u1"), liveObject("u2", false), outcomeReappeared, DeleteCompleted},
		{"a new update that still deletes the object asks anew", graph.ModeUpdate, rec(DeleteCompleted, "1", "u1"), liveObject("u2", false), outcomeIssue, DeletePending},
		{"an abandoned delete asked for again is issued by an update", graph.ModeUpdate, rec(DeleteAbandoned, "1", ""), liveObject("u1", false), outcomeIssue, DeletePending},
		{"an abandoned delete is not issued by a reconcile", graph.ModeReconcile, rec(DeleteAbandoned, "1", ""), liveObject("u1", false), outcomeNotDeleting, DeleteAbandoned},
		{"an abandoned delete whose object is gone is absent", graph.ModeReconcile, rec(DeleteAbandoned, "1", ""), nil, outcomeAbsent, DeleteAbsent},
		{"a replaced object while in progress means the delete completed", graph.ModeReconcile, rec(DeleteInProgress, "2", "u1"), liveObject("u2", false), outcomeReappeared, DeleteCompleted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, outcome := nextDelete(deleteInput{Manifest: m, Release: "2", Mode: tt.mode, Record: tt.record, Live: tt.live, Now: now})
			if outcome != tt.want {
				t.Fatalf("outcome = %s, want %s", outcome, tt.want)
			}
			if got.State != tt.wantState {
				t.Errorf("state = %q, want %q", got.State, tt.wantState)
			}
			if outcome == outcomeIssue && (got.RequestedAt == nil || got.UID != tt.live.GetUID()) {
				t.Errorf("an issued delete must record when and which UID: %+v", got)
			}
			if outcome == outcomeOngoing && (got.DeletionTimestamp == nil || len(got.Finalizers) == 0) {
				t.Errorf("an ongoing delete must record its deletionTimestamp and finalizers: %+v", got)
			}
			if outcome == outcomeReappeared && got.ReappearedAt == nil {
				t.Errorf("a reappeared object must be recorded: %+v", got)
			}
		})
	}
}

func TestNextDeleteKeepsFirstReappearance(t *testing.T) {
	m := deleteManifest("ConfigMap", "ns", "x")
	first := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	prev := &DeleteRecord{ID: m.ID(), Release: "2", State: DeleteCompleted, UID: "u2", ReappearedAt: &first}
	got, _ := nextDelete(deleteInput{Manifest: m, Release: "2", Mode: graph.ModeReconcile, Record: prev, Live: liveObject("u2", false), Now: time.Now()})
	if !got.ReappearedAt.Equal(&first) {
		t.Errorf("the same reappeared object must keep its first sighting, got %v", got.ReappearedAt)
	}
}

func TestSummarizeDeletes(t *testing.T) {
	now := time.Date(2026, 2, 1, 1, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *metav1.Time { t := metav1.NewTime(now.Add(-d)); return &t }
	recs := []DeleteRecord{
		{ID: payload.ObjectID{Kind: "A", Name: "fresh"}, State: DeleteInProgress, RequestedAt: at(time.Minute)},
		{ID: payload.ObjectID{Kind: "A", Name: "old"}, State: DeleteInProgress, RequestedAt: at(20 * time.Minute)},
		{ID: payload.ObjectID{Kind: "A", Name: "failed"}, State: DeletePending, LastError: "forbidden"},
		{ID: payload.ObjectID{Kind: "A", Name: "done"}, State: DeleteCompleted},
		{ID: payload.ObjectID{Kind: "A", Name: "back"}, State: DeleteCompleted, ReappearedAt: at(0)},
	}
	s := summarizeDeletes(recs, now, 10*time.Minute)
	if len(s.InProgress) != 3 || len(s.Stuck) != 1 || s.Stuck[0].ID.Name != "old" || len(s.Failed) != 1 || len(s.Reappeared) != 1 {
		t.Fatalf("unexpected summary: %+v", s)
	}
	if s.OldestPending != 20*time.Minute {
		t.Errorf("oldest pending = %s, want 20m", s.OldestPending)
	}
	if !s.Blocking() {
		t.Error("pending deletes must block minor updates")
	}
	if (DeleteStatus{Reappeared: s.Reappeared}).Blocking() {
		t.Error("a reappeared object alone must not block")
	}
}
