//go:build cvobench_cvo

// This file is copied into the cluster-version-operator's pkg/payload by
// run.sh and built there (tag cvobench_cvo); the cvobench module skips it.

package payload

import (
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/util/sets"
)

// BenchmarkCVOLoadUpdateGraph is the CVO's load of a payload in update
// mode as its sync worker does it: LoadUpdate, then NewTaskGraph, Split on
// Jobs and Parallelize by run level and component.
func BenchmarkCVOLoadUpdateGraph(b *testing.B) {
	dir := os.Getenv("CVO_PAYLOAD")
	if _, err := os.Stat(filepath.Join(dir, ReleaseManifestDir)); err != nil {
		b.Skipf("CVO_PAYLOAD %q holds no %s: %v", dir, ReleaseManifestDir, err)
	}
	// The CVO logs every manifest it excludes, as in a cluster; keep the
	// cost, drop the text.
	devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	stderr := os.Stderr
	os.Stderr = devNull
	defer func() { os.Stderr = stderr; devNull.Close() }()
	b.ReportAllocs()
	for b.Loop() {
		update, err := LoadUpdate(dir, "example.com/release@sha256:0", "", "", DefaultClusterProfile, nil, sets.New[string]())
		if err != nil {
			b.Fatal(err)
		}
		tasks := make([]*Task, 0, len(update.Manifests))
		for i := range update.Manifests {
			tasks = append(tasks, &Task{Index: i + 1, Total: len(update.Manifests), Manifest: &update.Manifests[i]})
		}
		graph := NewTaskGraph(tasks)
		graph.Split(SplitOnJobs)
		graph.Parallelize(ByNumberAndComponent)
	}
}
