package clusterconditions

import (
	"bytes"
	"context"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/api"

	"github.com/payload-applier/payload-applier/pkg/egress"
)

// maxFileBytes bounds the CA and token files read for each query.
const maxFileBytes = 1 << 20

// transport builds the clients of PromQL queries: TLS verified with the
// CA file, rebuilt when that file changes; the bearer token read from its
// file for every request and sent to the Prometheus URL's origin only,
// never across a redirect to another host or to plain http; responses
// bounded.
type transport struct {
	origin            *url.URL // the Prometheus URL; nil: none configured
	caFile, tokenFile string
	maxBody           int64

	mu     sync.Mutex
	ca     []byte // the CA file's content that client trusts
	client *http.Client
}

func newTransport(origin *url.URL, caFile, tokenFile string, maxBody int64) *transport {
	return &transport{origin: origin, caFile: caFile, tokenFile: tokenFile, maxBody: maxBody}
}

// queryClient returns the client for the next query.
func (t *transport) queryClient() (*http.Client, error) {
	var ca []byte
	if t.caFile != "" {
		var err error
		if ca, err = readBounded(t.caFile); err != nil {
			return nil, fmt.Errorf("read the Prometheus CA file: %w", err)
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.client != nil && bytes.Equal(ca, t.ca) {
		return t.client, nil
	}
	policy := egress.Policy{
		DialTimeout:           10 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: time.Minute,
		MaxBody:               t.maxBody,
		Answer:                "a Prometheus response",
	}
	if ca != nil {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(ca) {
			return nil, fmt.Errorf("the Prometheus CA file %s holds no PEM certificate", t.caFile)
		}
		policy.RootCAs = pool
	}
	if t.tokenFile != "" && t.origin != nil {
		policy.Credentials = &egress.Credentials{Origin: t.origin, Apply: t.authorize}
	}
	if t.client != nil {
		t.client.CloseIdleConnections()
	}
	t.client, t.ca = policy.Client(), ca
	return t.client, nil
}

// authorize adds the token, read again for each request since it rotates.
func (t *transport) authorize(req *http.Request) error {
	token, err := readBounded(t.tokenFile)
	if err != nil {
		return fmt.Errorf("read the Prometheus token file: %w", err)
	}
	tok := strings.TrimSpace(string(token))
	if tok == "" {
		return fmt.Errorf("the Prometheus token file %s is empty", t.tokenFile)
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	return nil
}

func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxFileBytes {
		return nil, fmt.Errorf("%s is over %d bytes", path, maxFileBytes)
	}
	return data, nil
}

// getOnly makes client_golang send queries as GET: it tries POST first and
// falls back to GET on 405, and kube-rbac-proxy in front of OpenShift's
// Thanos querier authorizes POST as "create", which a reader lacks.
type getOnly struct{ api.Client }

func (g getOnly) Do(ctx context.Context, req *http.Request) (*http.Response, []byte, error) {
	if req.Method == http.MethodPost {
		return &http.Response{StatusCode: http.StatusMethodNotAllowed, Body: http.NoBody}, nil, nil
	}
	return g.Client.Do(ctx, req)
}
