package updategraph

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/payload-applier/payload-applier/pkg/egress"
)

const smallGraph = `{"nodes": [{"version": "1.0.0", "payload": "r:1.0.0"}, {"version": "1.0.1", "payload": "r:1.0.1"}], "edges": [[0, 1]]}`

var quick = &wait.Backoff{Steps: 3, Duration: time.Millisecond, Factor: 1}

func TestHTTPSource(t *testing.T) {
	for _, tc := range []struct {
		name     string
		answers  []int
		body     string
		reason   string
		requests int
	}{
		{"a graph", []int{200}, smallGraph, "", 1},
		{"server errors are retried", []int{500, 503, 200}, smallGraph, "", 3},
		{"a client error is not", []int{404}, smallGraph, ReasonRemoteFailed, 1},
		{"retries run out", []int{500, 500, 500}, smallGraph, ReasonRemoteFailed, 3},
		{"an invalid answer", []int{200}, `{"nodes": 3}`, ReasonResponseInvalid, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			requests := 0
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Query().Get("channel") != "stable-1.0" || r.URL.Query().Get("version") != "1.0.0" || r.Header.Get("Accept") != "application/json" {
					t.Errorf("request %s lacks the channel, version or Accept header", r.URL)
				}
				code := tc.answers[min(requests, len(tc.answers)-1)]
				requests++
				w.WriteHeader(code)
				_, _ = w.Write([]byte(tc.body))
			}))
			defer srv.Close()
			g, err := HTTPSource{URL: srv.URL + "/graph", Backoff: quick}.Graph(context.Background(), "stable-1.0", "1.0.0")
			if requests != tc.requests {
				t.Errorf("%d requests, want %d", requests, tc.requests)
			}
			if tc.reason == "" {
				if err != nil || len(g.Nodes) != 2 {
					t.Fatalf("got %v, %v", g, err)
				}
				return
			}
			if err == nil || ReasonOf(err) != tc.reason {
				t.Errorf("got %v (reason %s), want reason %s", err, ReasonOf(err), tc.reason)
			}
		})
	}
}

func TestHTTPSourceRefusesANonHTTPUpstream(t *testing.T) {
	if _, err := (HTTPSource{URL: "file:///etc/passwd"}).Graph(context.Background(), "c", "1.0.0"); ReasonOf(err) != ReasonRemoteFailed {
		t.Errorf("got %v, want RemoteFailed", err)
	}
}

func TestFileSource(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "graph.json")
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(good, []byte(smallGraph), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if g, err := (FileSource{Path: good}).Graph(context.Background(), "", ""); err != nil || len(g.Nodes) != 2 {
		t.Errorf("got %v, %v", g, err)
	}
	for path, reason := range map[string]string{bad: ReasonResponseInvalid, filepath.Join(dir, "missing"): ReasonRemoteFailed, dir: ReasonRemoteFailed} {
		if _, err := (FileSource{Path: path}).Graph(context.Background(), "", ""); ReasonOf(err) != reason {
			t.Errorf("%s: got %v, want %s", path, err, reason)
		}
	}
}

// TestHTTPSourceRefusesARedirectToPlainHTTP: an https upstream that
// redirects to http is refused at once, without a request to the http
// side and without a retry.
func TestHTTPSourceRefusesARedirectToPlainHTTP(t *testing.T) {
	var plainHits, tlsHits atomic.Int32
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		plainHits.Add(1)
		_, _ = w.Write([]byte(`{"nodes": [], "edges": []}`))
	}))
	defer plain.Close()
	secure := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tlsHits.Add(1)
		http.Redirect(w, r, plain.URL+r.URL.RequestURI(), http.StatusFound)
	}))
	defer secure.Close()
	src := HTTPSource{URL: secure.URL, Client: secure.Client(), Backoff: &wait.Backoff{Steps: 3, Duration: time.Millisecond}}
	_, err := src.Graph(context.Background(), "stable-1", "1.0.0")
	if err == nil || !strings.Contains(err.Error(), "may not redirect to plain http") {
		t.Fatalf("err = %v, want the downgrade refused", err)
	}
	if plainHits.Load() != 0 || tlsHits.Load() != 1 {
		t.Errorf("%d requests over http, %d over https: want none over http and no retry", plainHits.Load(), tlsHits.Load())
	}
	if secure.Client().CheckRedirect != nil {
		t.Error("the caller's client was changed")
	}

	t.Log("a redirect that stays on https is followed")
	target := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"nodes": [{"version": "1.0.0", "payload": "p"}], "edges": []}`))
	}))
	defer target.Close()
	hop := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+r.URL.RequestURI(), http.StatusFound)
	}))
	hop.TLS = target.TLS
	hop.StartTLS()
	defer hop.Close()
	if _, err := (HTTPSource{URL: hop.URL, Client: target.Client()}).Graph(context.Background(), "stable-1", "1.0.0"); err != nil {
		t.Errorf("https to https: %v", err)
	}
}

// TestHTTPSourceRefusesAnOversizedAnswer: an answer over the limit is
// invalid, not retried, and the error names the limit, whether the answer
// declares its length or is found over it while read.
func TestHTTPSourceRefusesAnOversizedAnswer(t *testing.T) {
	small := ClientPolicy()
	small.MaxBody = 1000
	for _, tc := range []struct {
		name   string
		client *http.Client
		length string
		want   string
	}{
		{"declared", nil, fmt.Sprint(MaxGraphBytes + 1), fmt.Sprintf("over the %d-byte limit of an update graph (it declares %d bytes)", MaxGraphBytes, MaxGraphBytes+1)},
		{"read", small.Client(), "", "over the 1000-byte limit of an update graph"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var requests atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				requests.Add(1)
				if tc.length != "" {
					w.Header().Set("Content-Length", tc.length)
				}
				w.WriteHeader(http.StatusOK)
				w.(http.Flusher).Flush() // without a length, the body is chunked
				_, _ = w.Write([]byte(`{"nodes": [` + strings.Repeat(" ", 2000)))
			}))
			defer srv.Close()
			_, err := HTTPSource{URL: srv.URL, Client: tc.client, Backoff: quick}.Graph(context.Background(), "c", "1.0.0")
			var tooLarge *egress.BodyTooLargeError
			if ReasonOf(err) != ReasonResponseInvalid || !errors.As(err, &tooLarge) || !strings.Contains(fmt.Sprint(err), tc.want) {
				t.Errorf("got %v (reason %s), want ResponseInvalid and a BodyTooLargeError: %q", err, ReasonOf(err), tc.want)
			}
			if requests.Load() != 1 {
				t.Errorf("%d requests, want 1", requests.Load())
			}
		})
	}
}
