package apply

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openshift/library-go/pkg/manifest"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"

	"github.com/payload-applier/payload-applier/pkg/apply/deletion"
	"github.com/payload-applier/payload-applier/pkg/graph"
	"github.com/payload-applier/payload-applier/pkg/payload"
)

// planDoc is one manifest of a test release.
type planDoc struct {
	file string
	yaml string
}

// planRelease builds a release from docs in order; file names carry the
// run level and component as 0000_<level>_<component>_<rest>.
func planRelease(t *testing.T, docs ...planDoc) *payload.Release {
	t.Helper()
	rel := &payload.Release{Version: "1.0.0"}
	for _, d := range docs {
		ms, err := manifest.ParseManifests(strings.NewReader(d.yaml))
		if err != nil || len(ms) != 1 {
			t.Fatalf("parse %s: %v (%d documents)", d.file, err, len(ms))
		}
		m := &payload.Manifest{Manifest: ms[0], File: d.file, Line: 1, Index: len(rel.Manifests)}
		m.OriginalFilename = d.file
		m.RunLevel, m.Component = payload.ParseFileName(d.file)
		rel.Manifests = append(rel.Manifests, m)
	}
	return rel
}

func cmYAML(name, value string, annotations ...string) string {
	ann := ""
	for _, a := range annotations {
		ann += "\n    " + a
	}
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: ns\n  annotations:\n    note: kept%s\ndata:\n  key: %s\n", name, ann, value)
}

const deleteAnn = `release.openshift.io/delete: "true"`

func actionsOf(p *Plan) map[string]PlannedAction {
	out := map[string]PlannedAction{}
	for _, a := range p.Actions {
		out[a.Manifest.Obj.GetName()] = a
	}
	return out
}

func TestPlanOffline(t *testing.T) {
	rel := planRelease(t,
		planDoc{"0000_50_a_01_cm.yaml", cmYAML("cm", "v")},
		planDoc{"0000_50_a_02_once.yaml", cmYAML("once", "v", `release.openshift.io/create-only: "true"`)},
		planDoc{"0000_50_a_03_old1.yaml", cmYAML("old1", "v", deleteAnn)},
		planDoc{"0000_50_a_04_old2.yaml", cmYAML("old2", "v", deleteAnn)},
		planDoc{"0000_50_a_05_old3.yaml", cmYAML("old3", "v", deleteAnn)},
		planDoc{"0000_50_b_01_after.yaml", cmYAML("after", "v", deleteAnn)},
		planDoc{"0000_50_b_02_ns.yaml", "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: kube-system\n  annotations:\n    " + deleteAnn + "\n"},
		planDoc{"0000_50_c_01_x.yaml", cmYAML("x", "v", deleteAnn)},
		planDoc{"0000_50_c_02_y.yaml", cmYAML("ya", "v", deleteAnn)},
		planDoc{"0000_50_c_03_dep.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: dep\n  namespace: ns\n  annotations:\n    " + deleteAnn + "\n"},
		planDoc{"0000_50_c_04_z.yaml", cmYAML("z", "v", deleteAnn)},
		planDoc{"0000_50_c_05_z2.yaml", cmYAML("z2", "v", deleteAnn)},
	)
	skipped := &payload.Manifest{File: "0000_50_a_09_hcp.yaml", Line: 3, Index: -1}
	rel.Skipped = []payload.Skipped{{Manifest: skipped, Reason: "include.release.openshift.io/self-managed-high-availability unset", Filter: payload.FilterProfile}}

	tests := map[string]struct {
		mode   graph.Mode
		strict bool
		want   map[string]PlannedAction
	}{
		"update mode deletes, paced by waves: a barrier alone, passive deletes together": {
			mode: graph.ModeUpdate,
			want: map[string]PlannedAction{
				"old3": {Action: ActionDeleteRequested},
				"old2": {Action: ActionDeleteRequested},
				"old1": {Action: ActionDeleteRequested},
				"z2":   {Action: ActionDeleteRequested},
				"z":    {Action: ActionDeleteRequested},
				"dep":  {Action: ActionDeleteRequested, Reason: "issued once ConfigMap/ns/z2 and ConfigMap/ns/z are gone"},
				"ya":   {Action: ActionDeleteRequested, Reason: "issued once Deployment.apps/ns/dep is gone"},
				"x":    {Action: ActionDeleteRequested, Reason: "issued once Deployment.apps/ns/dep is gone"},
			},
		},
		"strict order: update mode deletes, paced within a chain, and never the applier's own objects": {
			mode:   graph.ModeUpdate,
			strict: true,
			want: map[string]PlannedAction{
				"cm":          {Action: ActionApplied},
				"once":        {Action: ActionApplied, Reason: "create-only: created when missing, never updated"},
				"old3":        {Action: ActionDeleteRequested},
				"old2":        {Action: ActionDeleteRequested, Reason: "issued once ConfigMap/ns/old3 is gone"},
				"old1":        {Action: ActionDeleteRequested, Reason: "issued once ConfigMap/ns/old2 is gone"},
				"kube-system": {Action: ActionRefused, Reason: "refusing to delete Namespace/kube-system: it is a protected namespace"},
				"after":       {Action: ActionDeleteRequested}, // a refusal holds nothing back
			},
		},
		"install mode issues no delete": {
			mode: graph.ModeInstall,
			want: map[string]PlannedAction{
				"cm":          {Action: ActionApplied},
				"once":        {Action: ActionApplied, Reason: "create-only: created when missing, never updated"},
				"old2":        {Action: ActionNotDeleted, Reason: "deletes are issued only in update mode"},
				"old1":        {Action: ActionNotDeleted, Reason: "deletes are issued only in update mode"},
				"kube-system": {Action: ActionNotDeleted, Reason: "deletes are issued only in update mode"},
				"after":       {Action: ActionNotDeleted, Reason: "deletes are issued only in update mode"},
			},
		},
		"reconcile mode says the ledger was not read": {
			mode: graph.ModeReconcile,
			want: map[string]PlannedAction{
				"old1": {Action: ActionNotDeleted, Reason: "deletes are issued only in update mode; a reconcile pass only finishes the deletes an update claimed in the ledger, which plan reads only from a cluster"},
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p := PlanOffline(rel, PlanOptions{Mode: tc.mode, StrictOrder: tc.strict})
			if p.Live || p.Mode != tc.mode || p.Release != "1.0.0" {
				t.Errorf("plan header = live %v, mode %s, release %s", p.Live, p.Mode, p.Release)
			}
			got := actionsOf(p)
			for name, want := range tc.want {
				if g := got[name]; g.Action != want.Action || g.Reason != want.Reason {
					t.Errorf("%s: got %s %q, want %s %q", name, g.Action, g.Reason, want.Action, want.Reason)
				}
			}
			if len(p.Skipped) != 1 || p.Skipped[0].Action != ActionSkipped || p.Skipped[0].Manifest != skipped ||
				p.Skipped[0].Reason != "profile filter: include.release.openshift.io/self-managed-high-availability unset" {
				t.Errorf("skipped = %+v", p.Skipped)
			}
			if n := p.Apply.TaskCount() + p.Deletes.TaskCount(); n != len(rel.Manifests) {
				t.Errorf("graphs hold %d tasks, want %d", n, len(rel.Manifests))
			}
		})
	}
}

func TestChangedFields(t *testing.T) {
	live := map[string]interface{}{
		"metadata": map[string]interface{}{"name": "x", "resourceVersion": "1", "generation": int64(1),
			"labels": map[string]interface{}{"a": "1"}, "managedFields": []interface{}{"old"}},
		"spec":   map[string]interface{}{"replicas": int64(1), "ports": []interface{}{int64(80)}, "same": "s"},
		"status": map[string]interface{}{"ready": true},
	}
	next := map[string]interface{}{
		"metadata": map[string]interface{}{"name": "x", "resourceVersion": "2", "generation": int64(2),
			"labels":        map[string]interface{}{"a": "1", "app.kubernetes.io/name": "n"},
			"managedFields": []interface{}{"new"}},
		"spec":   map[string]interface{}{"replicas": int64(3), "ports": []interface{}{int64(80), int64(443)}, "same": "s"},
		"status": map[string]interface{}{"ready": false},
	}
	want := []string{`metadata.labels["app.kubernetes.io/name"]`, "spec.ports", "spec.replicas"}
	if got := changedFields(live, next); !slices.Equal(got, want) {
		t.Errorf("changedFields = %q, want %q", got, want)
	}
	if got := changedFields(live, live); len(got) != 0 {
		t.Errorf("an object differs from itself at %q", got)
	}
}

func TestDriftedFieldsUsesTheEngineComparison(t *testing.T) {
	live := map[string]interface{}{"spec": map[string]interface{}{"cpu": "1000m", "replicas": int64(2), "extra": "server-set"}}
	want := map[string]interface{}{"spec": map[string]interface{}{"cpu": "1", "replicas": float64(3), "empty": ""}}
	if got := driftedFields(live, want); !slices.Equal(got, []string{"spec.replicas"}) {
		t.Errorf("driftedFields = %q, want only spec.replicas: 1000m equals 1, an empty value is unset", got)
	}
}

func TestSummarizeFields(t *testing.T) {
	var paths []string
	for i := range 10 {
		paths = append(paths, fmt.Sprintf("data.k%d", i))
	}
	if got := summarizeFields(paths[:2]); got != "data.k0, data.k1" {
		t.Errorf("two fields: %q", got)
	}
	if got := summarizeFields(paths); !strings.HasSuffix(got, "data.k7 and 2 more") {
		t.Errorf("ten fields: %q", got)
	}
}

// resettable lets a static mapper stand in for a discovery mapper.
type resettable struct{ meta.RESTMapper }

func (resettable) Reset() {}

var configMapsGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

func liveCM(name, value string, finalizers ...string) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion("v1")
	obj.SetKind("ConfigMap")
	obj.SetNamespace("ns")
	obj.SetName(name)
	obj.SetUID(types.UID("uid-" + name))
	obj.SetResourceVersion("7")
	obj.SetAnnotations(map[string]string{"note": "kept"})
	obj.SetFinalizers(finalizers)
	_ = unstructured.SetNestedField(obj.Object, value, "data", "key")
	return obj
}

// planEngine returns an engine on a fake cluster that serves ConfigMaps and
// CRDs (no Widgets) and fails the test on any request but a read or a
// dry-run apply. The dry run sets data.key to "new" and bumps the
// resourceVersion, as a server would. It counts the dry runs.
func planEngine(t *testing.T, ledger deletion.Store, objs ...runtime.Object) (*Engine, *int) {
	t.Helper()
	rm, dyn := fakeConfigMaps(objs...)
	rm.Add(payload.CRDGVK, meta.RESTScopeRoot)
	dyn.PrependReactor("*", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetVerb() == "get" || a.GetVerb() == "list" {
			return false, nil, nil
		}
		t.Errorf("plan sent %s %s: only reads and dry runs are allowed", a.GetVerb(), a.GetResource().Resource)
		return true, nil, fmt.Errorf("unexpected %s", a.GetVerb())
	})
	dryRuns := 0
	dyn.PrependReactor("patch", "configmaps", func(a clienttesting.Action) (bool, runtime.Object, error) {
		// The fake drops PatchOptions, so the dry-run flag itself is
		// checked by the e2e test, in the apiserver's audit log.
		pa := a.(clienttesting.PatchActionImpl)
		if pa.PatchType != types.ApplyPatchType {
			t.Errorf("patch %s of type %s: want a server-side apply", pa.Name, pa.PatchType)
			return true, nil, fmt.Errorf("not an apply")
		}
		dryRuns++
		live, err := dyn.Tracker().Get(configMapsGVR, "ns", pa.Name)
		if err != nil {
			return true, nil, err
		}
		next := live.(*unstructured.Unstructured).DeepCopy()
		next.SetResourceVersion("8")
		_ = unstructured.SetNestedField(next.Object, "new", "data", "key")
		return true, next, nil
	})
	e, err := New(Config{Dynamic: dyn, Mapper: resettable{rm}, Ledger: ledger})
	if err != nil {
		t.Fatal(err)
	}
	return e, &dryRuns
}

func TestEnginePlanReadsAndDryRunsOnlyWhatDrifted(t *testing.T) {
	rel := planRelease(t,
		planDoc{"0000_10_crd_01_widgets.yaml", "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\nspec:\n  group: example.com\n  names:\n    kind: Widget\n    plural: widgets\n  scope: Cluster\n"},
		planDoc{"0000_50_a_01_same.yaml", cmYAML("same", "v")},
		planDoc{"0000_50_a_02_drift.yaml", cmYAML("drift", "new")},
		planDoc{"0000_50_a_03_missing.yaml", cmYAML("missing", "v")},
		planDoc{"0000_50_a_04_once.yaml", cmYAML("once", "other", `release.openshift.io/create-only: "true"`)},
		planDoc{"0000_50_a_05_old.yaml", cmYAML("old", "v", deleteAnn)},
		planDoc{"0000_50_a_06_gone.yaml", cmYAML("gone", "v", deleteAnn)},
		planDoc{"0000_50_a_07_dying.yaml", cmYAML("dying", "v", deleteAnn)},
		planDoc{"0000_60_w_01_widget.yaml", "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n"},
	)
	dying := liveCM("dying", "v", "example.com/hold")
	ts := metav1.NewTime(metav1.Now().Add(-60e9).UTC().Truncate(1e9))
	dying.SetDeletionTimestamp(&ts)
	objs := []runtime.Object{liveCM("same", "v"), liveCM("drift", "old"), liveCM("once", "v"), liveCM("old", "v", "example.com/hold"), dying}

	t.Run("update mode", func(t *testing.T) {
		ledger := &deletion.MemoryStore{}
		e, dryRuns := planEngine(t, ledger, objs...)
		p, err := e.Plan(context.Background(), rel, PlanOptions{StrictOrder: true})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]PlannedAction{
			"widgets.example.com": {Action: ActionCreated, Reason: "not found"},
			"same":                {Action: ActionUnchanged},
			"drift":               {Action: ActionConfigured, Reason: "data.key"},
			"missing":             {Action: ActionCreated, Reason: "not found"},
			"once":                {Action: ActionUnchanged, Reason: "create-only"},
			"dying":               {Action: ActionDeleting, Reason: "already terminating since " + deletion.FormatTime(&ts) + ", finalizers example.com/hold"},
			"gone":                {Action: ActionAlreadyDeleted, Reason: "not found"},
			"old":                 {Action: ActionDeleteRequested, Reason: "present, finalizers example.com/hold; issued once ConfigMap/ns/dying is gone"},
			"w":                   {Action: ActionCreated, Reason: "type served by CustomResourceDefinition widgets.example.com in this payload, not by the cluster yet"},
		}
		got := actionsOf(p)
		for name, w := range want {
			if g := got[name]; g.Action != w.Action || g.Reason != w.Reason {
				t.Errorf("%s: got %s %q, want %s %q", name, g.Action, g.Reason, w.Action, w.Reason)
			}
		}
		if !p.Live {
			t.Error("a plan against a cluster is not marked live")
		}
		if *dryRuns != 1 {
			t.Errorf("%d dry runs, want 1: only the drifted object", *dryRuns)
		}
		if ledger.Saves != 0 {
			t.Errorf("plan saved the ledger %d times", ledger.Saves)
		}
	})

	t.Run("reconcile mode deletes only what an update claimed", func(t *testing.T) {
		ledger := &deletion.MemoryStore{}
		claimed := deletion.Record{ID: rel.Manifests[5].ID(), File: "x", Release: "0.9.0", State: deletion.Pending}
		if err := ledger.Save(context.Background(), []deletion.Record{claimed}); err != nil {
			t.Fatal(err)
		}
		e, _ := planEngine(t, ledger, objs...)
		p, err := e.Plan(context.Background(), rel, PlanOptions{Mode: graph.ModeReconcile})
		if err != nil {
			t.Fatal(err)
		}
		got := actionsOf(p)["old"]
		if got.Action != ActionDeleteRequested || !strings.Contains(got.Reason, "the update to 0.9.0 asked for it (ledger)") {
			t.Errorf("claimed delete: %s %q", got.Action, got.Reason)
		}

		e, _ = planEngine(t, &deletion.MemoryStore{}, objs...)
		if p, err = e.Plan(context.Background(), rel, PlanOptions{Mode: graph.ModeReconcile}); err != nil {
			t.Fatal(err)
		}
		got = actionsOf(p)["old"]
		if got.Action != ActionNotDeleted || !strings.HasPrefix(got.Reason, "present; deletes are issued only in update mode") ||
			!strings.HasSuffix(got.Reason, "and none claimed this one") {
			t.Errorf("unclaimed delete: %s %q", got.Action, got.Reason)
		}
		if ledger.Saves != 1 {
			t.Errorf("the ledger was saved %d times; only the test's own save is allowed", ledger.Saves)
		}
	})
}

func TestDeleteActionCoversEveryOutcome(t *testing.T) {
	m := deleteManifest("ConfigMap", "ns", "x")
	done := metav1.NewTime(metav1.Now().UTC().Truncate(1e9))
	tests := map[string]struct {
		outcome deletion.Outcome
		next    deletion.Record
		want    Action
		reason  string
	}{
		"present is deleted":              {deletion.OutcomeIssue, deletion.Record{}, ActionDeleteRequested, "present, finalizers example.com/hold"},
		"absent at first look":            {deletion.OutcomeAbsent, deletion.Record{}, ActionAlreadyDeleted, "not found"},
		"gone after an earlier request":   {deletion.OutcomeCompleted, deletion.Record{}, ActionDeleted, "gone; the ledger's delete in progress completes"},
		"completed before":                {deletion.OutcomeDone, deletion.Record{CompletedAt: &done}, ActionAlreadyDeleted, "delete completed at " + deletion.FormatTime(&done)},
		"reappeared is not deleted again": {deletion.OutcomeReappeared, deletion.Record{CompletedAt: &done}, ActionReappeared, "reappeared after its delete completed at " + deletion.FormatTime(&done) + "; not deleted again"},
		"install starts no delete":        {deletion.OutcomeNotDeleting, deletion.Record{}, ActionNotDeleted, "present; deletes are issued only in update mode"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			live := liveObject("u", false, "example.com/hold")
			a := deleteAction(m, graph.ModeInstall, live, deletion.Step{Record: tc.next, Outcome: tc.outcome})
			if a.Action != tc.want || a.Reason != tc.reason {
				t.Errorf("got %s %q, want %s %q", a.Action, a.Reason, tc.want, tc.reason)
			}
		})
	}
}

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
