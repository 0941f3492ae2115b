package apply

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	"github.com/payload-applier/payload-applier/pkg/apply/deletion"
	"github.com/payload-applier/payload-applier/pkg/graph"
)

func TestDeleteObjectReadsTheAnswer(t *testing.T) {
	const terminating = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"ns","uid":"u1","deletionTimestamp":"2026-01-01T00:00:00Z","finalizers":["example.com/hold"]}}`
	tests := map[string]struct {
		status   int
		body     string
		want     deleteAnswer
		wantErr  func(error) bool
		wantHeld bool
	}{
		"a Status: gone at once": {status: 200, want: answerGone,
			body: `{"kind":"Status","apiVersion":"v1","status":"Success","details":{"name":"x","kind":"configmaps","uid":"u1"}}`},
		"the removed object, as custom resources answer: gone at once": {status: 200, want: answerGone,
			body: `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"x","uid":"u1"}}`},
		"held by a finalizer":          {status: 200, body: terminating, want: answerTerminating, wantHeld: true},
		"accepted, held by finalizers": {status: 202, body: terminating, want: answerTerminating, wantHeld: true},
		"not found": {status: 404, want: answerUnknown, wantErr: apierrors.IsNotFound,
			body: `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`},
		"replaced: the UID precondition fails": {status: 409, want: answerUnknown, wantErr: apierrors.IsConflict,
			body: `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Conflict","code":409}`},
		"an answer that is not an object: look again": {status: 200, body: `not json`, want: answerUnknown},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var gotPath string
			var gotOpts metav1.DeleteOptions
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodDelete {
					t.Errorf("method %s, want DELETE", r.Method)
				}
				gotPath = r.URL.Path
				b, _ := io.ReadAll(r.Body)
				if err := json.Unmarshal(b, &gotOpts); err != nil {
					t.Errorf("body %q: %v", b, err)
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, tc.body)
			}))
			defer srv.Close()
			kube, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			p := &pass{e: &Engine{rest: kube.CoreV1().RESTClient()}}
			rc := resourceClient{gvr: schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}, namespace: "ns"}
			uid := types.UID("u1")
			answer, obj, err := p.deleteObject(context.Background(), rc, "x", metav1.DeleteOptions{
				PropagationPolicy: ptr.To(metav1.DeletePropagationBackground),
				Preconditions:     &metav1.Preconditions{UID: &uid},
			})
			if tc.wantErr != nil {
				if !tc.wantErr(err) {
					t.Errorf("err = %v, want %s", err, name)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if answer != tc.want {
				t.Errorf("answer %d, want %d", answer, tc.want)
			}
			if tc.wantHeld != (obj != nil && len(obj.GetFinalizers()) == 1) {
				t.Errorf("object returned = %v, want it only while held", obj)
			}
			if gotPath != "/apis/example.com/v1/namespaces/ns/widgets/x" {
				t.Errorf("path %s", gotPath)
			}
			if gotOpts.Preconditions == nil || gotOpts.Preconditions.UID == nil || *gotOpts.Preconditions.UID != uid {
				t.Errorf("the DELETE carried no UID precondition: %+v", gotOpts)
			}
		})
	}
}

func TestResourcePath(t *testing.T) {
	tests := map[string]struct {
		rc   resourceClient
		want string
	}{
		"core, namespaced": {resourceClient{gvr: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, namespace: "ns"}, "/api/v1/namespaces/ns/configmaps/x"},
		"core, cluster":    {resourceClient{gvr: schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}}, "/api/v1/namespaces/x"},
		"group, cluster":   {resourceClient{gvr: schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}}, "/apis/rbac.authorization.k8s.io/v1/clusterroles/x"},
	}
	for name, tc := range tests {
		if got := tc.rc.path("x"); got != tc.want {
			t.Errorf("%s: %s, want %s", name, got, tc.want)
		}
	}
}

// A pass that saved no outcome before a crash leaves a Pending record for a
// DELETE that went out. If the next release drops the delete manifest, the
// object still terminating must read as a delete in progress, not as one
// abandoned before it was issued.
func TestPendingRecordOfATerminatingObjectIsInProgress(t *testing.T) {
	ctx := context.Background()
	terminating := liveCM("old", "v", "example.com/hold")
	ts := metav1.Now()
	terminating.SetDeletionTimestamp(&ts)
	tests := map[string]struct {
		live *unstructured.Unstructured
		want deletion.State
	}{
		"terminating: the lost DELETE went out": {live: terminating, want: deletion.InProgress},
		"present: never issued":                 {live: liveCM("old", "v"), want: deletion.Abandoned},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			store := &deletion.MemoryStore{}
			id := planRelease(t, planDoc{"0000_50_a_01_old.yaml", cmYAML("old", "v", deleteAnn)}).Manifests[0].ID()
			if err := store.Save(ctx, []deletion.Record{{ID: id, Release: "1.0.0", State: deletion.Pending}}); err != nil {
				t.Fatal(err)
			}
			e, _ := writeRecorder(t, store, tc.live)
			next := planRelease(t, planDoc{"0000_50_a_01_other.yaml", cmYAML("other", "v")})
			if _, err := e.Sync(ctx, next, SyncOptions{Mode: graph.ModeUpdate}); err != nil {
				t.Fatal(err)
			}
			rec, _ := e.ledger.Get(id)
			if rec.State != tc.want {
				t.Errorf("record is %s, want %s: %+v", rec.State, tc.want, rec)
			}
		})
	}
}

// holdFinalized makes the fake cluster keep an object with finalizers on
// DELETE, marked terminating, as an apiserver does.
func holdFinalized(dyn *dynamicfake.FakeDynamicClient) {
	dyn.PrependReactor("delete", "configmaps", func(a clienttesting.Action) (bool, runtime.Object, error) {
		da := a.(clienttesting.DeleteAction)
		obj, err := dyn.Tracker().Get(configMapsGVR, da.GetNamespace(), da.GetName())
		if err != nil {
			return false, nil, nil
		}
		u := obj.(*unstructured.Unstructured)
		if len(u.GetFinalizers()) == 0 {
			return false, nil, nil
		}
		ts := metav1.Now()
		u.SetDeletionTimestamp(&ts)
		return true, u, dyn.Tracker().Update(configMapsGVR, u, da.GetNamespace())
	})
}

func TestAClaimedObjectReCreatedUnderItsNameIsNeverDeleted(t *testing.T) {
	ctx := context.Background()
	rel := planRelease(t,
		planDoc{"0000_50_c_01_a.yaml", cmYAML("a", "v", deleteAnn)},
		planDoc{"0000_50_c_02_b.yaml", cmYAML("b", "v", deleteAnn)})
	rel.Version = "2"
	e, writes := writeRecorder(t, &deletion.MemoryStore{}, liveCM("a", "v"), liveCM("b", "v", "example.com/hold"))
	dyn := e.dynamic.(*dynamicfake.FakeDynamicClient)
	holdFinalized(dyn)
	// Strict order, so that a waits behind b.
	opts := SyncOptions{Mode: graph.ModeUpdate, DeleteSettle: time.Millisecond, StrictOrder: true}
	if _, err := e.Sync(ctx, rel, opts); err != nil {
		t.Fatal(err)
	}
	claim, _ := e.ledger.Get(rel.Manifests[0].ID())
	if claim.State != deletion.Pending || claim.UID != "uid-a" {
		t.Fatalf("a waits behind b with the UID the update saw: %+v", claim)
	}

	// A user re-creates a while b's finalizer holds the chain, then b goes.
	if err := dyn.Tracker().Delete(configMapsGVR, "ns", "a"); err != nil {
		t.Fatal(err)
	}
	recreated := liveCM("a", "mine")
	recreated.SetUID("uid-a2")
	if err := dyn.Tracker().Add(recreated); err != nil {
		t.Fatal(err)
	}
	if err := dyn.Tracker().Delete(configMapsGVR, "ns", "b"); err != nil {
		t.Fatal(err)
	}
	*writes = nil
	for _, mode := range []graph.Mode{graph.ModeReconcile, graph.ModeUpdate} {
		opts.Mode = mode
		res, err := e.Sync(ctx, rel, opts)
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Objects[0].Action; got != ActionReappeared {
			t.Errorf("%s pass: a was %s, want reappeared", mode, got)
		}
	}
	next := planRelease(t, planDoc{"0000_50_c_01_a.yaml", cmYAML("a", "v", deleteAnn)})
	next.Version = "3"
	opts.Mode = graph.ModeUpdate
	if _, err := e.Sync(ctx, next, opts); err != nil {
		t.Fatal(err)
	}
	for _, w := range *writes {
		if w.GetVerb() == "delete" {
			t.Errorf("the re-created object was deleted: %v", w)
		}
	}
	if _, err := dyn.Tracker().Get(configMapsGVR, "ns", "a"); err != nil {
		t.Errorf("the re-created object must stay: %v", err)
	}
}

func TestARefusedDeleteBlocksNothingElseAndIsReportedOnce(t *testing.T) {
	ctx := context.Background()
	rel := planRelease(t,
		planDoc{"0000_50_c_01_old.yaml", cmYAML("old", "v", deleteAnn)},
		planDoc{"0000_50_c_02_ns.yaml", "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: kube-public\n  annotations:\n    " + deleteAnn + "\n"})
	rel.Version = "2"
	rm := meta.NewDefaultRESTMapper([]schema.GroupVersion{{Version: "v1"}})
	rm.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	rm.Add(schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, meta.RESTScopeRoot)
	ns := &unstructured.Unstructured{}
	ns.SetAPIVersion("v1")
	ns.SetKind("Namespace")
	ns.SetName("kube-public")
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		configMapsGVR: "ConfigMapList", {Version: "v1", Resource: "namespaces"}: "NamespaceList"}, liveCM("old", "v"), ns)
	recorder := record.NewFakeRecorder(20)
	e, err := New(Config{Dynamic: dyn, Mapper: resettable{rm}, Ledger: &deletion.MemoryStore{},
		Recorder: recorder, EventObject: &corev1.ObjectReference{Kind: "ClusterVersion", Name: "version"}})
	if err != nil {
		t.Fatal(err)
	}
	for pass := range 2 {
		res, err := e.Sync(ctx, rel, SyncOptions{Mode: graph.ModeUpdate})
		if err != nil {
			t.Fatal(err)
		}
		refused, old := res.Objects[1], res.Objects[0]
		if refused.Action != ActionRefused || !strings.Contains(refused.Message, "protected namespace") || refused.Err == nil {
			t.Errorf("pass %d: kube-public was %s (%s), want refused", pass, refused.Action, refused.Message)
		}
		if pass == 0 && old.Action != ActionDeleted {
			t.Errorf("the delete after the refused one in its chain was %s (%s), want deleted", old.Action, old.Message)
		}
		d := res.Deletes
		if len(d.Refused) != 1 || len(d.InProgress) != 0 || len(d.Failed) != 1 || !d.Blocking() {
			t.Errorf("pass %d: a refusal is refused and failed, never in progress, and blocks minor updates: %+v", pass, d)
		}
		if !res.Complete() {
			t.Errorf("pass %d: a refused delete must not hold the release back: %v", pass, res.Errors)
		}
	}
	if _, err := dyn.Tracker().Get(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, "", "kube-public"); err != nil {
		t.Errorf("kube-public must stay: %v", err)
	}
	refusals := 0
	for len(recorder.Events) > 0 {
		if ev := <-recorder.Events; strings.Contains(ev, string(ReasonDeletionRefused)) {
			refusals++
			if !strings.Contains(ev, "0000_50_c_02_ns.yaml") {
				t.Errorf("the Event must name the manifest: %s", ev)
			}
		}
	}
	if refusals != 1 {
		t.Errorf("%d refusal Events over two passes, want 1", refusals)
	}
}
