package releaseimage

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/payload-applier/payload-applier/pkg/payload/payloadtest"
)

// testRegistry is go-containerregistry's in-process registry on loopback,
// with a log of the requests it served and a hook to answer some itself.
type testRegistry struct {
	host string

	mu       sync.Mutex
	requests []string
	// intercept answers a request instead of the registry when it
	// returns true.
	intercept func(w http.ResponseWriter, r *http.Request) bool
}

func newTestRegistry(t testing.TB) *testRegistry {
	t.Helper()
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	tr := &testRegistry{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tr.mu.Lock()
		tr.requests = append(tr.requests, r.Method+" "+r.URL.Path)
		intercept := tr.intercept
		tr.mu.Unlock()
		if intercept != nil && intercept(w, r) {
			return
		}
		reg.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	tr.host = strings.TrimPrefix(srv.URL, "http://")
	return tr
}

// reset forgets the requests served so far.
func (r *testRegistry) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests = nil
}

// served lists the requests served whose "METHOD path" contains substr.
func (r *testRegistry) served(substr string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, req := range r.requests {
		if strings.Contains(req, substr) {
			out = append(out, req)
		}
	}
	return out
}

func (r *testRegistry) all() []string { return r.served("") }

// push writes img to repo:tag on the registry and returns the reference
// by digest.
func (r *testRegistry) push(t testing.TB, repoTag string, img v1.Image) Ref {
	t.Helper()
	tag, err := name.NewTag(r.host + "/" + repoTag)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(tag, img); err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return mustRef(t, tag.Context().Name()+"@"+d.String())
}

func mustRef(t testing.TB, s string) Ref {
	t.Helper()
	ref, err := ParseRef(s)
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

// entry is one tar entry of a hand-made layer.
type entry struct {
	hdr  tar.Header
	data []byte
}

func reg(name, data string) entry {
	return entry{hdr: tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(data))}, data: []byte(data)}
}

func dir(name string) entry {
	return entry{hdr: tar.Header{Name: name, Typeflag: tar.TypeDir, Mode: 0o755}}
}

// rawLayer is a layer whose tar holds entries exactly as given, which
// NewLayer would never write.
func rawLayer(t testing.TB, entries ...entry) v1.Layer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		hdr := e.hdr
		if err := tw.WriteHeader(&hdr); err != nil {
			t.Fatal(err)
		}
		if len(e.data) > 0 {
			if _, err := tw.Write(e.data); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func imageOf(t testing.TB, layers ...v1.Layer) v1.Image {
	t.Helper()
	img, err := mutate.AppendLayers(empty.Image, layers...)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

const demoManifest = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: demo\n  annotations:\n    include.release.openshift.io/self-managed-high-availability: \"true\"\n"

// metadataEntries are a valid release-metadata and image-references for
// version, under release-manifests/.
func metadataEntries(version string) []entry {
	return []entry{
		dir("release-manifests/"),
		reg("release-manifests/release-metadata", `{"kind":"cincinnati-metadata-v0","version":"`+version+`","previous":[],"metadata":{}}`),
		reg("release-manifests/image-references", `{"kind":"ImageStream","apiVersion":"image.openshift.io/v1","metadata":{"name":"`+version+`"},"spec":{"tags":[]}}`),
	}
}

// writeDemo writes a small valid payload directory and returns it.
func writeDemo(t testing.TB, version string, names ...string) string {
	t.Helper()
	files := map[string]string{}
	for i, n := range names {
		files["0000_50_demo_0"+string(rune('0'+i))+"_"+n+".yaml"] = strings.Replace(demoManifest, "%s", n, 1)
	}
	return payloadtest.WriteRelease(t, t.TempDir(), version, nil, files)
}

// newTestPuller is a puller with a cache of its own and fast retries.
func newTestPuller(t testing.TB, cfg Config) *Puller {
	t.Helper()
	if cfg.CacheDir == "" {
		cfg.CacheDir = t.TempDir()
	}
	if cfg.Backoff.Steps == 0 {
		cfg.Backoff = remote.Backoff{Duration: time.Millisecond, Factor: 2, Steps: 2}
	}
	p, err := NewPuller(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// cacheNames lists what the cache directory holds.
func cacheNames(t testing.TB, p *Puller) []string {
	t.Helper()
	des, err := os.ReadDir(p.cfg.CacheDir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, de := range des {
		out = append(out, de.Name())
	}
	return out
}

func fetch(t testing.TB, p *Puller, ref Ref, platform string) (*Extracted, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return p.Fetch(ctx, ref, FetchOptions{Platform: platform})
}

// pushIndex writes idx to repo:tag and returns the reference by digest.
func (r *testRegistry) pushIndex(t testing.TB, repoTag string, idx v1.ImageIndex) Ref {
	t.Helper()
	tag, err := name.NewTag(r.host + "/" + repoTag)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(tag, idx); err != nil {
		t.Fatal(err)
	}
	d, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return mustRef(t, tag.Context().Name()+"@"+d.String())
}
