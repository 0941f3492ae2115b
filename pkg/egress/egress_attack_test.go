package egress_test

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote"
	configv1 "github.com/openshift/api/config/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/payload-applier/payload-applier/pkg/clusterconditions"
	"github.com/payload-applier/payload-applier/pkg/releaseimage"
	"github.com/payload-applier/payload-applier/pkg/signature"
	"github.com/payload-applier/payload-applier/pkg/updategraph"
)

// short bounds a request in these tests, wherever the endpoint lets one
// bound it.
const short = 300 * time.Millisecond

// generous bounds a request that the attack does not hold open.
const generous = 30 * time.Second

var quiet = log.New(io.Discard, "", 0)

// endpoint is one kind of remote endpoint, reached through the client its
// package builds.
type endpoint struct {
	name string
	// secret is the Authorization its client sends to its own origin; ""
	// for none.
	secret string
	// limit is the largest answer its client reads.
	limit int64
	// serve wraps the attacked request in what the client asks first (a
	// registry's ping and token); nil: nothing.
	serve func(origin *httptest.Server, attacked http.HandlerFunc) http.HandlerFunc
	// call makes one request of the endpoint to origin.
	call func(t *testing.T, origin *httptest.Server, timeout time.Duration) error
}

func endpoints() []endpoint {
	return []endpoint{
		{
			name:  "update service",
			limit: updategraph.MaxGraphBytes,
			call: func(t *testing.T, origin *httptest.Server, timeout time.Duration) error {
				p := updategraph.ClientPolicy()
				p.Timeout, p.RootCAs = timeout, roots(origin)
				src := updategraph.HTTPSource{URL: origin.URL + "/graph", Client: p.Client(), Backoff: &wait.Backoff{Steps: 1}}
				_, err := src.Graph(context.Background(), "stable-1", "1.0.0")
				return err
			},
		},
		{
			name:  "signature store",
			limit: signature.DefaultLimits().MaxSignatureBytes,
			call: func(t *testing.T, origin *httptest.Server, timeout time.Duration) error {
				c := signature.Limits{RequestTimeout: timeout}.StoreClient(roots(origin))
				resp, err := c.Get(origin.URL + "/sha256=0123/signature-1")
				if err != nil {
					return err
				}
				defer resp.Body.Close()
				_, err = io.ReadAll(resp.Body)
				return err
			},
		},
		{
			name:   "Prometheus",
			secret: "Bearer prom-token",
			limit:  clusterconditions.MaxResponseBytes,
			call: func(t *testing.T, origin *httptest.Server, timeout time.Duration) error {
				dir := t.TempDir()
				caFile, tokenFile := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "token")
				writeFile(t, caFile, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: origin.Certificate().Raw})))
				writeFile(t, tokenFile, "prom-token\n")
				p, err := clusterconditions.NewPromQL(clusterconditions.PromQLConfig{URL: origin.URL, CAFile: caFile, TokenFile: tokenFile, Timeout: timeout})
				if err != nil {
					t.Fatal(err)
				}
				rule := configv1.ClusterCondition{Type: clusterconditions.TypePromQL, PromQL: &configv1.PromQLClusterCondition{PromQL: "up"}}
				_, err = p.Match(context.Background(), &rule)
				return err
			},
		},
		registry("registry (basic auth)", "Basic "+registryAuth, nil),
		registry("registry (bearer token)", "Bearer reg-token", bearerChallenge),
	}
}

// registryAuth is puller:s3cret.
const registryAuth = "cHVsbGVyOnMzY3JldA=="

// registry is a registry that asks for credentials (challenge nil: basic),
// reached through a Puller.
func registry(name, secret string, challenge func(origin *httptest.Server, w http.ResponseWriter, r *http.Request) bool) endpoint {
	return endpoint{
		name:   name,
		secret: secret,
		limit:  releaseimage.DefaultLimits().ReadBytes,
		serve: func(origin *httptest.Server, attacked http.HandlerFunc) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				if challenge != nil && challenge(origin, w, r) {
					return
				}
				if r.Header.Get("Authorization") != secret {
					if challenge == nil {
						w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
					} else {
						w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm=%q,service="test"`, origin.URL+"/token"))
					}
					w.WriteHeader(http.StatusUnauthorized)
					return
				}
				if r.URL.Path == "/v2/" {
					return
				}
				attacked(w, r)
			}
		},
		call: func(t *testing.T, origin *httptest.Server, timeout time.Duration) error {
			// No credentials of the user's may answer instead.
			t.Setenv("HOME", t.TempDir())
			t.Setenv("DOCKER_CONFIG", "")
			t.Setenv("REGISTRY_AUTH_FILE", "")
			host := strings.TrimPrefix(origin.URL, "https://")
			authFile := filepath.Join(t.TempDir(), "auth.json")
			writeFile(t, authFile, fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, host, registryAuth))
			p, err := releaseimage.NewPuller(releaseimage.Config{
				CacheDir: t.TempDir(),
				Timeout:  timeout,
				Registry: releaseimage.Registry{
					AuthFile: authFile,
					Backoff:  remote.Backoff{Duration: time.Millisecond, Steps: 1},
					// Only so that the test server's certificate is trusted;
					// plain http off loopback plays no part here.
					Insecure: true,
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			ref, err := releaseimage.ParseRef(host + "/ocp/release@sha256:" + strings.Repeat("0", 64))
			if err != nil {
				t.Fatal(err)
			}
			_, err = p.Fetch(context.Background(), ref, releaseimage.FetchOptions{})
			return err
		},
	}
}

// bearerChallenge serves the token endpoint of a registry's bearer auth.
func bearerChallenge(_ *httptest.Server, w http.ResponseWriter, r *http.Request) bool {
	if r.URL.Path != "/token" {
		return false
	}
	if r.Header.Get("Authorization") != "Basic "+registryAuth {
		w.WriteHeader(http.StatusUnauthorized)
		return true
	}
	fmt.Fprint(w, `{"token":"reg-token"}`)
	return true
}

// server is a test server that records the Authorization header of the
// requests it answers.
type server struct {
	*httptest.Server
	mu    sync.Mutex
	authz []string
}

func newServer(t *testing.T, tls bool, answer http.HandlerFunc) *server {
	s := &server{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.record(r)
		answer(w, r)
	}))
	s.Config.ErrorLog = quiet
	if tls {
		s.StartTLS()
	} else {
		s.Start()
	}
	t.Cleanup(s.Close)
	return s
}

func (s *server) record(r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.authz = append(s.authz, r.Header.Get("Authorization"))
}

func (s *server) seen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.authz...)
}

func roots(srv *httptest.Server) *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	return pool
}

func writeFile(t *testing.T, name, data string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

func redirectTo(target string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target+r.URL.RequestURI(), http.StatusFound)
	}
}

// TestAttacksOnEveryEndpoint runs each attack against each endpoint
// through the client its package builds, with the origin served over
// https on 127.0.0.1. "Another host" is another port there: a different
// origin that net/http itself would still send a caller's Authorization to.
func TestAttacksOnEveryEndpoint(t *testing.T) {
	// Stalling answers wait for the request's end or the subtest's.
	stall := func(r *http.Request, release <-chan struct{}) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}
	// One that reads as the start of a graph, so that every client reads on.
	const graphStart = `{"nodes": [`

	for _, ep := range endpoints() {
		other := newServer(t, true, func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) })
		plain := newServer(t, false, func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) })
		for _, attack := range []struct {
			name string
			skip string
			// answer answers the attacked request; release ends with the subtest.
			answer func(release <-chan struct{}) http.HandlerFunc
			// check judges the call's error and how long it took.
			check func(t *testing.T, err error, took time.Duration)
			// stalls says that the attack holds the request open: it runs
			// with the short timeout, the others with a generous one, so
			// that a loaded machine fails none of them.
			stalls bool
		}{
			{
				name:   "a redirect to another host carries no credentials",
				answer: func(<-chan struct{}) http.HandlerFunc { return redirectTo(other.URL) },
				check: func(t *testing.T, _ error, _ time.Duration) {
					got := other.seen()
					if len(got) == 0 {
						t.Fatal("the redirect was not followed")
					}
					for _, a := range got {
						if a != "" {
							t.Errorf("the other host got Authorization %q", a)
						}
					}
				},
			},
			{
				name:   "a redirect from https to http is refused",
				answer: func(<-chan struct{}) http.HandlerFunc { return redirectTo(plain.URL) },
				check: func(t *testing.T, err error, _ time.Duration) {
					if err == nil || !strings.Contains(err.Error(), "may not redirect to plain http") {
						t.Errorf("err = %v, want the redirect to plain http refused", err)
					}
					if n := len(plain.seen()); n != 0 {
						t.Errorf("the plain http server got %d requests", n)
					}
				},
			},
			{
				name: "an answer declaring more than the limit is refused",
				answer: func(<-chan struct{}) http.HandlerFunc {
					return func(w http.ResponseWriter, r *http.Request) {
						w.Header().Set("Content-Length", fmt.Sprint(ep.limit+1))
						_, _ = io.WriteString(w, graphStart)
					}
				},
				check: overLimit(ep.limit),
			},
			{
				name: "an answer found over the limit while read is refused",
				skip: skipOver(ep.limit, 1<<20),
				answer: func(<-chan struct{}) http.HandlerFunc {
					return func(w http.ResponseWriter, r *http.Request) {
						w.WriteHeader(http.StatusOK)
						_, _ = io.WriteString(w, graphStart)
						pad := strings.Repeat(" ", 64<<10)
						for sent := int64(len(graphStart)); sent <= ep.limit; sent += int64(len(pad)) {
							if _, err := io.WriteString(w, pad); err != nil {
								return
							}
						}
					}
				},
				check: overLimit(ep.limit),
			},
			{
				name: "an answer whose body stalls ends within the timeout",
				answer: func(release <-chan struct{}) http.HandlerFunc {
					return func(w http.ResponseWriter, r *http.Request) {
						w.Header().Set("Content-Length", "1000")
						w.WriteHeader(http.StatusOK)
						_, _ = io.WriteString(w, graphStart)
						w.(http.Flusher).Flush()
						stall(r, release)
					}
				},
				check:  endsSoon,
				stalls: true,
			},
			{
				name: "an answer that never comes ends within the timeout",
				answer: func(release <-chan struct{}) http.HandlerFunc {
					return func(w http.ResponseWriter, r *http.Request) { stall(r, release) }
				},
				check:  endsSoon,
				stalls: true,
			},
		} {
			t.Run(ep.name+"/"+attack.name, func(t *testing.T) {
				if attack.skip != "" {
					t.Skip(attack.skip)
				}
				other.mu.Lock()
				other.authz = nil
				other.mu.Unlock()
				var attacked []string
				var mu sync.Mutex
				release := make(chan struct{})
				answer := attack.answer(release)
				handler := func(w http.ResponseWriter, r *http.Request) {
					mu.Lock()
					attacked = append(attacked, r.Header.Get("Authorization"))
					mu.Unlock()
					answer(w, r)
				}
				var origin *server
				origin = newServer(t, true, func(w http.ResponseWriter, r *http.Request) {
					if ep.serve != nil {
						ep.serve(origin.Server, handler)(w, r)
						return
					}
					handler(w, r)
				})
				t.Cleanup(func() { close(release) }) // before the server closes: it waits for its handlers
				start := time.Now()
				timeout := generous
				if attack.stalls {
					timeout = short
				}
				err := ep.call(t, origin.Server, timeout)
				attack.check(t, err, time.Since(start))

				mu.Lock()
				defer mu.Unlock()
				if len(attacked) == 0 {
					t.Fatalf("the attack was never reached: %v", err)
				}
				if attacked[0] != ep.secret {
					t.Errorf("the origin got Authorization %q, want %q", attacked[0], ep.secret)
				}
			})
		}
	}
}

func overLimit(limit int64) func(*testing.T, error, time.Duration) {
	return func(t *testing.T, err error, _ time.Duration) {
		want := fmt.Sprintf("over the %d-byte limit", limit)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want %q", err, want)
		}
	}
}

func skipOver(limit, most int64) string {
	if limit > most {
		return fmt.Sprintf("a %d-byte answer is too much to send within a short timeout; the declared one covers this limit", limit+1)
	}
	return ""
}

// endsSoon allows a loaded machine a lot: the server would never end
// the request itself.
func endsSoon(t *testing.T, err error, took time.Duration) {
	if err == nil {
		t.Error("a stalled request succeeded")
	}
	if took > 10*time.Second {
		t.Errorf("the request took %s with a %s timeout", took, short)
	}
}
