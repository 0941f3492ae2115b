// Package releaseimagetest serves release images from go-containerregistry's
// in-process registry on loopback, for tests.
package releaseimagetest

import (
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/payload-applier/payload-applier/pkg/releaseimage"
)

// Registry is a registry on loopback that logs the requests it serves.
type Registry struct {
	// Host is host:port, for references Host/repository@sha256:<hex>.
	Host string

	mu   sync.Mutex
	log  []string
	hold func(*http.Request)
}

// NewRegistry serves until t ends.
func NewRegistry(t testing.TB) *Registry {
	t.Helper()
	r := &Registry{}
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.log = append(r.log, req.Method+" "+req.URL.Path)
		hold := r.hold
		r.mu.Unlock()
		if hold != nil && strings.Contains(req.URL.Path, "/manifests/") {
			hold(req)
		}
		reg.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	r.Host = strings.TrimPrefix(srv.URL, "http://")
	return r
}

// HoldManifests has hold see every manifest request before the registry
// answers it, for as long as hold takes; nil stops that.
func (r *Registry) HoldManifests(hold func(*http.Request)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.hold = hold
}

// Take returns the requests served since the last call, as "METHOD path".
func (r *Registry) Take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.log
	r.log = nil
	return out
}

// Publish packs the payload in dir, pushes it as Host/release:<its
// version> and returns it by digest.
func (r *Registry) Publish(t testing.TB, dir string) string {
	t.Helper()
	img, rel, err := releaseimage.Pack(dir, releaseimage.PackOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := releaseimage.ParseRef(r.Host + "/release:" + rel.Version)
	if err != nil {
		t.Fatal(err)
	}
	digest, err := releaseimage.Push(context.Background(), ref, img, releaseimage.Registry{})
	if err != nil {
		t.Fatal(err)
	}
	return ref.Repository() + "@" + digest
}
