package apply

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/payload-applier/payload-applier/pkg/apply/deletion"
	"github.com/payload-applier/payload-applier/pkg/graph"
)

func cmMetadata(name, rv string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", ResourceVersion: rv},
	}
}

// watchingEngine is an engine on fakeConfigMaps holding objs, with a
// metadata client serving watched; each request to the dynamic client is
// shown to observe, then answered as the apiserver would.
func watchingEngine(t *testing.T, observe func(clienttesting.Action), objs []runtime.Object, watched ...runtime.Object) (*Engine, *dynamicfake.FakeDynamicClient, *metadatafake.FakeMetadataClient) {
	t.Helper()
	rm, dyn := fakeConfigMaps(objs...)
	dyn.PrependReactor("*", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if observe != nil {
			observe(a)
		}
		return answerApplyPatches(a)
	})
	scheme := metadatafake.NewTestScheme()
	_ = metav1.AddMetaToScheme(scheme)
	md := metadatafake.NewSimpleMetadataClient(scheme, watched...)
	e, err := New(Config{Dynamic: dyn, Mapper: resettable{rm}, Ledger: &deletion.MemoryStore{}, Metadata: md})
	if err != nil {
		t.Fatal(err)
	}
	return e, dyn, md
}

// Once the engine watches what it applied, a resync reads only the
// objects whose resourceVersion changed since it found them as their
// manifests want; without the watch, it reads them all.
func TestAResyncReadsOnlyWhatTheWatchSawChange(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	requests := map[string]int{}
	e, _, md := watchingEngine(t, func(a clienttesting.Action) { requests[a.GetVerb()]++ },
		[]runtime.Object{liveCM("a", "v"), liveCM("b", "v"), liveCM("c", "v")}, cmMetadata("a", "7"), cmMetadata("b", "7"), cmMetadata("c", "7"))
	rel := planRelease(t, planDoc{"0000_50_a_01_a.yaml", cmYAML("a", "v")},
		planDoc{"0000_50_a_02_b.yaml", cmYAML("b", "v")}, planDoc{"0000_50_a_03_c.yaml", cmYAML("c", "v")})
	resync := func() map[string]int {
		t.Helper()
		clear(requests)
		res, err := e.Sync(ctx, rel, SyncOptions{Mode: graph.ModeReconcile})
		if err != nil || !res.Complete() {
			t.Fatalf("sync: %v %v", err, res.Errors)
		}
		for _, o := range res.Objects {
			if o.Action != ActionUnchanged {
				t.Errorf("%s: %s, want unchanged", o.ID, o.Action)
			}
		}
		return map[string]int{"get": requests["get"], "list": requests["list"]}
	}
	if got := resync(); got["get"] != 3 {
		t.Fatalf("resync before watching: %v; want a GET each", got)
	}
	// Watching starts with the first pass after WatchLive, for what it
	// applied, and a resync right after it waits for the watches to list
	// rather than read everything.
	e.WatchLive(ctx)
	if _, err := e.Sync(ctx, rel, SyncOptions{Mode: graph.ModeInstall}); err != nil {
		t.Fatal(err)
	}
	if got := resync(); got["get"]+got["list"] != 0 {
		t.Errorf("resync with nothing changed: %v; want no read", got)
	}
	waitVersion := func(name, rv string) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			got, ok := e.live.version(configMapsGVR, "ns", name)
			return ok && got == rv, nil
		}); err != nil {
			t.Fatalf("the watch never saw %s at %s", name, rv)
		}
	}
	// Someone else writes b: its new version makes the next pass read it,
	// and only it.
	if _, err := md.Resource(configMapsGVR).Namespace("ns").Patch(ctx, "b", types.MergePatchType,
		[]byte(`{"metadata":{"resourceVersion":"8"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitVersion("b", "8")
	if got := resync(); got["get"] != 1 || got["list"] != 0 {
		t.Errorf("resync after b changed: %v; want one GET", got)
	}
}

// An object is taken as unchanged only when the watch knows it at the very
// version this engine last found healthy and as this manifest wants it.
func TestUnchangedSinceNeedsTheSameVersionManifestAndHealth(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rm, dyn := fakeConfigMaps()
	scheme := metadatafake.NewTestScheme()
	_ = metav1.AddMetaToScheme(scheme)
	md := metadatafake.NewSimpleMetadataClient(scheme, cmMetadata("a", "7"))
	e, err := New(Config{Dynamic: dyn, Mapper: resettable{rm}, Ledger: &deletion.MemoryStore{}, Metadata: md})
	if err != nil {
		t.Fatal(err)
	}
	rel := planRelease(t, planDoc{"0000_50_a_01_a.yaml", cmYAML("a", "v")})
	m := rel.Manifests[0]
	rc := resourceClient{gvr: configMapsGVR, namespace: "ns"}
	if e.unchangedSince(m, rc) {
		t.Fatal("unchanged before WatchLive")
	}
	e.WatchLive(ctx)
	good := appliedState{hash: m.Hash(), resourceVersion: "7", gvr: configMapsGVR, healthy: true}
	e.applied[m.ID()] = good
	e.live.watch(map[schema.GroupVersionResource]bool{configMapsGVR: true}, true)
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return e.unchangedSince(m, rc), nil
	}); err != nil {
		t.Fatal("never unchanged at the same version, manifest and health")
	}
	for name, st := range map[string]appliedState{
		"another version":  {hash: good.hash, resourceVersion: "6", gvr: good.gvr, healthy: true},
		"another manifest": {hash: good.hash + 1, resourceVersion: "7", gvr: good.gvr, healthy: true},
		"unhealthy":        {hash: good.hash, resourceVersion: "7", gvr: good.gvr, healthy: false},
	} {
		e.applied[m.ID()] = st
		if e.unchangedSince(m, rc) {
			t.Errorf("%s: taken as unchanged", name)
		}
	}
	e.applied[m.ID()] = good
	if e.unchangedSince(m, resourceClient{gvr: configMapsGVR, namespace: "other"}) {
		t.Error("another namespace: taken as unchanged")
	}
	// A resource no pass applies any more is no longer watched.
	e.live.watch(map[schema.GroupVersionResource]bool{}, true)
	if e.unchangedSince(m, rc) || len(e.live.informers) != 0 {
		t.Error("a resource no longer applied is still watched")
	}
}

// An install pass that did not complete asks for no watch: its retries
// would list every resource while the install still runs. The pass that
// completes asks for them, and they start once its caller reported it.
func TestOnlyACompletePassStartsWatches(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rm, dyn := fakeConfigMaps()
	dyn.PrependReactor("*", "*", func(a clienttesting.Action) (bool, runtime.Object, error) { return answerApplyPatches(a) })
	scheme := metadatafake.NewTestScheme()
	_ = metav1.AddMetaToScheme(scheme)
	e, err := New(Config{Dynamic: dyn, Mapper: resettable{rm}, Ledger: &deletion.MemoryStore{},
		Metadata: metadatafake.NewSimpleMetadataClient(scheme)})
	if err != nil {
		t.Fatal(err)
	}
	e.WatchLive(ctx)
	cm := planDoc{"0000_50_a_01_a.yaml", cmYAML("a", "v")}
	unknown := planDoc{"0000_50_a_02_g.yaml", "apiVersion: example.com/v1\nkind: Gizmo\nmetadata:\n  name: g\n"}
	opts := SyncOptions{Mode: graph.ModeInstall, Backoff: &wait.Backoff{Duration: time.Millisecond, Steps: 1}}
	if res, err := e.Sync(ctx, planRelease(t, cm, unknown), opts); err != nil || res.Complete() {
		t.Fatalf("sync with an unknown kind: %v, complete %v", err, res != nil && res.Complete())
	}
	e.StartWatches()
	if n := len(e.live.informers); n != 0 {
		t.Fatalf("an incomplete install pass started %d watches", n)
	}
	if res, err := e.Sync(ctx, planRelease(t, cm), opts); err != nil || !res.Complete() {
		t.Fatalf("sync: %v %v", err, res)
	}
	// The caller starts them once it has reported the pass.
	if n := len(e.live.informers); n != 0 {
		t.Fatalf("the pass started %d watches before its caller reported it", n)
	}
	e.StartWatches()
	if n := len(e.live.informers); n != 1 {
		t.Fatalf("the complete install pass started %d watches, want 1", n)
	}
}

// A create-only object is never written once it exists, and a resync
// reads it only when its watch saw it change, as any other.
func TestACreateOnlyObjectIsReadOnlyWhenItsWatchSawItChange(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	gets := 0
	e, _, _ := watchingEngine(t, func(a clienttesting.Action) {
		if a.GetVerb() == "get" || a.GetVerb() == "list" {
			gets++
		}
	}, []runtime.Object{liveCM("a", "other")}, cmMetadata("a", "7"))
	rel := planRelease(t, planDoc{"0000_50_a_01_a.yaml", cmYAML("a", "v", `release.openshift.io/create-only: "true"`)})
	resync := func() (reads int) {
		t.Helper()
		gets = 0
		res, err := e.Sync(ctx, rel, SyncOptions{Mode: graph.ModeReconcile})
		if err != nil || !res.Complete() {
			t.Fatalf("sync: %v %v", err, res.Errors)
		}
		if o := res.Objects[0]; o.Action != ActionSkipped {
			t.Errorf("%s: %s, want skipped", o.ID, o.Action)
		}
		return gets
	}
	e.WatchLive(ctx)
	if n := resync(); n != 1 {
		t.Fatalf("first pass: %d reads, want one", n)
	}
	if n := resync(); n != 0 {
		t.Errorf("resync with nothing changed: %d reads, want none", n)
	}
}

// A delete that is done reads its object again only once the watch of its
// resource sees it back; then it is reported, and not deleted.
func TestADoneDeleteReadsItsObjectOnlyWhenTheWatchSeesItBack(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reads := map[string]int{}
	e, dyn, md := watchingEngine(t, func(a clienttesting.Action) {
		if g, ok := a.(clienttesting.GetAction); ok {
			reads[g.GetName()]++
		}
		if a.GetVerb() == "delete" {
			t.Errorf("%s sent", a.GetVerb())
		}
	}, []runtime.Object{liveCM("keep", "v")}, cmMetadata("keep", "7"))
	rel := planRelease(t, planDoc{"0000_50_a_01_keep.yaml", cmYAML("keep", "v")},
		planDoc{"0000_50_a_02_gone.yaml", cmYAML("gone", "v", deleteAnn)})
	resync := func() (gone ObjectResult) {
		t.Helper()
		clear(reads)
		res, err := e.Sync(ctx, rel, SyncOptions{Mode: graph.ModeReconcile})
		if err != nil || !res.Complete() {
			t.Fatalf("sync: %v %v", err, res.Errors)
		}
		return res.Objects[1]
	}
	e.WatchLive(ctx)
	if o := resync(); o.Action != ActionAlreadyDeleted || reads["gone"] != 1 {
		t.Fatalf("first pass: %s after %d reads, want already deleted after one", o.Action, reads["gone"])
	}
	if o := resync(); o.Action != ActionAlreadyDeleted || reads["gone"] != 0 {
		t.Errorf("resync while it is gone: %s after %d reads, want already deleted without a read", o.Action, reads["gone"])
	}
	back := liveCM("gone", "v")
	if err := dyn.Tracker().Add(back); err != nil {
		t.Fatal(err)
	}
	if err := md.Tracker().Add(cmMetadata("gone", "9")); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return !e.watched().absent(configMapsGVR, "ns", "gone"), nil
	}); err != nil {
		t.Fatal("the watch never saw the object back")
	}
	if o := resync(); o.Action != ActionReappeared || reads["gone"] != 1 {
		t.Errorf("resync once it is back: %s after %d reads, want reappeared after one", o.Action, reads["gone"])
	}
}
