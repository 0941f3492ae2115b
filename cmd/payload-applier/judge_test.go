package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	configfake "github.com/openshift/client-go/config/clientset/versioned/fake"
	"github.com/openshift/library-go/pkg/manifest"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	"github.com/payload-applier/payload-applier/pkg/apply"
	"github.com/payload-applier/payload-applier/pkg/apply/deletion"
	"github.com/payload-applier/payload-applier/pkg/clusterversion"
	"github.com/payload-applier/payload-applier/pkg/graph"
	"github.com/payload-applier/payload-applier/pkg/operator"
	"github.com/payload-applier/payload-applier/pkg/payload"
	"github.com/payload-applier/payload-applier/pkg/precondition"
)

var (
	crdsGVR    = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	widgetsGVR = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
)

// staticMapper lets a fixed RESTMapper stand in for a discovery one.
type staticMapper struct{ meta.RESTMapper }

func (staticMapper) Reset() {}

// judgeCluster is a fake cluster that plan and the operator both read: a
// ClusterVersion, ClusterOperators, and a CRD widgets.example.com (v1, no
// schema) holding three Widgets, none with a spec.
type judgeCluster struct {
	kube    *kubefake.Clientset
	config  *configfake.Clientset
	dynamic *dynamicfake.FakeDynamicClient
	engine  *apply.Engine
	// widgetLists counts the LISTs of Widgets.
	widgetLists int
}

func newJudgeCluster(t *testing.T, objs ...runtime.Object) *judgeCluster {
	t.Helper()
	rm := meta.NewDefaultRESTMapper([]schema.GroupVersion{{Version: "v1"}, crdsGVR.GroupVersion(), widgetsGVR.GroupVersion()})
	rm.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	rm.Add(crdsGVR.GroupVersion().WithKind("CustomResourceDefinition"), meta.RESTScopeRoot)
	rm.Add(widgetsGVR.GroupVersion().WithKind("Widget"), meta.RESTScopeNamespace)
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "widgets.example.com", "uid": "crd-uid", "resourceVersion": "1"},
		"spec": map[string]any{"group": "example.com", "scope": "Namespaced",
			"names":    map[string]any{"kind": "Widget", "plural": "widgets"},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true}}},
	}}
	dynObjs := []runtime.Object{crd}
	for _, name := range []string{"w1", "w2", "w3"} {
		w := &unstructured.Unstructured{}
		w.SetAPIVersion("example.com/v1")
		w.SetKind("Widget")
		w.SetNamespace("a")
		w.SetName(name)
		dynObjs = append(dynObjs, w)
	}
	c := &judgeCluster{kube: kubefake.NewClientset(), config: configfake.NewSimpleClientset(objs...)}
	c.dynamic = dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		crdsGVR: "CustomResourceDefinitionList", widgetsGVR: "WidgetList", {Version: "v1", Resource: "configmaps"}: "ConfigMapList",
	}, dynObjs...)
	c.dynamic.PrependReactor("list", "widgets", func(clienttesting.Action) (bool, runtime.Object, error) {
		c.widgetLists++
		return false, nil, nil
	})
	// Plan dry-runs a drifted object's apply; answer with the object sent.
	c.dynamic.PrependReactor("patch", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		pa, ok := a.(clienttesting.PatchActionImpl)
		if !ok || pa.PatchType != types.ApplyPatchType {
			return false, nil, nil
		}
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(pa.Patch); err != nil {
			return true, nil, err
		}
		// The fake drops PatchOptions: the e2e tests check dryRun=All.
		return true, obj, nil
	})
	e, err := apply.New(apply.Config{Dynamic: c.dynamic, Mapper: staticMapper{rm}, Ledger: &deletion.MemoryStore{}})
	if err != nil {
		t.Fatal(err)
	}
	c.engine = e
	return c
}

// requiredSpecCRD is a manifest of widgets.example.com whose v1 schema
// requires spec, which no Widget of judgeCluster has.
func requiredSpecCRD(t *testing.T) *payload.Manifest {
	return widgetsCRD(t, "  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, required: [spec], properties: {spec: {type: object}}}}}\n")
}

// widgetsCRD is a manifest of widgets.example.com with the versions given
// as YAML list items, in the default profile.
func widgetsCRD(t *testing.T, versions string) *payload.Manifest {
	t.Helper()
	ms, err := manifest.ParseManifests(strings.NewReader("apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\n" +
		"  annotations: {include.release.openshift.io/self-managed-high-availability: \"true\"}\n" +
		"spec:\n  group: example.com\n  scope: Namespaced\n  names: {kind: Widget, plural: widgets}\n  versions:\n" + versions))
	if err != nil {
		t.Fatal(err)
	}
	const file = "0000_50_widgets_00_crd.yaml"
	m := &payload.Manifest{Manifest: ms[0], File: file, Line: 1}
	m.OriginalFilename = file
	m.RunLevel, m.Component = payload.ParseFileName(file)
	return m
}

// releases is a ReleaseSource of releases held in memory.
type releases map[string]*payload.Release

func (r releases) Load(version string, _ payload.LoadOptions) (*payload.Release, error) {
	if rel, ok := r[version]; ok {
		return rel, nil
	}
	return nil, fmt.Errorf("no release %s", version)
}

// judgeGraph: 1.0.0 updates to 1.0.1, 1.0.2 (deprecated) and 1.1.0.
const judgeGraph = `{"nodes": [
  {"version": "1.0.0", "payload": "r:1.0.0", "metadata": {"io.openshift.upgrades.graph.release.channels": "stable-1"}},
  {"version": "1.0.1", "payload": "r:1.0.1", "metadata": {"io.openshift.upgrades.graph.release.channels": "stable-1"}},
  {"version": "1.0.2", "payload": "r:1.0.2", "metadata": {"io.openshift.upgrades.graph.release.channels": "stable-1", "io.openshift.upgrades.graph.release.deprecated": "do not use"}},
  {"version": "1.1.0", "payload": "r:1.1.0", "metadata": {"io.openshift.upgrades.graph.release.channels": "stable-1"}}
], "edges": [[0, 1], [0, 2], [0, 3]]}`

// TestPlanAndOperatorJudgeAlike gives plan and the operator the same
// cluster and target: plan's verdict must be the one the operator then
// acts on, and what plan says must match what the operator does.
func TestPlanAndOperatorJudgeAlike(t *testing.T) {
	var queries []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		queries = append(queries, r.URL.RawQuery)
		_, _ = w.Write([]byte(judgeGraph))
	}))
	defer srv.Close()

	completed := []configv1.UpdateHistory{{State: configv1.CompletedUpdate, Version: "1.0.0"}}
	partial := func(v string) configv1.UpdateHistory {
		return configv1.UpdateHistory{State: configv1.PartialUpdate, Version: v}
	}
	notUpgradeable := configv1.ClusterOperator{ObjectMeta: metav1.ObjectMeta{Name: "network"}, Status: configv1.ClusterOperatorStatus{
		Conditions: []configv1.ClusterOperatorStatusCondition{{Type: configv1.OperatorUpgradeable, Status: configv1.ConditionFalse, Reason: "Reboot", Message: "pending"}}}}
	// What the operator computes from notUpgradeable, as its last pass wrote it.
	upgradeableFalse := configv1.ClusterOperatorStatusCondition{Type: configv1.OperatorUpgradeable, Status: configv1.ConditionFalse,
		Reason: clusterversion.ReasonOperatorsNotUpgrade, Message: "Cluster operators are not upgradeable: network (Reboot: pending)"}

	tests := map[string]struct {
		target    string
		force     bool
		manifests []*payload.Manifest
		desired   string
		history   []configv1.UpdateHistory
		operators []runtime.Object
		// stale leaves the written Upgradeable as an older pass wrote it,
		// True, whatever the operators say now.
		stale bool
		// configMaps are the admin ConfigMaps.
		configMaps []runtime.Object
		// want is the verdict; message, when set, what its message holds.
		want    clusterversion.Verdict
		message string
		plan    string
	}{
		"accepted": {
			target: "1.0.1", desired: "1.0.0", history: completed,
			want: clusterversion.Verdict{Checked: true, Current: "1.0.0", Forceable: true},
			plan: "an update from 1.0.0 to 1.0.1 would be accepted",
		},
		"a minor refused while Upgradeable=False": {
			target: "1.1.0", desired: "1.0.0", history: completed, operators: []runtime.Object{&notUpgradeable},
			want:    clusterversion.Verdict{Checked: true, Current: "1.0.0", Blocking: true, Forceable: true},
			message: "network (Reboot: pending)",
			plan:    "an update from 1.0.0 to 1.1.0 would be refused (force would accept it): ",
		},
		"a minor refused by what the cluster says now, not by the status last written": {
			target: "1.1.0", desired: "1.0.0", history: completed, operators: []runtime.Object{&notUpgradeable}, stale: true,
			want:    clusterversion.Verdict{Checked: true, Current: "1.0.0", Blocking: true, Forceable: true},
			message: "network (Reboot: pending)",
			plan:    "an update from 1.0.0 to 1.1.0 would be refused (force would accept it): ",
		},
		"a minor refused by an admin gate awaiting its ack": {
			target: "1.1.0", desired: "1.0.0", history: completed, stale: true,
			configMaps: []runtime.Object{
				adminConfigMap(precondition.DefaultAdminGates, map[string]string{"ack-1.0-read-the-notes": "1.1 changes things: read the notes."}),
				adminConfigMap(precondition.DefaultAdminAcks, nil)},
			want:    clusterversion.Verdict{Checked: true, Current: "1.0.0", Blocking: true, Forceable: true},
			message: "1.1 changes things: read the notes.",
			plan:    "an update from 1.0.0 to 1.1.0 would be refused (force would accept it): ",
		},
		"forced": {
			target: "1.1.0", force: true, desired: "1.0.0", history: completed, operators: []runtime.Object{&notUpgradeable},
			want:    clusterversion.Verdict{Checked: true, Current: "1.0.0", Force: true, Forceable: true},
			message: "Forced through blocking failures: ",
			plan:    "an update from 1.0.0 to 1.1.0 would be accepted with risks: Forced through blocking failures: ",
		},
		"forced, but a CRD update would lose stored objects": {
			target: "1.0.1", force: true, desired: "1.0.0", history: completed,
			manifests: []*payload.Manifest{widgetsCRD(t, "  - {name: v2, served: true, storage: true}\n")},
			want:      clusterversion.Verdict{Checked: true, Current: "1.0.0", Force: true, Blocking: true},
			message:   "Force does not override every failure: ",
			plan:      "an update from 1.0.0 to 1.0.1 would be refused (force would not accept it either): Force does not override every failure: ",
		},
		"a deprecated target": {
			target: "1.0.2", desired: "1.0.0", history: completed,
			want:    clusterversion.Verdict{Checked: true, Current: "1.0.0", Blocking: true, Forceable: true},
			message: "release 1.0.2 is deprecated in the update graph: do not use",
			plan:    "an update from 1.0.0 to 1.0.2 would be refused (force would accept it): ",
		},
		"a retarget during an update: the graph asked about the release being applied": {
			target: "1.0.2", desired: "1.0.1", history: append([]configv1.UpdateHistory{partial("1.0.1")}, completed...),
			want:    clusterversion.Verdict{Checked: true, Current: "1.0.0", Blocking: true, Forceable: true},
			message: "release 1.0.2 is deprecated in the update graph: do not use",
			plan:    "an update from 1.0.0 to 1.0.2 would be refused (force would accept it): ",
		},
		"not checked: already the target": {
			target: "1.0.1", desired: "1.0.1", history: append([]configv1.UpdateHistory{partial("1.0.1")}, completed...),
			want: clusterversion.Verdict{NotChecked: "1.0.1 is already the cluster's target"},
			plan: "not checked: 1.0.1 is already the cluster's target",
		},
		"an install: only the install checks": {
			target: "1.0.1",
			want:   clusterversion.Verdict{Checked: true, Install: true, Forceable: true},
			plan:   "1.0.1, as an install (no release has completed yet), would be accepted",
		},
		"no completed release: an install's checks refuse a deprecated target": {
			target: "1.0.2", desired: "1.0.0", history: []configv1.UpdateHistory{partial("1.0.0")},
			want:    clusterversion.Verdict{Checked: true, Install: true, Blocking: true, Forceable: true},
			message: "release 1.0.2 is deprecated in the update graph: do not use",
			plan:    "1.0.2, as an install (no release has completed yet), would be refused (force would accept it): ",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cv := &configv1.ClusterVersion{
				ObjectMeta: metav1.ObjectMeta{Name: "version"},
				Spec: configv1.ClusterVersionSpec{ClusterID: "test", Channel: "stable-1", Upstream: configv1.URL(srv.URL),
					DesiredUpdate: &configv1.Update{Version: tc.target, Force: tc.force}},
				Status: configv1.ClusterVersionStatus{Desired: configv1.Release{Version: tc.desired}, History: tc.history},
			}
			switch {
			case tc.stale:
				cv.Status.Conditions = append(cv.Status.Conditions, configv1.ClusterOperatorStatusCondition{Type: configv1.OperatorUpgradeable,
					Status: configv1.ConditionTrue, Reason: clusterversion.ReasonAsExpected})
			case len(tc.operators) > 0:
				cv.Status.Conditions = append(cv.Status.Conditions, upgradeableFalse)
			}
			c := newJudgeCluster(t, append([]runtime.Object{cv}, tc.operators...)...)
			c.kube = kubefake.NewClientset(tc.configMaps...)
			rels := releases{}
			for _, v := range []string{"1.0.0", "1.0.1", "1.0.2", "1.1.0"} {
				rels[v] = &payload.Release{Version: v}
			}
			rels[tc.target].Manifests = tc.manifests
			ctx := context.Background()

			queries = nil
			planned, _, acceptance, err := judgeUpdate(ctx, c.kube, c.config, c.engine, rels[tc.target], graph.ModeUpdate)
			if err != nil {
				t.Fatal(err)
			}
			planQueries := queries

			op, err := operator.New(operator.Config{
				KubeClient: c.kube, ConfigClient: c.config, DynamicClient: c.dynamic, Engine: c.engine,
				Recorder: record.NewFakeRecorder(100), Releases: rels,
				Sync: apply.SyncOptions{Backoff: &wait.Backoff{Duration: time.Millisecond, Steps: 1}},
			})
			if err != nil {
				t.Fatal(err)
			}
			queries = nil
			out, err := op.Sync(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if out.Verdict == nil {
				t.Fatal("the operator judged nothing")
			}
			if fmt.Sprint(planQueries) != fmt.Sprint(queries) {
				t.Errorf("plan asked the graph %q, the operator %q", planQueries, queries)
			}

			for who, v := range map[string]clusterversion.Verdict{"plan": planned, "operator": *out.Verdict} {
				if got, want := viewOf(v), viewOf(tc.want); got != want {
					t.Errorf("%s's verdict %+v, want %+v", who, got, want)
				}
				if !strings.Contains(v.Message, tc.message) || (tc.message == "") != (v.Message == "") {
					t.Errorf("%s's message %q, want it to hold %q", who, v.Message, tc.message)
				}
			}
			if planned.Message != out.Verdict.Message {
				t.Errorf("plan says %q, the operator %q", planned.Message, out.Verdict.Message)
			}
			if !strings.HasPrefix(acceptance.Message, tc.plan) || acceptance.Checked != tc.want.Checked ||
				acceptance.Accepted != (tc.want.Checked && !tc.want.Blocking) {
				t.Errorf("plan's acceptance %+v, want checked %v, accepted %v, message %q...", acceptance, tc.want.Checked, tc.want.Checked && !tc.want.Blocking, tc.plan)
			}

			// What the operator did with its verdict.
			written, err := c.config.ConfigV1().ClusterVersions().Get(ctx, "version", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var accepted *configv1.ClusterOperatorStatusCondition
			for i := range written.Status.Conditions {
				if written.Status.Conditions[i].Type == clusterversion.ConditionReleaseAccepted {
					accepted = &written.Status.Conditions[i]
				}
			}
			switch {
			case accepted == nil:
				t.Fatal("no ReleaseAccepted condition")
			case tc.want.Blocking:
				if out.Refused == nil || accepted.Status != configv1.ConditionFalse || !strings.Contains(accepted.Message, planned.Message) ||
					written.Status.Desired.Version == tc.target {
					t.Errorf("refused %v, ReleaseAccepted %+v, desired %s: want %s refused for %q", out.Refused, accepted, written.Status.Desired.Version, tc.target, planned.Message)
				}
			default:
				if out.Refused != nil || accepted.Status != configv1.ConditionTrue || written.Status.Desired.Version != tc.target ||
					out.AcceptedRisks != planned.Message {
					t.Errorf("refused %v, ReleaseAccepted %+v, desired %s, risks %q: want %s accepted with risks %q",
						out.Refused, accepted, written.Status.Desired.Version, out.AcceptedRisks, tc.target, planned.Message)
				}
			}
		})
	}
}

// verdictView is what the tables compare of a verdict, but its message.
type verdictView struct {
	checked                             bool
	notChecked, current                 string
	install, force, blocking, forceable bool
}

func viewOf(v clusterversion.Verdict) verdictView {
	return verdictView{v.Checked, v.NotChecked, v.Current, v.Install, v.Force, v.Blocking, v.Forceable}
}

// TestPlanSaysWhyItDidNotJudge covers what only plan meets: another mode,
// and a cluster without a ClusterVersion.
func TestPlanSaysWhyItDidNotJudge(t *testing.T) {
	c := newJudgeCluster(t)
	rel := &payload.Release{Version: "1.0.1"}
	for mode, want := range map[graph.Mode]string{
		graph.ModeInstall:   "not checked in install mode",
		graph.ModeReconcile: "not checked in reconcile mode",
		graph.ModeUpdate:    "not checked: the cluster has no ClusterVersion, so applying the payload installs it",
	} {
		v, _, a, err := judgeUpdate(context.Background(), c.kube, c.config, c.engine, rel, mode)
		if err != nil || v.Checked || a.Checked || a.Accepted || a.Message != want {
			t.Errorf("%s mode: verdict %+v, acceptance %+v, err %v; want %q", mode, v, a, err, want)
		}
	}
}

// TestLivePlanListsEachCustomResourceOnce: the acceptance check and the
// plan's note on the CRD update both need the Widgets; they are listed
// once. Before the plan took the judge's CRD checks, they were listed twice.
func TestLivePlanListsEachCustomResourceOnce(t *testing.T) {
	cv := &configv1.ClusterVersion{
		ObjectMeta: metav1.ObjectMeta{Name: "version"},
		Spec:       configv1.ClusterVersionSpec{ClusterID: "test"},
		Status: configv1.ClusterVersionStatus{Desired: configv1.Release{Version: "1.0.0"},
			History: []configv1.UpdateHistory{{State: configv1.CompletedUpdate, Version: "1.0.0"}}},
	}
	rel := &payload.Release{Version: "1.0.1", Manifests: []*payload.Manifest{requiredSpecCRD(t)}}
	for _, mode := range []graph.Mode{graph.ModeUpdate, graph.ModeReconcile} {
		t.Run(string(mode), func(t *testing.T) {
			c := newJudgeCluster(t, cv)
			plan, acceptance, err := planAgainst(context.Background(), "fake", c.kube, c.config, c.engine, rel, apply.PlanOptions{Mode: mode})
			if err != nil {
				t.Fatal(err)
			}
			if c.widgetLists != 1 {
				t.Errorf("the Widgets were listed %d times, want once", c.widgetLists)
			}
			a := plan.Actions[0]
			if a.Action != apply.ActionConfigured || !strings.Contains(a.Reason, "blocked ("+string(apply.ReasonCRDUpdateBlocked)+")") ||
				!strings.Contains(a.Reason, "rejects 3 existing object(s)") {
				t.Errorf("the CRD is planned %s %q, want a blocked update naming the three Widgets", a.Action, a.Reason)
			}
			if mode == graph.ModeUpdate && (acceptance.Accepted || !strings.Contains(acceptance.Message, "CustomResourceDefinitionCompatibility") ||
				!strings.Contains(acceptance.Message, "rejects 3 existing object(s)")) {
				t.Errorf("acceptance %+v, want the update refused for the Widgets", acceptance)
			}
		})
	}
}

// adminConfigMap is one of the admin ConfigMaps, holding data.
func adminConfigMap(name types.NamespacedName, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: name.Namespace, Name: name.Name}, Data: data}
}
