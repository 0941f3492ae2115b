package story

import (
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
)

// Registry is an OCI registry served by this process on loopback, the
// demo's stand-in for quay.io, with a signature store beside it at
// /signatures: every release's verifier must name a store, and an empty
// one is where an unsigned release's signature is looked for and not found.
type Registry struct {
	// Host is 127.0.0.1:PORT, the registry part of image references.
	Host string
	srv  *http.Server
	done chan error
}

// StartRegistry serves the registry, logging its requests to logTo, and
// the signature store directory storeDir, until Close.
func StartRegistry(storeDir string, logTo io.Writer) (*Registry, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen for the registry: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/v2/", registry.New(registry.Logger(log.New(logTo, "registry: ", log.LstdFlags))))
	mux.Handle("/signatures/", http.StripPrefix("/signatures", http.FileServer(http.Dir(storeDir))))
	r := &Registry{
		Host: l.Addr().String(),
		srv:  &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second},
		done: make(chan error, 1),
	}
	go func() { r.done <- r.srv.Serve(l) }()
	return r, nil
}

// StoreURL is the signature store's URL, for a verifier's store-N.
func (r *Registry) StoreURL() string { return "http://" + r.Host + "/signatures" }

// Close stops serving and waits for the server to end.
func (r *Registry) Close() error {
	err := r.srv.Close()
	if serveErr := <-r.done; !errors.Is(serveErr, http.ErrServerClosed) {
		err = errors.Join(err, serveErr)
	}
	return err
}
