package clusterconditions

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/api"
)

// maxFileBytes bounds the CA and token files read for each query.
const maxFileBytes = 1 << 20

// transport carries PromQL queries: TLS verified with the CA file, rebuilt
// when that file changes, the bearer token read from its file for every
// request, and responses bounded.
type transport struct {
	caFile, tokenFile string
	maxBody           int64

	mu   sync.Mutex
	ca   []byte // the CA file's content that base trusts
	base *http.Transport
}

func newTransport(caFile, tokenFile string, maxBody int64) *transport {
	return &transport{caFile: caFile, tokenFile: tokenFile, maxBody: maxBody}
}

// roundTripper returns the round tripper for the next query.
func (t *transport) roundTripper() (http.RoundTripper, error) {
	var ca []byte
	if t.caFile != "" {
		var err error
		if ca, err = readBounded(t.caFile); err != nil {
			return nil, fmt.Errorf("read the Prometheus CA file: %w", err)
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.base == nil || !bytes.Equal(ca, t.ca) {
		tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12}
		if ca != nil {
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(ca) {
				return nil, fmt.Errorf("the Prometheus CA file %s holds no PEM certificate", t.caFile)
			}
			tlsConfig.RootCAs = pool
		}
		if t.base != nil {
			t.base.CloseIdleConnections()
		}
		t.base = &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			TLSClientConfig:       tlsConfig,
			TLSHandshakeTimeout:   10 * time.Second,
			MaxIdleConns:          1,
			IdleConnTimeout:       time.Minute,
			ResponseHeaderTimeout: time.Minute,
		}
		t.ca = ca
	}
	return &authorized{t: t, base: t.base}, nil
}

// authorized adds the token and bounds the response of each request.
type authorized struct {
	t    *transport
	base http.RoundTripper
}

func (a *authorized) RoundTrip(req *http.Request) (*http.Response, error) {
	if a.t.tokenFile != "" {
		token, err := readBounded(a.t.tokenFile)
		if err != nil {
			return nil, fmt.Errorf("read the Prometheus token file: %w", err)
		}
		tok := strings.TrimSpace(string(token))
		if tok == "" {
			return nil, fmt.Errorf("the Prometheus token file %s is empty", a.t.tokenFile)
		}
		req = req.Clone(req.Context())
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := a.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if resp.ContentLength > a.t.maxBody {
		resp.Body.Close()
		return nil, fmt.Errorf("%w (over %d bytes: %d)", errResponseTooLarge, a.t.maxBody, resp.ContentLength)
	}
	resp.Body = &boundedBody{ReadCloser: resp.Body, limit: a.t.maxBody, left: a.t.maxBody}
	return resp, nil
}

// boundedBody fails a read past its limit rather than truncating the
// response, so that the error says why.
type boundedBody struct {
	io.ReadCloser
	limit, left int64
}

var errResponseTooLarge = errors.New("the Prometheus response is too large")

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// A last byte past the limit tells a full body from an oversized one.
		var one [1]byte
		n, err := b.ReadCloser.Read(one[:])
		if n > 0 {
			return 0, fmt.Errorf("%w (over %d bytes)", errResponseTooLarge, b.limit)
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
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
