package operator

import (
	"cmp"
	"context"
	"fmt"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/payload-applier/payload-applier/pkg/precondition"
	"github.com/payload-applier/payload-applier/pkg/updategraph"
)

// ConditionReleaseDeprecated is True while the cluster runs a release the
// update graph marks deprecated.
const ConditionReleaseDeprecated configv1.ClusterStatusConditionType = "ReleaseDeprecated"

// defaultGraphRefresh is how long a fetched graph is reused for the same
// upstream, channel and version.
const defaultGraphRefresh = 2 * time.Minute

// graphCache remembers the last graph fetched and the last good one, so a
// failing upstream keeps what the cluster already knew.
type graphCache struct {
	key       string
	fetchedAt time.Time
	graph     *updategraph.Graph
	err       error
	lastGood  *updategraph.Graph
}

// graphQuery is what the operator asks the update graph about a cluster.
type graphQuery struct {
	// source is the configured graph, or the ClusterVersion's
	// spec.upstream; nil when there is neither.
	source  updategraph.Source
	channel string
	// version is the release the cluster runs, or the one an install is
	// about to run.
	version string
}

// queryFor is the query for cv, whose spec asks for target, with the
// configured graph, if any.
func queryFor(configured updategraph.Source, cv *configv1.ClusterVersion, target string) graphQuery {
	q := graphQuery{source: configured, channel: cv.Spec.Channel, version: cmp.Or(cv.Status.Desired.Version, target)}
	if q.source == nil && cv.Spec.Upstream != "" {
		q.source = updategraph.HTTPSource{URL: string(cv.Spec.Upstream)}
	}
	return q
}

func (q graphQuery) String() string {
	return fmt.Sprintf("%s?channel=%s&version=%s", q.source, q.channel, q.version)
}

// readable tells whether there is a graph to read: a server answers only
// for a channel; a file still tells which releases are deprecated.
func (q graphQuery) readable() bool {
	_, server := q.source.(updategraph.HTTPSource)
	return q.source != nil && (q.channel != "" || !server)
}

// read fetches the graph of a readable query.
func (q graphQuery) read(ctx context.Context) (*updategraph.Graph, error) {
	return q.source.Graph(ctx, q.channel, q.version)
}

// Deprecations reads the update graph of cv's spec.upstream as the
// operator reads it before it judges target, uncached, and returns the
// releases it deprecates: nil when cv names no graph, or when the graph
// cannot be read, which the error then says.
func Deprecations(ctx context.Context, cv *configv1.ClusterVersion, target string) (map[string]string, error) {
	q := queryFor(nil, cv, target)
	if !q.readable() {
		return nil, nil
	}
	g, err := q.read(ctx)
	if err != nil {
		return nil, err
	}
	return g.Deprecations(), nil
}

// refreshUpdates reads the update graph, when one is configured, and sets
// status.availableUpdates, RetrievedUpdates and ReleaseDeprecated. It
// returns the deprecated releases for acceptance of target, the version
// the spec asks for. A graph that cannot be fetched leaves
// availableUpdates as they were and deprecations as last known.
func (o *Operator) refreshUpdates(ctx context.Context, cv *configv1.ClusterVersion, target string, now metav1.Time) map[string]string {
	status := &cv.Status
	query := queryFor(o.cfg.UpdateGraph, cv, target)
	source, version := query.source, query.version
	if source == nil {
		status.AvailableUpdates = nil
		status.Conditions = removeCondition(status.Conditions, configv1.RetrievedUpdates)
		status.Conditions = removeCondition(status.Conditions, ConditionReleaseDeprecated)
		o.metrics.observeDeprecation(version, false)
		return nil
	}
	channel := query.channel
	retrieved := configv1.ClusterOperatorStatusCondition{Type: configv1.RetrievedUpdates, Status: configv1.ConditionFalse}
	g, err := o.fetchGraph(ctx, query)
	switch {
	case channel == "":
		retrieved.Reason, retrieved.Message = updategraph.ReasonNoChannel, "The update channel has not been configured: set spec.channel."
		status.AvailableUpdates = nil
	case err != nil:
		retrieved.Reason = updategraph.ReasonOf(err)
		retrieved.Message = fmt.Sprintf("Unable to retrieve available updates from %s: %v", source, err)
	default:
		updates, found := g.InChannel(channel).Updates(version)
		if found {
			retrieved.Status, retrieved.Reason, retrieved.Message = configv1.ConditionTrue, "", ""
			status.AvailableUpdates = releasesOf(updates)
			break
		}
		status.AvailableUpdates = nil
		retrieved.Reason = updategraph.ReasonVersionNotFound
		retrieved.Message = fmt.Sprintf("The cluster's version %s is not in the %q channel of %s: it may have been removed from the channel. "+
			"Choose another channel in spec.channel, or update to a release by version.", version, channel, source)
	}
	status.Conditions = setCondition(status.Conditions, retrieved, now)

	known := o.graphs.lastGood
	if known == nil {
		status.Conditions = removeCondition(status.Conditions, ConditionReleaseDeprecated)
		return nil
	}
	deprecations := known.Deprecations()
	msg, deprecated := deprecations[version]
	c := configv1.ClusterOperatorStatusCondition{Type: ConditionReleaseDeprecated, Status: configv1.ConditionFalse,
		Reason: ReasonAsExpected, Message: fmt.Sprintf("Release %s is not deprecated.", version)}
	if deprecated {
		c.Status, c.Reason = configv1.ConditionTrue, precondition.ReasonReleaseDeprecated
		c.Message = fmt.Sprintf("Release %s is deprecated; update to another release.", version)
		if msg != "" {
			c.Message = fmt.Sprintf("Release %s is deprecated: %s", version, msg)
		}
	}
	status.Conditions = setCondition(status.Conditions, c, now)
	o.metrics.observeDeprecation(version, deprecated)
	return deprecations
}

// fetchGraph returns the graph of query, fetched again once the cache is
// older than the refresh interval or the query changed.
func (o *Operator) fetchGraph(ctx context.Context, query graphQuery) (*updategraph.Graph, error) {
	key := query.String()
	c := &o.graphs
	refresh := o.cfg.UpdateGraphRefresh
	if refresh == 0 {
		refresh = defaultGraphRefresh
	}
	if c.key == key && o.clock.Since(c.fetchedAt) < refresh {
		return c.graph, c.err
	}
	if !query.readable() {
		return nil, nil
	}
	g, err := query.read(ctx)
	c.key, c.fetchedAt, c.graph, c.err = key, o.clock.Now(), g, err
	if err != nil {
		klog.FromContext(ctx).Info("Reading the update graph failed", "source", query.source.String(), "err", err)
	} else {
		c.lastGood = g
	}
	return g, err
}

// releasesOf turns graph nodes into the status's releases.
func releasesOf(nodes []updategraph.Node) []configv1.Release {
	out := make([]configv1.Release, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, configv1.Release{Version: n.Version, Image: n.Payload, URL: configv1.URL(n.Metadata["url"]), Channels: n.Channels()})
	}
	return out
}
