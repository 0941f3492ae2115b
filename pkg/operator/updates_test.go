package operator

import (
	"context"
	"os"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/payload-applier/payload-applier/pkg/apply/deletion"
	"github.com/payload-applier/payload-applier/pkg/clusterversion"
	"github.com/payload-applier/payload-applier/pkg/payload"
	"github.com/payload-applier/payload-applier/pkg/updategraph"
)

// graphJSON: 1.0.0 (deprecated) updates to 1.0.1, 1.0.2 (deprecated) and
// 1.1.0, all in channel stable-1.
const graphJSON = `{"nodes": [
  {"version": "1.0.0", "payload": "r:1.0.0", "metadata": {"io.openshift.upgrades.graph.release.channels": "stable-1", "io.openshift.upgrades.graph.release.deprecated": "1.0.0 leaks memory"}},
  {"version": "1.0.1", "payload": "r:1.0.1", "metadata": {"io.openshift.upgrades.graph.release.channels": "stable-1"}},
  {"version": "1.0.2", "payload": "r:1.0.2", "metadata": {"io.openshift.upgrades.graph.release.channels": "stable-1", "io.openshift.upgrades.graph.release.deprecated": "do not use"}},
  {"version": "1.1.0", "payload": "r:1.1.0", "metadata": {"io.openshift.upgrades.graph.release.channels": "stable-1", "url": "https://example.com/1.1.0"}}
], "edges": [[0, 1], [0, 2], [0, 3]]}`

func (c *fakeCluster) setChannel(t testing.TB, channel string) {
	t.Helper()
	cv := c.clusterVersion(t)
	cv.Spec.Channel = channel
	if _, err := c.config.ConfigV1().ClusterVersions().Update(context.Background(), cv, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func availableVersions(cv *configv1.ClusterVersion) []string {
	var out []string
	for _, r := range cv.Status.AvailableUpdates {
		out = append(out, r.Version)
	}
	return out
}

func TestSyncReadsTheUpdateGraph(t *testing.T) {
	c, graphFile, metrics := newGraphFileCluster(t, graphJSON, "1.0.0", "1.0.0", "1.0.2")
	c.setChannel(t, "stable-1")

	t.Log("an install of a deprecated release is refused, then forced")
	if out := c.sync(t); out.Refused == nil || c.exists("keep") {
		t.Fatalf("refused %v: an install of a deprecated release must be refused and apply nothing", out.Refused)
	}
	wantCondition(t, c.clusterVersion(t), clusterversion.ConditionReleaseAccepted, configv1.ConditionFalse, clusterversion.ReasonPreconditionChecks, "ReleaseDeprecated", "1.0.0 leaks memory")
	if err := c.op.RequestRelease(context.Background(), "1.0.0", true); err != nil {
		t.Fatal(err)
	}
	if out := c.sync(t); out.Refused != nil || !c.exists("keep") {
		t.Fatalf("a forced install must apply: refused %v", out.Refused)
	}

	t.Log("on a deprecated release: the condition, the gauge, and updates away from it, deprecated ones hidden")
	cv := c.clusterVersion(t)
	if got := availableVersions(cv); len(got) != 2 || got[0] != "1.1.0" || got[1] != "1.0.1" {
		t.Errorf("availableUpdates = %v, want [1.1.0 1.0.1]", got)
	}
	if u := cv.Status.AvailableUpdates[0]; u.Image != "r:1.1.0" || u.URL != "https://example.com/1.1.0" || len(u.Channels) != 1 {
		t.Errorf("an available update carries the node's payload, url and channels: %+v", u)
	}
	wantCondition(t, cv, configv1.RetrievedUpdates, configv1.ConditionTrue, "")
	wantCondition(t, cv, clusterversion.ConditionReleaseDeprecated, configv1.ConditionTrue, "ReleaseDeprecated", "Release 1.0.0 is deprecated: 1.0.0 leaks memory")
	wantCondition(t, cv, clusterversion.ConditionFailing, configv1.ConditionFalse, "")
	if v := testutil.ToFloat64(metrics.releaseDeprecated.WithLabelValues("1.0.0")); v != 1 {
		t.Errorf("payload_applier_release_deprecated{version=1.0.0} = %v, want 1", v)
	}

	t.Log("a request for a deprecated release is refused")
	c.request(t, "1.0.2")
	if out := c.sync(t); out.Refused == nil {
		t.Fatal("an update to a deprecated release must be refused")
	}
	wantCondition(t, c.clusterVersion(t), clusterversion.ConditionReleaseAccepted, configv1.ConditionFalse, clusterversion.ReasonPreconditionChecks, "release 1.0.2 is deprecated in the update graph: do not use")
	c.request(t, "1.0.0")
	c.sync(t)

	t.Log("a graph that cannot be read keeps the last good updates")
	if err := os.Remove(graphFile); err != nil {
		t.Fatal(err)
	}
	c.clock.Step(3 * time.Minute)
	c.sync(t)
	cv = c.clusterVersion(t)
	wantCondition(t, cv, configv1.RetrievedUpdates, configv1.ConditionFalse, updategraph.ReasonRemoteFailed, graphFile)
	if got := availableVersions(cv); len(got) != 2 {
		t.Errorf("availableUpdates = %v, want the last good list kept", got)
	}

	t.Log("a release gone from its channel reads VersionNotFound")
	if err := os.WriteFile(graphFile, []byte(`{"nodes": [{"version": "1.0.1", "payload": "r:1.0.1"}], "edges": []}`), 0o644); err != nil {
		t.Fatal(err)
	}
	c.clock.Step(3 * time.Minute)
	c.sync(t)
	cv = c.clusterVersion(t)
	wantCondition(t, cv, configv1.RetrievedUpdates, configv1.ConditionFalse, updategraph.ReasonVersionNotFound, `not in the "stable-1" channel`, "Choose another channel")
	if len(cv.Status.AvailableUpdates) != 0 {
		t.Errorf("availableUpdates = %v, want none", availableVersions(cv))
	}
	wantCondition(t, cv, clusterversion.ConditionReleaseDeprecated, configv1.ConditionFalse, clusterversion.ReasonAsExpected)

	t.Log("without a channel: NoChannel")
	c.setChannel(t, "")
	c.clock.Step(3 * time.Minute)
	c.sync(t)
	wantCondition(t, c.clusterVersion(t), configv1.RetrievedUpdates, configv1.ConditionFalse, updategraph.ReasonNoChannel)
}

func TestFinalizerHoldsGauge(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	held := func(name string, finalizers ...string) deletion.Record {
		return deletion.Record{ID: payload.ObjectID{Kind: "ConfigMap", Namespace: "ns", Name: name}, State: deletion.InProgress, Finalizers: finalizers}
	}
	m.observeDeletes(deletion.Summary{InProgress: []deletion.Record{held("a", "example.com/a", "example.com/b"), held("b", "example.com/a")}}, nil)
	if a, b := testutil.ToFloat64(m.finalizerHolds.WithLabelValues("example.com/a")), testutil.ToFloat64(m.finalizerHolds.WithLabelValues("example.com/b")); a != 2 || b != 1 {
		t.Errorf("holds = %v and %v, want 2 and 1", a, b)
	}
	m.observeDeletes(deletion.Summary{}, nil)
	if n := testutil.CollectAndCount(m.finalizerHolds); n != 0 {
		t.Errorf("%d series left after every hold ended, want none", n)
	}
}
