package operator

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	"github.com/payload-applier/payload-applier/pkg/clusterversion"
	"github.com/payload-applier/payload-applier/pkg/payload/payloadtest"
)

// freshGraphJSON: 1.0.0 updates to 1.0.1, which updates to 1.0.2 and,
// exposed to an Always risk, to 1.1.0.
const freshGraphJSON = `{"nodes": [
  {"version": "1.0.0", "payload": "r:1.0.0"},
  {"version": "1.0.1", "payload": "r:1.0.1"},
  {"version": "1.0.2", "payload": "r:1.0.2"},
  {"version": "1.1.0", "payload": "r:1.1.0"}
], "edges": [[0, 1], [1, 2]], "conditionalEdges": [
  {"edges": [{"from": "1.0.1", "to": "1.1.0"}], "risks": [{"name": "BadDisk", "url": "https://example.com/bad-disk", "message": "Disks fail.", "matchingRules": [{"type": "Always"}]}]}
]}`

// versionGraph serves freshGraphJSON, holding the queries for a held
// version until it is let go; it records the version of every query.
type versionGraph struct {
	*httptest.Server
	mu    sync.Mutex
	held  map[string]chan struct{}
	asked []string
}

func newVersionGraph(t *testing.T, held ...string) *versionGraph {
	s := &versionGraph{held: map[string]chan struct{}{}}
	for _, v := range held {
		s.held[v] = make(chan struct{})
	}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := r.URL.Query().Get("version")
		s.mu.Lock()
		s.asked = append(s.asked, v)
		hold := s.held[v]
		s.mu.Unlock()
		if hold != nil {
			select {
			case <-hold:
			case <-r.Context().Done():
				return
			}
		}
		_, _ = w.Write([]byte(freshGraphJSON))
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *versionGraph) letGo(version string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	close(s.held[version])
	delete(s.held, version)
}

func (s *versionGraph) queries(version string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, v := range s.asked {
		if v == version {
			n++
		}
	}
	return n
}

// waitQueries waits until the graph was asked about version n times.
func (s *versionGraph) waitQueries(t *testing.T, version string, n int) {
	t.Helper()
	deadline := time.Now().Add(guard)
	for s.queries(version) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d queries about %s within %s, want %d", s.queries(version), version, guard, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// newFreshCluster is a fake cluster at 1.0.0 that can apply versions,
// reading the update graph from srv's stable channel with the fetcher
// started, once its answer for 1.0.0 is in status.
func newFreshCluster(t *testing.T, srv *versionGraph, versions ...string) (*fakeCluster, <-chan struct{}) {
	t.Helper()
	root := t.TempDir()
	for _, v := range append([]string{"1.0.0"}, versions...) {
		payloadtest.WriteRelease(t, root, v, nil, map[string]string{
			"0000_50_demo_00_keep.yaml":      configMapManifest("keep"),
			"0000_50_demo_01_" + v + ".yaml": configMapManifest("marker-" + strings.ReplaceAll(v, ".", "-")),
		})
	}
	c := newFakeCluster(t, &DirStore{Root: root}, "1.0.0")
	c.setUpstream(t, srv.URL, "stable")
	woke := c.startGraphFetcher(t)
	cv := c.syncAfterAnswer(t, woke, "the answer for 1.0.0")
	wantUpdates(t, cv, "1.0.1")
	return c, woke
}

func TestAnAnswerForAnotherVersionIsNeverListed(t *testing.T) {
	srv := newVersionGraph(t, "1.0.1")
	c, woke := newFreshCluster(t, srv, "1.0.1")

	t.Log("accepting 1.0.1 drops 1.0.0's updates, 1.0.1 among them, until 1.0.1 has its answer")
	c.request(t, "1.0.1")
	c.syncBeside(t)
	cv := c.clusterVersion(t)
	if cv.Status.Desired.Version != "1.0.1" {
		t.Fatalf("desired %s, want 1.0.1 accepted", cv.Status.Desired.Version)
	}
	wantUpdates(t, cv, "")
	if len(cv.Status.ConditionalUpdates) != 0 {
		t.Errorf("conditionalUpdates %+v listed before 1.0.1 has an answer", cv.Status.ConditionalUpdates)
	}
	wantCondition(t, cv, configv1.RetrievedUpdates, configv1.ConditionUnknown, clusterversion.ReasonRetrieving,
		`Retrieving the available updates of 1.0.1 in the "stable" channel from `+srv.URL)

	t.Log("another sync still lists nothing while the answer is held")
	c.syncBeside(t)
	wantUpdates(t, c.clusterVersion(t), "")

	t.Log("the answer for 1.0.1 lists its own updates")
	srv.letGo("1.0.1")
	cv = c.syncAfterAnswer(t, woke, "the answer for 1.0.1")
	wantUpdates(t, cv, "1.0.2")
	wantCondition(t, cv, configv1.RetrievedUpdates, configv1.ConditionTrue, "")
	if len(cv.Status.ConditionalUpdates) != 1 || cv.Status.ConditionalUpdates[0].Release.Version != "1.1.0" {
		t.Errorf("conditionalUpdates %+v, want 1.1.0", cv.Status.ConditionalUpdates)
	}
}

func TestAcceptingATargetAsksTheGraphAboutItAtOnce(t *testing.T) {
	srv := newVersionGraph(t)
	c, _ := newFreshCluster(t, srv, "1.0.1")
	c.waitIdle(t)

	// One sync, and the fake clock never moves: only the accepting sync
	// can have asked.
	c.request(t, "1.0.1")
	c.syncBeside(t)
	srv.waitQueries(t, "1.0.1", 1)
}

func TestCompletingAnUpdateAsksTheGraphAgainAtOnce(t *testing.T) {
	srv := newVersionGraph(t)
	c, woke := newFreshCluster(t, srv, "1.0.1")

	// The first pass of 1.0.1 fails to create its marker, so that it
	// completes in a later sync than the one that accepts it.
	var failing atomic.Bool
	failing.Store(true)
	c.dynamic.PrependReactor("create", "configmaps", func(a clienttesting.Action) (bool, runtime.Object, error) {
		obj, err := meta.Accessor(a.(clienttesting.CreateAction).GetObject())
		if err == nil && obj.GetName() == "marker-1-0-1" && failing.Load() {
			return true, nil, errors.New("injected failure")
		}
		return false, nil, nil
	})
	c.request(t, "1.0.1")
	c.syncBeside(t)
	if h := c.clusterVersion(t).Status.History[0]; h.Version != "1.0.1" || h.State != configv1.PartialUpdate {
		t.Fatalf("history[0] %s %s, want 1.0.1 Partial", h.Version, h.State)
	}
	waitSignal(t, woke, "wake-up from the answer for 1.0.1")
	c.waitIdle(t)
	before := srv.queries("1.0.1")
	failing.Store(false)

	c.syncBeside(t)
	if h := c.clusterVersion(t).Status.History[0]; h.State != configv1.CompletedUpdate {
		t.Fatalf("history[0] %s %s, want Completed", h.Version, h.State)
	}
	srv.waitQueries(t, "1.0.1", before+1)
}

func TestATargetTheLastAnswerMakesConditionalIsJudgedByItsRisksWhileAnswerless(t *testing.T) {
	srv := newVersionGraph(t, "1.0.1")
	c, _ := newFreshCluster(t, srv, "1.0.1", "1.1.0")
	c.acceptUpdate(t, "1.0.1", "marker-1-0-1")

	t.Log("1.1.0, a conditional update of 1.0.1 exposed to BadDisk in 1.0.0's answer, is refused without force")
	c.request(t, "1.1.0")
	out := c.sync(t)
	if out.Refused == nil || !strings.Contains(out.Refused.Error(), "BadDisk") {
		t.Fatalf("refused %v, want the update refused naming BadDisk", out.Refused)
	}
	cv := c.clusterVersion(t)
	wantCondition(t, cv, clusterversion.ConditionReleaseAccepted, configv1.ConditionFalse, clusterversion.ReasonPreconditionChecks, "BadDisk", "ClusterVersionRecommendedUpdate")
	if cv.Status.Desired.Version != "1.0.1" || c.exists("marker-1-1-0") {
		t.Fatalf("desired %s, marker of 1.1.0 written %v: 1.1.0 must not be applied", cv.Status.Desired.Version, c.exists("marker-1-1-0"))
	}
	wantUpdates(t, cv, "")

	t.Log("with force it is accepted, the risk recorded")
	if err := c.op.RequestRelease(context.Background(), "1.1.0", true); err != nil {
		t.Fatal(err)
	}
	if out := c.sync(t); out.Refused != nil || !c.exists("marker-1-1-0") {
		t.Fatalf("forced 1.1.0: refused %v, marker written %v", out.Refused, c.exists("marker-1-1-0"))
	}
	if h := c.clusterVersion(t).Status.History[0]; h.Version != "1.1.0" || !strings.Contains(h.AcceptedRisks, "BadDisk") {
		t.Errorf("history[0] %s with risks %q, want 1.1.0 naming BadDisk", h.Version, h.AcceptedRisks)
	}
}
