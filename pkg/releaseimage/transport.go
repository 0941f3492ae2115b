package releaseimage

import (
	"fmt"
	"net/http"

	"github.com/payload-applier/payload-applier/pkg/egress"
)

// newTransport is the registry's transport, built by egress: each step
// of a request is bounded (dial 30s, TLS 10s, response headers 1m), so
// that a registry that stops answering fails the try instead of hanging
// it; ctx bounds the whole fetch. go-containerregistry adds the
// registry's credentials above it, for the registry's host only, and
// follows a blob's redirect to another host (a CDN) without them; egress
// refuses a redirect from https to plain http, which the library would
// follow with them when the host stays the same.
func newTransport(cfg Registry) http.RoundTripper {
	return plainHTTPGuard{
		next: egress.Policy{
			// Digests and sizes check what is read; this only stops one
			// answer from outgrowing what a release's layers may take.
			MaxBody:            DefaultLimits().ReadBytes,
			Answer:             "a registry response",
			InsecureSkipVerify: cfg.Insecure,
			Base:               cfg.Transport,
		}.Transport(),
		insecure: cfg.Insecure,
	}
}

// plainHTTPGuard refuses plain HTTP to a registry off loopback unless
// insecure registries were asked for. go-containerregistry itself tries
// plain HTTP for private-network addresses, which a cluster's registry
// often has; a release must not be read unauthenticated by accident.
type plainHTTPGuard struct {
	next     http.RoundTripper
	insecure bool
}

func (g plainHTTPGuard) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme == "http" && !g.insecure && !isLoopbackHost(req.URL.Host) {
		return nil, fmt.Errorf("plain HTTP to %s refused: the registry is not on loopback; use --insecure-registry to allow it", req.URL.Host)
	}
	return g.next.RoundTrip(req)
}
