package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/payload-applier/payload-applier/pkg/clusterversion"
	"github.com/payload-applier/payload-applier/pkg/operator"
	"github.com/payload-applier/payload-applier/pkg/updategraph"
)

// graphInMemory serves one graph as read: the size of what a server may
// send, past any cap a parse puts in front of it.
type graphInMemory struct{ g *updategraph.Graph }

func (s graphInMemory) Graph(context.Context, string, string) (*updategraph.Graph, error) {
	return s.g, nil
}

func (graphInMemory) String() string { return "an update graph in memory" }

// TestOversizedInputsLeaveAClusterVersionWithinItsBudget: the graph of the
// cluster's release has 50,001 updates, one with a 3 MiB payload, and
// deprecates the release with a 3 MiB message. The apiserver refuses a
// request over 3 MiB, and etcd an object over 1.5 MiB; the ClusterVersion
// it stores is under clusterversion.MaxStatusBytes, and says what was cut.
func TestOversizedInputsLeaveAClusterVersionWithinItsBudget(t *testing.T) {
	ns := testCluster.CreateNamespace(t)
	store := writeStore(t, map[string]map[string]string{"1.0.0": {"0000_50_demo_00_a.yaml": configMap(ns, "a", "x")}})
	g := &updategraph.Graph{Nodes: []updategraph.Node{{Version: "1.0.0", Payload: "r:1.0.0",
		Metadata: map[string]string{updategraph.ChannelsKey: "stable-1", updategraph.DeprecatedKey: strings.Repeat("deprecated ", 3<<20/11)}}}}
	for i := range 50001 {
		n := updategraph.Node{Version: fmt.Sprintf("1.%d.%d", 1+i/1000, i%1000), Payload: fmt.Sprintf("quay.io/example/release@sha256:%064x", i),
			Metadata: map[string]string{updategraph.ChannelsKey: "stable-1"}}
		if i == 50000 {
			n.Payload = strings.Repeat("p", 3<<20)
		}
		g.Nodes = append(g.Nodes, n)
		g.Edges = append(g.Edges, [2]int{0, i + 1})
	}
	metrics, metricsURL := servedMetrics(t)
	op := newOperatorOn(t, &operator.DirStore{Root: store}, uniqueName(t, "budget"), ns, nil, metrics,
		func(c *operator.Config) { c.UpdateGraph = graphInMemory{g} })
	op.StartEvents()
	t.Cleanup(op.Shutdown)
	cv := op.clusterVersion(t)
	cv.Spec.Channel = "stable-1"
	if _, err := op.config.ConfigV1().ClusterVersions().Update(context.Background(), cv, metav1.UpdateOptions{FieldValidation: "Ignore"}); err != nil {
		t.Fatal(err)
	}

	t.Log("the install of the deprecated release is refused, quoting the 3 MiB message")
	op.request(t, "1.0.0", false)
	if out := op.sync(t); out.Refused == nil {
		t.Fatal("an install of a deprecated release must be refused")
	}
	cv = withinBudget(t, op)
	for _, ct := range []configv1.ClusterStatusConditionType{"ReleaseAccepted", "ReleaseDeprecated"} {
		if c := condition(cv, ct); !strings.HasSuffix(c.Message, " bytes cut)") || len(c.Message) > 8<<10 {
			t.Errorf("%s message of %d bytes, want it cut to 8 KiB and marked", ct, len(c.Message))
		}
	}
	u := cv.Status.AvailableUpdates
	if len(u) == 0 || len(u) > 500 || u[0].Version != "1.51.0" || !strings.HasSuffix(u[0].Image, " bytes cut)") {
		t.Errorf("%d available updates; want at most 500, the newest first, its 3 MiB image cut", len(u))
	}
	truncated := requireCondition(t, cv, clusterversion.ConditionStatusTruncated, configv1.ConditionTrue, clusterversion.ReasonStatusLimits)
	for _, want := range []string{fmt.Sprintf("availableUpdates keeps the newest %d of 50001 entries", len(u)), "conditions[ReleaseDeprecated].message cut from"} {
		if !strings.Contains(truncated.Message, want) {
			t.Errorf("StatusTruncated %q lacks %q", truncated.Message, want)
		}
	}
	// The entries dropped, and the newest's image cut.
	if got := scrape(t, metricsURL, `payload_applier_status_truncated\{field="availableUpdates"\}`); got != float64(50001-len(u)+1) {
		t.Errorf("payload_applier_status_truncated{field=availableUpdates} = %v, want %d", got, 50001-len(u)+1)
	}
	waitFor(t, "the StatusLimits Event", 30*time.Second, func() bool {
		return eventIn(t, ns, corev1.EventTypeWarning, clusterversion.ReasonStatusLimits, "availableUpdates keeps the newest")
	})

	t.Log("forced: the install applies, and history keeps the 3 MiB risk cut")
	op.request(t, "1.0.0", true)
	if out := op.sync(t); out.Refused != nil || !out.Result.Complete() {
		t.Fatalf("a forced install must apply: refused %v", out.Refused)
	}
	cv = withinBudget(t, op)
	if h := cv.Status.History; len(h) != 1 || len(h[0].AcceptedRisks) > 4<<10 || !strings.HasSuffix(h[0].AcceptedRisks, " bytes cut)") {
		t.Errorf("history of %d entries, the first's risks %d bytes: want them cut to 4 KiB and marked", len(h), len(h[0].AcceptedRisks))
	}
}

// withinBudget reads the operator's ClusterVersion back from the apiserver
// and fails unless it is under clusterversion.MaxStatusBytes as JSON.
func withinBudget(t *testing.T, op *testOperator) *configv1.ClusterVersion {
	t.Helper()
	cv := op.clusterVersion(t)
	b, err := json.Marshal(cv)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the ClusterVersion read back is %d bytes as JSON", len(b))
	if len(b) > clusterversion.MaxStatusBytes {
		t.Fatalf("the ClusterVersion is %d bytes as JSON, over the %d-byte budget", len(b), clusterversion.MaxStatusBytes)
	}
	return cv
}
