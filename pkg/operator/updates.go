package operator

import (
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

// graphSource is the graph the operator reads: the configured one, or the
// ClusterVersion's spec.upstream; nil when there is neither.
func (o *Operator) graphSource(cv *configv1.ClusterVersion) updategraph.Source {
	if o.cfg.UpdateGraph != nil {
		return o.cfg.UpdateGraph
	}
	if cv.Spec.Upstream != "" {
		return updategraph.HTTPSource{URL: string(cv.Spec.Upstream)}
	}
	return nil
}

// refreshUpdates reads the update graph, when one is configured, and sets
// status.availableUpdates, RetrievedUpdates and ReleaseDeprecated. It
// returns the deprecated releases for acceptance. version is the release
// the cluster runs, or the one an install is about to run. A graph that
// cannot be fetched leaves availableUpdates as they were and deprecations
// as last known.
func (o *Operator) refreshUpdates(ctx context.Context, cv *configv1.ClusterVersion, version string, now metav1.Time) map[string]string {
	status := &cv.Status
	source := o.graphSource(cv)
	if source == nil {
		status.AvailableUpdates = nil
		status.Conditions = removeCondition(status.Conditions, configv1.RetrievedUpdates)
		status.Conditions = removeCondition(status.Conditions, ConditionReleaseDeprecated)
		o.metrics.observeDeprecation(version, false)
		return nil
	}
	channel := cv.Spec.Channel
	retrieved := configv1.ClusterOperatorStatusCondition{Type: configv1.RetrievedUpdates, Status: configv1.ConditionFalse}
	g, err := o.fetchGraph(ctx, source, channel, version)
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

// fetchGraph returns the graph of source, fetched again once the cache is
// older than the refresh interval or the query changed.
func (o *Operator) fetchGraph(ctx context.Context, source updategraph.Source, channel, version string) (*updategraph.Graph, error) {
	key := fmt.Sprintf("%s?channel=%s&version=%s", source, channel, version)
	c := &o.graphs
	refresh := o.cfg.UpdateGraphRefresh
	if refresh == 0 {
		refresh = defaultGraphRefresh
	}
	if c.key == key && o.clock.Since(c.fetchedAt) < refresh {
		return c.graph, c.err
	}
	if channel == "" {
		// A server answers only for a channel; a file still tells which
		// releases are deprecated.
		if _, ok := source.(updategraph.HTTPSource); ok {
			return nil, nil
		}
	}
	g, err := source.Graph(ctx, channel, version)
	c.key, c.fetchedAt, c.graph, c.err = key, o.clock.Now(), g, err
	if err != nil {
		klog.FromContext(ctx).Info("Reading the update graph failed", "source", source.String(), "err", err)
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
