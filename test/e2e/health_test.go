package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// TestLivenessFailsWhenAPassOutlastsTheWindow runs `start` against the
// real control plane with a one-second resync and a two-second liveness
// window, and a release whose one manifest keeps failing, so that its
// pass retries for longer than the window: /healthz must turn 503 while
// /readyz stays 200.
func TestLivenessFailsWhenAPassOutlastsTheWindow(t *testing.T) {
	bin, _, ns := newCLITest(t)
	store := t.TempDir()
	release := writePayload(t, "1.0.0", map[string]string{"0000_50_demo_00_a.yaml": configMap("no-such-namespace-"+ns, "a", "x")})
	if err := os.Rename(release, filepath.Join(store, "1.0.0")); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "start", "--payloads", store, "--listen", addr, "--leader-elect=false",
		"--resync-interval", "1s", "--liveness-window", "2s", "--kubeconfig", testCluster.ApplierKubeconfig())
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = cmd.Wait() }()

	probe := func(path string) (int, string) {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) { return cond(), nil }); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	waitFor("ready once bootstrapped", func() bool { code, _ := probe("/readyz"); return code == 200 })
	if code, body := probe("/healthz"); code != 200 {
		t.Fatalf("/healthz = %d %q before any long pass", code, body)
	}

	requestVersion(t, "1.0.0")
	var body string
	waitFor("/healthz fails while the pass outlasts the window", func() bool {
		var code int
		code, body = probe("/healthz")
		return code == http.StatusServiceUnavailable
	})
	if !strings.Contains(body, "no pass has ended") {
		t.Errorf("/healthz says %q, want why", body)
	}
	if code, _ := probe("/readyz"); code != 200 {
		t.Errorf("/readyz = %d while liveness fails; readiness does not depend on passes", code)
	}
}

// TestMetricsOffLoopbackNeedAnAuthorizedToken: `start` listening beyond
// loopback serves HTTPS, and /metrics only to a bearer token the cluster
// authenticates and authorizes; the probes stay open.
func TestMetricsOffLoopbackNeedAnAuthorizedToken(t *testing.T) {
	bin := buildCLI(t)
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "start", "--payloads", t.TempDir(), "--listen", fmt.Sprintf("0.0.0.0:%d", port),
		"--leader-elect=false", "--namespace", testCluster.CreateNamespace(t), "--kubeconfig", testCluster.ApplierKubeconfig())
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = cmd.Wait() }()

	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	get := func(path, user string) int {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d%s", port, path), nil)
		if user != "" {
			cfg, err := testCluster.UserRESTConfig(user)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+cfg.BearerToken)
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return get("/healthz", "") == 200, nil
	}); err != nil {
		t.Fatalf("/healthz never answered over HTTPS without a token: %v", err)
	}
	for _, tc := range []struct {
		user string
		want int
	}{{"", http.StatusUnauthorized}, {"nobody", http.StatusForbidden}, {"operator-a", http.StatusOK}} {
		if got := get("/metrics", tc.user); got != tc.want {
			t.Errorf("/metrics as %q: %d, want %d", tc.user, got, tc.want)
		}
	}
}
