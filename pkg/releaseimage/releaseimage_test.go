package releaseimage

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/payload-applier/payload-applier/pkg/payload"
)

// summary is what a loaded release holds, without where it was loaded
// from: two loads of one payload have equal summaries.
func summary(t testing.TB, dir string) string {
	t.Helper()
	rel, err := payload.Load(dir, payload.DefaultLoadOptions())
	if err != nil {
		t.Fatalf("load %s: %v", dir, err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "version=%s channels=%v images=%v skipped=%d\n", rel.Version, rel.Channels, rel.Images, len(rel.Skipped))
	for _, m := range rel.Manifests {
		obj, err := json.Marshal(m.Obj.Object)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s:%d %s\n", path.Base(m.File), m.Line, obj)
	}
	return b.String()
}

func TestParseRef(t *testing.T) {
	digest := "sha256:" + strings.Repeat("ab", 32)
	for _, tc := range []struct {
		in       string
		byDigest bool
		wantErr  string
	}{
		{in: "quay.io/ocp/release@" + digest, byDigest: true},
		{in: "127.0.0.1:5000/ocp/release:4.20.1"},
		{in: "localhost:5000/release:1.0.0"},
		{in: "quay.io/ocp/release", wantErr: "tag"},
		{in: "ocp/release:4.20.1", wantErr: "registry"},
		{in: "quay.io/ocp/release@sha256:abc", wantErr: "not a release image reference"},
		{in: "release/", wantErr: "not a release image reference"},
	} {
		ref, err := ParseRef(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseRef(%q) = %v, want an error mentioning %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseRef(%q): %v", tc.in, err)
			continue
		}
		if ref.ByDigest() != tc.byDigest || ref.String() != tc.in {
			t.Errorf("ParseRef(%q) = %s, by digest %v; want by digest %v", tc.in, ref, ref.ByDigest(), tc.byDigest)
		}
		if tc.byDigest && ref.Digest() != digest {
			t.Errorf("Digest() = %s, want %s", ref.Digest(), digest)
		}
	}
}

func TestPackThenPullByDigestAndTagGivesThePayload(t *testing.T) {
	r := newTestRegistry(t)
	src := writeDemo(t, "1.0.0", "a", "b", "c")
	img, rel, err := Pack(src, PackOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rel.Version != "1.0.0" {
		t.Fatalf("Pack loaded version %s", rel.Version)
	}
	byDigest := r.push(t, "ocp/release:1.0.0", img)
	byTag := mustRef(t, r.host+"/ocp/release:1.0.0")
	want := summary(t, src)

	for _, ref := range []Ref{byDigest, byTag} {
		p := newTestPuller(t, Config{})
		e, err := fetch(t, p, ref, "")
		if err != nil {
			t.Fatalf("fetch %s: %v", ref, err)
		}
		if e.Digest != byDigest.Digest() || e.ImageDigest != e.Digest || e.Index {
			t.Errorf("fetch %s: digest %s, image %s, index %v; want %s, not an index", ref, e.Digest, e.ImageDigest, e.Index, byDigest.Digest())
		}
		if e.Version != "1.0.0" {
			t.Errorf("fetch %s: label version %q, want 1.0.0", ref, e.Version)
		}
		if e.Dir != filepath.Join(p.cfg.CacheDir, "sha256-"+strings.TrimPrefix(e.Digest, "sha256:")) {
			t.Errorf("fetch %s: dir %s is not the digest's cache entry", ref, e.Dir)
		}
		if got := summary(t, e.Dir); got != want {
			t.Errorf("fetch %s: loaded\n%s\nwant, as from the directory,\n%s", ref, got, want)
		}
	}
}

func TestPackIsDeterministicAndSaysWhatItIs(t *testing.T) {
	a := writeDemo(t, "1.0.0", "a", "b")
	b := writeDemo(t, "1.0.0", "a", "b")
	old := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	if err := os.Chtimes(filepath.Join(b, "release-metadata"), old, old); err != nil {
		t.Fatal(err)
	}
	digests := map[string]bool{}
	for _, d := range []string{a, b} {
		img, _, err := Pack(d, PackOptions{Architecture: "amd64"})
		if err != nil {
			t.Fatal(err)
		}
		dg, err := img.Digest()
		if err != nil {
			t.Fatal(err)
		}
		digests[dg.String()] = true
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cf.Config.Labels[ReleaseLabel] != "1.0.0" || cf.OS != "linux" || cf.Architecture != "amd64" {
			t.Errorf("config labels %v, platform %s/%s; want the release label 1.0.0 on linux/amd64", cf.Config.Labels, cf.OS, cf.Architecture)
		}
		mt, err := img.MediaType()
		if err != nil || mt != types.OCIManifestSchema1 {
			t.Errorf("media type %s (%v), want an OCI manifest", mt, err)
		}
		layers, err := img.Layers()
		if err != nil || len(layers) != 1 {
			t.Fatalf("%d layers (%v), want 1", len(layers), err)
		}
	}
	if len(digests) != 1 {
		t.Errorf("one payload packed to %d digests: %v", len(digests), digests)
	}
	c := writeDemo(t, "1.0.0", "a", "b", "c")
	img, _, err := Pack(c, PackOptions{Architecture: "amd64"})
	if err != nil {
		t.Fatal(err)
	}
	if dg, _ := img.Digest(); digests[dg.String()] {
		t.Error("another payload packed to the same digest")
	}
}

func TestPackRefusesAPayloadThatDoesNotLoad(t *testing.T) {
	d := writeDemo(t, "1.0.0", "a")
	if err := os.WriteFile(filepath.Join(d, "0000_50_demo_09_bad.yaml"), []byte("kind: [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err := Pack(d, PackOptions{})
	var ve *payload.ValidationError
	if !errors.As(err, &ve) || !strings.Contains(err.Error(), "0000_50_demo_09_bad.yaml") {
		t.Fatalf("Pack of an invalid payload = %v, want the loader's validation error naming the file", err)
	}
	if _, _, err := Pack(t.TempDir(), PackOptions{}); !errors.Is(err, payload.ErrMissingMetadata) {
		t.Fatalf("Pack of an empty directory = %v, want ErrMissingMetadata", err)
	}
}

func TestFetchRefusesAManifestThatIsNotTheDigestAskedFor(t *testing.T) {
	r := newTestRegistry(t)
	asked := r.push(t, "ocp/release:1.0.0", imageOf(t, rawLayer(t, metadataEntries("1.0.0")...)))
	other := imageOf(t, rawLayer(t, metadataEntries("6.6.6")...))
	r.push(t, "ocp/release:6.6.6", other)
	raw, err := other.RawManifest()
	if err != nil {
		t.Fatal(err)
	}
	mt, _ := other.MediaType()
	// A registry (or a proxy) that answers the digest asked for with
	// another manifest.
	r.intercept = func(w http.ResponseWriter, req *http.Request) bool {
		if !strings.HasSuffix(req.URL.Path, "/manifests/"+asked.Digest()) {
			return false
		}
		w.Header().Set("Content-Type", string(mt))
		w.Header().Set("Docker-Content-Digest", asked.Digest())
		w.Write(raw)
		return true
	}
	p := newTestPuller(t, Config{})
	_, err = fetch(t, p, asked, "")
	var re *RetrieveError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "does not match") {
		t.Fatalf("fetch = %v, want a RetrieveError saying the digest does not match", err)
	}
	if names := cacheNames(t, p); len(names) != 0 {
		t.Errorf("the cache holds %v after a refused pull", names)
	}
}

func TestFetchOfAMissingImageCarriesTheRegistrysMessage(t *testing.T) {
	r := newTestRegistry(t)
	r.push(t, "ocp/release:1.0.0", imageOf(t, rawLayer(t, metadataEntries("1.0.0")...)))
	p := newTestPuller(t, Config{})
	missing := mustRef(t, r.host+"/ocp/release@sha256:"+strings.Repeat("0", 64))
	_, err := fetch(t, p, missing, "")
	var re *RetrieveError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "MANIFEST_UNKNOWN") || !strings.Contains(err.Error(), missing.String()) {
		t.Fatalf("fetch of a missing digest = %v, want a RetrieveError naming the image with the registry's MANIFEST_UNKNOWN", err)
	}
	_, err = fetch(t, p, mustRef(t, r.host+"/ocp/release:9.9.9"), "")
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "404") {
		t.Fatalf("fetch of a missing tag = %v, want a RetrieveError with the registry's 404", err)
	}
}

func TestFetchRefusesUnsafeLayers(t *testing.T) {
	big := strings.Repeat("x", payload.MaxFileBytes+1)
	for _, tc := range []struct {
		name   string
		limits Limits
		bad    []entry
		want   string
	}{
		{name: "dot-dot path", bad: []entry{reg("release-manifests/../../evil.yaml", "x")}, want: `".."`},
		{name: "dot-dot outside the release", bad: []entry{reg("../etc/cron.d/evil", "x")}, want: `".."`},
		{name: "absolute path", bad: []entry{reg("/release-manifests/evil.yaml", "x")}, want: "absolute path"},
		{name: "symlink out", bad: []entry{{hdr: tar.Header{Name: "release-manifests/evil.yaml", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"}}}, want: "symbolic link"},
		{name: "symlinked release directory", bad: []entry{{hdr: tar.Header{Name: "manifests", Typeflag: tar.TypeSymlink, Linkname: "/etc"}}}, want: "symbolic link"},
		{name: "hardlink out", bad: []entry{{hdr: tar.Header{Name: "release-manifests/evil.yaml", Typeflag: tar.TypeLink, Linkname: "etc/shadow"}}}, want: "hard link"},
		{name: "device", bad: []entry{{hdr: tar.Header{Name: "release-manifests/zero", Typeflag: tar.TypeChar, Devmajor: 1, Devminor: 5}}}, want: "device file"},
		{name: "fifo", bad: []entry{{hdr: tar.Header{Name: "release-manifests/pipe", Typeflag: tar.TypeFifo}}}, want: "FIFO"},
		{name: "file over the loader's limit", bad: []entry{reg("release-manifests/0000_50_big.yaml", big)}, want: "more than the 8 MiB a payload file may hold"},
		{
			name:   "release over the total",
			limits: Limits{TotalBytes: 1 << 20},
			bad: []entry{
				reg("release-manifests/0000_50_a.yaml", strings.Repeat("a", 600<<10)),
				reg("release-manifests/0000_50_b.yaml", strings.Repeat("b", 600<<10)),
			},
			want: "more than 1 MiB",
		},
		{
			name:   "layers over the read limit",
			limits: Limits{ReadBytes: 1 << 20},
			bad:    []entry{reg("usr/share/filler", strings.Repeat("f", 2<<20))},
			want:   "more than 1 MiB uncompressed",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newTestRegistry(t)
			entries := append(metadataEntries("1.0.0"), tc.bad...)
			ref := r.push(t, "ocp/release:1.0.0", imageOf(t, rawLayer(t, entries...)))
			p := newTestPuller(t, Config{Limits: tc.limits})
			e, err := fetch(t, p, ref, "")
			var ce *ContentError
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("fetch = %+v, %v; want a ContentError saying %q", e, err, tc.want)
			}
			if !strings.Contains(err.Error(), ref.String()) {
				t.Errorf("error %q does not name the image", err)
			}
			if names := cacheNames(t, p); len(names) != 0 {
				t.Errorf("the cache holds %v after a refused pull", names)
			}
		})
	}
}

func TestFetchRefusesAnImageWithoutReleaseManifests(t *testing.T) {
	r := newTestRegistry(t)
	ref := r.push(t, "app:1", imageOf(t, rawLayer(t, reg("usr/bin/app", "#!"))))
	p := newTestPuller(t, Config{})
	_, err := fetch(t, p, ref, "")
	var ce *ContentError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "no release-manifests/") {
		t.Fatalf("fetch = %v, want a ContentError saying the image has no release-manifests/", err)
	}
}

func TestFetchFlattensLayersWithWhiteouts(t *testing.T) {
	r := newTestRegistry(t)
	base := rawLayer(t,
		dir("bin/"),
		entry{hdr: tar.Header{Name: "bin/sh", Typeflag: tar.TypeSymlink, Linkname: "/bin/busybox"}},
		entry{hdr: tar.Header{Name: "dev/null", Typeflag: tar.TypeChar, Devmajor: 1, Devminor: 3}},
		reg("release-manifests/0000_50_demo_00_a.yaml", strings.Replace(demoManifest, "%s", "a", 1)),
		reg("release-manifests/0000_50_demo_01_b.yaml", strings.Replace(demoManifest, "%s", "b", 1)),
		reg("release-manifests/0000_50_demo_02_c.yaml", "old c"),
		reg("manifests/0000_00_cvo_00_x.yaml", strings.Replace(demoManifest, "%s", "cvo-x", 1)),
	)
	top := rawLayer(t, append(metadataEntries("1.0.0"),
		reg("release-manifests/.wh.0000_50_demo_00_a.yaml", ""),
		reg("release-manifests/0000_50_demo_02_c.yaml", strings.Replace(demoManifest, "%s", "c", 1)),
		reg("manifests/.wh..wh..opq", ""),
		reg("manifests/0000_00_cvo_01_y.yaml", strings.Replace(demoManifest, "%s", "cvo-y", 1)),
	)...)
	ref := r.push(t, "ocp/release:1.0.0", imageOf(t, base, top))
	p := newTestPuller(t, Config{})
	e, err := fetch(t, p, ref, "")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	err = filepath.WalkDir(e.Dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(e.Dir, p)
			got = append(got, rel)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"manifests/0000_00_cvo_01_y.yaml",
		"release-image.json",
		"release-manifests/0000_50_demo_01_b.yaml",
		"release-manifests/0000_50_demo_02_c.yaml",
		"release-manifests/image-references",
		"release-manifests/release-metadata",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("extracted %v, want %v", got, want)
	}
	rel, err := payload.Load(e.Dir, payload.DefaultLoadOptions())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range rel.Manifests {
		names = append(names, m.Obj.GetName())
	}
	if strings.Join(names, ",") != "cvo-y,b,c" {
		t.Errorf("loaded %v, want cvo-y (manifests/ first), b and the top layer's c", names)
	}
}

func TestFetchPicksThePlatformOfAnIndex(t *testing.T) {
	r := newTestRegistry(t)
	var adds []mutate.IndexAddendum
	for _, arch := range []string{"amd64", "arm64"} {
		img := imageOf(t, rawLayer(t, metadataEntries("1.0.0-"+arch)...))
		img, err := mutate.ConfigFile(img, &v1.ConfigFile{OS: "linux", Architecture: arch, RootFS: mustConfig(t, img).RootFS})
		if err != nil {
			t.Fatal(err)
		}
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: arch}}})
	}
	idx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), adds...)
	ref := r.pushIndex(t, "ocp/release:1.0.0", idx)

	p := newTestPuller(t, Config{})
	for _, arch := range []string{"arm64", "amd64"} {
		e, err := fetch(t, p, ref, "linux/"+arch)
		if err != nil {
			t.Fatalf("fetch for %s: %v", arch, err)
		}
		rel, err := payload.Load(e.Dir, payload.DefaultLoadOptions())
		if err != nil {
			t.Fatal(err)
		}
		if rel.Version != "1.0.0-"+arch || !e.Index || e.Digest != ref.Digest() || e.ImageDigest == e.Digest || e.Platform != "linux/"+arch {
			t.Errorf("fetch for %s: version %s, %+v; want the %s image of the index", arch, rel.Version, e, arch)
		}
	}
	if _, err := fetch(t, p, ref, "linux/s390x"); err == nil || !strings.Contains(err.Error(), "s390x") {
		t.Errorf("fetch for s390x = %v, want an error naming the platform the index lacks", err)
	}
}

func mustConfig(t testing.TB, img v1.Image) *v1.ConfigFile {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	return cf
}

func TestACachedDigestIsNotPulledAgain(t *testing.T) {
	r := newTestRegistry(t)
	img, _, err := Pack(writeDemo(t, "1.0.0", "a"), PackOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ref := r.push(t, "ocp/release:1.0.0", img)
	cache := t.TempDir()
	p := newTestPuller(t, Config{CacheDir: cache})
	first, err := fetch(t, p, ref, "")
	if err != nil {
		t.Fatal(err)
	}
	if first.FromCache || len(r.served("GET /v2/ocp/release/blobs/")) == 0 {
		t.Fatalf("the first fetch read no blob (from cache %v): %v", first.FromCache, r.all())
	}

	// The same puller, and another one on the same directory as after a
	// restart, ask the registry nothing for a digest.
	for _, p := range []*Puller{p, newTestPuller(t, Config{CacheDir: cache})} {
		r.reset()
		e, err := fetch(t, p, ref, "")
		if err != nil {
			t.Fatal(err)
		}
		if got := r.all(); len(got) != 0 || !e.FromCache || e.Dir != first.Dir {
			t.Errorf("a cached digest: the registry served %v, from cache %v, dir %s; want nothing asked of it", got, e.FromCache, e.Dir)
		}
	}
	// A tag is resolved with one HEAD; nothing is downloaded.
	r.reset()
	e, err := fetch(t, p, mustRef(t, r.host+"/ocp/release:1.0.0"), "")
	if err != nil {
		t.Fatal(err)
	}
	if gets := r.served("GET /v2/ocp"); len(gets) != 0 || len(r.served("HEAD /v2/ocp/release/manifests/1.0.0")) != 1 || !e.FromCache {
		t.Errorf("a cached tag: the registry served %v; want one HEAD of the tag, no GET", r.all())
	}
}

func TestConcurrentFetchesOfOneDigestPullItOnce(t *testing.T) {
	r := newTestRegistry(t)
	img, _, err := Pack(writeDemo(t, "1.0.0", "a"), PackOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ref := r.push(t, "ocp/release:1.0.0", img)
	layers, _ := img.Layers()
	layerDigest, _ := layers[0].Digest()
	r.reset()
	p := newTestPuller(t, Config{})
	var wg sync.WaitGroup
	dirs := make([]string, 8)
	errs := make([]error, 8)
	for i := range dirs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e, err := p.Fetch(context.Background(), ref, FetchOptions{})
			errs[i] = err
			if err == nil {
				dirs[i] = e.Dir
			}
		}()
	}
	wg.Wait()
	for i := range dirs {
		if errs[i] != nil || dirs[i] != dirs[0] {
			t.Errorf("fetch %d: %s, %v; want %s", i, dirs[i], errs[i], dirs[0])
		}
	}
	if got := r.served("GET /v2/ocp/release/blobs/" + layerDigest.String()); len(got) != 1 {
		t.Errorf("the layer was downloaded %d times, want once", len(got))
	}
}

func TestPruneKeepsOnlyWhatIsAsked(t *testing.T) {
	r := newTestRegistry(t)
	p := newTestPuller(t, Config{})
	var refs []Ref
	for _, v := range []string{"1.0.0", "1.0.1", "1.0.2"} {
		ref := r.push(t, "ocp/release:"+v, imageOf(t, rawLayer(t, metadataEntries(v)...)))
		if _, err := fetch(t, p, ref, ""); err != nil {
			t.Fatal(err)
		}
		refs = append(refs, ref)
	}
	dropped, err := p.Prune([]string{refs[1].Digest()})
	if err != nil {
		t.Fatal(err)
	}
	wantDropped := []string{refs[0].Digest(), refs[2].Digest()}
	if strings.Compare(wantDropped[0], wantDropped[1]) > 0 {
		wantDropped[0], wantDropped[1] = wantDropped[1], wantDropped[0]
	}
	if !reflect.DeepEqual(dropped, wantDropped) {
		t.Errorf("Prune dropped %v, want %v", dropped, wantDropped)
	}
	if got := cacheNames(t, p); !reflect.DeepEqual(got, []string{entryName(refs[1].Digest())}) {
		t.Errorf("the cache holds %v, want only %s", got, entryName(refs[1].Digest()))
	}
	if _, ok := p.Cached(refs[0].Digest(), ""); ok {
		t.Error("a pruned release is still cached")
	}
	if _, ok := p.Cached(refs[1].Digest(), ""); !ok {
		t.Error("the release kept is not cached")
	}
	if _, err := p.Prune([]string{"latest"}); err == nil {
		t.Error("Prune accepted a keep list with no digest in it")
	}
}

func TestTheCacheKeepsAtMostMaxReleases(t *testing.T) {
	r := newTestRegistry(t)
	p := newTestPuller(t, Config{MaxReleases: 2})
	var refs []Ref
	for i, v := range []string{"1.0.0", "1.0.1", "1.0.2"} {
		ref := r.push(t, "ocp/release:"+v, imageOf(t, rawLayer(t, metadataEntries(v)...)))
		refs = append(refs, ref)
		if _, err := fetch(t, p, ref, ""); err != nil {
			t.Fatal(err)
		}
		// Use the first again, so that it is not the least recently used.
		if i == 1 {
			time.Sleep(10 * time.Millisecond) // the file system's mtime must tell the uses apart
			if _, err := fetch(t, p, refs[0], ""); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := map[string]bool{entryName(refs[0].Digest()): true, entryName(refs[2].Digest()): true}
	got := cacheNames(t, p)
	if len(got) != 2 || !want[got[0]] || !want[got[1]] {
		t.Errorf("the cache holds %v, want the two most recently used %v", got, want)
	}
}

func TestAnUnreachableRegistryFailsWithItsError(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	p := newTestPuller(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	_, err = p.Fetch(ctx, mustRef(t, addr+"/ocp/release@sha256:"+strings.Repeat("1", 64)), FetchOptions{})
	var re *RetrieveError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("fetch from a closed port = %v, want a RetrieveError saying the connection was refused", err)
	}
	// Generous: a refused connection is not worth waiting out the deadline.
	if elapsed := time.Since(start); elapsed > time.Minute {
		t.Errorf("fetch from a closed port took %s", elapsed)
	}
}

func TestFetchHonoursItsTimeout(t *testing.T) {
	r := newTestRegistry(t)
	ref := r.push(t, "ocp/release:1.0.0", imageOf(t, rawLayer(t, metadataEntries("1.0.0")...)))
	r.intercept = func(w http.ResponseWriter, req *http.Request) bool {
		<-req.Context().Done() // a registry that never answers
		return true
	}
	p := newTestPuller(t, Config{Timeout: 200 * time.Millisecond})
	_, err := fetch(t, p, ref, "")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("fetch from a silent registry = %v, want the deadline exceeded", err)
	}
	if names := cacheNames(t, p); len(names) != 0 {
		t.Errorf("the cache holds %v after a failed pull", names)
	}
}

func TestPlainHTTPOffLoopbackNeedsInsecure(t *testing.T) {
	var reached []string
	next := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		reached = append(reached, req.URL.String())
		return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: req}, nil
	})
	for _, tc := range []struct {
		url      string
		insecure bool
		allowed  bool
	}{
		{url: "http://registry.example:5000/v2/", allowed: false},
		{url: "http://registry.example:5000/v2/", insecure: true, allowed: true},
		{url: "https://registry.example/v2/", allowed: true},
		{url: "http://127.0.0.1:5000/v2/", allowed: true},
		{url: "http://[::1]:5000/v2/", allowed: true},
		{url: "http://localhost:5000/v2/", allowed: true},
	} {
		reached = nil
		req, _ := http.NewRequest(http.MethodGet, tc.url, nil)
		_, err := plainHTTPGuard{next: next, insecure: tc.insecure}.RoundTrip(req)
		if tc.allowed != (err == nil) || tc.allowed != (len(reached) == 1) {
			t.Errorf("%s (insecure %v): err %v, reached %v; want allowed %v", tc.url, tc.insecure, err, reached, tc.allowed)
		}
		if !tc.allowed && (err == nil || !strings.Contains(err.Error(), "--insecure-registry")) {
			t.Errorf("%s: error %v does not say how to allow it", tc.url, err)
		}
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

func TestCredentialsComeFromTheAuthFile(t *testing.T) {
	// No docker config of the user's may answer instead.
	t.Setenv("HOME", t.TempDir())
	t.Setenv("DOCKER_CONFIG", "")
	t.Setenv("REGISTRY_AUTH_FILE", "")
	r := newTestRegistry(t)
	ref := r.push(t, "ocp/release:1.0.0", imageOf(t, rawLayer(t, metadataEntries("1.0.0")...)))
	r.intercept = func(w http.ResponseWriter, req *http.Request) bool {
		if user, pass, ok := req.BasicAuth(); ok && user == "puller" && pass == "s3cret" {
			return false
		}
		w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`)
		return true
	}
	authFile := filepath.Join(t.TempDir(), "auth.json")
	creds := fmt.Sprintf(`{"auths":{%q:{"auth":"cHVsbGVyOnMzY3JldA=="}}}`, r.host) // puller:s3cret
	if err := os.WriteFile(authFile, []byte(creds), 0o600); err != nil {
		t.Fatal(err)
	}

	_, err := fetch(t, newTestPuller(t, Config{}), ref, "")
	if err == nil || !strings.Contains(err.Error(), "UNAUTHORIZED") {
		t.Fatalf("fetch without credentials = %v, want the registry's UNAUTHORIZED", err)
	}
	if _, err := fetch(t, newTestPuller(t, Config{Registry: Registry{AuthFile: authFile}}), ref, ""); err != nil {
		t.Fatalf("fetch with the auth file: %v", err)
	}
	t.Setenv("REGISTRY_AUTH_FILE", authFile)
	if _, err := fetch(t, newTestPuller(t, Config{}), ref, ""); err != nil {
		t.Fatalf("fetch with $REGISTRY_AUTH_FILE: %v", err)
	}
	if _, err := NewPuller(Config{CacheDir: t.TempDir(), Registry: Registry{AuthFile: filepath.Join(t.TempDir(), "missing.json")}}); err == nil {
		t.Error("NewPuller accepted an auth file that does not exist")
	}
}

func TestNewPullerDropsPartialExtractions(t *testing.T) {
	cache := t.TempDir()
	partial := filepath.Join(cache, partialPrefix+"123", "release-manifests")
	if err := os.MkdirAll(partial, 0o755); err != nil {
		t.Fatal(err)
	}
	p := newTestPuller(t, Config{CacheDir: cache})
	if names := cacheNames(t, p); len(names) != 0 {
		t.Errorf("the cache holds %v, want the partial extraction gone", names)
	}
}

func TestWriteLayoutHoldsThePackedImage(t *testing.T) {
	img, _, err := Pack(writeDemo(t, "1.0.0", "a"), PackOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "layout")
	for range 2 { // writing again replaces, not appends
		if _, err := WriteLayout(dir, img, "1.0.0"); err != nil {
			t.Fatal(err)
		}
	}
	idx, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	var index v1.IndexManifest
	if err := json.Unmarshal(idx, &index); err != nil {
		t.Fatal(err)
	}
	want, _ := img.Digest()
	if len(index.Manifests) != 1 || index.Manifests[0].Digest != want || index.Manifests[0].Annotations[refNameAnnotation] != "1.0.0" {
		t.Errorf("index.json = %s, want one image %s named 1.0.0", idx, want)
	}
}
