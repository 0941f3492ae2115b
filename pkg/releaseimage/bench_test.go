package releaseimage

import (
	"context"
	"os"
	"testing"

	"github.com/payload-applier/payload-applier/pkg/payload"
)

const ocpRealDir = "../../../shared/payloads/ocp-real"

// BenchmarkOCPRealImage measures the real 4.20 payload read as a release
// image from the in-process registry on loopback, beside the same payload
// read from its directory: pull by digest into an empty cache, extract and
// load; a cached digest and load; and load alone. docs/benchmarks.md
// records the figures.
func BenchmarkOCPRealImage(b *testing.B) {
	if _, err := os.Stat(ocpRealDir); err != nil {
		b.Skipf("the real payload %s is not available (%v); it sits beside the checkout in ../shared/payloads", ocpRealDir, err)
	}
	img, _, err := Pack(ocpRealDir, PackOptions{})
	if err != nil {
		b.Fatal(err)
	}
	r := newTestRegistry(b)
	ref := r.push(b, "ocp/release:4.20", img)
	opts := payload.DefaultLoadOptions()
	load := func(b *testing.B, dir string) {
		if _, err := payload.Load(dir, opts); err != nil {
			b.Fatal(err)
		}
	}

	b.Run("directory-load", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			load(b, ocpRealDir)
		}
	})
	// fresh fetches ref into an empty cache, removed afterwards untimed.
	fresh := func(b *testing.B, then func(*Extracted)) {
		cache, err := os.MkdirTemp(b.TempDir(), "cache")
		if err != nil {
			b.Fatal(err)
		}
		p, err := NewPuller(Config{CacheDir: cache})
		if err != nil {
			b.Fatal(err)
		}
		e, err := p.Fetch(context.Background(), ref, FetchOptions{})
		if err != nil {
			b.Fatal(err)
		}
		then(e)
		b.StopTimer()
		os.RemoveAll(cache)
		b.StartTimer()
	}
	b.Run("image-pull-extract-load", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			fresh(b, func(e *Extracted) { load(b, e.Dir) })
		}
	})
	b.Run("image-pull-extract", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			fresh(b, func(*Extracted) {})
		}
	})
	p, err := NewPuller(Config{CacheDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := p.Fetch(context.Background(), ref, FetchOptions{}); err != nil {
		b.Fatal(err)
	}
	b.Run("image-cached-load", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			e, err := p.Fetch(context.Background(), ref, FetchOptions{})
			if err != nil || !e.FromCache {
				b.Fatalf("cached fetch: %v (from cache %v)", err, e != nil && e.FromCache)
			}
			load(b, e.Dir)
		}
	})
	b.Run("pack", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			img, _, err := Pack(ocpRealDir, PackOptions{})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := img.Digest(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
