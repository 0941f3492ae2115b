package faultproxy

import (
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// upstream is a TLS server standing in for the apiserver; it counts the
// requests that reach it and echoes the Authorization header.
type upstream struct {
	server *httptest.Server
	hits   atomic.Int64
}

func newUpstream(t *testing.T) *upstream {
	u := &upstream{}
	u.server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.hits.Add(1)
		_, _ = io.WriteString(w, "auth="+r.Header.Get("Authorization"))
	}))
	t.Cleanup(u.server.Close)
	return u
}

func startProxy(t *testing.T, u *upstream, rate float64, faults ...Fault) *Proxy {
	t.Helper()
	target, err := url.Parse(u.server.URL)
	if err != nil {
		t.Fatal(err)
	}
	tlsCfg, err := TLSConfigFor(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: u.server.Certificate().Raw}))
	if err != nil {
		t.Fatal(err)
	}
	p, err := Start(Options{Upstream: target, UpstreamTLS: tlsCfg, Rate: rate, Seed: 1, Faults: faults, MaxHang: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// client trusts the proxy the way a rest.Config from RESTConfig does.
func client(t *testing.T, p *Proxy) *http.Client {
	t.Helper()
	cfg := p.RESTConfig(&rest.Config{BearerToken: "secret"})
	tlsCfg, err := TLSConfigFor(cfg.TLSClientConfig.CAData)
	if err != nil {
		t.Fatal(err)
	}
	// No keep-alive: every request gets its own connection, so one reset
	// cannot affect the next request.
	return &http.Client{Transport: &http.Transport{TLSClientConfig: tlsCfg, DisableKeepAlives: true}, Timeout: 10 * time.Second}
}

func get(t *testing.T, c *http.Client, url string) (*http.Response, string, error) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer secret")
	resp, err := c.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body), nil
}

func TestEachFaultBehavesAsDocumented(t *testing.T) {
	tests := map[Fault]struct {
		wantCode       int
		wantRetryAfter string
		wantErr        bool
		wantUpstream   int64
	}{
		ServerError:     {wantCode: 500},
		TooManyRequests: {wantCode: 429, wantRetryAfter: "1"},
		Hang:            {wantErr: true},
		Reset:           {wantErr: true},
		LostResponse:    {wantErr: true, wantUpstream: 1},
	}
	for fault, tc := range tests {
		t.Run(string(fault), func(t *testing.T) {
			u := newUpstream(t)
			p := startProxy(t, u, 1, fault)
			resp, _, err := get(t, client(t, p), p.URL()+"/api/v1/namespaces/x/configmaps/y")
			switch {
			case tc.wantErr && err == nil:
				t.Fatalf("got a %s response, want the connection dropped", resp.Status)
			case !tc.wantErr && err != nil:
				t.Fatalf("got %v, want a %d response", err, tc.wantCode)
			case !tc.wantErr && (resp.StatusCode != tc.wantCode || resp.Header.Get("Retry-After") != tc.wantRetryAfter):
				t.Fatalf("got %s with Retry-After %q, want %d with %q", resp.Status, resp.Header.Get("Retry-After"), tc.wantCode, tc.wantRetryAfter)
			}
			if got := u.hits.Load(); got != tc.wantUpstream {
				t.Errorf("the upstream saw %d requests, want %d", got, tc.wantUpstream)
			}
			if _, faults := p.Stats(); faults[fault] != 1 {
				t.Errorf("faults counted %v, want one %s", faults, fault)
			}
		})
	}
}

func TestRequestsWithoutAFaultPassThroughWithTheirCredentials(t *testing.T) {
	u := newUpstream(t)
	p := startProxy(t, u, 0)
	resp, body, err := get(t, client(t, p), p.URL()+"/version")
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || body != "auth=Bearer secret" {
		t.Fatalf("got %s %q, want 200 with the bearer token forwarded", resp.Status, body)
	}
}

func TestWatchesNeverLoseAResponseAfterTheApiserverSawThem(t *testing.T) {
	u := newUpstream(t)
	p := startProxy(t, u, 1, LostResponse)
	resp, _, err := get(t, client(t, p), p.URL()+"/api/v1/configmaps?watch=true")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("a watch was faulted with a lost response: %v", err)
	}
	if _, faults := p.Stats(); len(faults) != 0 {
		t.Errorf("faults on a watch: %v", faults)
	}
}

func TestTheRateIsTheShareOfFaultedRequests(t *testing.T) {
	u := newUpstream(t)
	p := startProxy(t, u, 0.1, ServerError)
	c := client(t, p)
	const n = 1000
	for i := 0; i < n; i++ {
		if _, _, err := get(t, c, p.URL()+"/version"); err != nil {
			t.Fatal(err)
		}
	}
	requests, faults := p.Stats()
	if requests != n {
		t.Fatalf("counted %d requests, want %d", requests, n)
	}
	// Seed 1 draws a fixed sequence; the bounds are loose on purpose.
	if got := faults[ServerError]; got < 60 || got > 140 {
		t.Errorf("%d of %d requests faulted at rate 0.1", got, n)
	}
	if int64(n-faults[ServerError]) != u.hits.Load() {
		t.Errorf("the upstream saw %d requests, want the %d that were not faulted", u.hits.Load(), n-faults[ServerError])
	}
	p.SetRate(0)
	before := faults[ServerError]
	for i := 0; i < 50; i++ {
		_, _, _ = get(t, c, p.URL()+"/version")
	}
	if _, faults := p.Stats(); faults[ServerError] != before {
		t.Errorf("faults went on after SetRate(0)")
	}
}
