package operator

import (
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/payload-applier/payload-applier/pkg/clusterversion"
	"github.com/payload-applier/payload-applier/pkg/updategraph"
)

func at(sec int64) metav1.Time { return metav1.NewTime(time.Unix(sec, 0)) }

func atp(sec int64) *metav1.Time { t := at(sec); return &t }

// scrapeStatus is the collector's exposition of the named metrics.
func scrapeStatus(t *testing.T, c *statusCollector, expected string, names ...string) {
	t.Helper()
	if err := testutil.CollectAndCompare(c, strings.NewReader(expected), names...); err != nil {
		t.Error(err)
	}
}

const clusterVersionHeader = "# HELP cluster_version " + clusterVersionHelp + "\n# TYPE cluster_version gauge\n"

func TestClusterVersionSeriesFollowTheCVO(t *testing.T) {
	base := func() *configv1.ClusterVersion {
		return &configv1.ClusterVersion{
			ObjectMeta: metav1.ObjectMeta{Name: "version", CreationTimestamp: at(100)},
			Status: configv1.ClusterVersionStatus{
				Desired: configv1.Release{Version: "1.1.0", Image: "r:1.1.0"},
				History: []configv1.UpdateHistory{
					{State: configv1.PartialUpdate, Version: "1.1.0", Image: "r:1.1.0", StartedTime: at(400)},
					{State: configv1.CompletedUpdate, Version: "1.0.1", Image: "r:1.0.1", StartedTime: at(200), CompletionTime: atp(300)},
					{State: configv1.CompletedUpdate, Version: "1.0.0", Image: "r:1.0.0", StartedTime: at(100), CompletionTime: atp(150)},
				},
			},
		}
	}
	tests := []struct {
		name string
		edit func(*configv1.ClusterVersion)
		want string
	}{{
		name: "updating from 1.0.1 to 1.1.0",
		want: `
cluster_version{from_version="1.0.0",image="r:1.0.1",type="completed",version="1.0.1"} 300
cluster_version{from_version="",image="r:1.0.0",type="initial",version="1.0.0"} 100
cluster_version{from_version="1.0.0",image="r:1.1.0",type="cluster",version="1.1.0"} 100
cluster_version{from_version="1.0.1",image="r:1.1.0",type="updating",version="1.1.0"} 400
cluster_version{from_version="1.0.1",image="r:1.1.0",type="current",version="1.1.0"} 400
`,
	}, {
		name: "a refused target is desired; Failing adds failure on it",
		edit: func(cv *configv1.ClusterVersion) {
			cv.Spec.DesiredUpdate = &configv1.Update{Version: "2.0.0"}
			cv.Status.Conditions = []configv1.ClusterOperatorStatusCondition{
				{Type: clusterversion.ConditionFailing, Status: configv1.ConditionTrue, LastTransitionTime: at(500)},
				{Type: clusterversion.ConditionReleaseAccepted, Status: configv1.ConditionFalse, LastTransitionTime: at(450)},
			}
		},
		want: `
cluster_version{from_version="1.0.0",image="r:1.0.1",type="completed",version="1.0.1"} 300
cluster_version{from_version="",image="r:1.0.0",type="initial",version="1.0.0"} 100
cluster_version{from_version="1.0.0",image="r:1.1.0",type="cluster",version="1.1.0"} 100
cluster_version{from_version="1.0.1",image="",type="desired",version="2.0.0"} 500
cluster_version{from_version="1.0.1",image="",type="failure",version="2.0.0"} 500
cluster_version{from_version="1.0.1",image="r:1.1.0",type="updating",version="1.1.0"} 400
cluster_version{from_version="1.0.1",image="r:1.1.0",type="current",version="1.1.0"} 400
`,
	}, {
		name: "an install not yet complete has no initial version on cluster",
		edit: func(cv *configv1.ClusterVersion) {
			cv.Status.History = cv.Status.History[:1]
			cv.Spec.DesiredUpdate = &configv1.Update{Version: "1.1.0", Image: "r:1.1.0"}
		},
		want: `
cluster_version{from_version="",image="r:1.1.0",type="initial",version="1.1.0"} 100
cluster_version{from_version="",image="r:1.1.0",type="cluster",version="1.1.0"} 100
cluster_version{from_version="",image="r:1.1.0",type="updating",version="1.1.0"} 400
cluster_version{from_version="",image="r:1.1.0",type="current",version="1.1.0"} 400
`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cv := base()
			if tt.edit != nil {
				tt.edit(cv)
			}
			c := newStatusCollector()
			c.setClusterVersion(cv)
			// The collector keeps a copy: later edits do not leak in.
			cv.Status.Desired.Version = "changed"
			scrapeStatus(t, c, clusterVersionHeader+tt.want, "cluster_version")
		})
	}
}

func TestClusterVersionConditionsAreVersionOperatorSeries(t *testing.T) {
	c := newStatusCollector()
	c.setClusterVersion(&configv1.ClusterVersion{Status: configv1.ClusterVersionStatus{
		History: []configv1.UpdateHistory{{State: configv1.CompletedUpdate, Version: "1.0.0", CompletionTime: atp(1)}},
		Conditions: []configv1.ClusterOperatorStatusCondition{
			{Type: configv1.OperatorAvailable, Status: configv1.ConditionTrue, Reason: "AsExpected"},
			{Type: configv1.OperatorUpgradeable, Status: configv1.ConditionFalse, Reason: "ResourceDeletionFailed"},
			{Type: clusterversion.ConditionFailing, Status: configv1.ConditionFalse},
			// Unknown: the CVO exports no series.
			{Type: configv1.RetrievedUpdates, Status: configv1.ConditionUnknown, Reason: "Soon"},
		},
	}})
	scrapeStatus(t, c, `
# HELP cluster_operator_conditions Report the conditions for active cluster operators. 0 is False and 1 is True.
# TYPE cluster_operator_conditions gauge
cluster_operator_conditions{condition="Available",name="version",reason="AsExpected"} 1
cluster_operator_conditions{condition="Upgradeable",name="version",reason="ResourceDeletionFailed"} 0
cluster_operator_conditions{condition="Failing",name="version",reason=""} 0
# HELP cluster_operator_up 1 if a cluster operator is Available=True.  0 otherwise, including if a cluster operator sets no Available condition.  The 'version' label tracks the 'operator' version.  The 'reason' label is passed through from the Available condition, unless the cluster operator sets no Available condition, in which case NoAvailableCondition is used.
# TYPE cluster_operator_up gauge
cluster_operator_up{name="version",reason="AsExpected",version="1.0.0"} 1
`, "cluster_operator_conditions", "cluster_operator_up")

	c.setClusterVersion(nil)
	scrapeStatus(t, c, `
# HELP cluster_operator_conditions Report the conditions for active cluster operators. 0 is False and 1 is True.
# TYPE cluster_operator_conditions gauge
cluster_operator_conditions{condition="Available",name="version",reason="ClusterVersionNotFound"} 0
`, "cluster_operator_conditions")
	if n := testutil.CollectAndCount(newStatusCollector()); n != 0 {
		t.Errorf("before any pass the collector exports %d series, want none", n)
	}
}

func TestClusterOperatorSeries(t *testing.T) {
	long := strings.Repeat("x", 1000)
	c := newStatusCollector()
	c.setOperators([]configv1.ClusterOperator{
		{ObjectMeta: metav1.ObjectMeta{Name: "up"}, Status: configv1.ClusterOperatorStatus{
			Versions: []configv1.OperandVersion{{Name: "operand", Version: "9"}, {Name: "operator", Version: "1.0.0"}},
			Conditions: []configv1.ClusterOperatorStatusCondition{
				{Type: configv1.OperatorAvailable, Status: configv1.ConditionTrue, Reason: "AsExpected"},
				{Type: configv1.OperatorDegraded, Status: configv1.ConditionUnknown},
			}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "silent"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "down"}, Status: configv1.ClusterOperatorStatus{
			Conditions: []configv1.ClusterOperatorStatusCondition{{Type: configv1.OperatorAvailable, Status: configv1.ConditionFalse, Reason: long}}}},
	})
	bounded := label(long)
	if len(bounded) > maxLabelBytes {
		t.Fatalf("a label value of %d bytes", len(bounded))
	}
	scrapeStatus(t, c, `
# HELP cluster_operator_up 1 if a cluster operator is Available=True.  0 otherwise, including if a cluster operator sets no Available condition.  The 'version' label tracks the 'operator' version.  The 'reason' label is passed through from the Available condition, unless the cluster operator sets no Available condition, in which case NoAvailableCondition is used.
# TYPE cluster_operator_up gauge
cluster_operator_up{name="up",reason="AsExpected",version="1.0.0"} 1
cluster_operator_up{name="silent",reason="NoAvailableCondition",version=""} 0
cluster_operator_up{name="down",reason="`+bounded+`",version=""} 0
# HELP cluster_operator_conditions Report the conditions for active cluster operators. 0 is False and 1 is True.
# TYPE cluster_operator_conditions gauge
cluster_operator_conditions{condition="Available",name="up",reason="AsExpected"} 1
cluster_operator_conditions{condition="Available",name="down",reason="`+bounded+`"} 0
`, "cluster_operator_up", "cluster_operator_conditions")

	many := configv1.ClusterOperator{ObjectMeta: metav1.ObjectMeta{Name: "many"}}
	for i := 0; i < 3*maxOperatorConditions; i++ {
		many.Status.Conditions = append(many.Status.Conditions, configv1.ClusterOperatorStatusCondition{
			Type: configv1.ClusterStatusConditionType(strings.Repeat("T", i+1)), Status: configv1.ConditionTrue})
	}
	c.setOperators([]configv1.ClusterOperator{many})
	if n := testutil.CollectAndCount(c, "cluster_operator_conditions"); n != maxOperatorConditions {
		t.Errorf("%d condition series for one ClusterOperator, want at most %d", n, maxOperatorConditions)
	}
}

func TestConditionTransitionsCountAsTheCVO(t *testing.T) {
	co := func(conds ...configv1.ClusterOperatorStatusCondition) *configv1.ClusterOperator {
		return &configv1.ClusterOperator{ObjectMeta: metav1.ObjectMeta{Name: "dns"}, Status: configv1.ClusterOperatorStatus{Conditions: conds}}
	}
	avail := func(s configv1.ConditionStatus) configv1.ClusterOperatorStatusCondition {
		return configv1.ClusterOperatorStatusCondition{Type: configv1.OperatorAvailable, Status: s, Reason: string(s)}
	}
	degraded := configv1.ClusterOperatorStatusCondition{Type: configv1.OperatorDegraded, Status: configv1.ConditionFalse}
	c := newStatusCollector()
	c.operatorChanged(co(), co(avail(configv1.ConditionTrue)))                                          // Available appears
	c.operatorChanged(co(avail(configv1.ConditionTrue)), co(avail(configv1.ConditionFalse), degraded))  // flips; Degraded appears
	c.operatorChanged(co(avail(configv1.ConditionFalse), degraded), co(avail(configv1.ConditionFalse))) // Degraded goes
	c.operatorChanged(co(avail(configv1.ConditionFalse)), co(configv1.ClusterOperatorStatusCondition{   // a reason alone is no transition
		Type: configv1.OperatorAvailable, Status: configv1.ConditionFalse, Reason: "Other"}))
	scrapeStatus(t, c, `
# HELP cluster_operator_condition_transitions Reports the number of times that a condition on a cluster operator changes status
# TYPE cluster_operator_condition_transitions gauge
cluster_operator_condition_transitions{condition="Available",name="dns"} 2
cluster_operator_condition_transitions{condition="Degraded",name="dns"} 2
`, "cluster_operator_condition_transitions")
}

func TestUpdateRetrievalAndAvailableUpdates(t *testing.T) {
	src := updategraph.HTTPSource{URL: "https://updates.example.com/graph"}
	q := graphQuery{source: src, channel: "stable-1", version: "1.0.0"}
	c := newStatusCollector()
	c.setRetrieval(q, graphAnswer{}, time.Unix(1000, 0))
	c.setRetrieval(q, graphAnswer{}, time.Unix(1100, 0))
	retrieval := func(want string) {
		t.Helper()
		scrapeStatus(t, c, `
# HELP cluster_version_operator_update_retrieval_timestamp_seconds Reports when updates were last successfully retrieved.
# TYPE cluster_version_operator_update_retrieval_timestamp_seconds gauge
`+want, "cluster_version_operator_update_retrieval_timestamp_seconds")
	}
	t.Log("a new query counts from when it was first asked, as a configuration change")
	retrieval(`cluster_version_operator_update_retrieval_timestamp_seconds{name=""} 1000` + "\n")
	t.Log("a good answer moves it on; a failure after it does not")
	c.setRetrieval(q, graphAnswer{key: q.key(), at: time.Unix(1200, 0)}, time.Unix(1300, 0))
	c.setRetrieval(q, graphAnswer{key: q.key(), at: time.Unix(1200, 0)}, time.Unix(9000, 0))
	retrieval(`cluster_version_operator_update_retrieval_timestamp_seconds{name=""} 1200` + "\n")
	t.Log("a good answer to another query is not this one's")
	q2 := q
	q2.channel = "fast-1"
	c.setRetrieval(q2, graphAnswer{key: q.key(), at: time.Unix(9500, 0)}, time.Unix(9600, 0))
	retrieval(`cluster_version_operator_update_retrieval_timestamp_seconds{name=""} 9600` + "\n")

	c.setClusterVersion(&configv1.ClusterVersion{Spec: configv1.ClusterVersionSpec{Channel: "fast-1"},
		Status: configv1.ClusterVersionStatus{AvailableUpdates: []configv1.Release{{Version: "1.0.1"}, {Version: "1.1.0"}}}})
	scrapeStatus(t, c, `
# HELP cluster_version_available_updates Report the count of available versions for an upstream and channel.
# TYPE cluster_version_available_updates gauge
cluster_version_available_updates{channel="fast-1",upstream="https://updates.example.com/graph"} 2
`, "cluster_version_available_updates")

	t.Log("no graph: neither series")
	c.setRetrieval(graphQuery{}, graphAnswer{}, time.Unix(9700, 0))
	c.setClusterVersion(&configv1.ClusterVersion{})
	if n := testutil.CollectAndCount(c, "cluster_version_operator_update_retrieval_timestamp_seconds", "cluster_version_available_updates"); n != 0 {
		t.Errorf("%d retrieval or available update series without a graph, want none", n)
	}
}

// TestBadInputNeverFailsTheScrape: series that would be collected twice
// fail a whole scrape; the first one is kept instead.
func TestBadInputNeverFailsTheScrape(t *testing.T) {
	long := func(last string) configv1.ClusterStatusConditionType {
		return configv1.ClusterStatusConditionType(strings.Repeat("x", 2*maxLabelBytes) + last)
	}
	c := newStatusCollector()
	c.setClusterVersion(&configv1.ClusterVersion{Status: configv1.ClusterVersionStatus{Conditions: []configv1.ClusterOperatorStatusCondition{
		{Type: configv1.OperatorAvailable, Status: configv1.ConditionTrue, Reason: "AsExpected"}}}})
	c.setOperators([]configv1.ClusterOperator{
		{ObjectMeta: metav1.ObjectMeta{Name: "version"}, Status: configv1.ClusterOperatorStatus{Conditions: []configv1.ClusterOperatorStatusCondition{
			{Type: configv1.OperatorAvailable, Status: configv1.ConditionTrue, Reason: "AsExpected"}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "dns"}, Status: configv1.ClusterOperatorStatus{Conditions: []configv1.ClusterOperatorStatusCondition{
			{Type: long("a"), Status: configv1.ConditionTrue}, {Type: long("b"), Status: configv1.ConditionTrue}}}},
	})
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	if _, err := reg.Gather(); err != nil {
		t.Fatalf("the scrape fails: %v", err)
	}
	if n := testutil.CollectAndCount(c, "cluster_operator_conditions"); n != 2 {
		t.Errorf("%d condition series, want version's Available and one of dns's", n)
	}
}
