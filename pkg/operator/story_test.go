package operator

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/payload-applier/payload-applier/pkg/apply/cleanup"
	"github.com/payload-applier/payload-applier/pkg/apply/deletion"
	"github.com/payload-applier/payload-applier/pkg/clusterversion"
	"github.com/payload-applier/payload-applier/pkg/graph"
	"github.com/payload-applier/payload-applier/pkg/payload/payloadtest"
)

// storyStore writes a release line: 1.0.1 is a z-stream that deletes two
// ConfigMaps, the later one held by a finalizer so that the earlier one is
// paced behind it (a run level later, so that the two do not share a
// wave); 1.0.2 is a z-stream that still carries the deletes; 1.1.0
// is a minor that no longer does.
func storyStore(t *testing.T) *DirStore {
	root := t.TempDir()
	keep := configMapManifest("keep")
	payloadtest.WriteRelease(t, root, "1.0.0", nil, map[string]string{
		"0000_50_demo_00_keep.yaml":  keep,
		"0000_50_demo_01_first.yaml": configMapManifest("first"),
		"0000_55_demo_02_held.yaml":  heldConfigMapManifest("held"),
	})
	deletes := map[string]string{
		"0000_50_demo_00_keep.yaml":  keep,
		"0000_50_demo_01_first.yaml": configMapManifest("first", deleteAnnotation),
		"0000_55_demo_02_held.yaml":  heldConfigMapManifest("held", deleteAnnotation),
	}
	payloadtest.WriteRelease(t, root, "1.0.1", []string{"1.0.0"}, deletes)
	deletes["0000_60_more_00_z.yaml"] = configMapManifest("z-stream")
	payloadtest.WriteRelease(t, root, "1.0.2", []string{"1.0.1"}, deletes)
	payloadtest.WriteRelease(t, root, "1.1.0", []string{"1.0.2"}, map[string]string{
		"0000_50_demo_00_keep.yaml":  keep,
		"0000_60_more_00_minor.yaml": configMapManifest("minor"),
	})
	return &DirStore{Root: root}
}

// wantCondition fails unless the condition has status and reason and its
// message holds every fragment.
func wantCondition(t *testing.T, cv *configv1.ClusterVersion, ct configv1.ClusterStatusConditionType, status configv1.ConditionStatus, reason string, fragments ...string) {
	t.Helper()
	c := clusterversion.FindCondition(cv.Status.Conditions, ct)
	if c == nil {
		t.Fatalf("no %s condition in %+v", ct, cv.Status.Conditions)
	}
	if c.Status != status || c.Reason != reason {
		t.Errorf("%s = %s/%s (%q), want %s/%s", ct, c.Status, c.Reason, c.Message, status, reason)
	}
	for _, f := range fragments {
		if !strings.Contains(c.Message, f) {
			t.Errorf("%s message %q lacks %q", ct, c.Message, f)
		}
	}
}

// wantSettled checks the conditions of a cluster that finished applying version.
func wantSettled(t *testing.T, cv *configv1.ClusterVersion, version string) {
	t.Helper()
	wantCondition(t, cv, configv1.OperatorAvailable, configv1.ConditionTrue, "", "Done applying "+version)
	wantCondition(t, cv, configv1.OperatorProgressing, configv1.ConditionFalse, "", "Cluster version is "+version)
	wantCondition(t, cv, clusterversion.ConditionFailing, configv1.ConditionFalse, "")
}

// wantHistory checks the versions of status.history, newest first, and
// that every entry completed.
func wantHistory(t *testing.T, cv *configv1.ClusterVersion, versions ...string) {
	t.Helper()
	var got []string
	for _, h := range cv.Status.History {
		got = append(got, h.Version)
		if h.State != configv1.CompletedUpdate || h.CompletionTime == nil {
			t.Errorf("history entry %s is %s, want Completed with a time", h.Version, h.State)
		}
	}
	if strings.Join(got, " ") != strings.Join(versions, " ") {
		t.Errorf("history = %v, want %v", got, versions)
	}
}

// wantEvents fails unless the events hold each fragment, in any order, and
// nothing else.
func wantEvents(t *testing.T, events []string, fragments ...string) {
	t.Helper()
	if len(events) != len(fragments) {
		t.Errorf("%d events, want %d: %q", len(events), len(fragments), events)
	}
	for _, f := range fragments {
		found := false
		for _, e := range events {
			found = found || strings.Contains(e, f)
		}
		if !found {
			t.Errorf("no event %q in %q", f, events)
		}
	}
}

// acceptUpdate requests version and syncs: the update must be accepted and
// applied in full, object among what it applied.
func (c *fakeCluster) acceptUpdate(t *testing.T, version, object string) *configv1.ClusterVersion {
	t.Helper()
	c.request(t, version)
	out := c.sync(t)
	if out.Refused != nil || out.Mode != graph.ModeUpdate || !out.Result.Complete() || !c.exists(object) {
		t.Fatalf("%s must be accepted and applied: refused %v, mode %s, errors %v", version, out.Refused, out.Mode, out.Result.Errors)
	}
	cv := c.clusterVersion(t)
	wantCondition(t, cv, clusterversion.ConditionReleaseAccepted, configv1.ConditionTrue, clusterversion.ReasonPayloadLoaded, fmt.Sprintf("Payload loaded version=%q", version))
	wantSettled(t, cv, version)
	return cv
}

func TestSyncUpdateStoryWithPendingDeletes(t *testing.T) {
	c := newFakeCluster(t, storyStore(t), "1.0.0")

	t.Log("install 1.0.0")
	out := c.sync(t)
	if out.Mode != graph.ModeInstall || out.Result == nil || !out.Result.Complete() {
		t.Fatalf("install: mode %s, result %+v", out.Mode, out.Result)
	}
	cv := c.clusterVersion(t)
	wantCondition(t, cv, clusterversion.ConditionReleaseAccepted, configv1.ConditionTrue, clusterversion.ReasonPayloadLoaded, `Payload loaded version="1.0.0"`)
	wantCondition(t, cv, configv1.OperatorUpgradeable, configv1.ConditionTrue, clusterversion.ReasonAsExpected)
	wantSettled(t, cv, "1.0.0")
	wantHistory(t, cv, "1.0.0")
	if cv.Status.Desired.Version != "1.0.0" || !strings.HasPrefix(cv.Status.Desired.Image, "file:///") {
		t.Errorf("desired = %+v, want 1.0.0 with the payload's absolute path", cv.Status.Desired)
	}
	wantEvents(t, c.takeEvents(), "Normal UpdateAccepted Accepted release 1.0.0")
	if c.statusWrites() != 1 {
		t.Errorf("%d status writes, want 1: a short pass writes status once, after it", c.statusWrites())
	}

	t.Log("update to 1.0.1: the held delete stays pending, the one paced behind it waits")
	cv = c.acceptUpdate(t, "1.0.1", "keep")
	wantCondition(t, cv, configv1.OperatorUpgradeable, configv1.ConditionFalse, clusterversion.ReasonDeletionInProgress,
		"ConfigMap/demo/held (finalizers: example.com/hold); waiting behind them: ConfigMap/demo/first")
	wantHistory(t, cv, "1.0.1", "1.0.0")
	wantEvents(t, c.takeEvents(), "Normal UpdateAccepted Accepted release 1.0.1", "Normal DeleteRequested Delete requested for ConfigMap/demo/held")
	if !c.exists("held") || !c.exists("first") {
		t.Fatal("the held object and the one paced behind it must both remain")
	}

	t.Log("a minor update is refused while the delete is pending; 1.0.1 is reconciled")
	c.request(t, "1.1.0")
	out = c.sync(t)
	if out.Refused == nil || out.Applied != "1.0.1" || out.Mode != graph.ModeReconcile {
		t.Fatalf("refused %v, applied %q in mode %s; want 1.1.0 refused and 1.0.1 reconciled", out.Refused, out.Applied, out.Mode)
	}
	cv = c.clusterVersion(t)
	wantCondition(t, cv, clusterversion.ConditionReleaseAccepted, configv1.ConditionFalse, clusterversion.ReasonPreconditionChecks,
		`Preconditions failed for payload loaded version="1.1.0"`, "ResourceDeletionInProgress")
	wantCondition(t, cv, configv1.OperatorUpgradeable, configv1.ConditionFalse, clusterversion.ReasonDeletionInProgress)
	wantSettled(t, cv, "1.0.1")
	wantHistory(t, cv, "1.0.1", "1.0.0")
	if cv.Status.Desired.Version != "1.0.1" || c.exists("minor") {
		t.Fatalf("nothing of a refused release may be applied: desired %s", cv.Status.Desired.Version)
	}
	wantEvents(t, c.takeEvents(), "Warning PreconditionBlock Update to 1.1.0 refused")

	t.Log("syncing the refused target again announces nothing and writes nothing")
	writes := c.statusWrites()
	if out = c.sync(t); out.Refused == nil {
		t.Fatal("1.1.0 must still be refused")
	}
	wantEvents(t, c.takeEvents())
	if c.statusWrites() != writes {
		t.Errorf("an unchanged refusal wrote status %d times", c.statusWrites()-writes)
	}

	t.Log("a z-stream update is accepted while the delete is pending")
	cv = c.acceptUpdate(t, "1.0.2", "z-stream")
	wantCondition(t, cv, configv1.OperatorUpgradeable, configv1.ConditionFalse, clusterversion.ReasonDeletionInProgress, "ConfigMap/demo/held")
	wantHistory(t, cv, "1.0.2", "1.0.1", "1.0.0")
	wantEvents(t, c.takeEvents(), "Normal UpdateAccepted Accepted release 1.0.2")

	t.Log("the finalizer clears: the next pass completes it and issues the paced delete")
	c.releaseFinalizers(t, "held")
	out = c.sync(t)
	if out.Mode != graph.ModeReconcile || len(out.Result.Deletes.InProgress) != 0 {
		t.Fatalf("mode %s, deletes in progress %+v", out.Mode, out.Result.Deletes.InProgress)
	}
	if c.exists("first") {
		t.Error("the paced delete must have been issued once the held object was gone")
	}
	cv = c.clusterVersion(t)
	wantCondition(t, cv, configv1.OperatorUpgradeable, configv1.ConditionTrue, clusterversion.ReasonAsExpected)
	wantSettled(t, cv, "1.0.2")
	wantEvents(t, c.takeEvents(),
		"Normal DeleteCompleted Delete of ConfigMap/demo/held completed.",
		"Normal DeleteRequested Delete requested for ConfigMap/demo/first",
		"Normal DeleteCompleted Delete of ConfigMap/demo/first completed.")

	t.Log("now the minor update is accepted")
	cv = c.acceptUpdate(t, "1.1.0", "minor")
	wantCondition(t, cv, configv1.OperatorUpgradeable, configv1.ConditionTrue, clusterversion.ReasonAsExpected)
	wantHistory(t, cv, "1.1.0", "1.0.2", "1.0.1", "1.0.0")
	wantEvents(t, c.takeEvents(), "Normal UpdateAccepted Accepted release 1.1.0")
}

func TestSyncAnnouncesAnUnloadableTargetOnce(t *testing.T) {
	root := t.TempDir()
	payloadtest.WriteRelease(t, root, "1.0.0", nil, map[string]string{"0000_50_demo_00_keep.yaml": configMapManifest("keep")})
	c := newFakeCluster(t, &DirStore{Root: root}, "1.0.0")
	c.sync(t)
	c.takeEvents()

	c.request(t, "1.0.9")
	out := c.sync(t)
	if out.LoadErr == nil || out.Applied != "1.0.0" {
		t.Fatalf("load error %v, applied %q; want 1.0.9 rejected and 1.0.0 reconciled", out.LoadErr, out.Applied)
	}
	cv := c.clusterVersion(t)
	wantCondition(t, cv, clusterversion.ConditionReleaseAccepted, configv1.ConditionFalse, clusterversion.ReasonLoadPayload,
		"Release 1.0.9 is rejected: release 1.0.9 is not in the release store")
	wantSettled(t, cv, "1.0.0")
	wantEvents(t, c.takeEvents(), "Warning PayloadRejected Release 1.0.9 is rejected")

	writes := c.statusWrites()
	c.sync(t)
	wantEvents(t, c.takeEvents())
	if c.statusWrites() != writes {
		t.Errorf("an unchanged rejection wrote status %d times", c.statusWrites()-writes)
	}
}

// TestSyncRefusesAMinorUpdateThatCarriesTheCurrentReleasesDeletes: seed
// 002 lets a z-stream carry the delete manifests of the release it updates
// from, and blocks a minor that still carries them, unless forced.
func TestSyncRefusesAMinorUpdateThatCarriesTheCurrentReleasesDeletes(t *testing.T) {
	root := t.TempDir()
	keep := configMapManifest("keep")
	payloadtest.WriteRelease(t, root, "1.0.0", nil, map[string]string{
		"0000_50_demo_00_keep.yaml": keep, "0000_50_demo_01_old.yaml": configMapManifest("old")})
	deletes := map[string]string{"0000_50_demo_00_keep.yaml": keep, "0000_50_demo_01_old.yaml": configMapManifest("old", deleteAnnotation)}
	payloadtest.WriteRelease(t, root, "1.0.1", []string{"1.0.0"}, deletes)
	payloadtest.WriteRelease(t, root, "1.0.2", []string{"1.0.1"}, deletes)
	deletes["0000_60_more_00_minor.yaml"] = configMapManifest("minor")
	payloadtest.WriteRelease(t, root, "1.1.0", []string{"1.0.2"}, deletes)
	c := newFakeCluster(t, &DirStore{Root: root}, "1.0.0")
	c.sync(t)
	c.acceptUpdate(t, "1.0.1", "keep")
	if c.exists("old") {
		t.Fatal("1.0.1 must delete the ConfigMap")
	}

	t.Log("a z-stream that still carries the delete manifest is accepted; the object reads as already deleted")
	c.acceptUpdate(t, "1.0.2", "keep")
	c.takeEvents()

	t.Log("a minor that still carries it is refused, naming the manifest, and nothing of it is applied")
	c.request(t, "1.1.0")
	out := c.sync(t)
	if out.Refused == nil || out.Applied != "1.0.2" || c.exists("minor") {
		t.Fatalf("refused %v, applied %q; want 1.1.0 refused and nothing of it applied", out.Refused, out.Applied)
	}
	cv := c.clusterVersion(t)
	wantCondition(t, cv, clusterversion.ConditionReleaseAccepted, configv1.ConditionFalse, clusterversion.ReasonPreconditionChecks,
		"DeleteManifestsCarriedAcrossMinor", "0000_50_demo_01_old.yaml:1 (ConfigMap/demo/old)", "that 1.0.2 carried")
	wantEvents(t, c.takeEvents(), "Warning PreconditionBlock Update to 1.1.0 refused")

	t.Log("forced, it is accepted and history records the risk")
	if err := c.op.RequestRelease(context.Background(), "1.1.0", true); err != nil {
		t.Fatal(err)
	}
	out = c.sync(t)
	if out.Refused != nil || !c.exists("minor") {
		t.Fatalf("a forced update must be applied: refused %v", out.Refused)
	}
	cv = c.clusterVersion(t)
	if h := cv.Status.History[0]; h.Version != "1.1.0" || !strings.Contains(h.AcceptedRisks, "DeleteManifestsCarriedAcrossMinor") {
		t.Errorf("history[0] = %s with accepted risks %q, want 1.1.0 naming the check", h.Version, h.AcceptedRisks)
	}
}

// corruptible is a ledger store whose data someone broke until repaired.
type corruptible struct {
	deletion.MemoryStore
	broken bool
}

func (c *corruptible) Load(ctx context.Context) ([]deletion.Record, error) {
	if c.broken {
		return nil, &deletion.UnreadableError{Namespace: "ns", Name: "ledger", Key: "records.json", Err: errors.New("not a list of delete records")}
	}
	return c.MemoryStore.Load(ctx)
}

func TestSyncReportsAnUnreadableLedgerAndKeepsApplying(t *testing.T) {
	store := &corruptible{broken: true}
	c := newFakeClusterWithLedger(t, storyStore(t), "1.0.0", store)
	if out := c.sync(t); out.Result == nil || !out.Result.Complete() {
		t.Fatalf("an install over a broken ledger must apply: %+v", out.Result)
	}

	t.Log("an update over a broken ledger applies, deletes nothing and stays in progress")
	c.request(t, "1.0.1")
	out := c.sync(t)
	if out.Result == nil || out.Result.LedgerErr == nil || !c.exists("first") || !c.exists("held") {
		t.Fatalf("result %+v: the pass must apply, report the ledger and delete nothing", out.Result)
	}
	cv := c.clusterVersion(t)
	wantCondition(t, cv, clusterversion.ConditionFailing, configv1.ConditionTrue, clusterversion.ReasonDeleteLedgerUnreadable, "configmap ns/ledger", "no delete starts until it is repaired")
	wantCondition(t, cv, configv1.OperatorUpgradeable, configv1.ConditionFalse, clusterversion.ReasonDeleteLedgerUnreadable)
	if cv.Status.History[0].State != configv1.PartialUpdate {
		t.Errorf("history[0] = %s %s, want 1.0.1 still partial", cv.Status.History[0].Version, cv.Status.History[0].State)
	}
	for _, a := range c.dynamic.Actions() {
		if a.GetVerb() == "delete" {
			t.Fatalf("a DELETE was sent over an unreadable ledger: %v", a)
		}
	}

	t.Log("once repaired, the update starts its deletes and completes")
	store.broken = false
	out = c.sync(t)
	if out.Mode != graph.ModeUpdate || len(out.Result.Deletes.InProgress) == 0 {
		t.Fatalf("mode %s, deletes %+v: the repaired ledger lets the update's deletes start", out.Mode, out.Result.Deletes)
	}
	cv = c.clusterVersion(t)
	wantCondition(t, cv, clusterversion.ConditionFailing, configv1.ConditionFalse, "")
	wantHistory(t, cv, "1.0.1", "1.0.0")
}

// TestSyncReportsAnUnreadableCleanupStateAndKeepsApplying: a cleanup
// state ConfigMap that does not decode stops no pass; it is Failing and
// Upgradeable=False, never overwritten, and clears once repaired.
func TestSyncReportsAnUnreadableCleanupStateAndKeepsApplying(t *testing.T) {
	ctx := context.Background()
	kube := kubefake.NewClientset(&corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cleanups"},
		Data:       map[string]string{"records.json": "[{},{"},
	})
	c := newFakeClusterWithLedger(t, storyStore(t), "1.0.0", &deletion.MemoryStore{}, cleanup.NewConfigMapStore(kube, "ns", "cleanups"))
	out := c.sync(t)
	if out.Result == nil || !out.Result.Complete() || out.Result.CleanupErr == nil {
		t.Fatalf("result %+v: the pass must apply and report the cleanup state", out.Result)
	}
	cv := c.clusterVersion(t)
	wantCondition(t, cv, clusterversion.ConditionFailing, configv1.ConditionTrue, clusterversion.ReasonOperandCleanupStateUnreadable, "configmap ns/cleanups", "Repairing the operand cleanup state")
	wantCondition(t, cv, configv1.OperatorUpgradeable, configv1.ConditionFalse, clusterversion.ReasonOperandCleanupStateUnreadable)
	if cm, _ := kube.CoreV1().ConfigMaps("ns").Get(ctx, "cleanups", metav1.GetOptions{}); cm.Data["records.json"] != "[{},{" {
		t.Errorf("the unreadable ConfigMap was overwritten: %v", cm.Data)
	}

	t.Log("once the ConfigMap is removed, the next pass is clean")
	if err := kube.CoreV1().ConfigMaps("ns").Delete(ctx, "cleanups", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if out := c.sync(t); out.Result.CleanupErr != nil {
		t.Fatalf("still unreadable after the repair: %v", out.Result.CleanupErr)
	}
	cv = c.clusterVersion(t)
	wantCondition(t, cv, clusterversion.ConditionFailing, configv1.ConditionFalse, "")
	if u := clusterversion.FindCondition(cv.Status.Conditions, configv1.OperatorUpgradeable); u != nil && u.Reason == clusterversion.ReasonOperandCleanupStateUnreadable {
		t.Errorf("Upgradeable still says %s", u.Reason)
	}
}

// TestTransitionsCarryTheTimeTheyHappened: a pass that takes a minute
// completes its history entry, and turns its conditions, at its end; the
// entry starts when the update was accepted.
func TestTransitionsCarryTheTimeTheyHappened(t *testing.T) {
	c := newFakeCluster(t, storyStore(t), "1.0.0")
	// Each applied object takes the pass ten seconds.
	for _, verb := range []string{"create", "patch"} {
		c.dynamic.PrependReactor(verb, "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
			c.clock.Step(10 * time.Second)
			return false, nil, nil
		})
	}
	start := c.clock.Now()
	c.sync(t)
	end := c.clock.Now()
	if !end.After(start) {
		t.Fatal("the pass took no time; the test cannot tell start from end")
	}
	cv := c.clusterVersion(t)
	h := cv.Status.History[0]
	if !h.StartedTime.Time.Equal(start) || h.CompletionTime == nil || !h.CompletionTime.Time.Equal(end) {
		t.Errorf("history[0] started %s, completed %v; want %s and %s", h.StartedTime, h.CompletionTime, start, end)
	}
	for _, ct := range []configv1.ClusterStatusConditionType{configv1.OperatorAvailable, configv1.OperatorProgressing} {
		if c := clusterversion.FindCondition(cv.Status.Conditions, ct); c == nil || !c.LastTransitionTime.Time.Equal(end) {
			t.Errorf("%s turned at %v, want %s, when the pass ended", ct, c, end)
		}
	}
	if c := clusterversion.FindCondition(cv.Status.Conditions, clusterversion.ConditionReleaseAccepted); c == nil || !c.LastTransitionTime.Time.Equal(start) {
		t.Errorf("ReleaseAccepted turned at %v, want %s, when the release was accepted", c, start)
	}
}
