package egress

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// recorder is a server that records the Authorization header, the Cookie
// header and the URL of each request it gets, then answers with answer.
type recorder struct {
	*httptest.Server
	mu      sync.Mutex
	authz   []string
	cookies []string
	urls    []string
	answer  http.HandlerFunc
}

func newRecorder(t *testing.T, tls bool, answer http.HandlerFunc) *recorder {
	t.Helper()
	r := &recorder{answer: answer}
	h := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.authz = append(r.authz, req.Header.Get("Authorization"))
		r.cookies = append(r.cookies, req.Header.Get("Cookie"))
		r.urls = append(r.urls, req.URL.String())
		answer := r.answer
		r.mu.Unlock()
		answer(w, req)
	})
	r.Server = httptest.NewUnstartedServer(h)
	r.Config.ErrorLog = quiet // refused handshakes are what some tests do
	if tls {
		r.StartTLS()
	} else {
		r.Start()
	}
	t.Cleanup(r.Close)
	return r
}

func (r *recorder) seen() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.authz...)
}

// reset forgets the requests so far and answers the next ones with answer.
func (r *recorder) reset(answer http.HandlerFunc) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.authz, r.cookies, r.urls, r.answer = nil, nil, nil, answer
}

var quiet = log.New(io.Discard, "", 0)

func ok(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "ok") }

func redirectTo(target string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target+r.URL.RequestURI(), http.StatusFound)
	}
}

// trusting returns the roots that trust every httptest TLS server: they
// share one certificate.
func trusting(srv *httptest.Server) *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	return pool
}

func bearer(origin, token string) *Credentials {
	u, _ := url.Parse(origin)
	return &Credentials{Origin: u, Apply: func(r *http.Request) error {
		r.Header.Set("Authorization", "Bearer "+token)
		return nil
	}}
}

func get(t *testing.T, c *http.Client, u string) (string, error) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

func TestCredentialsGoToTheirOriginOnly(t *testing.T) {
	other := newRecorder(t, true, ok)
	otherPlain := newRecorder(t, false, ok)
	for _, tc := range []struct {
		name      string
		answer    func(origin *recorder) http.HandlerFunc
		originGot []string
		otherGot  []string
		wantErr   error
	}{
		{name: "a request to the origin carries them", answer: func(*recorder) http.HandlerFunc { return ok }, originGot: []string{"Bearer T"}},
		{name: "a redirect to another port goes without", answer: func(*recorder) http.HandlerFunc { return redirectTo(other.URL) },
			originGot: []string{"Bearer T"}, otherGot: []string{""}},
		{name: "a redirect back to the origin carries them again", answer: func(o *recorder) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Query().Get("back") == "" {
					http.Redirect(w, r, other.URL+"/?to="+url.QueryEscape(o.URL+"/?back=1"), http.StatusFound)
					return
				}
				ok(w, r)
			}
		}, originGot: []string{"Bearer T", "Bearer T"}, otherGot: []string{""}},
		{name: "a redirect to plain http is refused", answer: func(*recorder) http.HandlerFunc { return redirectTo(otherPlain.URL) },
			originGot: []string{"Bearer T"}, wantErr: ErrDowngrade},
	} {
		t.Run(tc.name, func(t *testing.T) {
			other.reset(func(w http.ResponseWriter, r *http.Request) {
				if to := r.URL.Query().Get("to"); to != "" {
					http.Redirect(w, r, to, http.StatusFound)
					return
				}
				ok(w, r)
			})
			otherPlain.reset(ok)
			origin := newRecorder(t, true, nil)
			origin.reset(tc.answer(origin))
			c := Policy{RootCAs: trusting(origin.Server), Credentials: bearer(origin.URL, "T")}.Client()
			_, err := get(t, c, origin.URL+"/q")
			if tc.wantErr == nil && err != nil || tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if got := origin.seen(); fmt.Sprint(got) != fmt.Sprint(tc.originGot) {
				t.Errorf("the origin got %q, want %q", got, tc.originGot)
			}
			if got := append(other.seen(), otherPlain.seen()...); fmt.Sprint(got) != fmt.Sprint(tc.otherGot) {
				t.Errorf("the other host got %q, want %q", got, tc.otherGot)
			}
		})
	}
}

func TestCredentialsGoOnlyWhereTheRequestBegan(t *testing.T) {
	origin := newRecorder(t, false, ok)
	start := newRecorder(t, false, redirectTo(origin.URL))
	c := Policy{Credentials: bearer(origin.URL, "T")}.Client()
	if _, err := get(t, c, start.URL); err != nil {
		t.Fatal(err)
	}
	if got := append(start.seen(), origin.seen()...); fmt.Sprint(got) != fmt.Sprint([]string{"", ""}) {
		t.Errorf("Authorization headers %q: another host led the request to the credentials' origin and they were sent", got)
	}
}

func TestACallersAuthorizationDoesNotFollowToAnotherPort(t *testing.T) {
	// net/http forwards it to the same host name whatever the port.
	other := newRecorder(t, false, ok)
	origin := newRecorder(t, false, redirectTo(other.URL))
	req, _ := http.NewRequest(http.MethodGet, origin.URL, nil)
	req.Header.Set("Authorization", "Basic c2VjcmV0")
	req.Header.Set("Cookie", "session=secret")
	resp, err := Policy{}.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	other.mu.Lock()
	defer other.mu.Unlock()
	if len(other.authz) != 1 || other.authz[0] != "" || other.cookies[0] != "" {
		t.Errorf("the other port got Authorization %q and Cookie %q", other.authz, other.cookies)
	}
	if got := origin.seen(); len(got) != 1 || got[0] != "Basic c2VjcmV0" {
		t.Errorf("the origin got %q", got)
	}
}

func TestCredentialsApplyErrorFailsTheRequest(t *testing.T) {
	origin := newRecorder(t, false, ok)
	u, _ := url.Parse(origin.URL)
	c := Policy{Credentials: &Credentials{Origin: u, Apply: func(*http.Request) error { return errors.New("no token") }}}.Client()
	if _, err := get(t, c, origin.URL); err == nil || !strings.Contains(err.Error(), "no token") {
		t.Errorf("err = %v, want the Apply error", err)
	}
	if n := len(origin.seen()); n != 0 {
		t.Errorf("%d requests sent without their credentials", n)
	}
}

func TestRedirectPolicy(t *testing.T) {
	plain := newRecorder(t, false, ok)
	downgrading := newRecorder(t, true, redirectTo(plain.URL))
	roots := trusting(downgrading.Server)

	_, err := get(t, Policy{RootCAs: roots}.Client(), downgrading.URL)
	var re *RedirectError
	if !errors.As(err, &re) || !errors.Is(err, ErrDowngrade) || !strings.Contains(err.Error(), "may not redirect to plain http") {
		t.Errorf("https to http: %v, want a RedirectError of ErrDowngrade", err)
	}
	// A client built elsewhere keeps its own redirect policy: the
	// transport refuses the hop itself.
	_, err = get(t, &http.Client{Transport: Policy{RootCAs: roots}.Transport()}, downgrading.URL)
	if !errors.Is(err, ErrDowngrade) {
		t.Errorf("https to http through the transport alone: %v, want ErrDowngrade", err)
	}
	if n := len(plain.seen()); n != 0 {
		t.Errorf("the plain http server got %d requests", n)
	}

	loop := newRecorder(t, false, nil)
	loop.reset(redirectTo(loop.URL))
	if _, err = get(t, Policy{}.Client(), loop.URL); !errors.Is(err, ErrTooManyRedirects) {
		t.Errorf("a redirect loop: %v, want ErrTooManyRedirects", err)
	}
	if n := len(loop.seen()); n != MaxRedirects {
		t.Errorf("%d requests in a redirect loop, want %d", n, MaxRedirects)
	}

	// http to https is an upgrade, and next still has its say.
	secure := newRecorder(t, true, ok)
	upgrading := newRecorder(t, false, redirectTo(secure.URL))
	if _, err := get(t, Policy{RootCAs: roots}.Client(), upgrading.URL); err != nil {
		t.Errorf("http to https: %v", err)
	}
	stop := errors.New("no redirects")
	c := Policy{RootCAs: roots}.Client()
	c.CheckRedirect = CheckRedirect(func(*http.Request, []*http.Request) error { return stop })
	if _, err := get(t, c, upgrading.URL); !errors.Is(err, stop) {
		t.Errorf("with a policy of the caller's: %v, want its error", err)
	}
}

func TestMaxBody(t *testing.T) {
	const limit = 100
	body := strings.Repeat("x", limit+1)
	for _, tc := range []struct {
		name       string
		status     int
		length     bool
		size       int
		wantErr    string
		wantStatus bool
	}{
		{name: "a body at the limit", status: 200, length: true, size: limit},
		{name: "a declared length over it fails before reading", status: 200, length: true, size: limit + 1, wantErr: "(it declares 101 bytes)"},
		{name: "a chunked body over it fails when read", status: 200, size: limit + 1, wantErr: "is over the 100-byte limit of a thing"},
		{name: "a chunked body at the limit", status: 200, size: limit},
		{name: "an error page declaring more shows its status", status: 404, length: true, size: limit + 1, wantErr: "over the 100-byte limit", wantStatus: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newRecorder(t, false, func(w http.ResponseWriter, _ *http.Request) {
				if tc.length {
					w.Header().Set("Content-Length", fmt.Sprint(tc.size))
				}
				w.WriteHeader(tc.status)
				w.(http.Flusher).Flush() // without a length, the body is chunked
				_, _ = io.WriteString(w, body[:tc.size])
			})
			resp, err := Policy{MaxBody: limit, Answer: "a thing"}.Client().Get(srv.URL + "/path?long=query")
			var got []byte
			if err == nil {
				if tc.wantStatus != (resp.StatusCode == 404) {
					t.Errorf("status %d", resp.StatusCode)
				}
				got, err = io.ReadAll(resp.Body)
				resp.Body.Close()
			}
			if tc.wantErr == "" {
				if err != nil || len(got) != tc.size {
					t.Errorf("read %d bytes, %v; want %d", len(got), err, tc.size)
				}
				return
			}
			var tooLarge *BodyTooLargeError
			if !errors.As(err, &tooLarge) || !strings.Contains(err.Error(), tc.wantErr) || tooLarge.URL != srv.URL+"/path" {
				t.Errorf("err = %v, want a BodyTooLargeError naming the URL without its query and %q", err, tc.wantErr)
			}
			if len(got) > limit {
				t.Errorf("%d bytes passed on", len(got))
			}
		})
	}
}

func TestTimeouts(t *testing.T) {
	release := make(chan struct{})
	stall := func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}
	headersThenStall := newRecorder(t, false, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "10")
		w.WriteHeader(200)
		_, _ = io.WriteString(w, "x")
		w.(http.Flusher).Flush()
		stall(w, r)
	})
	noHeaders := newRecorder(t, false, stall)
	// Accepted by the kernel, never a word of TLS.
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { silent.Close() })
	t.Cleanup(func() { close(release) }) // before the servers close

	const short = 200 * time.Millisecond
	for _, tc := range []struct {
		name   string
		policy Policy
		url    string
		want   string
	}{
		{"a stalled body ends at the request timeout", Policy{Timeout: short}, headersThenStall.URL, ""},
		{"missing headers end at the response header timeout", Policy{ResponseHeaderTimeout: short}, noHeaders.URL, "timeout awaiting response headers"},
		{"a silent TLS handshake ends at its timeout", Policy{TLSHandshakeTimeout: short}, "https://" + silent.Addr().String(), "TLS handshake timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			_, err := get(t, tc.policy.Client(), tc.url)
			var netErr net.Error
			if !errors.As(err, &netErr) || !netErr.Timeout() || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want a timeout: %q", err, tc.want)
			}
			// Generous against a loaded machine; the server would stall for ever.
			if took := time.Since(start); took > 10*time.Second {
				t.Errorf("took %s", took)
			}
		})
	}
}

func TestTheBuiltTransport(t *testing.T) {
	proxy := func(*http.Request) (*url.URL, error) { return nil, nil }
	base := Policy{DialTimeout: time.Second, Proxy: proxy}.buildBase()
	if base.TLSClientConfig.MinVersion != tls.VersionTLS12 || base.TLSHandshakeTimeout != DefaultTLSHandshakeTimeout ||
		base.ResponseHeaderTimeout != DefaultResponseHeaderTimeout || base.Proxy == nil {
		t.Errorf("TLS %x, handshake %s, headers %s", base.TLSClientConfig.MinVersion, base.TLSHandshakeTimeout, base.ResponseHeaderTimeout)
	}

	secure := newRecorder(t, true, ok)
	if _, err := get(t, Policy{}.Client(), secure.URL); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("without the test roots: %v, want a certificate error", err)
	}
	if _, err := get(t, Policy{RootCAs: trusting(secure.Server)}.Client(), secure.URL); err != nil {
		t.Errorf("with the test roots: %v", err)
	}
	old := httptest.NewUnstartedServer(http.HandlerFunc(ok))
	old.TLS = &tls.Config{MaxVersion: tls.VersionTLS11}
	old.Config.ErrorLog = quiet
	old.StartTLS()
	defer old.Close()
	if _, err := get(t, Policy{RootCAs: trusting(old)}.Client(), old.URL); err == nil {
		t.Error("TLS 1.1 was accepted")
	}
}

func TestProxyIsTheCallers(t *testing.T) {
	proxySrv := newRecorder(t, false, ok)
	proxyURL, _ := url.Parse(proxySrv.URL)
	c := Policy{Proxy: http.ProxyURL(proxyURL)}.Client()
	if _, err := get(t, c, "http://update-service.invalid/graph"); err != nil {
		t.Fatal(err)
	}
	proxySrv.mu.Lock()
	defer proxySrv.mu.Unlock()
	if len(proxySrv.urls) != 1 || proxySrv.urls[0] != "http://update-service.invalid/graph" {
		t.Errorf("the proxy got %q", proxySrv.urls)
	}
}

func TestSameOrigin(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		same bool
	}{
		{"https://h/a", "https://H:443/b", true},
		{"http://h", "http://h:80", true},
		{"https://h", "http://h", false},
		{"https://h", "https://h:8443", false},
		{"https://h", "https://sub.h", false},
	} {
		a, _ := url.Parse(tc.a)
		b, _ := url.Parse(tc.b)
		if sameOrigin(a, b) != tc.same {
			t.Errorf("sameOrigin(%s, %s) = %v", tc.a, tc.b, !tc.same)
		}
	}
}
