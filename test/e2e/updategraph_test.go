package e2e

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	gosync "sync"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	configclient "github.com/openshift/client-go/config/clientset/versioned"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// graphServer is a local Cincinnati server whose answer the test changes.
type graphServer struct {
	*httptest.Server
	mu      gosync.Mutex
	body    string
	down    bool
	queries []string
}

func newGraphServer(t *testing.T, body string) *graphServer {
	s := &graphServer{body: body}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.queries = append(s.queries, r.URL.RawQuery)
		if s.down {
			http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(s.body))
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *graphServer) set(body string, down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.body, s.down = body, down
}

const (
	channelsKey   = "io.openshift.upgrades.graph.release.channels"
	deprecatedKey = "io.openshift.upgrades.graph.release.deprecated"
	// e2eGraph: 1.0.0 (deprecated) updates to 1.0.1 and to 1.0.2 (deprecated).
	e2eGraph = `{"nodes": [
  {"version": "1.0.0", "payload": "r:1.0.0", "metadata": {"` + channelsKey + `": "stable-1.0", "` + deprecatedKey + `": "1.0.0 corrupts etcd backups"}},
  {"version": "1.0.1", "payload": "r:1.0.1", "metadata": {"` + channelsKey + `": "stable-1.0"}},
  {"version": "1.0.2", "payload": "r:1.0.2", "metadata": {"` + channelsKey + `": "stable-1.0", "` + deprecatedKey + `": "pulled"}}
], "edges": [[0, 1], [0, 2]]}`
	// truncatedGraph no longer has 1.0.0.
	truncatedGraph = `{"nodes": [{"version": "1.0.1", "payload": "r:1.0.1", "metadata": {"` + channelsKey + `": "stable-1.0"}}], "edges": []}`
)

func TestTheUpdateGraphHidesRefusesAndReportsDeprecatedReleases(t *testing.T) {
	bin, _, ns := newCLITest(t)
	cm := configMap(ns, "keep", "x")
	v100 := writePayload(t, "1.0.0", map[string]string{"0000_50_demo_00_keep.yaml": cm})
	v102 := writePayload(t, "1.0.2", map[string]string{"0000_50_demo_00_keep.yaml": cm})
	graphFile := filepath.Join(t.TempDir(), "graph.json")
	if err := os.WriteFile(graphFile, []byte(e2eGraph), 0o644); err != nil {
		t.Fatal(err)
	}

	t.Log("an install of a deprecated release is refused, then forced")
	code, stdout, stderr := runCLI(t, bin, "apply", "--payload", v100, "--update-graph", graphFile)
	if code != 3 || !strings.Contains(stdout+stderr, "1.0.0 corrupts etcd backups") {
		t.Fatalf("exit %d, want 3 quoting the deprecation\n%s\n%s", code, stdout, stderr)
	}
	if code, stdout, stderr = runCLI(t, bin, "apply", "--payload", v100, "--update-graph", graphFile, "--force"); code != 0 {
		t.Fatalf("a forced install must apply: exit %d\n%s\n%s", code, stdout, stderr)
	}

	t.Log("from spec.upstream: the deprecated update is hidden, the cluster is told its release is deprecated")
	srv := newGraphServer(t, e2eGraph)
	setUpstream(t, srv.URL+"/api/upgrades_info/graph", "stable-1.0")
	if code, stdout, stderr = runCLI(t, bin, "apply", "--payload", v100); code != 0 {
		t.Fatalf("reconcile: exit %d\n%s\n%s", code, stdout, stderr)
	}
	cv := clusterVersion(t)
	if got := availableUpdates(cv); got != "1.0.1" {
		t.Errorf("availableUpdates = %q, want 1.0.1 only", got)
	}
	wantE2ECondition(t, cv, configv1.RetrievedUpdates, configv1.ConditionTrue, "", "")
	wantE2ECondition(t, cv, "ReleaseDeprecated", configv1.ConditionTrue, "ReleaseDeprecated", "1.0.0 corrupts etcd backups")
	wantE2ECondition(t, cv, "Failing", configv1.ConditionFalse, "", "")
	if q := srv.queries[len(srv.queries)-1]; !strings.Contains(q, "channel=stable-1.0") || !strings.Contains(q, "version=1.0.0") {
		t.Errorf("the graph was queried with %q, want the channel and the cluster's version", q)
	}
	if code, stdout, _ = runCLI(t, bin, "status"); code != 0 || !strings.Contains(stdout, "Deprecated: Release 1.0.0 is deprecated") || !strings.Contains(stdout, "Available updates: 1.0.1") {
		t.Errorf("status must say the release is deprecated and list the updates (exit %d):\n%s", code, stdout)
	}

	t.Log("an update to a deprecated release is refused; plan says so first")
	code, stdout, stderr = runCLI(t, bin, "plan", "--payload", v102)
	if code != 0 || !strings.Contains(stdout, "would be refused") || !strings.Contains(stdout, "ReleaseDeprecated") {
		t.Errorf("plan must say the update would be refused: exit %d\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, stderr = runCLI(t, bin, "apply", "--payload", v102)
	if code != 3 || !strings.Contains(stdout+stderr, "release 1.0.2 is deprecated in the update graph: pulled") {
		t.Fatalf("exit %d, want 3 naming the deprecation\n%s\n%s", code, stdout, stderr)
	}

	t.Log("the graph server down: RemoteFailed, the last good updates kept")
	srv.set(e2eGraph, true)
	if code, stdout, stderr = runCLI(t, bin, "apply", "--payload", v100); code != 0 {
		t.Fatalf("reconcile: exit %d\n%s\n%s", code, stdout, stderr)
	}
	cv = clusterVersion(t)
	wantE2ECondition(t, cv, configv1.RetrievedUpdates, configv1.ConditionFalse, "RemoteFailed", "503")
	if got := availableUpdates(cv); got != "1.0.1" {
		t.Errorf("availableUpdates = %q, want the last good list", got)
	}

	t.Log("the current release truncated from the graph: VersionNotFound")
	srv.set(truncatedGraph, false)
	if code, stdout, stderr = runCLI(t, bin, "apply", "--payload", v100); code != 0 {
		t.Fatalf("reconcile: exit %d\n%s\n%s", code, stdout, stderr)
	}
	wantE2ECondition(t, clusterVersion(t), configv1.RetrievedUpdates, configv1.ConditionFalse, "VersionNotFound", "Choose another channel")

	t.Log("forced, the deprecated release is applied and history records the risk")
	srv.set(e2eGraph, false)
	if code, stdout, stderr = runCLI(t, bin, "apply", "--payload", v102, "--force"); code != 0 {
		t.Fatalf("a forced update must apply: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if h := clusterVersion(t).Status.History[0]; h.Version != "1.0.2" || !strings.Contains(h.AcceptedRisks, "ReleaseDeprecated") {
		t.Errorf("history[0] = %s with risks %q, want 1.0.2 with ReleaseDeprecated", h.Version, h.AcceptedRisks)
	}
}

func setUpstream(t *testing.T, upstream, channel string) {
	t.Helper()
	cc, err := configclient.NewForConfig(testCluster.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	cv := clusterVersion(t)
	cv.Spec.Upstream, cv.Spec.Channel = configv1.URL(upstream), channel
	if _, err := cc.ConfigV1().ClusterVersions().Update(context.Background(), cv, metav1.UpdateOptions{FieldValidation: "Ignore"}); err != nil {
		t.Fatal(err)
	}
}

func availableUpdates(cv *configv1.ClusterVersion) string {
	var out []string
	for _, u := range cv.Status.AvailableUpdates {
		out = append(out, u.Version)
	}
	return strings.Join(out, ",")
}

func wantE2ECondition(t *testing.T, cv *configv1.ClusterVersion, ct configv1.ClusterStatusConditionType, status configv1.ConditionStatus, reason, fragment string) {
	t.Helper()
	c := findCondition(cv, ct)
	if c == nil || c.Status != status || c.Reason != reason || !strings.Contains(c.Message, fragment) {
		t.Errorf("%s = %+v, want %s/%s with %q", ct, c, status, reason, fragment)
	}
}
