package e2e

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	gosync "sync"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/payload-applier/payload-applier/pkg/clusterversion"
	"github.com/payload-applier/payload-applier/pkg/operator"
	"github.com/payload-applier/payload-applier/pkg/precondition"
)

// freshE2EGraph: 1.0.0 updates to 1.0.1, which updates to 1.0.2 and,
// with the risk BadDisk that applies to every cluster, to 1.1.0.
const freshE2EGraph = `{"nodes": [
  {"version": "1.0.0", "payload": "r:1.0.0"},
  {"version": "1.0.1", "payload": "r:1.0.1"},
  {"version": "1.0.2", "payload": "r:1.0.2"},
  {"version": "1.1.0", "payload": "r:1.1.0"}
], "edges": [[0, 1], [1, 2]], "conditionalEdges": [
  {"edges": [{"from": "1.0.1", "to": "1.1.0"}], "risks": [{"name": "BadDisk", "url": "https://example.com/bad-disk", "message": "Disks fail after the update.", "matchingRules": [{"type": "Always"}]}]}
]}`

// slowGraphServer serves freshE2EGraph; a query about 1.0.1 waits until
// the gate opens, as a slow upstream would make it.
type slowGraphServer struct {
	*httptest.Server
	gate     chan struct{}
	openOnce gosync.Once
}

func newSlowGraphServer(t *testing.T) *slowGraphServer {
	s := &slowGraphServer{gate: make(chan struct{})}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("version") == "1.0.1" {
			select {
			case <-s.gate:
			case <-r.Context().Done():
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(freshE2EGraph))
	}))
	t.Cleanup(func() {
		s.open()
		s.Close()
	})
	return s
}

func (s *slowGraphServer) open() { s.openOnce.Do(func() { close(s.gate) }) }

// newFreshOperator runs an operator whose releases 1.0.0, 1.0.1 and 1.1.0
// each write a marker ConfigMap of their own, reading srv's graph; it
// returns once 1.0.0 is installed and its updates are listed.
func newFreshOperator(t *testing.T, srv *slowGraphServer, base string) *testOperator {
	t.Helper()
	ns := testCluster.CreateNamespace(t)
	releases := map[string]map[string]string{}
	for _, v := range []string{"1.0.0", "1.0.1", "1.1.0"} {
		releases[v] = map[string]string{
			"0000_50_demo_00_keep.yaml":   configMap(ns, "keep", "x"),
			"0000_50_demo_01_marker.yaml": configMap(ns, markerOf(v), v),
		}
	}
	name := uniqueName(t, base)
	op := newOperatorOn(t, &operator.DirStore{Root: writeStore(t, releases)}, name, ns, nil, nil)
	patchClusterVersion(t, name, `{"spec": {"upstream": "`+srv.URL+`/graph", "channel": "stable-1.0", "desiredUpdate": {"version": "1.0.0"}}}`)
	op.run(t, operator.RunOptions{ResyncInterval: 10 * time.Second})
	waitFor(t, "1.0.0 installed with its updates listed", time.Minute, func() bool {
		cv := op.clusterVersion(t)
		return completedVersion(cv) == "1.0.0" && availableUpdates(cv) == "1.0.1"
	})
	return op
}

func markerOf(version string) string { return "marker-" + strings.ReplaceAll(version, ".", "-") }

// completedVersion is history[0]'s version once it completed, "" before.
func completedVersion(cv *configv1.ClusterVersion) string {
	if h := cv.Status.History; len(h) > 0 && h[0].State == configv1.CompletedUpdate {
		return h[0].Version
	}
	return ""
}

// TestAvailableUpdatesNeverListTheRunningVersion: through an update whose
// new version the upstream is slow to answer for, availableUpdates never
// lists the version the cluster is updating to or runs.
func TestAvailableUpdatesNeverListTheRunningVersion(t *testing.T) {
	srv := newSlowGraphServer(t)
	op := newFreshOperator(t, srv, "fresh-list")

	ctx, stop := context.WithCancel(context.Background())
	var (
		mu       gosync.Mutex
		samples  int
		offences []string
	)
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for ctx.Err() == nil {
			cv, err := op.config.ConfigV1().ClusterVersions().Get(ctx, op.name, metav1.GetOptions{})
			if err == nil {
				mu.Lock()
				samples++
				for _, u := range cv.Status.AvailableUpdates {
					if u.Version == cv.Status.Desired.Version || u.Version == completedVersion(cv) {
						offences = append(offences, "availableUpdates "+availableUpdates(cv)+" list "+u.Version+", which the cluster runs")
					}
				}
				mu.Unlock()
			}
			select {
			case <-ctx.Done():
			case <-tick.C:
			}
		}
	}()

	op.request(t, "1.0.1", false)
	waitFor(t, "the update to 1.0.1 to complete", time.Minute, func() bool { return completedVersion(op.clusterVersion(t)) == "1.0.1" })
	// The upstream answers for 1.0.1 a while after the update completed.
	time.Sleep(time.Second)
	cv := op.clusterVersion(t)
	if availableUpdates(cv) != "" {
		t.Errorf("availableUpdates = %q before the answer for 1.0.1, want none", availableUpdates(cv))
	}
	wantE2ECondition(t, cv, configv1.RetrievedUpdates, configv1.ConditionUnknown, clusterversion.ReasonRetrieving, "Retrieving the available updates of 1.0.1")
	srv.open()
	waitFor(t, "the updates of 1.0.1 listed", time.Minute, func() bool { return availableUpdates(op.clusterVersion(t)) == "1.0.2" })
	stop()
	<-polled

	mu.Lock()
	defer mu.Unlock()
	t.Logf("%d samples of the status", samples)
	if len(offences) > 0 {
		t.Fatalf("%d samples listed the running version, the first: %s", len(offences), offences[0])
	}
}

// TestARiskOfTheNewVersionRefusesAnUpdateBeforeItsAnswer: right after an
// update completes, before the upstream answered for the new version, a
// request for a conditional update of that version whose risk applies is
// refused without force, and none of its objects is written.
func TestARiskOfTheNewVersionRefusesAnUpdateBeforeItsAnswer(t *testing.T) {
	srv := newSlowGraphServer(t)
	op := newFreshOperator(t, srv, "fresh-risk")
	clients := newClients(t)

	op.request(t, "1.0.1", false)
	waitFor(t, "the update to 1.0.1 to complete", time.Minute, func() bool { return completedVersion(op.clusterVersion(t)) == "1.0.1" })

	refused := func() bool {
		c := condition(op.clusterVersion(t), clusterversion.ConditionReleaseAccepted)
		return c.Status == configv1.ConditionFalse && c.Reason == clusterversion.ReasonPreconditionChecks &&
			strings.Contains(c.Message, "1.1.0") && strings.Contains(c.Message, "BadDisk") &&
			strings.Contains(c.Message, precondition.NameClusterVersionRecommendedUpdate)
	}
	wantKept := func(when string) {
		t.Helper()
		cv := op.clusterVersion(t)
		if cv.Status.Desired.Version != "1.0.1" || completedVersion(cv) != "1.0.1" {
			t.Fatalf("%s: desired %s, history[0] %s, want 1.0.1 kept", when, cv.Status.Desired.Version, cv.Status.History[0].Version)
		}
		if cm := clients.get(t, configMapGVK, op.namespace, markerOf("1.1.0")); cm != nil {
			t.Fatalf("%s: the marker of 1.1.0 was written", when)
		}
	}

	t.Log("before the answer for 1.0.1, 1.1.0 is judged by 1.0.0's answer, where it is a conditional update of 1.0.1")
	op.request(t, "1.1.0", false)
	waitFor(t, "1.1.0 refused naming BadDisk", time.Minute, refused)
	if c := condition(op.clusterVersion(t), configv1.RetrievedUpdates); c.Reason != clusterversion.ReasonRetrieving {
		t.Fatalf("RetrievedUpdates = %+v, want the answer for 1.0.1 still awaited", c)
	}
	wantKept("refused before the answer")

	t.Log("once the answer for 1.0.1 lists it as not recommended, it stays refused")
	srv.open()
	waitFor(t, "Recommended=False BadDisk on 1.1.0", time.Minute, func() bool {
		rec := recommendedOf(op.clusterVersion(t), "1.1.0")
		return rec != nil && rec.Status == metav1.ConditionFalse && rec.Reason == "BadDisk"
	})
	if !refused() {
		t.Fatalf("ReleaseAccepted = %+v, want the refusal kept", condition(op.clusterVersion(t), clusterversion.ConditionReleaseAccepted))
	}
	wantKept("refused after the answer")
}
