package operator

import (
	"context"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	configinformers "github.com/openshift/client-go/config/informers/externalversions"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/payload-applier/payload-applier/pkg/precondition"
)

// startCaches runs the informers the loop runs, and hands their stores to
// the operator once they synced.
func (c *fakeCluster) startCaches(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	factory := configinformers.NewSharedInformerFactory(c.config, 0)
	cv, co, fg := factory.Config().V1().ClusterVersions().Informer(), factory.Config().V1().ClusterOperators().Informer(),
		factory.Config().V1().FeatureGates().Informer()
	factory.Start(ctx.Done())
	stopAcks := c.op.observe.watchAdminAcks(ctx, func() {})
	t.Cleanup(func() { cancel(); factory.Shutdown(); stopAcks() })
	if !cache.WaitForCacheSync(ctx.Done(), cv.HasSynced, co.HasSynced, fg.HasSynced) {
		t.Fatal("caches did not sync")
	}
	c.op.caches.set(func(l *loopCaches) { l.cvInformer, l.coInformer, l.fgInformer = cv, co, fg })
	for _, name := range []types.NamespacedName{precondition.DefaultAdminGates, precondition.DefaultAdminAcks} {
		if _, ok := c.op.caches.adminConfigMap(forLoop(context.Background()), name); !ok {
			// The admin informers start with watchAdminAcks; wait for them.
			deadline := time.Now().Add(5 * time.Second)
			for ; !ok && time.Now().Before(deadline); _, ok = c.op.caches.adminConfigMap(forLoop(context.Background()), name) {
				time.Sleep(10 * time.Millisecond)
			}
			if !ok {
				t.Fatalf("the cache of %s did not sync", name)
			}
		}
	}
}

// reads lists the GETs and LISTs the fakes were sent of what the loop's
// caches hold.
func (c *fakeCluster) cachedReads() []string {
	var reads []string
	actions := append(c.config.Actions(), c.kube().Actions()...)
	for _, a := range actions {
		if a.GetVerb() != "get" && a.GetVerb() != "list" {
			continue
		}
		switch r := a.GetResource().Resource; r {
		case "clusterversions", "clusteroperators", "featuregates", "configmaps":
			name := ""
			if g, ok := a.(clienttesting.GetAction); ok {
				name = g.GetName()
			}
			reads = append(reads, a.GetVerb()+" "+r+" "+name)
		}
	}
	return reads
}

func TestPassesReadThroughTheLoopsCaches(t *testing.T) {
	c := newFakeCluster(t, adminAckStore(t, true), "1.0.0")
	c.putConfigMap(t, precondition.DefaultAdminGates, map[string]string{testGate: testGateText})
	c.putConfigMap(t, precondition.DefaultAdminAcks, nil)
	c.startCaches(t)
	loopSync := func() {
		t.Helper()
		if _, err := c.op.Sync(forLoop(context.Background()), nil); err != nil {
			t.Fatal(err)
		}
	}
	loopSync()
	wantCondition(t, c.clusterVersion(t), configv1.OperatorUpgradeable, configv1.ConditionFalse, precondition.ReasonAdminAckRequired)

	t.Log("an ack the watch brings is decided on without a read")
	c.putConfigMap(t, precondition.DefaultAdminAcks, map[string]string{testGate: "true"})
	waitFor(t, "the ack in the cache", func() bool {
		cm, _ := c.op.caches.adminConfigMap(forLoop(context.Background()), precondition.DefaultAdminAcks)
		return cm.Data[testGate] == "true"
	})
	c.config.ClearActions()
	c.kube().ClearActions()
	loopSync()
	wantCondition(t, c.clusterVersion(t), configv1.OperatorUpgradeable, configv1.ConditionTrue, "AsExpected")
	if reads := c.cachedReads(); len(reads) > 1 {
		// One is the test's own read of the ClusterVersion above.
		t.Errorf("a pass read what the caches hold: %q", reads)
	}

	t.Log("a pass the loop did not start reads the API, and sees a change made just before it")
	c.putConfigMap(t, precondition.DefaultAdminAcks, nil)
	c.config.ClearActions()
	c.kube().ClearActions()
	c.sync(t)
	wantCondition(t, c.clusterVersion(t), configv1.OperatorUpgradeable, configv1.ConditionFalse, precondition.ReasonAdminAckRequired)
	if reads := c.cachedReads(); len(reads) < 5 {
		t.Errorf("a pass outside the loop made %d reads of them, want the ClusterVersion, FeatureGate, ClusterOperators and both admin ConfigMaps: %q", len(reads), reads)
	}
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !ok(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func TestNewestPrefersTheWritersOwnWriteOverTheVersionItReplaced(t *testing.T) {
	cv := func(uid, rv, reason string) *configv1.ClusterVersion {
		return &configv1.ClusterVersion{ObjectMeta: metav1.ObjectMeta{Name: "version", UID: types.UID(uid), ResourceVersion: rv},
			Status: configv1.ClusterVersionStatus{Conditions: []configv1.ClusterOperatorStatusCondition{{Type: "Failing", Reason: reason}}}}
	}
	for _, tc := range []struct {
		name           string
		replaced       string
		written        *configv1.ClusterVersion
		cached         *configv1.ClusterVersion
		wantFromWriter bool
	}{
		{name: "nothing written", cached: cv("a", "1", "cached")},
		{name: "the cache still holds the replaced version", replaced: "1", written: cv("a", "2", "written"), cached: cv("a", "1", "cached"), wantFromWriter: true},
		{name: "the cache caught up", replaced: "1", written: cv("a", "2", "written"), cached: cv("a", "2", "cached")},
		{name: "another writer wrote since", replaced: "1", written: cv("a", "2", "written"), cached: cv("a", "3", "cached")},
		{name: "the ClusterVersion was recreated", replaced: "1", written: cv("a", "2", "written"), cached: cv("b", "1", "cached")},
		{name: "no resourceVersions to compare", replaced: "", written: cv("a", "", "written"), cached: cv("a", "", "cached")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &statusWriter{}
			if tc.written != nil {
				w.remember(tc.replaced, tc.written)
			}
			got := w.newest(tc.cached).Status.Conditions[0].Reason
			if want := map[bool]string{true: "written", false: "cached"}[tc.wantFromWriter]; got != want {
				t.Errorf("newest gave the %s status, want the %s", got, want)
			}
		})
	}
}
