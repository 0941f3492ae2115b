package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/payload-applier/payload-applier/pkg/payload/payloadtest"
)

// TestHiddenDeletesAreRejectedByLintPlanAndApply: a payload with a
// document that hides or injects a delete (a key set twice, a merge key,
// namespace: no) fails lint, plan and apply, each naming the file and
// line, and apply sends the cluster no request at all.
func TestHiddenDeletesAreRejectedByLintPlanAndApply(t *testing.T) {
	var requests atomic.Int64
	cluster := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		http.Error(w, "this test's cluster takes no requests", http.StatusInternalServerError)
	}))
	defer cluster.Close()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`, cluster.URL)), 0o600); err != nil {
		t.Fatal(err)
	}

	const ok = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ns\n  annotations:\n    include.release.openshift.io/self-managed-high-availability: \"true\"\n"
	// The control: a valid payload does reach the test's cluster, so that
	// no request below means apply stopped at the payload.
	valid := payloadtest.WriteRelease(t, t.TempDir(), "1.0.0", nil, map[string]string{"0000_40_a_00_ok.yaml": ok})
	if _, stderr, code := planCLI(t, "apply", "--payload", valid, "--kubeconfig", kubeconfig, "--timeout", "20s"); code == exitOK || requests.Load() == 0 {
		t.Fatalf("apply of a valid payload: exit %d after %d requests; want a failure after asking the test's cluster\n%s", code, requests.Load(), stderr)
	}

	for _, tc := range payloadtest.HiddenDeletes {
		t.Run(tc.Name, func(t *testing.T) {
			dir := payloadtest.WriteRelease(t, t.TempDir(), "1.0.0", nil, map[string]string{
				"0000_40_a_00_ok.yaml": ok,
				tc.File:                tc.Content,
			})
			at := fmt.Sprintf("%s:%d:", filepath.Join(dir, tc.File), tc.Line)
			before := requests.Load()

			stdout, stderr, code := planCLI(t, "lint", dir)
			if code != exitFailed || !strings.Contains(stdout, at) || !strings.Contains(stdout, "("+tc.Rule+")") {
				t.Errorf("lint: exit %d, want %d and a %s finding at %s\nstdout:\n%s\nstderr:\n%s", code, exitFailed, tc.Rule, at, stdout, stderr)
			}
			_, stderr, code = planCLI(t, "plan", "--payload", dir)
			if code != exitUsage || !strings.Contains(stderr, at) {
				t.Errorf("plan: exit %d, want %d naming %s\nstderr:\n%s", code, exitUsage, at, stderr)
			}
			_, stderr, code = planCLI(t, "apply", "--payload", dir, "--kubeconfig", kubeconfig)
			if code != exitUsage || !strings.Contains(stderr, at) || !strings.Contains(stderr, "nothing was applied") {
				t.Errorf("apply: exit %d, want %d naming %s\nstderr:\n%s", code, exitUsage, at, stderr)
			}
			if n := requests.Load() - before; n != 0 {
				t.Fatalf("apply sent the cluster %d requests for a rejected payload", n)
			}
		})
	}
}
