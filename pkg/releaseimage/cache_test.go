package releaseimage

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestADamagedCacheEntryIsPulledAgain: an entry that is not whole, as a
// crash after an unsynced rename leaves it, is dropped when read and the
// release pulled again, from Fetch and Cached alike.
func TestADamagedCacheEntryIsPulledAgain(t *testing.T) {
	r := newTestRegistry(t)
	ref := r.push(t, "ocp/release:1.0.0", imageOf(t, rawLayer(t, metadataEntries("1.0.0")...)))
	for name, damage := range map[string]func(dir string) error{
		"empty release-metadata": func(dir string) error {
			return os.Truncate(filepath.Join(dir, "release-manifests", "release-metadata"), 0)
		},
		"no release-metadata": func(dir string) error {
			return os.Remove(filepath.Join(dir, "release-manifests", "release-metadata"))
		},
		"no release-manifests": func(dir string) error {
			return os.RemoveAll(filepath.Join(dir, "release-manifests"))
		},
		"empty release-image.json": func(dir string) error {
			return os.Truncate(filepath.Join(dir, metadataFile), 0)
		},
		"release-image.json of another digest": func(dir string) error {
			return os.WriteFile(filepath.Join(dir, metadataFile), []byte(`{"digest":"sha256:`+strings.Repeat("1", 64)+`"}`), 0o644)
		},
	} {
		t.Run(name, func(t *testing.T) {
			p := newTestPuller(t, Config{})
			first, err := fetch(t, p, ref, "")
			if err != nil {
				t.Fatal(err)
			}
			if err := damage(first.Dir); err != nil {
				t.Fatal(err)
			}
			if e, ok := p.Cached(ref.Digest(), ""); ok {
				t.Fatalf("Cached served the damaged entry %+v", e)
			}
			if names := cacheNames(t, p); len(names) != 0 {
				t.Errorf("the damaged entry is still in the cache: %v", names)
			}
			// Cached dropped it: damage a fresh pull for Fetch.
			if _, err := fetch(t, p, ref, ""); err != nil {
				t.Fatal(err)
			}
			if err := damage(first.Dir); err != nil {
				t.Fatal(err)
			}
			e, err := fetch(t, p, ref, "")
			if err != nil {
				t.Fatal(err)
			}
			if e.FromCache {
				t.Error("Fetch served the damaged entry from the cache")
			}
			if got := summary(t, e.Dir); !strings.HasPrefix(got, "version=1.0.0 ") {
				t.Errorf("the release pulled again loads as %s", got)
			}
		})
	}
}

// TestCachedTakesOnlyADigest: anything but a sha256 digest is no cache
// key, however the cache directory's neighbours look.
func TestCachedTakesOnlyADigest(t *testing.T) {
	base := t.TempDir()
	p := newTestPuller(t, Config{CacheDir: filepath.Join(base, "cache")})
	outside := filepath.Join(base, "x")
	if err := os.MkdirAll(filepath.Join(outside, "release-manifests"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "release-manifests", "release-metadata"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, metadataFile), []byte(`{"digest":"../x"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"../x", "sha256:../../x", "sha256:" + strings.Repeat("a", 63), "sha512:" + strings.Repeat("a", 128)} {
		if e, ok := p.Cached(key, ""); ok {
			t.Errorf("Cached(%q) = %+v, want no release", key, e)
		}
	}
	if _, err := os.Stat(outside); err != nil {
		t.Errorf("the directory beside the cache is gone: %v", err)
	}
}

// TestAnExtractionIsDurableBeforeItIsCommitted: every file and directory
// of an entry is synced before the rename into place, and the cache
// directory after it, so that a crash leaves a whole entry or none.
func TestAnExtractionIsDurableBeforeItIsCommitted(t *testing.T) {
	r := newTestRegistry(t)
	ref := r.push(t, "ocp/release:1.0.0", imageOf(t, rawLayer(t, append(metadataEntries("1.0.0"),
		reg("release-manifests/sub/0000_50_demo_00_a.yaml", "a"),
		reg("manifests/0000_00_cvo_00_x.yaml", "x"))...)))
	p := newTestPuller(t, Config{})
	entry := p.dir(ref.Digest())
	var mu sync.Mutex
	before := map[string]bool{} // synced while the entry was not in place
	after := map[string]bool{}
	p.sync = func(f *os.File) error {
		mu.Lock()
		defer mu.Unlock()
		_, err := os.Stat(entry)
		name := filepath.Clean(f.Name())
		if rel, rerr := filepath.Rel(p.cfg.CacheDir, name); rerr == nil && strings.HasPrefix(rel, partialPrefix) {
			_, rest, _ := strings.Cut(rel, string(filepath.Separator))
			name = filepath.Join(entry, rest)
		}
		if err != nil {
			before[name] = true
		} else {
			after[name] = true
		}
		return f.Sync()
	}
	if _, err := fetch(t, p, ref, ""); err != nil {
		t.Fatal(err)
	}
	err := filepath.WalkDir(entry, func(path string, _ os.DirEntry, err error) error {
		if err == nil && !before[path] {
			t.Errorf("%s was not synced before the entry was renamed into place", path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if !after[filepath.Clean(p.cfg.CacheDir)] {
		t.Error("the cache directory was not synced after the rename")
	}
}

// TestARefusedImageLeavesNothingInTheCache: whatever refuses a release,
// no entry and no partial directory of it stays behind.
func TestARefusedImageLeavesNothingInTheCache(t *testing.T) {
	r := newTestRegistry(t)
	ref := r.push(t, "ocp/release:1.0.0", imageOf(t, rawLayer(t, append(metadataEntries("1.0.0"), reg("release-manifests/0000_50_a.yaml", strings.Repeat("a", 64<<10)))...)))

	t.Run("cancelled while the layer is read", func(t *testing.T) {
		p := newTestPuller(t, Config{})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		r.intercept = func(w http.ResponseWriter, req *http.Request) bool {
			if req.Method != http.MethodGet || !strings.Contains(req.URL.Path, "/blobs/") {
				return false
			}
			entries, _ := os.ReadDir(p.cfg.CacheDir)
			if len(entries) == 0 {
				return false // the config blob: no extraction yet
			}
			cancel()
			<-req.Context().Done()
			return true
		}
		defer func() { r.intercept = nil }()
		_, err := p.Fetch(ctx, ref, FetchOptions{})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("fetch = %v, want it cancelled", err)
		}
		if names := cacheNames(t, p); len(names) != 0 {
			t.Errorf("the cache holds %v after a cancelled pull", names)
		}
	})
	t.Run("a damaged entry whose pull is refused", func(t *testing.T) {
		p := newTestPuller(t, Config{})
		first, err := fetch(t, p, ref, "")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(filepath.Join(first.Dir, "release-manifests", "release-metadata"), 0); err != nil {
			t.Fatal(err)
		}
		v := &refuse{}
		if _, err := p.Fetch(context.Background(), ref, FetchOptions{Verify: v.verify}); err == nil {
			t.Fatal("fetch with a refusing verifier succeeded")
		}
		// The verifier refuses before the cache is read; the next fetch,
		// over the limit, finds the damaged entry, drops it and is refused.
		p.cfg.Limits.TotalBytes = 1 << 10
		_, err = fetch(t, p, ref, "")
		var ce *ContentError
		if !errors.As(err, &ce) || ce.Limit != "TotalBytes" {
			t.Fatalf("fetch = %v, want the TotalBytes refusal", err)
		}
		if names := cacheNames(t, p); len(names) != 0 {
			t.Errorf("the cache holds %v after a refused pull", names)
		}
	})
}
