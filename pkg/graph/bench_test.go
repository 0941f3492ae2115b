package graph

import (
	"context"
	"fmt"
	"testing"
)

// benchPayloads are the payloads every benchmark runs on.
func benchPayloads() []struct {
	name  string
	tasks []*Task
} {
	return []struct {
		name  string
		tasks []*Task
	}{
		{"real-shaped-516", realShapedPayload()},
		{"generated-10000", largePayload(10000)},
	}
}

var benchModes = []Mode{ModeUpdate, ModeInstall, ModeReconcile}

func BenchmarkBuild(b *testing.B) {
	for _, p := range benchPayloads() {
		for _, mode := range benchModes {
			b.Run(fmt.Sprintf("%s/%s", p.name, mode), func(b *testing.B) {
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					Build(p.tasks, BuildOptions{Mode: mode, Attempt: i})
				}
			})
		}
	}
}

func BenchmarkBuildDeletes(b *testing.B) {
	for _, p := range benchPayloads() {
		// Every task a delete: the worst case for the delete walk.
		all := make([]*Task, len(p.tasks))
		for i, t := range p.tasks {
			copied := *t
			copied.Delete = true
			all[i] = &copied
		}
		b.Run(p.name, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				BuildDeletes(all, BuildOptions{})
			}
		})
	}
}

// BenchmarkRun measures the runner's own cost: a no-op task function, the
// mode's recommended parallelism.
func BenchmarkRun(b *testing.B) {
	noop := func(context.Context, *Task) error { return nil }
	for _, p := range benchPayloads() {
		for _, mode := range benchModes {
			g := Build(p.tasks, BuildOptions{Mode: mode})
			opts := RunOptions{Parallelism: RecommendedParallelism(mode, g)}
			b.Run(fmt.Sprintf("%s/%s", p.name, mode), func(b *testing.B) {
				b.ReportAllocs()
				for range b.N {
					if err := Run(context.Background(), g, opts, noop).Err(); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkOCPReal builds the graphs of the real payload's file names.
func BenchmarkOCPReal(b *testing.B) {
	tasks := ocpRealTasks(b)
	for _, mode := range benchModes {
		b.Run(string(mode), func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				Build(tasks, BuildOptions{Mode: mode})
			}
		})
	}
	b.Run("run-update", func(b *testing.B) {
		g := Build(tasks, BuildOptions{Mode: ModeUpdate})
		noop := func(context.Context, *Task) error { return nil }
		b.ReportAllocs()
		for range b.N {
			Run(context.Background(), g, RunOptions{Parallelism: 16}, noop)
		}
	})
}
