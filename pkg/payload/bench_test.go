package payload

import (
	"os"
	"runtime"
	"testing"
)

// BenchmarkOCPReal measures the real 4.20 payload (516 documents, 10 MB):
// reading and parsing it, filtering it for a self-managed cluster, and
// running every rule. docs/benchmarks.md records the figures.
func BenchmarkOCPReal(b *testing.B) {
	if _, err := os.Stat(ocpRealDir); err != nil {
		b.Skipf("the real payload %s is not available (%v); it sits beside the checkout in ../shared/payloads", ocpRealDir, err)
	}
	opts := DefaultLoadOptions()
	b.Run("load", func(b *testing.B) {
		defer SetParseCacheLimit(SetParseCacheLimit(0))
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := LoadAll(ocpRealDir); err != nil {
				b.Fatal(err)
			}
		}
	})
	// held is what a release costs the operator for as long as it keeps
	// it: every document loaded, then DropSource, with the parse cache off
	// as start runs it. Reported as held-MiB; time is not the point.
	b.Run("held", func(b *testing.B) {
		defer SetParseCacheLimit(SetParseCacheLimit(0))
		var held float64
		for b.Loop() {
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			all, _, err := LoadAll(ocpRealDir)
			if err != nil {
				b.Fatal(err)
			}
			all.DropSource()
			runtime.GC()
			runtime.ReadMemStats(&after)
			held = float64(after.HeapAlloc-before.HeapAlloc) / (1 << 20)
			runtime.KeepAlive(all)
		}
		b.ReportMetric(held, "held-MiB")
	})
	b.Run("load-cached", func(b *testing.B) {
		if _, _, err := LoadAll(ocpRealDir); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := LoadAll(ocpRealDir); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("load-filter-lint", func(b *testing.B) {
		defer SetParseCacheLimit(SetParseCacheLimit(0))
		b.ReportAllocs()
		for b.Loop() {
			all, findings, err := LoadAll(ocpRealDir)
			if err != nil {
				b.Fatal(err)
			}
			findings = append(findings, Lint(all.Filter(opts), LintOptions{})...)
			if HasErrors(findings) {
				b.Fatal("the real payload has errors")
			}
		}
	})
	all, _, err := LoadAll(ocpRealDir)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("filter", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			all.Filter(opts)
		}
	})
	filtered := all.Filter(opts)
	b.Run("lint", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			Lint(filtered, LintOptions{})
		}
	})
	b.Run("lint-update", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			Lint(filtered, LintOptions{Previous: filtered})
		}
	})
}

// BenchmarkResolveCapabilities100kUnknown resolves a spec that lists
// 100,000 capabilities no release knows.
func BenchmarkResolveCapabilities100kUnknown(b *testing.B) {
	spec := manyUnknown(100_000)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ResolveCapabilities(spec, nil); err == nil {
			b.Fatal("no error for unknown capabilities")
		}
	}
}
