package operator

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
	"sigs.k8s.io/yaml"

	"github.com/payload-applier/payload-applier/pkg/clusterversion"
	"github.com/payload-applier/payload-applier/pkg/payload"
	"github.com/payload-applier/payload-applier/pkg/payload/payloadtest"
	"github.com/payload-applier/payload-applier/pkg/updategraph"
)

// memoryGraph is an update graph held in memory: a graph no parse cap
// stands in front of, as a server's could be once read.
type memoryGraph struct{ g *updategraph.Graph }

func (s memoryGraph) Graph(context.Context, string, string) (*updategraph.Graph, error) {
	return s.g, nil
}

func (memoryGraph) String() string { return "memory" }

// graphFrom is a graph in channel stable-1 where from updates to every
// other node.
func graphFrom(from updategraph.Node, to ...updategraph.Node) *updategraph.Graph {
	g := &updategraph.Graph{Nodes: append([]updategraph.Node{from}, to...)}
	for i := range g.Nodes {
		if g.Nodes[i].Metadata == nil {
			g.Nodes[i].Metadata = map[string]string{}
		}
		g.Nodes[i].Metadata[updategraph.ChannelsKey] = "stable-1"
		if i > 0 {
			g.Edges = append(g.Edges, [2]int{0, i})
		}
	}
	return g
}

// budgetCluster is a fake cluster on releases 1.0.0 and 1.0.1, with
// metrics and the graph g, whose channel it follows.
func budgetCluster(t testing.TB, g *updategraph.Graph, files101 map[string]string) (*fakeCluster, *Metrics) {
	t.Helper()
	root := t.TempDir()
	keep := map[string]string{"0000_50_demo_00_keep.yaml": configMapManifest("keep")}
	payloadtest.WriteRelease(t, root, "1.0.0", nil, keep)
	if files101 == nil {
		files101 = keep
	}
	payloadtest.WriteRelease(t, root, "1.0.1", []string{"1.0.0"}, files101)
	c := newFakeCluster(t, &DirStore{Root: root}, "1.0.0")
	if g != nil {
		c.op.cfg.UpdateGraph = memoryGraph{g}
		c.setChannel(t, "stable-1")
	}
	metrics, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	c.op.metrics = metrics
	c.op.writer.metrics = metrics
	c.op.updates.metrics = metrics
	return c, metrics
}

// wantWithinBudget fails unless the ClusterVersion, as stored, is under
// MaxStatusBytes as JSON, and returns it.
func wantWithinBudget(t *testing.T, c *fakeCluster) *configv1.ClusterVersion {
	t.Helper()
	cv := c.clusterVersion(t)
	b, err := json.Marshal(cv)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the ClusterVersion is %d bytes as JSON", len(b))
	if len(b) > clusterversion.MaxStatusBytes {
		t.Fatalf("the ClusterVersion is %d bytes as JSON, over the %d-byte budget", len(b), clusterversion.MaxStatusBytes)
	}
	return cv
}

// wantCut fails unless the condition's message is at most limit bytes and
// ends with the marker of a cut.
func wantCut(t *testing.T, cv *configv1.ClusterVersion, ct configv1.ClusterStatusConditionType, limit int) {
	t.Helper()
	c := clusterversion.FindCondition(cv.Status.Conditions, ct)
	if c == nil {
		t.Fatalf("no %s condition", ct)
	}
	if len(c.Message) > limit || !strings.HasSuffix(c.Message, " bytes cut)") {
		t.Errorf("%s message of %d bytes ends %q; want at most %d bytes, marked as cut", ct, len(c.Message), c.Message[max(0, len(c.Message)-40):], limit)
	}
}

func TestAGraphOf50001UpdatesFitsTheBudget(t *testing.T) {
	var to []updategraph.Node
	for i := range 50001 {
		to = append(to, updategraph.Node{Version: fmt.Sprintf("1.%d.%d", 1+i/1000, i%1000),
			Payload: fmt.Sprintf("quay.io/openshift-release-dev/ocp-release@sha256:%064x", i)})
	}
	c, metrics := budgetCluster(t, graphFrom(updategraph.Node{Version: "1.0.0", Payload: "r:1.0.0"}, to...), nil)

	c.sync(t)
	cv := wantWithinBudget(t, c)
	if n := len(cv.Status.AvailableUpdates); n == 0 || n > clusterversion.MaxAvailableUpdates || cv.Status.AvailableUpdates[0].Version != "1.51.0" {
		t.Fatalf("%d available updates, the first %+v; want at most %d, the newest (1.51.0) first", n, cv.Status.AvailableUpdates[:min(n, 1)], clusterversion.MaxAvailableUpdates)
	}
	kept := len(cv.Status.AvailableUpdates)
	wantSettled(t, cv, "1.0.0")
	wantCondition(t, cv, configv1.RetrievedUpdates, configv1.ConditionTrue, "")
	wantCondition(t, cv, clusterversion.ConditionStatusTruncated, configv1.ConditionTrue, clusterversion.ReasonStatusLimits,
		fmt.Sprintf("availableUpdates keeps the newest %d of 50001 entries (… and %d more)", kept, 50001-kept))
	if v := testutil.ToFloat64(metrics.statusTruncated.WithLabelValues("availableUpdates")); v != float64(50001-kept) {
		t.Errorf("payload_applier_status_truncated{field=availableUpdates} = %v, want %d", v, 50001-kept)
	}
	wantEvents(t, c.takeEvents(), "Normal UpdateAccepted", "Warning StatusLimits The status was cut to stay within its limits")

	t.Log("the same graph again: nothing to write, nothing to announce")
	writes := c.statusWrites()
	c.sync(t)
	if c.statusWrites() != writes {
		t.Errorf("an unchanged status was written again")
	}
	wantEvents(t, c.takeEvents())
}

func TestMiBStringsFromTheGraphFitTheBudget(t *testing.T) {
	huge := strings.Repeat("deprecated ", 3<<20/11)
	g := graphFrom(updategraph.Node{Version: "1.0.0", Payload: "r:1.0.0", Metadata: map[string]string{updategraph.DeprecatedKey: huge}},
		updategraph.Node{Version: "1.0.1", Payload: strings.Repeat("p", 3<<20)})
	c, metrics := budgetCluster(t, g, nil)

	t.Log("the install of a deprecated release is refused, quoting a 3 MiB message")
	if out := c.sync(t); out.Refused == nil {
		t.Fatal("an install of a deprecated release must be refused")
	}
	cv := wantWithinBudget(t, c)
	wantCut(t, cv, clusterversion.ConditionReleaseAccepted, clusterversion.MaxMessageBytes)
	wantCut(t, cv, clusterversion.ConditionReleaseDeprecated, clusterversion.MaxMessageBytes)
	wantCondition(t, cv, clusterversion.ConditionStatusTruncated, configv1.ConditionTrue, clusterversion.ReasonStatusLimits,
		"conditions[ReleaseAccepted].message cut from", "conditions[ReleaseDeprecated].message cut from", "availableUpdates[0].image cut from 3145728 to")
	if u := cv.Status.AvailableUpdates; len(u) != 1 || len(u[0].Image) > clusterversion.MaxReleaseFieldBytes || !strings.HasSuffix(u[0].Image, " bytes cut)") {
		t.Errorf("available updates %d, the first's image of %d bytes; want one, its 3 MiB image cut to %d", len(u), len(u[0].Image), clusterversion.MaxReleaseFieldBytes)
	}
	if v := testutil.ToFloat64(metrics.statusTruncated.WithLabelValues("conditions")); v != 2 {
		t.Errorf("payload_applier_status_truncated{field=conditions} = %v, want 2", v)
	}
	for _, e := range c.takeEvents() {
		if len(e) > clusterversion.MaxMessageBytes+64 {
			t.Errorf("an Event of %d bytes: %.80q…", len(e), e)
		}
	}

	t.Log("forced: history records the 3 MiB risk, cut")
	if err := c.op.RequestRelease(context.Background(), "1.0.0", true); err != nil {
		t.Fatal(err)
	}
	if out := c.sync(t); out.Refused != nil || !c.exists("keep") {
		t.Fatalf("a forced install must apply: refused %v", out.Refused)
	}
	cv = wantWithinBudget(t, c)
	if h := cv.Status.History; len(h) != 1 || len(h[0].AcceptedRisks) > clusterversion.MaxAcceptedRisksBytes || !strings.Contains(h[0].AcceptedRisks, "ReleaseDeprecated") ||
		!strings.HasSuffix(h[0].AcceptedRisks, " bytes cut)") {
		t.Errorf("history %d entries, the risks of the first %d bytes; want one, its risks cut to %d and marked", len(h), len(h[0].AcceptedRisks), clusterversion.MaxAcceptedRisksBytes)
	}
	wantCondition(t, cv, clusterversion.ConditionStatusTruncated, configv1.ConditionTrue, clusterversion.ReasonStatusLimits, "history[0].acceptedRisks cut from")

	t.Log("settled: a pass after the next writes nothing")
	c.sync(t)
	writes := c.statusWrites()
	c.sync(t)
	if c.statusWrites() != writes {
		t.Errorf("an unchanged status was written again")
	}
	wantWithinBudget(t, c)
}

// enumCRD is widgets.example.com serving v1, whose spec.size is a string
// limited to enum when one is given.
func enumCRD(enum []string) string {
	size := map[string]any{"type": "string"}
	if enum != nil {
		size["enum"] = enum
	}
	crd := map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "widgets.example.com",
			"annotations": map[string]any{"include.release.openshift.io/self-managed-high-availability": "true"}},
		"spec": map[string]any{"group": "example.com", "scope": "Namespaced",
			"names": map[string]any{"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true, "schema": map[string]any{"openAPIV3Schema": map[string]any{
				"type": "object", "properties": map[string]any{"spec": map[string]any{"type": "object", "properties": map[string]any{"size": size}}}}}}}},
	}
	b, err := yaml.Marshal(crd)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func TestACRDWithA300KiBEnumFitsTheBudget(t *testing.T) {
	var enum []string
	for i := range 30000 {
		enum = append(enum, fmt.Sprintf("size-%05d", i))
	}
	c, _ := budgetCluster(t, nil, map[string]string{
		"0000_50_demo_00_keep.yaml":   configMapManifest("keep"),
		"0000_50_widgets_00_crd.yaml": enumCRD(enum),
	})
	c.sync(t)

	t.Log("the cluster serves widgets, twelve of a size the new enum lacks")
	live := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(enumCRD(nil)), &live.Object); err != nil {
		t.Fatal(err)
	}
	_ = unstructured.SetNestedStringSlice(live.Object, []string{"v1"}, "status", "storedVersions")
	if err := c.dynamic.Tracker().Create(payload.CRDGVR, live, ""); err != nil {
		t.Fatal(err)
	}
	for i := range 12 {
		w := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
			"metadata": map[string]any{"name": fmt.Sprintf("w%02d", i), "namespace": demoNamespace}, "spec": map[string]any{"size": "huge"}}}
		if err := c.dynamic.Tracker().Create(widgets, w, demoNamespace); err != nil {
			t.Fatal(err)
		}
	}

	c.request(t, "1.0.1")
	if out := c.sync(t); out.Refused == nil {
		t.Fatalf("an update whose CRD rejects existing widgets must be refused: %+v %+v", out.Verdict, c.clusterVersion(t).Status.Conditions)
	}
	cv := wantWithinBudget(t, c)
	wantCondition(t, cv, clusterversion.ConditionReleaseAccepted, configv1.ConditionFalse, clusterversion.ReasonPreconditionChecks,
		"ExistingObjectsInvalid", `demo/w00: spec.size: Unsupported value: "huge"`, "and 2 more", `(new schema: spec.size: supported values: "size-00000"`)
	msg := clusterversion.FindCondition(cv.Status.Conditions, clusterversion.ConditionReleaseAccepted).Message
	if n := strings.Count(msg, "supported values"); n != 1 || len(msg) > clusterversion.MaxMessageBytes {
		t.Errorf("a message of %d bytes stating the enum %d times; want it once, within %d bytes", len(msg), n, clusterversion.MaxMessageBytes)
	}
}

// TestProgressWritesCutWhatTheFinalWriteCuts: every write of a pass, each
// progress write too, carries the same cuts, so that StatusTruncated
// never comes and goes within a pass and the Event says it once.
func TestProgressWritesCutWhatTheFinalWriteCuts(t *testing.T) {
	root := t.TempDir()
	// d is in a namespace of its own: four in one would be LISTed, not
	// read one by one.
	files := map[string]string{
		"0000_50_demo_00_a.yaml": configMapManifest("a"),
		"0000_50_demo_01_b.yaml": configMapManifest("b"),
		"0000_50_demo_02_c.yaml": configMapManifest("c"),
		"0000_50_demo_03_d.yaml": strings.Replace(configMapManifest("d"), "namespace: "+demoNamespace, "namespace: other", 1),
	}
	payloadtest.WriteRelease(t, root, "1.0.0", nil, files)
	var to []updategraph.Node
	for i := range clusterversion.MaxAvailableUpdates + 100 {
		to = append(to, updategraph.Node{Version: fmt.Sprintf("1.1.%d", i), Payload: "r"})
	}
	c := newFakeCluster(t, &DirStore{Root: root}, "1.0.0")
	c.op.cfg.UpdateGraph = memoryGraph{graphFrom(updategraph.Node{Version: "1.0.0", Payload: "r"}, to...)}
	c.op.cfg.Sync.StrictOrder = true // a to d one at a time, not in one wave
	c.setChannel(t, "stable-1")

	// Two progress writes: the interval passes while a and c are read,
	// and b and d wait for the write before them.
	var progress, truncated int
	written := []chan struct{}{make(chan struct{}), make(chan struct{})}
	c.config.PrependReactor("update", "clusterversions", func(a clienttesting.Action) (bool, runtime.Object, error) {
		cv := a.(clienttesting.UpdateAction).GetObject().(*configv1.ClusterVersion)
		if a.GetSubresource() != "status" {
			return false, nil, nil
		}
		if clusterversion.FindCondition(cv.Status.Conditions, clusterversion.ConditionStatusTruncated) != nil {
			truncated++
		}
		if p := clusterversion.FindCondition(cv.Status.Conditions, configv1.OperatorProgressing); p != nil && p.Status == configv1.ConditionTrue && progress < len(written) {
			close(written[progress])
			progress++
		}
		return false, nil, nil
	})
	// An install creates each without reading it first.
	c.dynamic.PrependReactor("create", "configmaps", func(a clienttesting.Action) (bool, runtime.Object, error) {
		wait := func(i int) {
			select {
			case <-written[i]:
			case <-time.After(10 * time.Second):
				t.Errorf("progress write %d never came", i+1)
			}
		}
		switch actionName(a) {
		case "a", "c":
			c.clock.Step(progressInterval)
		case "b":
			wait(0)
		case "d":
			wait(1)
		}
		return false, nil, nil
	})

	c.sync(t)
	if writes := c.statusWrites(); progress != 2 || writes != 3 || truncated != writes {
		t.Errorf("%d status writes, %d of progress, %d with StatusTruncated; want 2 progress writes and the final one, each saying what it cut", writes, progress, truncated)
	}
	var cuts []string
	for _, e := range c.takeEvents() {
		if strings.Contains(e, clusterversion.ReasonStatusLimits) {
			cuts = append(cuts, e)
		}
	}
	if len(cuts) != 1 {
		t.Errorf("%d StatusLimits Events, want one: %q", len(cuts), cuts)
	}
}
