// Package faultproxy is a TLS reverse proxy that sits between a Kubernetes
// client and kube-apiserver and makes a share of the requests fail the way
// real apiservers and networks fail: a 500, a 429 with Retry-After, a
// request that hangs and is then dropped, a connection reset, and a write
// that takes effect although its response is lost.
//
// Watches get only the faults that happen before the apiserver sees them
// (a reflector then backs off, lists and watches again); an established
// watch stream is never cut here. Restarting kube-apiserver breaks streams,
// and the chaos tests do that separately.
package faultproxy

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"math/rand"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"
)

// Fault is what the proxy does to one request instead of forwarding it
// untouched.
type Fault string

const (
	// ServerError answers 500 without forwarding: client-go returns the
	// error to its caller.
	ServerError Fault = "500"
	// TooManyRequests answers 429 with Retry-After: 1 without forwarding:
	// client-go waits and retries the request itself.
	TooManyRequests Fault = "429"
	// Hang holds the request without forwarding it for a random time up to
	// Options.MaxHang, then closes the connection with no response.
	Hang Fault = "hang"
	// Reset closes the connection with a TCP reset, without forwarding.
	Reset Fault = "reset"
	// LostResponse forwards the request, so it takes effect, then resets
	// the connection instead of answering. Never used on watches.
	LostResponse Fault = "lost-response"
)

// AllFaults lists every fault the proxy can inject.
var AllFaults = []Fault{ServerError, TooManyRequests, Hang, Reset, LostResponse}

// Options configure a Proxy.
type Options struct {
	// Upstream is the apiserver's address and the TLS client config that
	// trusts it. Required.
	Upstream    *url.URL
	UpstreamTLS *tls.Config
	// Rate is the share of requests that get a fault, from 0 to 1.
	Rate float64
	// Seed seeds the choice of requests and faults. Requests race, so a
	// seed fixes the sequence of draws, not which request gets which.
	Seed int64
	// Faults are drawn from with equal weight. Default AllFaults.
	Faults []Fault
	// MaxHang bounds a Hang. Default 2s.
	MaxHang time.Duration
}

// Proxy is a running fault proxy. Its methods are safe for concurrent use.
type Proxy struct {
	opts     Options
	server   *httptest.Server
	upstream *httputil.ReverseProxy
	done     chan struct{}

	mu       sync.Mutex
	rng      *rand.Rand
	rate     float64
	requests int
	counts   map[Fault]int
	log      []string
}

// Start listens on a loopback port with a fresh self-signed certificate
// and serves until Close.
func Start(opts Options) (*Proxy, error) {
	if opts.Upstream == nil {
		return nil, errors.New("faultproxy: Options.Upstream is required")
	}
	if opts.Rate < 0 || opts.Rate > 1 {
		return nil, fmt.Errorf("faultproxy: Options.Rate %v is not between 0 and 1", opts.Rate)
	}
	if len(opts.Faults) == 0 {
		opts.Faults = AllFaults
	}
	if opts.MaxHang <= 0 {
		opts.MaxHang = 2 * time.Second
	}
	target := opts.Upstream
	p := &Proxy{
		opts:   opts,
		done:   make(chan struct{}),
		rng:    rand.New(rand.NewSource(opts.Seed)),
		rate:   opts.Rate,
		counts: map[Fault]int{},
		upstream: &httputil.ReverseProxy{
			Rewrite: func(r *httputil.ProxyRequest) {
				r.SetURL(target)
				r.Out.Host = target.Host
			},
			Transport:     &http.Transport{TLSClientConfig: opts.UpstreamTLS, Proxy: nil, MaxIdleConnsPerHost: 50},
			FlushInterval: -1, // watch events go out as they come
			ErrorLog:      log.New(io.Discard, "", 0),
		},
	}
	// HTTP/1.1 only: a hijacked connection is what lets a fault drop or
	// reset it, and HTTP/2 streams cannot be hijacked.
	p.server = httptest.NewUnstartedServer(http.HandlerFunc(p.serve))
	p.server.EnableHTTP2 = false
	p.server.Config.ErrorLog = log.New(io.Discard, "", 0) // resets make noise
	p.server.StartTLS()
	return p, nil
}

// URL is the proxy's https://127.0.0.1:port address.
func (p *Proxy) URL() string { return p.server.URL }

// RESTConfig returns a copy of cfg that reaches the apiserver through the
// proxy with cfg's credentials.
func (p *Proxy) RESTConfig(cfg *rest.Config) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.Host = p.server.URL
	out.TLSClientConfig = rest.TLSClientConfig{CAData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.server.Certificate().Raw})}
	return out
}

// SetRate changes the share of faulty requests, for example to 0 before
// final checks.
func (p *Proxy) SetRate(rate float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rate = rate
}

// Stats reports how many requests went through and the faults injected.
func (p *Proxy) Stats() (requests int, faults map[Fault]int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	faults = make(map[Fault]int, len(p.counts))
	for f, n := range p.counts {
		faults[f] = n
	}
	return p.requests, faults
}

// Summary renders Stats for test logs, e.g. "812 requests; faults: 429 x17, ...".
func (p *Proxy) Summary() string {
	requests, faults := p.Stats()
	var parts []string
	for f, n := range faults {
		parts = append(parts, fmt.Sprintf("%s x%d", f, n))
	}
	sort.Strings(parts)
	return fmt.Sprintf("%d requests; faults: %s", requests, strings.Join(parts, ", "))
}

// Faulted lists the faulted requests as "fault METHOD path", in order.
func (p *Proxy) Faulted() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.log...)
}

// Close stops serving, ends pending hangs and closes open connections.
func (p *Proxy) Close() {
	select {
	case <-p.done:
	default:
		close(p.done)
	}
	p.server.CloseClientConnections()
	p.server.Close()
}

// IsWatch reports whether r opens a watch stream.
func IsWatch(r *http.Request) bool {
	q := r.URL.Query().Get("watch")
	return q == "true" || q == "1" || strings.Contains(r.URL.Path, "/watch/")
}

// draw decides the fault for one request, or "" for none.
func (p *Proxy) draw(r *http.Request) (Fault, time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.requests++
	if p.rng.Float64() >= p.rate {
		return "", 0
	}
	choices := p.opts.Faults
	if IsWatch(r) {
		choices = withoutFault(choices, LostResponse)
		if len(choices) == 0 {
			return "", 0
		}
	}
	f := choices[p.rng.Intn(len(choices))]
	hang := time.Duration(p.rng.Int63n(int64(p.opts.MaxHang))) + time.Millisecond
	p.counts[f]++
	p.log = append(p.log, fmt.Sprintf("%s %s %s", f, r.Method, r.URL.RequestURI()))
	return f, hang
}

func withoutFault(fs []Fault, drop Fault) []Fault {
	out := make([]Fault, 0, len(fs))
	for _, f := range fs {
		if f != drop {
			out = append(out, f)
		}
	}
	return out
}

func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	fault, hang := p.draw(r)
	switch fault {
	case "":
		p.upstream.ServeHTTP(w, r)
	case ServerError:
		writeStatus(w, http.StatusInternalServerError, "InternalError", "faultproxy: injected internal error", "")
	case TooManyRequests:
		writeStatus(w, http.StatusTooManyRequests, "TooManyRequests", "faultproxy: injected throttling", "1")
	case Hang:
		select {
		case <-time.After(hang):
		case <-r.Context().Done():
		case <-p.done:
		}
		drop(w, false)
	case Reset:
		drop(w, true)
	case LostResponse:
		// The apiserver handles the request in full; only the answer is lost.
		p.upstream.ServeHTTP(discard{header: http.Header{}}, r)
		drop(w, true)
	}
}

// writeStatus answers with a metav1.Status body, as the apiserver does.
func writeStatus(w http.ResponseWriter, code int, reason, message, retryAfter string) {
	w.Header().Set("Content-Type", "application/json")
	if retryAfter != "" {
		w.Header().Set("Retry-After", retryAfter)
	}
	w.WriteHeader(code)
	fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":%q,"reason":%q,"code":%d}`, message, reason, code)
}

// drop closes the client connection without a response; with reset, the
// close is a TCP RST rather than an orderly shutdown.
func drop(w http.ResponseWriter, reset bool) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if reset {
		if tcp, ok := netConn(conn).(*net.TCPConn); ok {
			_ = tcp.SetLinger(0)
		}
	}
	_ = conn.Close()
}

func netConn(c net.Conn) net.Conn {
	if tc, ok := c.(*tls.Conn); ok {
		return tc.NetConn()
	}
	return c
}

// discard is a ResponseWriter that throws the response away.
type discard struct{ header http.Header }

func (d discard) Header() http.Header         { return d.header }
func (d discard) Write(b []byte) (int, error) { return len(b), nil }
func (d discard) WriteHeader(int)             {}
func (d discard) Flush()                      {}

// TLSConfigFor returns a TLS client config that trusts the PEM CA bundle.
func TLSConfigFor(caPEM []byte) (*tls.Config, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("faultproxy: no certificate in the CA bundle")
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}
