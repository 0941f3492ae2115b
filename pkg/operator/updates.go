package operator

import (
	"cmp"
	"context"
	"fmt"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/utils/clock"

	"github.com/payload-applier/payload-applier/pkg/clusterversion"
	"github.com/payload-applier/payload-applier/pkg/precondition"
	"github.com/payload-applier/payload-applier/pkg/updategraph"
)

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

// key tells queries apart; empty when there is no source.
func (q graphQuery) key() string {
	if q.source == nil {
		return ""
	}
	return q.String()
}

// scope is key without the version: the graph a server gives for one
// channel is the same whatever version asks.
func (q graphQuery) scope() string {
	if q.source == nil {
		return ""
	}
	return fmt.Sprintf("%s?channel=%s", q.source, q.channel)
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

// graphView is what a sync knows from the update graph for judging a
// target.
type graphView struct {
	// deprecated are the releases the last good answer deprecates.
	deprecated map[string]string
	// pending are the conditional updates from the cluster's version in
	// an answer for another version of the same upstream and channel,
	// judged as status would hold them, while the cluster's version has
	// no answer: status lists none of them, but a target among them is
	// judged by its risks rather than as unknown.
	pending []configv1.ConditionalUpdate
	// risks are the evaluations status.conditionalUpdates was judged by
	// in this call; nil when the call left them as they were or cleared
	// them.
	risks map[string]clusterversion.RiskResult
}

// updateLister lists the updates the update graph offers the cluster:
// availableUpdates, conditionalUpdates with their risks evaluated, and
// RetrievedUpdates.
type updateLister struct {
	cfg     *Config
	clock   clock.Clock
	graphs  *graphFetcher
	risks   *riskEvaluator
	metrics *Metrics
	observe *observer
}

// refreshUpdates sets status.availableUpdates, RetrievedUpdates and
// ReleaseDeprecated from what the graph fetcher knows, and returns what
// acceptance of target, the version the spec asks for, is judged by. Only
// an answer for the query itself, the cluster's version included, fills
// the lists: until it comes they are empty and RetrievedUpdates says it
// is being retrieved. A graph that cannot be fetched leaves
// availableUpdates as they were for the same query and deprecations as
// last known; the condition says how old they are.
// A sync reads the graph inline (not started) at most once: again, with
// inline unset, it only asks, and the view it returns judges nothing.
func (ul *updateLister) refreshUpdates(ctx context.Context, cv *configv1.ClusterVersion, target string, now metav1.Time, inline bool) graphView {
	status := &cv.Status
	query := queryFor(ul.cfg.UpdateGraph, cv, target)
	var latest, good graphAnswer
	if inline {
		latest, good = ul.graphs.lookup(ctx, query)
	} else {
		latest, good = ul.graphs.peek(query)
	}
	ul.metrics.observeRetrieval(query, good, now.Time)
	source, version := query.source, query.version
	if source == nil {
		ul.clearUpdates(status)
		status.Conditions = clusterversion.RemoveCondition(status.Conditions, configv1.RetrievedUpdates)
		status.Conditions = clusterversion.RemoveCondition(status.Conditions, clusterversion.ConditionReleaseDeprecated)
		ul.metrics.observeDeprecation(version, false)
		return graphView{}
	}
	channel := query.channel
	var view graphView
	retrieved := configv1.ClusterOperatorStatusCondition{Type: configv1.RetrievedUpdates, Status: configv1.ConditionFalse}
	switch {
	case channel == "":
		retrieved.Reason, retrieved.Message = updategraph.ReasonNoChannel, "The update channel has not been configured: set spec.channel."
		ul.clearUpdates(status)
	case latest.key != query.key():
		// The answer to a new query is on its way and wakes a sync when
		// it comes; an answer for another version never stands in for it.
		ul.clearUpdates(status)
		retrieved.Status, retrieved.Reason = configv1.ConditionUnknown, clusterversion.ReasonRetrieving
		retrieved.Message = fmt.Sprintf("Retrieving the available updates of %s in the %q channel from %s.", version, channel, source)
	case latest.err != nil:
		retrieved.Reason = updategraph.ReasonOf(latest.err)
		retrieved.Message = fmt.Sprintf("Unable to retrieve available updates from %s: %v", source, latest.err)
		switch good.key {
		case query.key():
			retrieved.Message = fmt.Sprintf("Unable to retrieve available updates from %s: last retrieved %s ago; the latest try failed: %v",
				source, duration.HumanDuration(ul.clock.Since(good.at)), latest.err)
		case "":
			// Kept: from before this process, likely for the same query.
		default:
			// They answered another upstream, channel or version.
			ul.clearUpdates(status)
		}
	default:
		inChannel := latest.graph.InChannel(channel)
		updates, found := inChannel.Updates(version)
		if found {
			risks, err := ul.setUpdates(ctx, cv, inChannel, updates, version, now)
			if err != nil {
				retrieved.Reason = updategraph.ReasonOf(err)
				retrieved.Message = fmt.Sprintf("Unable to retrieve available updates from %s: %v", source, err)
				break
			}
			view.risks = risks
			retrieved.Status, retrieved.Reason, retrieved.Message = configv1.ConditionTrue, "", ""
			if age := ul.clock.Since(latest.at); age > ul.graphs.refresh+ul.graphs.budget {
				retrieved.Message = fmt.Sprintf("Available updates were last retrieved %s ago.", duration.HumanDuration(age))
			}
			break
		}
		ul.clearUpdates(status)
		retrieved.Reason = updategraph.ReasonVersionNotFound
		retrieved.Message = fmt.Sprintf("The cluster's version %s is not in the %q channel of %s: it may have been removed from the channel. "+
			"Choose another channel in spec.channel, or update to a release by version.", version, channel, source)
	}
	if retrieved.Type != "" {
		status.Conditions = clusterversion.SetCondition(status.Conditions, retrieved, now)
	}
	// Only the inline call's view judges a target; the pending risks are
	// not evaluated for the call that only asks.
	if inline && channel != "" && good.key != query.key() && good.scope == query.scope() && good.graph != nil {
		view.pending = ul.pendingConditional(ctx, cv, good.graph.InChannel(channel), version, now)
	}

	known := good.graph
	if known == nil {
		status.Conditions = clusterversion.RemoveCondition(status.Conditions, clusterversion.ConditionReleaseDeprecated)
		return view
	}
	deprecations := known.Deprecations()
	view.deprecated = deprecations
	msg, deprecated := deprecations[version]
	c := configv1.ClusterOperatorStatusCondition{Type: clusterversion.ConditionReleaseDeprecated, Status: configv1.ConditionFalse,
		Reason: clusterversion.ReasonAsExpected, Message: fmt.Sprintf("Release %s is not deprecated.", version)}
	if deprecated {
		c.Status, c.Reason = configv1.ConditionTrue, precondition.ReasonReleaseDeprecated
		c.Message = fmt.Sprintf("Release %s is deprecated; update to another release.", version)
		if msg != "" {
			c.Message = fmt.Sprintf("Release %s is deprecated: %s", version, msg)
		}
	}
	status.Conditions = clusterversion.SetCondition(status.Conditions, c, now)
	ul.metrics.observeDeprecation(version, deprecated)
	return view
}

// releasesOf turns graph nodes into the status's releases.
func releasesOf(nodes []updategraph.Node) []configv1.Release {
	out := make([]configv1.Release, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, configv1.Release{Version: n.Version, Image: n.Payload, URL: configv1.URL(n.Metadata["url"]), Channels: n.Channels()})
	}
	return out
}
