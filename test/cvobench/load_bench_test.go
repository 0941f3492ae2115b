package cvobench

import (
	"os"
	"testing"

	"github.com/payload-applier/payload-applier/pkg/apply"
	"github.com/payload-applier/payload-applier/pkg/graph"
	"github.com/payload-applier/payload-applier/pkg/payload"
)

// payloadDir is the payload both sides load: PAYLOAD, or ocp-real beside
// the checkout.
func payloadDir(b *testing.B) string {
	dir := os.Getenv("PAYLOAD")
	if dir == "" {
		dir = "../../../shared/payloads/ocp-real"
	}
	if _, err := os.Stat(dir); err != nil {
		b.Skipf("payload %s not available: %v", dir, err)
	}
	return dir
}

// BenchmarkLoadFilterGraph is what every apply, plan and lint pays before
// its first request: read and parse the payload, apply the inclusion
// filters of a default self-managed cluster, build the update-mode graph
// and the delete walk. cold parses every file; cached is a repeat load in
// the same process (parse cache on, as in the operator).
func BenchmarkLoadFilterGraph(b *testing.B) {
	dir := payloadDir(b)
	opts := payload.DefaultLoadOptions()
	run := func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			all, _, err := payload.LoadAll(dir)
			if err != nil {
				b.Fatal(err)
			}
			tasks := apply.Tasks(all.Filter(opts))
			graph.Build(tasks, graph.BuildOptions{Mode: graph.ModeUpdate})
			graph.BuildDeletes(tasks)
		}
	}
	b.Run("cold", func(b *testing.B) {
		defer payload.SetParseCacheLimit(payload.SetParseCacheLimit(0))
		run(b)
	})
	b.Run("cached", func(b *testing.B) {
		if _, _, err := payload.LoadAll(dir); err != nil {
			b.Fatal(err)
		}
		run(b)
	})
}
