package e2e

import (
	"context"
	"strings"
	gosync "sync"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/payload-applier/payload-applier/pkg/apply"
	"github.com/payload-applier/payload-applier/pkg/clusterversion"
	"github.com/payload-applier/payload-applier/pkg/operator"
	"github.com/payload-applier/payload-applier/pkg/precondition"
	"github.com/payload-applier/payload-applier/test/cluster"
)

func TestUpgradeableSources(t *testing.T) {
	ns := testCluster.CreateNamespace(t)
	files := map[string]string{"0000_50_demo_00_a.yaml": configMap(ns, "a", "x")}
	// refusedFor is a release that deletes the namespace the operator runs
	// in: lint cannot know it is protected, the engine refuses it.
	refusedFor := func(applierNS string) map[string]map[string]string {
		return map[string]map[string]string{"1.0.0": files, "1.0.1": {
			"0000_50_demo_00_a.yaml":    configMap(ns, "a", "x"),
			"0000_00_danger_00_ns.yaml": namespaceDelete(applierNS),
		}}
	}
	releases := map[string]map[string]string{"1.0.0": files}
	co := uniqueName(t, "co")

	setCOUpgradeable := func(t *testing.T, status configv1.ConditionStatus) {
		cc := newOperator(t, writeStore(t, releases), uniqueName(t, "tmp"), ns, nil, nil).config
		ctx := context.Background()
		obj, err := cc.ConfigV1().ClusterOperators().Get(ctx, co, metav1.GetOptions{})
		if err != nil {
			obj, err = cc.ConfigV1().ClusterOperators().Create(ctx, &configv1.ClusterOperator{ObjectMeta: metav1.ObjectMeta{Name: co}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
		}
		obj.Status.Conditions = []configv1.ClusterOperatorStatusCondition{{Type: configv1.OperatorUpgradeable, Status: status,
			Reason: "AdminAckRequired", Message: "needs an admin ack", LastTransitionTime: metav1.Now()}}
		if _, err := cc.ConfigV1().ClusterOperators().UpdateStatus(ctx, obj, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("a ClusterOperator with Upgradeable=False", func(t *testing.T) {
		op := newOperator(t, writeStore(t, releases), uniqueName(t, "src-co"), ns, nil, nil)
		op.request(t, "1.0.0", false)
		op.sync(t)
		setCOUpgradeable(t, configv1.ConditionFalse)
		defer setCOUpgradeable(t, configv1.ConditionTrue)
		op.sync(t)
		c := requireCondition(t, op.clusterVersion(t), configv1.OperatorUpgradeable, configv1.ConditionFalse, clusterversion.ReasonOperatorsNotUpgrade)
		if !strings.Contains(c.Message, co) {
			t.Errorf("message must name the operator: %q", c.Message)
		}
	})

	t.Run("overrides that are set", func(t *testing.T) {
		op := newOperator(t, writeStore(t, releases), uniqueName(t, "src-ov"), ns, nil, nil)
		op.request(t, "1.0.0", false)
		op.sync(t)
		cv := op.clusterVersion(t)
		cv.Spec.Overrides = []configv1.ComponentOverride{{Kind: "ConfigMap", Group: "", Namespace: ns, Name: "a", Unmanaged: true}}
		if _, err := op.config.ConfigV1().ClusterVersions().Update(context.Background(), cv, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		out := op.sync(t)
		requireCondition(t, op.clusterVersion(t), configv1.OperatorUpgradeable, configv1.ConditionFalse, precondition.ReasonClusterVersionOverridesSet)
		for _, o := range out.Result.Objects {
			if o.ID.Name == "a" {
				t.Errorf("an unmanaged object must not be applied: %+v", o)
			}
		}
	})

	t.Run("a delete that failed", func(t *testing.T) {
		applierNS := testCluster.CreateNamespace(t)
		op := newOperator(t, writeStore(t, refusedFor(applierNS)), uniqueName(t, "src-df"), applierNS, nil, nil)
		op.request(t, "1.0.0", false)
		op.sync(t)
		op.request(t, "1.0.1", false)
		out := op.sync(t)
		if !out.Result.Complete() {
			t.Fatalf("a failed delete must not fail the update: %v", out.Result.Errors)
		}
		c := requireCondition(t, op.clusterVersion(t), configv1.OperatorUpgradeable, configv1.ConditionFalse, string(apply.ReasonDeletionFailed))
		if !strings.Contains(c.Message, "Namespace/"+applierNS) || !strings.Contains(c.Message, "protected") {
			t.Errorf("message must name the object and why: %q", c.Message)
		}
	})

	t.Run("several sources give MultipleReasons", func(t *testing.T) {
		applierNS := testCluster.CreateNamespace(t)
		op := newOperator(t, writeStore(t, refusedFor(applierNS)), uniqueName(t, "src-mr"), applierNS, nil, nil)
		op.request(t, "1.0.0", false)
		op.sync(t)
		op.request(t, "1.0.1", false)
		op.sync(t)
		setCOUpgradeable(t, configv1.ConditionFalse)
		defer setCOUpgradeable(t, configv1.ConditionTrue)
		op.sync(t)
		c := requireCondition(t, op.clusterVersion(t), configv1.OperatorUpgradeable, configv1.ConditionFalse, clusterversion.ReasonMultipleReasons)
		if !strings.Contains(c.Message, co) || !strings.Contains(c.Message, "Namespace/"+applierNS) {
			t.Errorf("message must list every source: %q", c.Message)
		}
	})
}

func TestInvalidPayloadIsRejectedWhole(t *testing.T) {
	ns := testCluster.CreateNamespace(t)
	good := map[string]string{"0000_50_demo_00_a.yaml": configMap(ns, "a", "x")}
	bad := map[string]string{
		"0000_50_demo_00_a.yaml": configMap(ns, "a", "x"),
		"0000_50_demo_01_b.yaml": configMap(ns, "b", "x", `release.openshift.io/delete: "yes"`),
	}
	op := newOperator(t, writeStore(t, map[string]map[string]string{"1.0.0": good, "1.0.1": bad}), uniqueName(t, "invalid"), ns, nil, nil)
	op.request(t, "1.0.0", false)
	op.sync(t)
	op.request(t, "1.0.1", false)
	out := op.sync(t)
	if out.LoadErr == nil {
		t.Fatal("an invalid payload must be rejected")
	}
	c := requireCondition(t, op.clusterVersion(t), "ReleaseAccepted", configv1.ConditionFalse, "")
	if !strings.Contains(c.Message, "0000_50_demo_01_b.yaml:") {
		t.Errorf("the rejection must name file:line: %q", c.Message)
	}
	if op.clusterVersion(t).Status.Desired.Version != "1.0.0" {
		t.Error("an invalid release must not become desired")
	}
}

func TestOperatorRestartMidUpdate(t *testing.T) {
	ns := testCluster.CreateNamespace(t)
	co := uniqueName(t, "restart")
	coManifest := func(version string) string {
		return `
apiVersion: config.openshift.io/v1
kind: ClusterOperator
metadata:
  name: ` + co + `
  annotations:
    ` + include + `
spec: {}
status:
  versions:
  - {name: operator, version: "` + version + `"}
`
	}
	releases := map[string]map[string]string{
		"1.0.0": {"0000_10_op_00_co.yaml": coManifest("1.0.0"), "0000_20_late_00_a.yaml": configMap(ns, "late", "1")},
		"1.0.1": {"0000_10_op_00_co.yaml": coManifest("1.0.1"), "0000_20_late_00_a.yaml": configMap(ns, "late", "2")},
	}
	store := writeStore(t, releases)
	cvName := uniqueName(t, "restart")
	markAvailable(t, co, "1.0.0")
	first := newOperator(t, store, cvName, ns, nil, nil)
	first.request(t, "1.0.0", false)
	if out := first.sync(t); !out.Result.Complete() {
		t.Fatalf("install: %v", out.Result.Errors)
	}
	first.request(t, "1.0.1", false)
	out := first.sync(t)
	if out.Result.Complete() {
		t.Fatal("the update must wait on the ClusterOperator's version")
	}
	if first.clusterVersion(t).Status.History[0].State != configv1.PartialUpdate {
		t.Fatal("the update must be partial")
	}

	// A new process: nothing in memory, only the cluster's state.
	second := newOperator(t, store, cvName, ns, nil, nil)
	markAvailable(t, co, "1.0.1")
	out = second.sync(t)
	if out.Mode != "update" || !out.Result.Complete() {
		t.Fatalf("after a restart the update must resume and finish: mode %s, errors %v", out.Mode, out.Result.Errors)
	}
	cv := second.clusterVersion(t)
	if len(cv.Status.History) != 2 || cv.Status.History[0].Version != "1.0.1" || cv.Status.History[0].State != configv1.CompletedUpdate {
		t.Fatalf("history = %+v", cv.Status.History)
	}
	if cm := newClients(t).get(t, configMapGVK, ns, "late"); cm == nil {
		t.Fatal("the rest of the update must be applied")
	}
}

func TestTwoOperatorsOneLeader(t *testing.T) {
	ns := testCluster.CreateNamespace(t)
	store := writeStore(t, map[string]map[string]string{"1.0.0": {"0000_50_demo_00_a.yaml": configMap(ns, "a", "x")}})
	cvName := uniqueName(t, "pair")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg gosync.WaitGroup
	mark := auditMark(t)
	ops := map[string]*testOperator{}
	for _, user := range []string{"operator-a", "operator-b"} {
		cfg, err := testCluster.UserRESTConfig(user)
		if err != nil {
			t.Fatal(err)
		}
		op := newOperator(t, store, cvName, ns, cfg, nil)
		ops[user] = op
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = op.Run(ctx, operator.RunOptions{ResyncInterval: time.Second, LeaderElection: true, LeaseName: cvName,
				LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 500 * time.Millisecond})
		}()
	}
	ops["operator-a"].request(t, "1.0.0", false)
	waitFor(t, "the release to complete", time.Minute, func() bool {
		h := ops["operator-a"].clusterVersion(t).Status.History
		return len(h) > 0 && h[0].State == configv1.CompletedUpdate
	})
	var lease *coordinationv1.Lease
	waitFor(t, "a lease holder", 30*time.Second, func() bool {
		l, err := newClients(t).kube.CoordinationV1().Leases(ns).Get(context.Background(), cvName, metav1.GetOptions{})
		lease = l
		return err == nil && l.Spec.HolderIdentity != nil
	})
	time.Sleep(3 * time.Second) // let both instances run a few resyncs
	cancel()
	wg.Wait()

	writers := map[string]int{}
	for user := range ops {
		for _, e := range applierAudit(t, mark, cluster.AuditFilter{User: user, WritesOnly: true}) {
			if e.ObjectRef != nil && (e.ObjectRef.Resource == "configmaps" || e.ObjectRef.Subresource == "status") {
				writers[user]++
			}
		}
	}
	if len(writers) != 1 {
		t.Fatalf("payload and status writes came from %v; exactly one instance may write", writers)
	}
	for user := range writers {
		if *lease.Spec.HolderIdentity != ops[user].identity {
			t.Errorf("writer %s does not hold the lease (%s)", user, *lease.Spec.HolderIdentity)
		}
	}
}
