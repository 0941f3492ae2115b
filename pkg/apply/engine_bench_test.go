package apply

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/payload-applier/payload-applier/pkg/apply/deletion"
	"github.com/payload-applier/payload-applier/pkg/graph"
	"github.com/payload-applier/payload-applier/pkg/payload"
)

// benchObjects is the size of the payload the engine benchmarks sync.
const benchObjects = 1000

// BenchmarkSyncPerObject measures the engine's own cost per manifest on a
// fake cluster: reading (one LIST per namespace), comparing, writing and
// recording results. The fake answers in microseconds, so this is the
// client-side overhead that adds to every API round trip in the e2e
// benchmarks (test/bench).
//
//	go test -run '^$' -bench SyncPerObject -benchmem ./pkg/apply/
func BenchmarkSyncPerObject(b *testing.B) {
	rel := benchRelease(b, benchObjects, 0)
	cases := []struct {
		name    string
		mode    graph.Mode
		present bool
	}{
		{"install-creates", graph.ModeInstall, false},
		{"reconcile-unchanged", graph.ModeReconcile, true},
		{"update-unchanged", graph.ModeUpdate, true},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				e := benchEngine(b, rel, tc.present)
				b.StartTimer()
				res, err := e.Sync(context.Background(), rel, SyncOptions{Mode: tc.mode})
				if err != nil {
					b.Fatal(err)
				}
				if !res.Complete() {
					b.Fatalf("%d of %d applied: %v", res.Done, res.Total, res.Errors)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchObjects/1e3, "µs/object")
		})
	}
}

// BenchmarkPlanOfflineUpdate plans a large payload whose every tenth
// manifest is a delete: an update plan checks each delete against the
// release's marked set, which must stay linear in the payload (it once
// scanned every manifest per delete: 15–20 s at 20,000).
//
//	go test -run '^$' -bench PlanOffline -benchmem ./pkg/apply/
func BenchmarkPlanOffline(b *testing.B) {
	rel := benchRelease(b, 20000, 10)
	for _, mode := range []graph.Mode{graph.ModeInstall, graph.ModeUpdate} {
		b.Run(fmt.Sprintf("%s-20000", mode), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if p := PlanOffline(rel, PlanOptions{Mode: mode}); len(p.Actions) != len(rel.Manifests) {
					b.Fatalf("%d actions for %d manifests", len(p.Actions), len(rel.Manifests))
				}
			}
		})
	}
}

// benchRelease writes and loads a payload of n ConfigMaps over 16
// components; with deleteEvery > 0, every deleteEvery-th is a delete.
func benchRelease(b *testing.B, n, deleteEvery int) *payload.Release {
	b.Helper()
	dir := b.TempDir()
	files := map[string]*strings.Builder{}
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("0000_50_bench-%02d_00_configmaps.yaml", i%16)
		if files[name] == nil {
			files[name] = &strings.Builder{}
		} else {
			files[name].WriteString("---\n")
		}
		del := ""
		if deleteEvery > 0 && i%deleteEvery == 0 {
			del = "\n    release.openshift.io/delete: \"true\""
		}
		fmt.Fprintf(files[name], "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%05d\n  namespace: bench\n  annotations:\n    include.release.openshift.io/self-managed-high-availability: \"true\"%s\ndata:\n  index: \"%d\"\n  config: |\n    replicas: %d\n", i, del, i, i%5)
	}
	files["release-metadata"] = &strings.Builder{}
	files["release-metadata"].WriteString(`{"kind":"cincinnati-metadata-v0","version":"1.0.0","previous":[],"metadata":{}}`)
	files["image-references"] = &strings.Builder{}
	files["image-references"].WriteString(`{"kind":"ImageStream","apiVersion":"image.openshift.io/v1","metadata":{"name":"1.0.0"},"spec":{"tags":[]}}`)
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body.String()), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	rel, err := payload.Load(dir, payload.DefaultLoadOptions())
	if err != nil {
		b.Fatal(err)
	}
	return rel
}

type benchMapper struct{ meta.RESTMapper }

func (benchMapper) Reset() {}

// benchEngine is an engine on a fake cluster that holds the release's
// objects when present is set. Server-side applies store the body as sent.
func benchEngine(b *testing.B, rel *payload.Release, present bool) *Engine {
	b.Helper()
	cmGVR := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	rm := meta.NewDefaultRESTMapper(nil)
	rm.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	var objs []runtime.Object
	if present {
		for _, m := range rel.Manifests {
			live := m.Obj.DeepCopy()
			live.SetResourceVersion("1")
			objs = append(objs, live)
		}
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{cmGVR: "ConfigMapList"}, objs...)
	dyn.PrependReactor("patch", "configmaps", func(a clienttesting.Action) (bool, runtime.Object, error) {
		pa := a.(clienttesting.PatchActionImpl)
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(pa.Patch); err != nil {
			return true, nil, err
		}
		obj.SetResourceVersion("2")
		if err := dyn.Tracker().Add(obj); err != nil {
			return true, nil, err
		}
		return true, obj, nil
	})
	e, err := New(Config{Dynamic: dyn, Mapper: benchMapper{rm}, Ledger: &deletion.MemoryStore{}})
	if err != nil {
		b.Fatal(err)
	}
	return e
}
