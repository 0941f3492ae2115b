package operator

import (
	"strings"
	"sync"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/payload-applier/payload-applier/pkg/clusterversion"
	"github.com/payload-applier/payload-applier/pkg/textwrap"
)

// The CVO's series about the ClusterVersion and the ClusterOperators,
// computed at scrape time from the last status the operator wrote and the
// ClusterOperators its last pass listed, as the CVO computes them from its
// listers (pkg/cvo/metrics.go).
const (
	// maxLabelBytes bounds each label value taken from the cluster.
	maxLabelBytes = 256
	// maxOperatorConditions bounds the condition series of one
	// ClusterOperator; maxTransitionKeys the ClusterOperator conditions
	// whose transitions are counted.
	maxOperatorConditions = 64
	maxTransitionKeys     = 4096
	// reasonNoAvailableCondition and reasonClusterVersionNotFound are the
	// CVO's reasons of cluster_operator_up when there is no condition to
	// take one from.
	reasonNoAvailableCondition   = "NoAvailableCondition"
	reasonClusterVersionNotFound = "ClusterVersionNotFound"
	// versionOperatorName is the name the ClusterVersion's own series
	// carry among the ClusterOperators'.
	versionOperatorName = "version"
)

// clusterVersionHelp is the CVO's, but for 'current': a payload carries
// no creation date.
const clusterVersionHelp = "Reports the version of the cluster in terms of seconds since the epoch. Type 'current' is the version being applied and the value is when the cluster started applying it (a payload carries no creation date). " +
	"'desired' is set while spec.desiredUpdate names another release, with the most recent status change. 'failure' is set while Failing=True, with its last transition time. " +
	"'completed' is when the last release was completely applied. 'cluster' is the creation date of the ClusterVersion, with the current version. 'updating' is set while an update is in progress, with its start time. " +
	"'initial' is the oldest entry in the history. from_version is the last completed version for most types, the initial version for 'cluster', empty for 'initial', and the completed version before it for 'completed'."

type transitionKey struct{ name, condition string }

type statusCollector struct {
	clusterVersion, availableUpdates, operatorUp, operatorConditions, transitions, retrieval *prometheus.Desc

	mu sync.Mutex
	// seen: a pass has looked for the ClusterVersion; cv is nil when it
	// was missing.
	seen      bool
	cv        *configv1.ClusterVersion
	operators []configv1.ClusterOperator
	counts    map[transitionKey]int
	// upstream is the update graph read, "" when none is; retrievalKey the
	// query (source, channel, version) last seen and retrievedAt the later
	// of its last good answer and when it was first seen.
	upstream     string
	retrievalKey string
	retrievedAt  time.Time
}

func newStatusCollector() *statusCollector {
	return &statusCollector{
		clusterVersion: prometheus.NewDesc("cluster_version", clusterVersionHelp,
			[]string{"type", "version", "image", "from_version"}, nil),
		availableUpdates: prometheus.NewDesc("cluster_version_available_updates",
			"Report the count of available versions for an upstream and channel.", []string{"upstream", "channel"}, nil),
		operatorUp: prometheus.NewDesc("cluster_operator_up",
			"1 if a cluster operator is Available=True.  0 otherwise, including if a cluster operator sets no Available condition.  The 'version' label tracks the 'operator' version.  The 'reason' label is passed through from the Available condition, unless the cluster operator sets no Available condition, in which case NoAvailableCondition is used.",
			[]string{"name", "version", "reason"}, nil),
		operatorConditions: prometheus.NewDesc("cluster_operator_conditions",
			"Report the conditions for active cluster operators. 0 is False and 1 is True.", []string{"name", "condition", "reason"}, nil),
		transitions: prometheus.NewDesc("cluster_operator_condition_transitions",
			"Reports the number of times that a condition on a cluster operator changes status", []string{"name", "condition"}, nil),
		retrieval: prometheus.NewDesc("cluster_version_operator_update_retrieval_timestamp_seconds",
			"Reports when updates were last successfully retrieved.", []string{"name"}, nil),
		counts: map[transitionKey]int{},
	}
}

// label bounds a label value taken from the cluster.
func label(s string) string { return textwrap.Bound(s, maxLabelBytes) }

func (c *statusCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.clusterVersion, c.availableUpdates, c.operatorUp, c.operatorConditions, c.transitions, c.retrieval} {
		ch <- d
	}
}

func (c *statusCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	// A series collected twice fails the whole scrape: bad input (a
	// ClusterOperator named "version", values equal once bounded) must
	// not, so the first one wins.
	emitted := map[string]bool{}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		for i := range labels {
			labels[i] = label(labels[i])
		}
		key := d.String() + "\x00" + strings.Join(labels, "\x00")
		if emitted[key] {
			return
		}
		emitted[key] = true
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	switch {
	case c.seen && c.cv == nil:
		gauge(c.operatorUp, 0, versionOperatorName, "", reasonClusterVersionNotFound)
		gauge(c.operatorConditions, 0, versionOperatorName, string(configv1.OperatorAvailable), reasonClusterVersionNotFound)
	case c.cv != nil:
		c.collectClusterVersion(gauge)
	}
	for i := range c.operators {
		collectOperator(gauge, c.operatorUp, c.operatorConditions, &c.operators[i])
	}
	for k, n := range c.counts {
		gauge(c.transitions, float64(n), k.name, k.condition)
	}
	if !c.retrievedAt.IsZero() {
		gauge(c.retrieval, float64(c.retrievedAt.Unix()), "")
	}
}

func (c *statusCollector) collectClusterVersion(gauge func(*prometheus.Desc, float64, ...string)) {
	cv := c.cv
	status := &cv.Status
	current := status.Desired
	var completed, initial configv1.UpdateHistory
	if n := len(status.History); n > 0 {
		initial = status.History[n-1]
	}
	for i, h := range status.History {
		if h.State != configv1.CompletedUpdate {
			continue
		}
		completed = h
		var previous configv1.UpdateHistory
		for _, p := range status.History[i+1:] {
			if p.State == configv1.CompletedUpdate {
				previous = p
				break
			}
		}
		gauge(c.clusterVersion, unixOrZero(h.CompletionTime), "completed", h.Version, h.Image, previous.Version)
		break
	}
	created := float64(cv.CreationTimestamp.Unix())
	gauge(c.clusterVersion, created, "initial", initial.Version, initial.Image, "")
	// An install that never completed has no initial version yet, so
	// that clusters still installing can be told apart.
	initialVersion := initial.Version
	if completed.Version == "" {
		initialVersion = ""
	}
	gauge(c.clusterVersion, created, "cluster", current.Version, current.Image, initialVersion)
	target := current
	if du := cv.Spec.DesiredUpdate; du != nil && namesOtherRelease(du, current) {
		target = configv1.Release{Version: du.Version, Image: du.Image}
		gauge(c.clusterVersion, float64(mostRecentChange(cv).Unix()), "desired", du.Version, du.Image, completed.Version)
	}
	if f := clusterversion.FindCondition(status.Conditions, clusterversion.ConditionFailing); f != nil && f.Status == configv1.ConditionTrue {
		gauge(c.clusterVersion, unixOrZero(&f.LastTransitionTime), "failure", target.Version, target.Image, completed.Version)
	}
	if len(status.History) > 0 && status.History[0].State == configv1.PartialUpdate {
		u := status.History[0]
		gauge(c.clusterVersion, unixOrZero(&u.StartedTime), "updating", u.Version, u.Image, completed.Version)
	}
	started := 0.0
	if len(status.History) > 0 && status.History[0].Version == current.Version {
		started = unixOrZero(&status.History[0].StartedTime)
	}
	gauge(c.clusterVersion, started, "current", current.Version, current.Image, completed.Version)

	upstream := c.upstream
	if upstream == "" {
		upstream = string(cv.Spec.Upstream)
	}
	if upstream != "" || len(status.AvailableUpdates) > 0 || conditionIs(status.Conditions, configv1.RetrievedUpdates, configv1.ConditionTrue) {
		gauge(c.availableUpdates, float64(len(status.AvailableUpdates)), upstream, cv.Spec.Channel)
	}

	for _, cond := range status.Conditions {
		v, ok := conditionValue(cond.Status)
		if !ok {
			continue
		}
		if cond.Type == configv1.OperatorAvailable {
			gauge(c.operatorUp, v, versionOperatorName, completed.Version, cond.Reason)
		}
		gauge(c.operatorConditions, v, versionOperatorName, string(cond.Type), cond.Reason)
	}
}

// collectOperator exports one ClusterOperator's up and condition series.
func collectOperator(gauge func(*prometheus.Desc, float64, ...string), up, conditions *prometheus.Desc, co *configv1.ClusterOperator) {
	version := ""
	for _, v := range co.Status.Versions {
		if v.Name == "operator" {
			version = v.Version
			break
		}
	}
	isUp, reason := 0.0, reasonNoAvailableCondition
	if a := clusterversion.FindCondition(co.Status.Conditions, configv1.OperatorAvailable); a != nil {
		reason = a.Reason
		if a.Status == configv1.ConditionTrue {
			isUp = 1
		}
	}
	gauge(up, isUp, co.Name, version, reason)
	for i, cond := range co.Status.Conditions {
		if i == maxOperatorConditions {
			break
		}
		if v, ok := conditionValue(cond.Status); ok {
			gauge(conditions, v, co.Name, string(cond.Type), cond.Reason)
		}
	}
}

// conditionValue is 1 for True and 0 for False; the CVO exports no
// series for any other status.
func conditionValue(s configv1.ConditionStatus) (float64, bool) {
	switch s {
	case configv1.ConditionTrue:
		return 1, true
	case configv1.ConditionFalse:
		return 0, true
	}
	return 0, false
}

func conditionIs(conds []configv1.ClusterOperatorStatusCondition, t configv1.ClusterStatusConditionType, s configv1.ConditionStatus) bool {
	c := clusterversion.FindCondition(conds, t)
	return c != nil && c.Status == s
}

// namesOtherRelease tells whether the spec asks for a release other than
// current, by version or by image.
func namesOtherRelease(du *configv1.Update, current configv1.Release) bool {
	return (du.Version != "" && du.Version != current.Version) || (du.Image != "" && !sameImage(du.Image, current.Image))
}

// unixOrZero is t in seconds since the epoch, 0 when unset.
func unixOrZero(t *metav1.Time) float64 {
	if t == nil || t.IsZero() {
		return 0
	}
	return float64(t.Unix())
}

// mostRecentChange is the latest of the history's last start or
// completion, the conditions' transitions and the creation, as the CVO's
// 'desired' value.
func mostRecentChange(cv *configv1.ClusterVersion) time.Time {
	latest := cv.CreationTimestamp.Time
	later := func(t time.Time) {
		if t.After(latest) {
			latest = t
		}
	}
	if h := cv.Status.History; len(h) > 0 {
		later(h[0].StartedTime.Time)
		if h[0].CompletionTime != nil {
			later(h[0].CompletionTime.Time)
		}
	}
	for _, c := range cv.Status.Conditions {
		later(c.LastTransitionTime.Time)
	}
	return latest
}

// setClusterVersion records the ClusterVersion as last written; nil when
// it was not found.
func (c *statusCollector) setClusterVersion(cv *configv1.ClusterVersion) {
	if cv != nil {
		cv = cv.DeepCopy()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen, c.cv = true, cv
}

// setOperators records the ClusterOperators a pass listed.
func (c *statusCollector) setOperators(operators []configv1.ClusterOperator) {
	kept := make([]configv1.ClusterOperator, len(operators))
	for i := range operators {
		operators[i].DeepCopyInto(&kept[i])
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.operators = kept
}

// operatorChanged counts, as the CVO does, each condition type whose
// status changed, appeared or went away between two versions of a
// ClusterOperator.
func (c *statusCollector) operatorChanged(older, newer *configv1.ClusterOperator) {
	c.mu.Lock()
	defer c.mu.Unlock()
	count := func(t configv1.ClusterStatusConditionType) {
		k := transitionKey{name: newer.Name, condition: string(t)}
		if _, ok := c.counts[k]; ok || len(c.counts) < maxTransitionKeys {
			c.counts[k]++
		}
	}
	seen := map[configv1.ClusterStatusConditionType]bool{}
	for _, o := range older.Status.Conditions {
		if seen[o.Type] {
			continue
		}
		seen[o.Type] = true
		if n := clusterversion.FindCondition(newer.Status.Conditions, o.Type); n == nil || n.Status != o.Status {
			count(o.Type)
		}
	}
	for _, n := range newer.Status.Conditions {
		if !seen[n.Type] {
			seen[n.Type] = true
			count(n.Type)
		}
	}
}

// setRetrieval records the update graph query of a pass and, when good
// answered it, when: the timestamp is the later of the last good answer
// and the first pass that asked this query, as the CVO's
// LastSyncOrConfigChange. No graph: no timestamp.
func (c *statusCollector) setRetrieval(q graphQuery, good graphAnswer, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := q.key()
	if key == "" {
		c.upstream, c.retrievalKey, c.retrievedAt = "", "", time.Time{}
		return
	}
	c.upstream = q.source.String()
	if key != c.retrievalKey {
		c.retrievalKey, c.retrievedAt = key, now
	}
	if good.key == key && good.err == nil && good.at.After(c.retrievedAt) {
		c.retrievedAt = good.at
	}
}
