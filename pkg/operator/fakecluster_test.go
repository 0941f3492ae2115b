package operator

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	configclient "github.com/openshift/client-go/config/clientset/versioned"
	configfake "github.com/openshift/client-go/config/clientset/versioned/fake"
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
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/payload-applier/payload-applier/pkg/apply"
	"github.com/payload-applier/payload-applier/pkg/apply/cleanup"
	"github.com/payload-applier/payload-applier/pkg/apply/deletion"
	"github.com/payload-applier/payload-applier/pkg/clusterversion"
	"github.com/payload-applier/payload-applier/pkg/payload"
)

var (
	configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	// widgets are the custom resources of a CRD some tests put in place.
	widgets = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
)

// staticMapper lets a fixed RESTMapper stand in for a discovery one.
type staticMapper struct{ meta.RESTMapper }

func (staticMapper) Reset() {}

// fakeCluster is an Operator on fake clients: ConfigMaps served by a
// dynamic fake that answers server-side applies with the object as sent and
// keeps an object with finalizers, terminating, when it is deleted.
type fakeCluster struct {
	op      *Operator
	config  *configfake.Clientset
	dynamic *dynamicfake.FakeDynamicClient
	events  *record.FakeRecorder
	clock   *clocktesting.FakeClock
}

// testSyncOptions keep retries and the watch after a DELETE short.
func testSyncOptions() apply.SyncOptions {
	return apply.SyncOptions{
		Backoff:      &wait.Backoff{Duration: time.Millisecond, Factor: 1, Steps: 2},
		DeleteSettle: 50 * time.Millisecond,
	}
}

// newFakeCluster starts a cluster whose ClusterVersion asks for version.
func newFakeCluster(t testing.TB, releases ReleaseSource, version string) *fakeCluster {
	t.Helper()
	return newFakeClusterWithLedger(t, releases, version, &deletion.MemoryStore{})
}

// newFakeClusterWithLedger is newFakeCluster with the delete ledger in
// store, and the operand cleanup state in cleanups when given.
func newFakeClusterWithLedger(t testing.TB, releases ReleaseSource, version string, store deletion.Store, cleanups ...cleanup.Store) *fakeCluster {
	t.Helper()
	c := &fakeCluster{
		config: configfake.NewSimpleClientset(&configv1.ClusterVersion{
			ObjectMeta: metav1.ObjectMeta{Name: "version"},
			Spec:       configv1.ClusterVersionSpec{ClusterID: "2b2ac0a1-6e0b-4d0e-9c8e-3b6a4b1f0d7e", DesiredUpdate: &configv1.Update{Version: version}},
		}),
		events: record.NewFakeRecorder(100),
		clock:  clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)),
	}
	// The default version lets a lookup by kind alone resolve, as discovery
	// does in a cluster.
	rm := meta.NewDefaultRESTMapper([]schema.GroupVersion{{Version: "v1"}})
	rm.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	c.dynamic = dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{configMaps: "ConfigMapList", payload.CRDGVR: "CustomResourceDefinitionList", widgets: "WidgetList"})
	c.dynamic.PrependReactor("patch", "configmaps", c.serverSideApply)
	c.dynamic.PrependReactor("delete", "configmaps", c.holdFinalized)
	cfg := Config{Clock: c.clock}
	cfg.setDefaults()
	ecfg := apply.Config{
		Dynamic: c.dynamic, Mapper: staticMapper{rm}, Ledger: store,
		Recorder: c.events, EventObject: cfg.eventObject(), Clock: c.clock,
	}
	if len(cleanups) > 0 {
		ecfg.CleanupStore = cleanups[0]
	}
	engine, err := apply.New(ecfg)
	if err != nil {
		t.Fatal(err)
	}
	c.op, err = New(Config{
		KubeClient: kubefake.NewClientset(), ConfigClient: c.config, DynamicClient: c.dynamic,
		Engine: engine, Recorder: c.events, Releases: releases, Clock: c.clock, Sync: testSyncOptions(),
	})
	if err != nil {
		t.Fatal(err)
	}
	c.op.writer.put = echoingStatusPut(c.config)
	// A new resourceVersion for each write, as the apiserver gives, so
	// that what is cached per version is read again after a change.
	written := 0
	stamp := func(a clienttesting.Action) (bool, runtime.Object, error) {
		if o, ok := a.(interface{ GetObject() runtime.Object }); ok {
			if m, err := meta.Accessor(o.GetObject()); err == nil {
				written++
				m.SetResourceVersion(fmt.Sprint(written))
			}
		}
		return false, nil, nil
	}
	c.config.PrependReactor("create", "clusterversions", stamp)
	c.config.PrependReactor("update", "clusterversions", stamp)
	return c
}

// echoingStatusPut puts a status through the typed fake, which keeps what
// the pinned API's types hold; its answer carries the risk status back, as
// the apiserver's does with a CRD that keeps it.
func echoingStatusPut(cc configclient.Interface) statusPut {
	typed := typedStatusPut(cc)
	return func(ctx context.Context, name string, body []byte) ([]byte, error) {
		raw, err := typed(ctx, name, body)
		if err != nil {
			return nil, err
		}
		var sent, got map[string]any
		if err := json.Unmarshal(body, &sent); err != nil {
			return nil, err
		}
		if err := json.Unmarshal(raw, &got); err != nil {
			return nil, err
		}
		got["status"] = sent["status"]
		return json.Marshal(got)
	}
}

// serverSideApply stores an applied object as sent, as the apiserver does
// when the applier owns every field, keeping the identity of the live one.
func (c *fakeCluster) serverSideApply(a clienttesting.Action) (bool, runtime.Object, error) {
	pa, ok := a.(clienttesting.PatchActionImpl)
	if !ok || pa.PatchType != types.ApplyPatchType {
		return false, nil, nil
	}
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(pa.Patch); err != nil {
		return true, nil, err
	}
	if len(pa.PatchOptions.DryRun) > 0 {
		return true, obj, nil
	}
	tracker := c.dynamic.Tracker()
	live, err := tracker.Get(configMaps, pa.Namespace, pa.Name)
	if err != nil {
		return true, obj, tracker.Create(configMaps, obj, pa.Namespace)
	}
	obj.SetUID(live.(*unstructured.Unstructured).GetUID())
	return true, obj, tracker.Update(configMaps, obj, pa.Namespace)
}

// holdFinalized marks an object with finalizers as terminating instead of
// removing it, as the apiserver does.
func (c *fakeCluster) holdFinalized(a clienttesting.Action) (bool, runtime.Object, error) {
	da := a.(clienttesting.DeleteActionImpl)
	got, err := c.dynamic.Tracker().Get(configMaps, da.Namespace, da.Name)
	if err != nil {
		return false, nil, nil
	}
	obj := got.(*unstructured.Unstructured)
	if len(obj.GetFinalizers()) == 0 {
		return false, nil, nil
	}
	if obj.GetDeletionTimestamp() == nil {
		now := metav1.NewTime(c.clock.Now())
		obj.SetDeletionTimestamp(&now)
		if err := c.dynamic.Tracker().Update(configMaps, obj, da.Namespace); err != nil {
			return true, nil, err
		}
	}
	return true, obj, nil
}

// releaseFinalizers clears a terminating object's finalizers, which removes it.
func (c *fakeCluster) releaseFinalizers(t *testing.T, name string) {
	t.Helper()
	got, err := c.dynamic.Tracker().Get(configMaps, demoNamespace, name)
	if err != nil {
		t.Fatal(err)
	}
	if got.(*unstructured.Unstructured).GetDeletionTimestamp() == nil {
		t.Fatalf("ConfigMap %s is not terminating", name)
	}
	if err := c.dynamic.Tracker().Delete(configMaps, demoNamespace, name); err != nil {
		t.Fatal(err)
	}
}

// exists reports whether the ConfigMap is in the cluster.
func (c *fakeCluster) exists(name string) bool {
	_, err := c.dynamic.Tracker().Get(configMaps, demoNamespace, name)
	return err == nil
}

func (c *fakeCluster) sync(t testing.TB) *Outcome {
	t.Helper()
	out, err := c.op.Sync(context.Background(), nil)
	if err != nil {
		t.Fatalf("sync: %v", err)
	}
	return out
}

func (c *fakeCluster) request(t *testing.T, version string) {
	t.Helper()
	if err := c.op.RequestRelease(context.Background(), version, false); err != nil {
		t.Fatal(err)
	}
}

func (c *fakeCluster) clusterVersion(t testing.TB) *configv1.ClusterVersion {
	t.Helper()
	cv, err := c.config.ConfigV1().ClusterVersions().Get(context.Background(), "version", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cv
}

// statusWrites counts the ClusterVersion status updates sent so far.
func (c *fakeCluster) statusWrites() int {
	n := 0
	for _, a := range c.config.Actions() {
		if a.GetVerb() == "update" && a.GetSubresource() == "status" {
			n++
		}
	}
	return n
}

// takeEvents returns the Events recorded since the last call.
func (c *fakeCluster) takeEvents() []string {
	var out []string
	for {
		select {
		case e := <-c.events.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// upgradeable is the Upgradeable the operator decides for cv now.
func (c *fakeCluster) upgradeable(cv *configv1.ClusterVersion) configv1.ClusterOperatorStatusCondition {
	up := c.op.observe.upgradeable(context.Background(), cv)
	return clusterversion.Decide(clusterversion.Observed{CV: cv, Upgradeable: &up}, metav1.Now()).Upgradeable
}

// actionName is the name of the object a get or a create names.
func actionName(a clienttesting.Action) string {
	switch a := a.(type) {
	case clienttesting.GetAction:
		return a.GetName()
	case clienttesting.CreateAction:
		if obj, ok := a.GetObject().(metav1.Object); ok {
			return obj.GetName()
		}
	}
	return ""
}
