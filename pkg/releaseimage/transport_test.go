package releaseimage

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestABlobRedirectToAnotherHostGoesWithoutTheRegistrysCredentials: a
// registry that sends blob reads to a CDN on another host still serves
// the release, and the CDN never sees the registry's Authorization.
func TestABlobRedirectToAnotherHostGoesWithoutTheRegistrysCredentials(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("DOCKER_CONFIG", "")
	t.Setenv("REGISTRY_AUTH_FILE", "")
	r := newTestRegistry(t)
	img := imageOf(t, rawLayer(t, metadataEntries("1.0.0")...))
	ref := r.push(t, "ocp/release:1.0.0", img)

	blobs := map[string][]byte{}
	config, err := img.RawConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	configDigest, _ := img.ConfigName()
	blobs[configDigest.String()] = config
	layers, _ := img.Layers()
	for _, l := range layers {
		d, _ := l.Digest()
		rc, err := l.Compressed()
		if err != nil {
			t.Fatal(err)
		}
		blobs[d.String()], err = io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
	}

	var mu sync.Mutex
	var cdnAuthz []string
	cdn := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		mu.Lock()
		cdnAuthz = append(cdnAuthz, req.Header.Get("Authorization"))
		mu.Unlock()
		blob, ok := blobs[path.Base(req.URL.Path)]
		if !ok {
			http.NotFound(w, req)
			return
		}
		_, _ = w.Write(blob)
	}))
	defer cdn.Close()
	r.intercept = func(w http.ResponseWriter, req *http.Request) bool {
		if user, pass, ok := req.BasicAuth(); !ok || user != "puller" || pass != "s3cret" {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`)
			return true
		}
		if req.Method == http.MethodGet && strings.Contains(req.URL.Path, "/blobs/") {
			http.Redirect(w, req, cdn.URL+"/cdn/"+path.Base(req.URL.Path), http.StatusTemporaryRedirect)
			return true
		}
		return false
	}
	authFile := filepath.Join(t.TempDir(), "auth.json")
	creds := fmt.Sprintf(`{"auths":{%q:{"auth":"cHVsbGVyOnMzY3JldA=="}}}`, r.host) // puller:s3cret
	if err := os.WriteFile(authFile, []byte(creds), 0o600); err != nil {
		t.Fatal(err)
	}

	e, err := fetch(t, newTestPuller(t, Config{Registry: Registry{AuthFile: authFile}}), ref, "")
	if err != nil {
		t.Fatalf("fetch through the CDN: %v", err)
	}
	if _, err := os.Stat(filepath.Join(e.Dir, "release-manifests", "release-metadata")); err != nil {
		t.Errorf("the release is not extracted: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(cdnAuthz) == 0 {
		t.Fatal("no blob was read from the CDN")
	}
	for _, a := range cdnAuthz {
		if a != "" {
			t.Errorf("the CDN got Authorization %q", a)
		}
	}
}
