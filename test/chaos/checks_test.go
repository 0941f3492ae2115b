package chaos

import (
	"context"
	"fmt"
	"math/rand"
	"path/filepath"
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/payload-applier/payload-applier/pkg/clusterversion"
	"github.com/payload-applier/payload-applier/pkg/graph"
	"github.com/payload-applier/payload-applier/pkg/payload"
	"github.com/payload-applier/payload-applier/test/cluster"
)

// The harness is only as good as its checks: these tests show that each
// one fails on the fault it is there to catch.

func checkScenario() *scenario {
	return &scenario{tag: "t", namespaces: []string{"ns"}, objects: []*object{
		{kind: kindConfigMap, namespace: "ns", name: "kept", inV1: true, fate: fateChange},
		{kind: kindConfigMap, namespace: "ns", name: "gone", inV1: true, fate: fateDelete},
		{kind: kindConfigMap, namespace: "ns", name: "never", fate: fateDelete},
		{kind: kindConfigMap, namespace: "ns", name: "dropped", inV1: true, fate: fateDrop},
		{kind: kindClusterRole, name: "role", inV1: true, fate: fateDelete},
	}}
}

func TestJudgeUpgradeable(t *testing.T) {
	sc := checkScenario()
	gone, role := sc.objects[1].id(), sc.objects[4].id()
	present := func(ids ...payload.ObjectID) map[payload.ObjectID]bool {
		m := map[payload.ObjectID]bool{}
		for _, id := range ids {
			m[id] = true
		}
		return m
	}
	inProgress := func(msg string) configv1.ClusterOperatorStatusCondition {
		return configv1.ClusterOperatorStatusCondition{Status: configv1.ConditionFalse, Reason: clusterversion.ReasonDeletionInProgress, Message: msg}
	}
	tests := map[string]struct {
		up            configv1.ClusterOperatorStatusCondition
		before, after map[payload.ObjectID]bool
		wantProblem   string
	}{
		"True once every marked object is gone": {
			up: configv1.ClusterOperatorStatusCondition{Status: configv1.ConditionTrue}, before: present(gone), after: present()},
		"True while a marked object exists is a lie": {
			up: configv1.ClusterOperatorStatusCondition{Status: configv1.ConditionTrue}, before: present(gone), after: present(gone),
			wantProblem: "still exists"},
		"False naming every pending object": {
			up: inProgress("...: ConfigMap/ns/gone (finalizers: x), ClusterRole.rbac.authorization.k8s.io/role"), before: present(gone, role), after: present(gone, role)},
		"False may name an object that went during the sync": {
			up: inProgress("...: ConfigMap/ns/gone"), before: present(gone), after: present()},
		"False leaving out a pending object": {
			up: inProgress("...: ConfigMap/ns/gone"), before: present(gone, role), after: present(gone, role), wantProblem: "does not name it"},
		"False naming an object gone before the start": {
			up: inProgress("...: ConfigMap/ns/gone, ClusterRole.rbac.authorization.k8s.io/role"), before: present(role), after: present(role),
			wantProblem: "gone before the operator started"},
		"a name that only starts another name does not count": {
			up: inProgress("...: ConfigMap/ns/gone-2"), before: present(gone), after: present(gone), wantProblem: "does not name it"},
		"False for another reason": {
			up:     configv1.ClusterOperatorStatusCondition{Status: configv1.ConditionFalse, Reason: "Other", Message: "ConfigMap/ns/gone"},
			before: present(gone), after: present(gone), wantProblem: "unexpected reason"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			problems := judgeUpgradeable(tc.up, sc.marked(), tc.before, tc.after)
			switch {
			case tc.wantProblem == "" && len(problems) > 0:
				t.Fatalf("unexpected problems: %v", problems)
			case tc.wantProblem != "" && !strings.Contains(strings.Join(problems, "\n"), tc.wantProblem):
				t.Fatalf("problems %v lack %q", problems, tc.wantProblem)
			}
		})
	}
}

func TestWriteChecksCatchStrayAndRepeatedWrites(t *testing.T) {
	e := &env{sc: checkScenario()}
	rules := writeRules{user: "op", ledgerNamespace: "sys", ledgerName: "ledger"}
	ev := func(verb, resource, ns, name string) cluster.AuditEvent {
		group := ""
		if resource == "clusterroles" {
			group = "rbac.authorization.k8s.io"
		}
		return cluster.AuditEvent{Stage: cluster.AuditStageRequestReceived, Verb: verb, User: cluster.AuditUser{Username: "op"},
			ObjectRef: &cluster.AuditObjectRef{APIGroup: group, Resource: resource, Namespace: ns, Name: name}}
	}
	// refused is e, answered code: its two stages.
	refused := func(e cluster.AuditEvent, code int) []cluster.AuditEvent {
		e.AuditID = fmt.Sprintf("refused-%d", code)
		done := e
		done.Stage, done.ResponseStatus = cluster.AuditStageResponseComplete, &cluster.AuditStatus{Code: code}
		return []cluster.AuditEvent{e, done}
	}
	good := []cluster.AuditEvent{
		ev("patch", "configmaps", "ns", "kept"),
		ev("update", "configmaps", "sys", "ledger"),
		ev("delete", "configmaps", "ns", "gone"),
		ev("delete", "clusterroles", "", "role"),
	}
	tests := map[string]struct {
		events      []cluster.AuditEvent
		wantProblem string
	}{
		"exactly what v2 asks":                     {events: good},
		"a second DELETE of a marked object":       {events: append(good, ev("delete", "configmaps", "ns", "gone")), wantProblem: "received 2 DELETE"},
		"a DELETE refused with 503 before a retry": {events: append(good, refused(ev("delete", "configmaps", "ns", "gone"), 503)...)},
		"a DELETE answered 500 counts":             {events: append(good, refused(ev("delete", "configmaps", "ns", "gone"), 500)...), wantProblem: "received 2 DELETE"},
		"a lost delete":                            {events: good[:3], wantProblem: "role received 0 DELETE"},
		"a DELETE of an object v2 drops":           {events: append(good, ev("delete", "configmaps", "ns", "dropped")), wantProblem: "delete configmaps ns/dropped"},
		"a DELETE of one that never existed":       {events: append(good, ev("delete", "configmaps", "ns", "never")), wantProblem: "never received 1 DELETE"},
		"a write to an object v2 drops":            {events: append(good, ev("patch", "configmaps", "ns", "dropped")), wantProblem: "patch configmaps ns/dropped"},
		"a write to another ConfigMap":             {events: append(good, ev("update", "configmaps", "sys", "other")), wantProblem: "update configmaps sys/other"},
		"another user's writes do not count":       {events: append(good, cluster.AuditEvent{Stage: cluster.AuditStageRequestReceived, Verb: "delete", User: cluster.AuditUser{Username: "admin"}, ObjectRef: &cluster.AuditObjectRef{Resource: "configmaps", Namespace: "ns", Name: "dropped"}})},
		"status writes need a ClusterVersion":      {events: append(good, cluster.AuditEvent{Stage: cluster.AuditStageRequestReceived, Verb: "update", User: cluster.AuditUser{Username: "op"}, ObjectRef: &cluster.AuditObjectRef{APIGroup: "config.openshift.io", Resource: "clusterversions", Subresource: "status", Name: "version"}}), wantProblem: "clusterversions/status"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			problems := e.writeProblems(tc.events, rules)
			switch {
			case tc.wantProblem == "" && len(problems) > 0:
				t.Fatalf("unexpected problems: %v", problems)
			case tc.wantProblem != "" && !strings.Contains(strings.Join(problems, "\n"), tc.wantProblem):
				t.Fatalf("problems %v lack %q", problems, tc.wantProblem)
			}
		})
	}
}

// TestStateChecksCatchStrayChanges converges a small pair, then changes the
// cluster behind the applier's back in each way the state check must see.
func TestStateChecksCatchStrayChanges(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ns := testCluster.CreateNamespace(t)
	sc := newScenario(rand.New(rand.NewSource(1)), fmt.Sprintf("chaos-checks-%d", time.Now().UnixNano()%1_000_000), scenarioOptions{
		Namespaces: []string{ns},
		Forced: []forcedObject{
			{kind: kindConfigMap, inV1: true, fate: fateChange, component: "alpha", runLevel: 10},
			{kind: kindSecret, inV1: true, fate: fateKeep, component: "alpha", runLevel: 10},
			{kind: kindConfigMap, inV1: true, fate: fateDelete, component: "alpha", runLevel: 20},
			{kind: kindImageStream, inV1: true, fate: fateDrop, component: "beta", runLevel: 10},
		},
	})
	changed, kept, deleted, dropped := sc.objects[0], sc.objects[1], sc.objects[2], sc.objects[3]
	e := newEnv(t, sc)
	e.createBystanders(t, ctx)
	store := sc.writeStore(t)
	cfg, err := testCluster.UserRESTConfig(userPairs)
	if err != nil {
		t.Fatal(err)
	}
	engine := newEngine(t, cfg, ns)
	for _, step := range []struct {
		version string
		mode    graph.Mode
	}{{"1.0.0", graph.ModeInstall}, {"1.0.1", graph.ModeUpdate}} {
		if step.version == "1.0.1" {
			if p := e.problems(ctx); len(p) == 0 {
				t.Fatal("before the update, the state check sees nothing missing")
			}
		}
		res, err := engine.Sync(ctx, loadRelease(t, filepath.Join(store, step.version)), engineOptions(step.mode))
		if err != nil || !res.Complete() || len(res.Deletes.InProgress) > 0 {
			t.Fatalf("sync %s: err %v, result %+v", step.version, err, res)
		}
		if step.version == "1.0.0" {
			e.recordInstalled(t, ctx)
		}
	}
	if p := e.problems(ctx); len(p) > 0 {
		t.Fatalf("the converged pair has problems: %v", p)
	}

	patch := func(o *object, data string) {
		if _, err := e.resource(o).Patch(ctx, o.name, types.MergePatchType, []byte(data), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	patch(changed, `{"data":{"rev":"1"}}`)
	patch(kept, `{"metadata":{"labels":{"`+revLabel+`":"x"}}}`)
	patch(dropped, `{"metadata":{"labels":{"extra":"x"}}}`)
	recreated := deleted.manifest(sc.tag, 1, false)
	if _, err := e.resource(deleted).Create(ctx, &unstructured.Unstructured{Object: recreated}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := e.resource(e.bystanders[0]).Delete(ctx, e.bystanders[0].name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	problems := strings.Join(e.problems(ctx), "\n")
	for _, want := range []string{
		changed.String() + " does not hold rev 2: .data.rev",
		kept.String() + " does not hold rev 1: .metadata.labels." + revLabel,
		dropped.String() + " was changed",
		deleted.String() + " is marked for deletion but still exists",
		e.bystanders[0].String() + " was deleted",
	} {
		if !strings.Contains(problems, want) {
			t.Errorf("the state check missed %q; it said:\n%s", want, problems)
		}
	}
	if p := e.ledgerProblems(ctx, ns, "no-such-ledger"); len(p) == 0 {
		t.Error("the ledger check accepts a ledger that does not exist")
	}
}
