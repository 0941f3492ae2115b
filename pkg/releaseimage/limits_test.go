package releaseimage

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// wantRefused checks that err is the refusal of ref by the limit named
// field at max, and that the cache holds nothing after it.
func wantRefused(t *testing.T, p *Puller, ref Ref, err error, field string, max int64) {
	t.Helper()
	var ce *ContentError
	if !errors.As(err, &ce) || ce.Limit != field || ce.Max != max {
		t.Fatalf("fetch = %v; want a ContentError of the limit %s (%d)", err, field, max)
	}
	if want := fmt.Sprintf("(limit %s: %d)", field, max); !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), ref.String()) {
		t.Errorf("error %q does not name the image and %s", err, want)
	}
	if names := cacheNames(t, p); len(names) != 0 {
		t.Errorf("the cache holds %v after a refused pull", names)
	}
}

func whiteouts(dir string, n int) []entry {
	var out []entry
	for i := range n {
		out = append(out, reg(fmt.Sprintf("%s/.wh.%d.yaml", dir, i), ""))
	}
	return out
}

// TestFetchRefusesLayersOverTheExtractionLimits: every count and depth
// of an extraction is bounded, and the bound named.
func TestFetchRefusesLayersOverTheExtractionLimits(t *testing.T) {
	deep := "release-manifests/" + strings.Repeat("d/", 3999) + "x.yaml"
	for _, tc := range []struct {
		name   string
		limits Limits
		layers [][]entry // top layer last
		field  string
		max    int64
	}{
		{
			name:   "parent directories count as files",
			limits: Limits{Files: 5},
			layers: [][]entry{append(metadataEntries("1.0.0"), reg("release-manifests/a/b/c/d.yaml", "d"))},
			field:  "Files", max: 5,
		},
		{
			name:   "an entry 4,000 directories deep",
			layers: [][]entry{append(metadataEntries("1.0.0"), reg(deep, "x"))},
			field:  "Depth", max: 32,
		},
		{
			name:   "a directory 4,000 deep",
			layers: [][]entry{append(metadataEntries("1.0.0"), dir(deep+"/"))},
			field:  "Depth", max: 32,
		},
		{
			name:   "a whiteout 4,000 deep",
			layers: [][]entry{metadataEntries("1.0.0"), {reg("release-manifests/"+strings.Repeat("d/", 3999)+".wh.x", "")}},
			field:  "Depth", max: 32,
		},
		{
			name:   "whiteouts in the release directories",
			limits: Limits{Whiteouts: 100},
			layers: [][]entry{metadataEntries("1.0.0"), whiteouts("release-manifests", 60), whiteouts("manifests", 41)},
			field:  "Whiteouts", max: 100,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newTestRegistry(t)
			var layers []v1.Layer
			for _, l := range tc.layers {
				layers = append(layers, rawLayer(t, l...))
			}
			ref := r.push(t, "ocp/release:1.0.0", imageOf(t, layers...))
			p := newTestPuller(t, Config{Limits: tc.limits})
			_, err := fetch(t, p, ref, "")
			wantRefused(t, p, ref, err, tc.field, tc.max)
		})
	}
}

// TestWhiteoutsOutsideTheReleaseAreNotCounted: a base image's whiteouts
// hide nothing the puller writes, so they neither count nor are kept.
func TestWhiteoutsOutsideTheReleaseAreNotCounted(t *testing.T) {
	r := newTestRegistry(t)
	ref := r.push(t, "ocp/release:1.0.0", imageOf(t,
		rawLayer(t, metadataEntries("1.0.0")...),
		rawLayer(t, append(whiteouts("usr/lib", 30), reg("release-manifests/.wh.gone.yaml", ""))...),
	))
	p := newTestPuller(t, Config{Limits: Limits{Whiteouts: 1}})
	if _, err := fetch(t, p, ref, ""); err != nil {
		t.Fatalf("fetch with one whiteout in the release: %v", err)
	}
}

// extractedEntries counts the files and directories under dir.
func extractedEntries(t *testing.T, dir string) int {
	t.Helper()
	n := -1 // dir itself
	err := filepath.WalkDir(dir, func(string, os.DirEntry, error) error { n++; return nil })
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestExtractionMakesNoMoreThanItsLimitAllows: a deep entry makes no
// directory at all, and parents are counted as they are made.
func TestExtractionMakesNoMoreThanItsLimitAllows(t *testing.T) {
	limits := DefaultLimits()
	limits.Files = 100
	for _, name := range []string{
		"release-manifests/" + strings.Repeat("d/", 3999) + "x.yaml",
		"release-manifests/" + strings.Repeat("d/", 200) + "x.yaml",
	} {
		dir := t.TempDir()
		layer := rawLayer(t, append(metadataEntries("1.0.0"), reg(name, "x"))...)
		err := extract(context.Background(), dir, []v1.Layer{layer}, limits, (*os.File).Sync)
		var ce *ContentError
		if !errors.As(err, &ce) || ce.Limit == "" {
			t.Errorf("extract of a %d-deep entry = %v, want a limit's refusal", strings.Count(name, "/"), err)
		}
		if n := extractedEntries(t, dir); n > limits.Files {
			t.Errorf("extract of a %d-deep entry made %d files and directories, more than the %d allowed", strings.Count(name, "/"), n, limits.Files)
		}
	}
}

// cancellingLayer is an uncompressed layer whose first read ends the
// extraction's context; it counts the reads after that.
type cancellingLayer struct {
	data   []byte
	cancel context.CancelFunc
	after  int
}

func (l *cancellingLayer) Digest() (v1.Hash, error) {
	h, _, err := v1.SHA256(bytes.NewReader(l.data))
	return h, err
}
func (l *cancellingLayer) DiffID() (v1.Hash, error)           { return l.Digest() }
func (l *cancellingLayer) Compressed() (io.ReadCloser, error) { return l.Uncompressed() }
func (l *cancellingLayer) Size() (int64, error)               { return int64(len(l.data)), nil }
func (l *cancellingLayer) MediaType() (types.MediaType, error) {
	return types.OCIUncompressedLayer, nil
}
func (l *cancellingLayer) Uncompressed() (io.ReadCloser, error) { return io.NopCloser(l), nil }

func (l *cancellingLayer) Read(p []byte) (int, error) {
	if l.cancel != nil {
		l.cancel()
		l.cancel = nil
	} else {
		l.after++
	}
	if len(l.data) == 0 {
		return 0, io.EOF
	}
	n := copy(p, l.data)
	l.data = l.data[n:]
	return n, nil
}

// TestExtractionHonoursItsContext: an extraction stops reading as soon
// as its context ends, whatever the layer still holds.
func TestExtractionHonoursItsContext(t *testing.T) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for i := range 2000 {
		body := strings.Repeat("x", 1000)
		if err := tw.WriteHeader(&tar.Header{Name: fmt.Sprintf("release-manifests/%04d.yaml", i), Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(body))}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	layer := &cancellingLayer{data: buf.Bytes(), cancel: cancel}
	dir := t.TempDir()
	err := extract(ctx, dir, []v1.Layer{layer}, DefaultLimits(), (*os.File).Sync)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("extract with its context ended = %v, want context.Canceled", err)
	}
	if layer.after != 0 {
		t.Errorf("the layer was read %d times after the context ended", layer.after)
	}
	if n := extractedEntries(t, dir); n > 100 {
		t.Errorf("%d files and directories extracted after the context ended", n)
	}
}

// servedManifests has r answer GET and HEAD of repo's manifests by
// digest with the bodies given, which need not name blobs it holds.
func servedManifests(t *testing.T, r *testRegistry, repo string, docs ...[]byte) []Ref {
	t.Helper()
	byPath := map[string][]byte{}
	var refs []Ref
	for _, doc := range docs {
		h, _, err := v1.SHA256(bytes.NewReader(doc))
		if err != nil {
			t.Fatal(err)
		}
		byPath["/v2/"+repo+"/manifests/"+h.String()] = doc
		refs = append(refs, mustRef(t, r.host+"/"+repo+"@"+h.String()))
	}
	r.intercept = func(w http.ResponseWriter, req *http.Request) bool {
		doc, ok := byPath[req.URL.Path]
		if !ok {
			return false
		}
		var mt struct {
			MediaType types.MediaType `json:"mediaType"`
		}
		_ = json.Unmarshal(doc, &mt)
		w.Header().Set("Content-Type", string(mt.MediaType))
		w.Header().Set("Docker-Content-Digest", strings.TrimPrefix(req.URL.Path, "/v2/"+repo+"/manifests/"))
		w.Header().Set("Content-Length", fmt.Sprint(len(doc)))
		if req.Method == http.MethodGet {
			w.Write(doc)
		}
		return true
	}
	return refs
}

func fakeDigest(i int) v1.Hash {
	h, _, _ := v1.SHA256(strings.NewReader(fmt.Sprint(i)))
	return h
}

// TestTheLayerCountIsCheckedBeforeAnyBlobIsRead: an image of 1,500
// layers is refused from its manifest alone.
func TestTheLayerCountIsCheckedBeforeAnyBlobIsRead(t *testing.T) {
	m := v1.Manifest{
		SchemaVersion: 2,
		MediaType:     types.OCIManifestSchema1,
		Config:        v1.Descriptor{MediaType: types.OCIConfigJSON, Size: 100, Digest: fakeDigest(-1)},
	}
	for i := range 1500 {
		m.Layers = append(m.Layers, v1.Descriptor{MediaType: types.OCILayer, Size: 100, Digest: fakeDigest(i)})
	}
	doc, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	r := newTestRegistry(t)
	ref := servedManifests(t, r, "ocp/release", doc)[0]
	p := newTestPuller(t, Config{})
	_, err = fetch(t, p, ref, "")
	wantRefused(t, p, ref, err, "Layers", 127)
	if blobs := r.served("/blobs/"); len(blobs) != 0 {
		t.Errorf("the registry served %d blob requests, want none", len(blobs))
	}
}

// bigIndex is an index of about size bytes, its padding an annotation.
func bigIndex(t *testing.T, size int) []byte {
	t.Helper()
	idx := v1.IndexManifest{
		SchemaVersion: 2,
		MediaType:     types.OCIImageIndex,
		Manifests:     []v1.Descriptor{{MediaType: types.OCIManifestSchema1, Size: 100, Digest: fakeDigest(0), Platform: &v1.Platform{OS: "linux", Architecture: "amd64"}}},
		Annotations:   map[string]string{"padding": strings.Repeat("p", size)},
	}
	doc, err := json.Marshal(idx)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// TestAManifestOverTheLimitIsNotReadWhole: an index or manifest over
// ManifestBytes is refused, whether the registry says its length or
// streams it, and a tag whose HEAD says so is never fetched.
func TestAManifestOverTheLimitIsNotReadWhole(t *testing.T) {
	doc := bigIndex(t, 29<<20)
	for _, streamed := range []bool{false, true} {
		t.Run(fmt.Sprintf("streamed=%v", streamed), func(t *testing.T) {
			r := newTestRegistry(t)
			ref := servedManifests(t, r, "ocp/release", doc)[0]
			if streamed {
				serve := r.intercept
				r.intercept = func(w http.ResponseWriter, req *http.Request) bool {
					return serve(&noLength{ResponseWriter: w}, req)
				}
			}
			p := newTestPuller(t, Config{})
			_, err := fetch(t, p, ref, "linux/amd64")
			wantRefused(t, p, ref, err, "ManifestBytes", 4<<20)
		})
	}
	t.Run("tag", func(t *testing.T) {
		r := newTestRegistry(t)
		byDigest := servedManifests(t, r, "ocp/release", doc)[0]
		serve := r.intercept
		r.intercept = func(w http.ResponseWriter, req *http.Request) bool {
			if req.URL.Path == "/v2/ocp/release/manifests/1.0.0" {
				req.URL.Path = "/v2/ocp/release/manifests/" + byDigest.Digest()
			}
			return serve(w, req)
		}
		tag := mustRef(t, r.host+"/ocp/release:1.0.0")
		p := newTestPuller(t, Config{})
		_, err := fetch(t, p, tag, "linux/amd64")
		wantRefused(t, p, tag, err, "ManifestBytes", 4<<20)
		if gets := r.served("GET /v2/ocp/release/manifests/"); len(gets) != 0 {
			t.Errorf("the registry served %v, want no manifest GET", gets)
		}
	})
}

// noLength drops the Content-Length header, so that a body is streamed.
type noLength struct{ http.ResponseWriter }

func (w *noLength) WriteHeader(code int) {
	w.Header().Del("Content-Length")
	w.ResponseWriter.WriteHeader(code)
}

func (w *noLength) Write(p []byte) (int, error) {
	w.Header().Del("Content-Length")
	return w.ResponseWriter.Write(p)
}

// TestNestedIndexesAreBounded: an index of indexes is followed as deep
// as Indexes allows and no deeper, one manifest request per level.
func TestNestedIndexesAreBounded(t *testing.T) {
	r := newTestRegistry(t)
	img := imageOf(t, rawLayer(t, metadataEntries("1.0.0")...))
	img, err := mutate.ConfigFile(img, &v1.ConfigFile{OS: "linux", Architecture: "amd64", RootFS: mustConfig(t, img).RootFS})
	if err != nil {
		t.Fatal(err)
	}
	amd64 := &v1.Platform{OS: "linux", Architecture: "amd64"}
	var top v1.ImageIndex = mutate.AppendManifests(empty.Index, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: amd64}})
	var refs []Ref
	for depth := 1; depth <= 3; depth++ {
		refs = append(refs, r.push(t, fmt.Sprintf("ocp/release:depth%d", depth), top))
		top = mutate.AppendManifests(empty.Index, mutate.IndexAddendum{Add: top, Descriptor: v1.Descriptor{Platform: amd64}})
	}
	p := newTestPuller(t, Config{})
	for depth, ref := range refs[:2] {
		e, err := fetch(t, p, ref, "linux/amd64")
		if err != nil {
			t.Fatalf("fetch of %d nested indexes: %v", depth+1, err)
		}
		if got := summary(t, e.Dir); !strings.HasPrefix(got, "version=1.0.0 ") {
			t.Errorf("fetch of %d nested indexes loaded %s", depth+1, got)
		}
	}
	cache := t.TempDir()
	p = newTestPuller(t, Config{CacheDir: cache})
	r.reset()
	_, err = fetch(t, p, refs[2], "linux/amd64")
	wantRefused(t, p, refs[2], err, "Indexes", 2)
	if gets := r.served("GET /v2/ocp/release/manifests/"); len(gets) != 2 {
		t.Errorf("the registry served %v, want the two indexes allowed", gets)
	}
}
