// Package egress is the one place that builds the HTTP client policy for
// remote endpoints: the update service, signature stores, Prometheus and
// registries. A Policy bounds each step of a request and the body of its
// answer, trusts the roots it is given over TLS 1.2 or later, refuses a
// redirect from https to plain http, and sends credentials to their own
// origin only, checked again at every redirect.
package egress

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// The bounds of a request's steps when a Policy leaves them zero.
const (
	DefaultDialTimeout           = 30 * time.Second
	DefaultTLSHandshakeTimeout   = 10 * time.Second
	DefaultResponseHeaderTimeout = time.Minute
	// MaxRedirects is how many redirects a Client follows, as net/http.
	MaxRedirects = 10
)

// ErrDowngrade is a redirect from https to plain http: whoever is on the
// path could read or rewrite what follows it.
var ErrDowngrade = errors.New("an https endpoint may not redirect to plain http")

// ErrTooManyRedirects ends a chain of more than MaxRedirects redirects.
var ErrTooManyRedirects = fmt.Errorf("stopped after %d redirects", MaxRedirects)

// RedirectError is a redirect refused; Err says why.
type RedirectError struct {
	// To is where the redirect led, without its userinfo password.
	To  string
	Err error
}

func (e *RedirectError) Error() string { return fmt.Sprintf("redirect to %s refused: %v", e.To, e.Err) }
func (e *RedirectError) Unwrap() error { return e.Err }

// BodyTooLargeError is an answer over a Policy's MaxBody.
type BodyTooLargeError struct {
	// URL is the request's without its query, which may be long (a
	// PromQL query), or its userinfo password.
	URL string
	// Answer names what the limit bounds, as "a signature".
	Answer string
	Limit  int64
	// Length is the Content-Length the answer declared; -1 when it was
	// found over the limit while read.
	Length int64
}

func (e *BodyTooLargeError) Error() string {
	msg := fmt.Sprintf("the answer of %s is over the %d-byte limit of %s", e.URL, e.Limit, e.Answer)
	if e.Length >= 0 {
		msg += fmt.Sprintf(" (it declares %d bytes)", e.Length)
	}
	return msg
}

// Credentials are a secret that belongs to one origin.
type Credentials struct {
	// Origin is the URL whose scheme, host and port the secret may go to;
	// its path plays no part.
	Origin *url.URL
	// Apply adds the secret to a request for Origin. The request is the
	// transport's own copy. It runs for every request, so that a rotated
	// token is read again; an error fails the request.
	Apply func(*http.Request) error
}

// Policy is how one kind of remote endpoint is reached. The zero Policy
// bounds the steps of a request with the defaults above and nothing else.
type Policy struct {
	// Timeout bounds one request of a Client, redirects and the reading
	// of the body included; zero: only the caller's context does. A
	// Transport's user bounds requests with their context.
	Timeout time.Duration
	// DialTimeout, TLSHandshakeTimeout and ResponseHeaderTimeout bound
	// the steps of a request; zero: the defaults above.
	DialTimeout           time.Duration
	TLSHandshakeTimeout   time.Duration
	ResponseHeaderTimeout time.Duration

	// MaxBody bounds the body of an answer; zero: unbounded. A success
	// that declares more fails before its body is read; any body fails
	// when read past it. An error page that declares more is still
	// returned, so that its status is seen.
	MaxBody int64
	// Answer names what MaxBody bounds in errors, as "a signature";
	// "": "a response".
	Answer string

	// RootCAs are the roots TLS trusts; nil: the system's.
	RootCAs *x509.CertPool
	// InsecureSkipVerify accepts any certificate; only for endpoints the
	// user has named insecure.
	InsecureSkipVerify bool
	// Proxy picks the proxy of a request; nil: the environment's
	// (HTTPS_PROXY, HTTP_PROXY, NO_PROXY).
	Proxy func(*http.Request) (*url.URL, error)

	// Credentials, when set, are added to the requests for their origin
	// that began there, at every hop.
	Credentials *Credentials

	// Base replaces the transport the fields above build (DialTimeout to
	// Proxy); the rules on redirects, credentials and bodies still apply.
	Base http.RoundTripper
}

// Client returns a client that follows the policy, and that refuses a
// redirect from https to http and a chain of more than MaxRedirects.
func (p Policy) Client() *http.Client {
	return &http.Client{
		Transport:     p.Transport(),
		Timeout:       p.Timeout,
		CheckRedirect: CheckRedirect(nil),
	}
}

// Transport returns a transport that follows the policy, for clients
// built elsewhere (go-containerregistry builds its own). It refuses a
// redirect hop from https to http itself, since such a client's redirect
// policy is not ours.
func (p Policy) Transport() http.RoundTripper {
	base := p.Base
	if base == nil {
		base = p.buildBase()
	}
	answer := p.Answer
	if answer == "" {
		answer = "a response"
	}
	return &transport{base: base, maxBody: p.MaxBody, answer: answer, creds: p.Credentials}
}

func (p Policy) buildBase() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = p.Proxy
	if t.Proxy == nil {
		t.Proxy = http.ProxyFromEnvironment
	}
	t.DialContext = (&net.Dialer{Timeout: orDefault(p.DialTimeout, DefaultDialTimeout), KeepAlive: 30 * time.Second}).DialContext
	t.TLSHandshakeTimeout = orDefault(p.TLSHandshakeTimeout, DefaultTLSHandshakeTimeout)
	t.ResponseHeaderTimeout = orDefault(p.ResponseHeaderTimeout, DefaultResponseHeaderTimeout)
	t.TLSClientConfig = &tls.Config{
		MinVersion:         tls.VersionTLS12,
		RootCAs:            p.RootCAs,
		InsecureSkipVerify: p.InsecureSkipVerify, // only when the user named the endpoint insecure
	}
	return t
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// CheckRedirect returns a redirect policy for http.Client that refuses a
// redirect from https to plain http, then applies next (nil: at most
// MaxRedirects redirects).
func CheckRedirect(next func(*http.Request, []*http.Request) error) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if downgrades(via[len(via)-1].URL, req.URL) {
			return &RedirectError{To: req.URL.Redacted(), Err: ErrDowngrade}
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= MaxRedirects {
			return &RedirectError{To: req.URL.Redacted(), Err: ErrTooManyRedirects}
		}
		return nil
	}
}

func downgrades(from, to *url.URL) bool {
	return strings.EqualFold(from.Scheme, "https") && !strings.EqualFold(to.Scheme, "https")
}

// transport applies the rules of a Policy to each hop of a request.
type transport struct {
	base    http.RoundTripper
	maxBody int64
	answer  string
	creds   *Credentials
}

// secretHeaders are the headers net/http itself forwards on a redirect to
// the same host or a subdomain, whatever the port or scheme.
var secretHeaders = []string{"Authorization", "Cookie"}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	first := req
	if req.Response != nil {
		// A redirect hop: net/http sets Response to the answer that led here.
		prev := req.Response.Request
		if prev != nil && downgrades(prev.URL, req.URL) {
			closeBody(req)
			return nil, &RedirectError{To: req.URL.Redacted(), Err: ErrDowngrade}
		}
		first = firstHop(req)
		if !sameOrigin(first.URL, req.URL) && hasAny(req.Header, secretHeaders) {
			req = req.Clone(req.Context())
			for _, h := range secretHeaders {
				req.Header.Del(h)
			}
		}
	}
	if c := t.creds; c != nil && sameOrigin(req.URL, c.Origin) && sameOrigin(first.URL, c.Origin) {
		req = req.Clone(req.Context())
		if err := c.Apply(req); err != nil {
			closeBody(req)
			return nil, err
		}
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil || t.maxBody <= 0 {
		return resp, err
	}
	tooLarge := &BodyTooLargeError{URL: withoutQuery(req.URL), Answer: t.answer, Limit: t.maxBody, Length: -1}
	if req.Method != http.MethodHead && resp.StatusCode/100 == 2 && resp.ContentLength > t.maxBody {
		resp.Body.Close()
		tooLarge.Length = resp.ContentLength
		return nil, tooLarge
	}
	resp.Body = CapBody(resp.Body, t.maxBody, tooLarge)
	return resp, nil
}

// CloseIdleConnections lets http.Client.CloseIdleConnections reach the base.
func (t *transport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

func withoutQuery(u *url.URL) string {
	short := *u
	short.RawQuery, short.ForceQuery, short.Fragment, short.RawFragment = "", false, "", ""
	return short.Redacted()
}

// firstHop follows a redirect hop back to the request that began it.
func firstHop(req *http.Request) *http.Request {
	for req.Response != nil && req.Response.Request != nil {
		req = req.Response.Request
	}
	return req
}

// sameOrigin compares scheme, host and port, the port defaulted by scheme.
func sameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) &&
		strings.EqualFold(a.Hostname(), b.Hostname()) &&
		portOf(a) == portOf(b)
}

func portOf(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if strings.EqualFold(u.Scheme, "https") {
		return "443"
	}
	return "80"
}

func hasAny(h http.Header, names []string) bool {
	for _, n := range names {
		if h.Get(n) != "" {
			return true
		}
	}
	return false
}

// closeBody honours the RoundTripper contract of closing a request's body
// even when the request is not sent.
func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// CapBody passes on up to max bytes of body and fails a read past them
// with tooLarge, rather than truncating the answer, so that the error
// says why. It is the body cap of Policy.MaxBody, for callers that cap
// some answers more tightly.
func CapBody(body io.ReadCloser, max int64, tooLarge error) io.ReadCloser {
	return &cappedBody{ReadCloser: body, left: max, tooLarge: tooLarge}
}

type cappedBody struct {
	io.ReadCloser
	left     int64
	tooLarge error
	failed   bool
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.failed {
		return 0, b.tooLarge
	}
	// One byte past the limit tells a full body from an oversized one.
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.ReadCloser.Read(p)
	if int64(n) > b.left {
		n = int(b.left)
		b.left = 0
		b.failed = true
		return n, b.tooLarge
	}
	b.left -= int64(n)
	return n, err
}
