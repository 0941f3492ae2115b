package operator

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/payload-applier/payload-applier/pkg/clusterversion"
	"github.com/payload-applier/payload-applier/pkg/payload/payloadtest"
	"github.com/payload-applier/payload-applier/pkg/updategraph"
	"github.com/payload-applier/payload-applier/pkg/updategraph/updategraphtest"
)

// channelGraphs: from 1.0.0, stable-1 offers 1.1.0 and 1.0.1, fast-1
// offers 1.2.0; nothing is deprecated.
var channelGraphs = map[string]string{
	"stable-1": `{"nodes": [{"version": "1.0.0", "payload": "r:1.0.0"}, {"version": "1.0.1", "payload": "r:1.0.1"}, {"version": "1.1.0", "payload": "r:1.1.0"}], "edges": [[0, 1], [0, 2]]}`,
	"fast-1":   `{"nodes": [{"version": "1.0.0", "payload": "r:1.0.0"}, {"version": "1.2.0", "payload": "r:1.2.0"}], "edges": [[0, 1]]}`,
}

// guard bounds what the tests wait for; far above what a loaded machine
// needs, far below the 30s a blocked try takes.
const guard = 20 * time.Second

// graphByChannel serves channelGraphs, 404 for another channel, after the
// gate opens; queries counts the requests. Silent, it holds each request
// until the client gives up.
type graphByChannel struct {
	*httptest.Server
	gate            chan struct{}
	failing, silent atomic.Bool
	queries         atomic.Int32
}

func newGraphByChannel(t *testing.T, open bool) *graphByChannel {
	s := &graphByChannel{gate: make(chan struct{})}
	if open {
		close(s.gate)
	}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.queries.Add(1)
		hold := s.gate
		if s.silent.Load() {
			hold = nil
		}
		select {
		case <-hold:
		case <-r.Context().Done():
			return
		}
		body, ok := channelGraphs[r.URL.Query().Get("channel")]
		switch {
		case s.failing.Load():
			http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
		case !ok:
			http.NotFound(w, r)
		default:
			_, _ = w.Write([]byte(body))
		}
	}))
	t.Cleanup(s.Close)
	return s
}

// newGraphCluster is a fake cluster asking for 1.0.0, which it can
// apply, with spec.upstream and spec.channel set.
func newGraphCluster(t *testing.T, upstream, channel string) *fakeCluster {
	root := t.TempDir()
	payloadtest.WriteRelease(t, root, "1.0.0", nil, map[string]string{"0000_50_demo_00_keep.yaml": configMapManifest("keep")})
	c := newFakeCluster(t, &DirStore{Root: root}, "1.0.0")
	c.setUpstream(t, upstream, channel)
	return c
}

func (c *fakeCluster) setUpstream(t *testing.T, upstream, channel string) {
	t.Helper()
	cv := c.clusterVersion(t)
	cv.Spec.Upstream, cv.Spec.Channel = configv1.URL(upstream), channel
	if _, err := c.config.ConfigV1().ClusterVersions().Update(context.Background(), cv, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// startGraphFetcher starts the background reader as Run does; the
// channel receives its wake-ups.
func (c *fakeCluster) startGraphFetcher(t *testing.T) <-chan struct{} {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	woke := make(chan struct{}, 16)
	c.op.graphs.start(ctx, func() { woke <- struct{}{} })
	return woke
}

// syncBeside runs a Sync and fails if it is still running after guard,
// which only a sync that waits on the upstream does.
func (c *fakeCluster) syncBeside(t *testing.T) time.Duration {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	began := time.Now()
	go func() {
		_, err := c.op.Sync(ctx, nil)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("sync: %v", err)
		}
	case <-time.After(guard):
		cancel()
		<-done
		t.Fatalf("the sync still ran after %s: it waits on the update graph", guard)
	}
	return time.Since(began)
}

// waitSignal waits for a receive from ch: a wake-up, or a close.
func waitSignal(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(guard):
		t.Fatalf("no %s within %s", what, guard)
	}
}

// syncAfterAnswer syncs, which tells the fetcher the query, waits for
// the wake-up its answer brings, syncs again and returns the status.
func (c *fakeCluster) syncAfterAnswer(t *testing.T, woke <-chan struct{}, what string) *configv1.ClusterVersion {
	t.Helper()
	c.syncBeside(t)
	waitSignal(t, woke, "wake-up from "+what)
	c.syncBeside(t)
	return c.clusterVersion(t)
}

// waitIdle waits until the fetcher sits on its refresh timer.
func (c *fakeCluster) waitIdle(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(guard)
	for !c.clock.HasWaiters() {
		if time.Now().After(deadline) {
			t.Fatalf("the graph fetcher did not go back to its timer within %s", guard)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func wantUpdates(t *testing.T, cv *configv1.ClusterVersion, want string) {
	t.Helper()
	if got := strings.Join(availableVersions(cv), ","); got != want {
		t.Errorf("availableUpdates = %q, want %q", got, want)
	}
}

func TestABlackHoledUpstreamNeverStallsASync(t *testing.T) {
	hole := updategraphtest.NewBlackHole(t)
	c := newGraphCluster(t, hole.URL, "stable-1")
	// Only the end of the test ends the read.
	c.op.graphs.budget = time.Hour
	c.startGraphFetcher(t)

	first := c.syncBeside(t)
	waitSignal(t, hole.Asked, "query of the upstream")
	second := c.syncBeside(t)
	select {
	case <-hole.HungUp:
		t.Fatal("the read ended before the test did; the sync was not shown to run beside it")
	default:
	}
	t.Logf("syncs took %s and %s while the upstream held the query", first, second)

	cv := c.clusterVersion(t)
	if !c.exists("keep") || len(cv.Status.History) == 0 || cv.Status.History[0].State != configv1.CompletedUpdate {
		t.Fatalf("the release must be applied and reported while the upstream is silent: history %+v", cv.Status.History)
	}
	wantCondition(t, cv, configv1.RetrievedUpdates, configv1.ConditionUnknown, clusterversion.ReasonRetrieving, "Retrieving the available updates of 1.0.0")
}

func TestAnUnansweredReadFailsAfterItsBudget(t *testing.T) {
	for _, background := range []bool{true, false} {
		name := map[bool]string{true: "beside the syncs", false: "in a sync without Run"}[background]
		t.Run(name, func(t *testing.T) {
			hole := updategraphtest.NewBlackHole(t)
			c := newGraphCluster(t, hole.URL, "stable-1")
			c.op.graphs.budget = 300 * time.Millisecond
			var cv *configv1.ClusterVersion
			if background {
				cv = c.syncAfterAnswer(t, c.startGraphFetcher(t), "the budget's end")
			} else {
				c.syncBeside(t)
				cv = c.clusterVersion(t)
			}
			wantCondition(t, cv, configv1.RetrievedUpdates, configv1.ConditionFalse, updategraph.ReasonRemoteFailed,
				"Unable to retrieve available updates from "+hole.URL, "no answer within 300ms")
		})
	}
}

func TestASlowUpstreamShowsWhenItAnswersAndAFailureKeepsTheUpdatesWithTheirAge(t *testing.T) {
	srv := newGraphByChannel(t, false)
	c := newGraphCluster(t, srv.URL, "stable-1")
	woke := c.startGraphFetcher(t)

	t.Log("the upstream has not answered: the sync goes on without it")
	c.syncBeside(t)
	cv := c.clusterVersion(t)
	wantUpdates(t, cv, "")
	if !c.exists("keep") {
		t.Fatal("the release must be applied while the upstream is slow")
	}

	t.Log("the answer wakes a sync, which shows it")
	close(srv.gate)
	waitSignal(t, woke, "wake-up when the answer came")
	c.sync(t)
	cv = c.clusterVersion(t)
	wantUpdates(t, cv, "1.1.0,1.0.1")
	wantCondition(t, cv, configv1.RetrievedUpdates, configv1.ConditionTrue, "")

	t.Log("a refresh with the same answer wakes no sync")
	c.waitIdle(t)
	c.clock.Step(defaultGraphRefresh)
	for srv.queries.Load() < 2 {
		time.Sleep(5 * time.Millisecond)
	}
	c.waitIdle(t)
	select {
	case <-woke:
		t.Error("an unchanged answer woke a sync")
	default:
	}

	t.Log("a failed refresh keeps the updates and says how old they are")
	srv.failing.Store(true)
	c.clock.Step(defaultGraphRefresh)
	waitSignal(t, woke, "wake-up when the refresh failed")
	c.sync(t)
	cv = c.clusterVersion(t)
	wantUpdates(t, cv, "1.1.0,1.0.1")
	wantCondition(t, cv, configv1.RetrievedUpdates, configv1.ConditionFalse, updategraph.ReasonRemoteFailed,
		"last retrieved 2m ago; the latest try failed", "503")
}

func TestAQueryChangeIsReadAtOnce(t *testing.T) {
	hole := updategraphtest.NewBlackHole(t)
	srv := newGraphByChannel(t, true)
	c := newGraphCluster(t, hole.URL, "stable-1")
	c.op.graphs.budget = time.Hour
	woke := c.startGraphFetcher(t)
	c.syncBeside(t)
	waitSignal(t, hole.Asked, "query of the silent upstream")

	// The fake clock never moves: only a prompt read can answer.
	t.Log("a new upstream is read at once, the silent one given up")
	c.setUpstream(t, srv.URL, "stable-1")
	wantUpdates(t, c.syncAfterAnswer(t, woke, "the new upstream"), "1.1.0,1.0.1")
	waitSignal(t, hole.HungUp, "give-up of the silent upstream")

	t.Log("a new channel is read at once")
	c.setChannel(t, "fast-1")
	wantUpdates(t, c.syncAfterAnswer(t, woke, "the new channel"), "1.2.0")

	t.Log("a channel that fails drops the updates of the old one")
	c.setChannel(t, "gone")
	cv := c.syncAfterAnswer(t, woke, "the failed channel")
	wantUpdates(t, cv, "")
	wantCondition(t, cv, configv1.RetrievedUpdates, configv1.ConditionFalse, updategraph.ReasonRemoteFailed, "404")
}

func TestAnAnswerOlderThanItsRefreshAndBudgetSaysItsAge(t *testing.T) {
	srv := newGraphByChannel(t, true)
	c := newGraphCluster(t, srv.URL, "stable-1")
	woke := c.startGraphFetcher(t)
	wantCondition(t, c.syncAfterAnswer(t, woke, "the upstream"), configv1.RetrievedUpdates, configv1.ConditionTrue, "")

	// The refresh is asked and held; the fake clock runs past the refresh
	// interval and the budget while the real budget does not end.
	// First the read that the install's completion asked for ends, so
	// that the silence holds the refresh and nothing before it.
	c.waitIdle(t)
	srv.silent.Store(true)
	asked := srv.queries.Load()
	c.clock.Step(defaultGraphRefresh + defaultGraphTimeout + time.Minute)
	for srv.queries.Load() <= asked {
		time.Sleep(5 * time.Millisecond)
	}
	c.syncBeside(t)
	cv := c.clusterVersion(t)
	wantUpdates(t, cv, "1.1.0,1.0.1")
	wantCondition(t, cv, configv1.RetrievedUpdates, configv1.ConditionTrue, "", "Available updates were last retrieved 4m ago.")
}
