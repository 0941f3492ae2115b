package updategraph

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/payload-applier/payload-applier/pkg/egress"
)

// Reasons of RetrievedUpdates=False, as the CVO names them.
const (
	ReasonNoChannel       = "NoChannel"
	ReasonRemoteFailed    = "RemoteFailed"
	ReasonResponseInvalid = "ResponseInvalid"
	ReasonVersionNotFound = "VersionNotFound"
)

// Error is a failure to get a graph, with the reason RetrievedUpdates gives.
type Error struct {
	Reason string
	Err    error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// ReasonOf returns the reason of err, ReasonRemoteFailed when it has none.
func ReasonOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return ReasonRemoteFailed
}

// Source gives the update graph of a channel for a cluster at version.
type Source interface {
	Graph(ctx context.Context, channel, version string) (*Graph, error)
	// String names the source in messages.
	String() string
}

// FileSource reads a graph from a file holding every channel.
type FileSource struct {
	Path string
}

func (s FileSource) String() string { return s.Path }

// Graph reads the file; channel and version play no part.
func (s FileSource) Graph(context.Context, string, string) (*Graph, error) {
	f, err := os.Open(s.Path)
	if err != nil {
		return nil, &Error{Reason: ReasonRemoteFailed, Err: err}
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && !st.Mode().IsRegular() {
		return nil, &Error{Reason: ReasonRemoteFailed, Err: fmt.Errorf("%s is not a regular file", s.Path)}
	}
	g, err := Parse(f)
	if err != nil {
		return nil, &Error{Reason: ReasonResponseInvalid, Err: fmt.Errorf("%s: %w", s.Path, err)}
	}
	return g, nil
}

// HTTPSource queries a Cincinnati server: GET URL?channel=C&version=V.
type HTTPSource struct {
	URL string
	// Client defaults to ClientPolicy's. Any client refuses a redirect
	// from https to plain http.
	Client *http.Client
	// Backoff paces the attempts; default 3 attempts, 1s apart then 2s.
	Backoff *wait.Backoff
}

func (s HTTPSource) String() string { return s.URL }

// Graph fetches the graph, retrying network failures and 5xx and 429
// answers with backoff. A 4xx answer is not retried.
func (s HTTPSource) Graph(ctx context.Context, channel, version string) (*Graph, error) {
	u, err := url.Parse(s.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, &Error{Reason: ReasonRemoteFailed, Err: fmt.Errorf("upstream %q is not an http(s) URL", s.URL)}
	}
	q := u.Query()
	q.Set("channel", channel)
	q.Set("version", version)
	u.RawQuery = q.Encode()
	client := ClientPolicy().Client()
	if s.Client != nil {
		c := *s.Client
		client = &c
		client.CheckRedirect = egress.CheckRedirect(client.CheckRedirect)
	}
	backoff := wait.Backoff{Steps: 3, Duration: time.Second, Factor: 2}
	if s.Backoff != nil {
		backoff = *s.Backoff
	}
	var g *Graph
	var last error
	err = wait.ExponentialBackoffWithContext(ctx, backoff, func(ctx context.Context) (bool, error) {
		var retry bool
		g, retry, last = s.get(ctx, client, u.String())
		if last != nil && !retry {
			return false, last
		}
		return last == nil, nil
	})
	if last != nil {
		return nil, last
	}
	if err != nil {
		return nil, &Error{Reason: ReasonRemoteFailed, Err: err}
	}
	return g, nil
}

// ClientPolicy is the policy of HTTPSource's default client: a request
// may take 30s, and its answer MaxGraphBytes. The graph names the
// payloads a cluster may run, so a redirect to plain http, where anyone
// on the path could rewrite it, is refused.
func ClientPolicy() egress.Policy {
	return egress.Policy{Timeout: 30 * time.Second, MaxBody: MaxGraphBytes, Answer: "an update graph"}
}

// get makes one request; retry says whether a failure may pass.
func (s HTTPSource) get(ctx context.Context, client *http.Client, target string) (*Graph, bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return nil, false, &Error{Reason: ReasonRemoteFailed, Err: err}
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	var tooLarge *egress.BodyTooLargeError
	switch {
	case errors.As(err, &tooLarge):
		return nil, false, &Error{Reason: ReasonResponseInvalid, Err: tooLarge}
	case err != nil:
		// A refused redirect is the upstream's answer, not a network failure.
		return nil, !errors.Is(err, egress.ErrDowngrade), &Error{Reason: ReasonRemoteFailed, Err: fmt.Errorf("query %s: %w", s.URL, err)}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		retry := resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests
		return nil, retry, &Error{Reason: ReasonRemoteFailed, Err: fmt.Errorf("query %s: %s", s.URL, resp.Status)}
	}
	g, err := Parse(resp.Body)
	if errors.As(err, &tooLarge) {
		return nil, false, &Error{Reason: ReasonResponseInvalid, Err: tooLarge}
	}
	if err != nil {
		return nil, false, &Error{Reason: ReasonResponseInvalid, Err: fmt.Errorf("answer of %s: %w", s.URL, err)}
	}
	return g, false, nil
}
