package operator

import (
	"errors"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/payload-applier/payload-applier/pkg/apply"
	"github.com/payload-applier/payload-applier/pkg/apply/cleanup"
	"github.com/payload-applier/payload-applier/pkg/apply/deletion"
	"github.com/payload-applier/payload-applier/pkg/payload"
)

// Metrics are the operator's Prometheus metrics: the CVO's, so existing
// dashboards and alerts work, plus deletion metrics the CVO lacks.
type Metrics struct {
	// status computes the ClusterVersion and ClusterOperator series at
	// scrape time (statusmetrics.go).
	status              *statusCollector
	payload             *prometheus.GaugeVec
	payloadErrors       *prometheus.CounterVec
	deletesInProgress   prometheus.Gauge
	deletesStuck        prometheus.Gauge
	deleteOldestPending prometheus.Gauge
	deletesTotal        *prometheus.CounterVec
	syncDuration        *prometheus.HistogramVec
	releaseDeprecated   *prometheus.GaugeVec
	cleanupRemaining    *prometheus.GaugeVec
	cleanupState        *prometheus.GaugeVec
	finalizerHolds      *prometheus.GaugeVec
	statusTruncated     *prometheus.GaugeVec
	capability          *prometheus.GaugeVec
	operatorWaits       *prometheus.GaugeVec
	// conditional holds the conditional update metrics (metrics_conditional.go).
	conditional *conditionalMetrics
}

// NewMetrics creates the metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		status: newStatusCollector(),
		payload: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "cluster_version_payload",
			Help: "Reports the number of manifests applied ('applied') and not yet applied ('pending') for a version.",
		}, []string{"version", "type"}),
		payloadErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cluster_operator_payload_errors",
			Help: "Counts failed manifest applies per version.",
		}, []string{"version"}),
		deletesInProgress: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "payload_applier_deletes_in_progress",
			Help: "Deletes requested by a payload that have not completed.",
		}),
		deletesStuck: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "payload_applier_deletes_stuck",
			Help: "Issued deletes still in progress after --delete-stuck-after.",
		}),
		deleteOldestPending: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "payload_applier_delete_oldest_pending_seconds",
			Help: "Age of the oldest delete still in progress, 0 when none.",
		}),
		deletesTotal: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "payload_applier_deletes_total",
			Help: "Delete transitions by result: requested, completed, already_deleted, failed, reappeared.",
		}, []string{"result"}),
		syncDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "payload_applier_sync_duration_seconds",
			Help:    "Duration of one ClusterVersion sync, by mode.",
			Buckets: prometheus.ExponentialBuckets(0.05, 2, 14),
		}, []string{"mode"}),
		releaseDeprecated: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "payload_applier_release_deprecated",
			Help: "1 while the cluster runs a release its update graph marks deprecated, 0 otherwise.",
		}, []string{"version"}),
		cleanupRemaining: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "payload_applier_operand_cleanup_remaining",
			Help: "Operands a removed component's cleanup still waits for.",
		}, []string{"component"}),
		finalizerHolds: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "payload_applier_delete_finalizer_holds",
			Help: "Objects a payload deletes that are still held, by each finalizer that holds them.",
		}, []string{"finalizer"}),
		cleanupState: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "payload_applier_operand_cleanup_state",
			Help: "1 for the state of each removed component's operand cleanup: Waiting, Running, Completed, Aborted, Skipped or Blocked.",
		}, []string{"component", "state"}),
		statusTruncated: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "payload_applier_status_truncated",
			Help: "Values the last ClusterVersion status write cut or dropped to stay within its limits, by status field; no series when nothing was cut.",
		}, []string{"field"}),
		capability: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "cluster_version_capability",
			Help: "Report currently enabled cluster capabilities.  0 is disabled, and 1 is enabled.",
		}, []string{"name"}),
		operatorWaits: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "payload_applier_cluster_operator_wait_start_time_seconds",
			Help: "When the release being applied first found each ClusterOperator it waits on short of healthy, as Unix time, with the reason it waits; no series for an operator it does not wait on.",
		}, []string{"name", "reason"}),
	}
	for _, c := range []prometheus.Collector{m.status, m.payload, m.operatorWaits,
		m.payloadErrors, m.deletesInProgress, m.deletesStuck, m.deleteOldestPending, m.deletesTotal, m.syncDuration, m.releaseDeprecated, m.cleanupRemaining, m.cleanupState, m.finalizerHolds,
		m.statusTruncated, m.capability} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	var err error
	if m.conditional, err = newConditionalMetrics(reg); err != nil {
		return nil, err
	}
	return m, nil
}

// CountDelete counts a delete transition; it is the engine's
// apply.Config.OnDelete. A nil Metrics counts nothing, so that the hook
// can be wired whether or not metrics are served.
func (m *Metrics) CountDelete(t deletion.Transition, _ deletion.Record) {
	if m != nil {
		m.deletesTotal.WithLabelValues(string(t)).Inc()
	}
}

// observeCapabilities sets 1 for each enabled capability, 0 for each
// other known one.
func (m *Metrics) observeCapabilities(caps payload.Capabilities) {
	m.capability.Reset()
	for _, c := range caps.Known {
		m.capability.WithLabelValues(string(c)).Set(0)
	}
	for _, c := range caps.Enabled {
		m.capability.WithLabelValues(string(c)).Set(1)
	}
}

// observeSync records one pass.
func (m *Metrics) observeSync(d time.Duration, res *apply.SyncResult) {
	if m == nil {
		return
	}
	m.syncDuration.WithLabelValues(string(res.Mode)).Observe(d.Seconds())
	m.payload.Reset()
	m.payload.WithLabelValues(res.Release, "applied").Set(float64(res.Done))
	m.payload.WithLabelValues(res.Release, "pending").Set(float64(res.Total - res.Done))
	if n := len(res.Errors); n > 0 {
		m.payloadErrors.WithLabelValues(res.Release).Add(float64(n))
	}
	m.operatorWaits.Reset()
	for _, err := range res.Errors {
		var te *apply.TaskError
		if errors.As(err, &te) && te.Operator != "" && !te.Since.IsZero() {
			m.operatorWaits.WithLabelValues(te.Operator, string(te.Reason)).Set(float64(te.Since.UnixNano()) / 1e9)
		}
	}
}

// observeDeletes records the ledger's view and the ClusterOperators.
func (m *Metrics) observeDeletes(deletes deletion.Summary, operators []configv1.ClusterOperator) {
	if m == nil {
		return
	}
	m.deletesInProgress.Set(float64(len(deletes.InProgress)))
	m.deletesStuck.Set(float64(len(deletes.Stuck)))
	m.deleteOldestPending.Set(deletes.OldestPending.Seconds())
	// Reset first: a finalizer that let go must not linger as a series.
	m.finalizerHolds.Reset()
	for _, r := range deletes.InProgress {
		for _, f := range r.Finalizers {
			m.finalizerHolds.WithLabelValues(f).Inc()
		}
	}
	m.status.setOperators(operators)
}

// observeDeprecation sets the deprecation gauge for the release the
// cluster runs, dropping the series of releases it left.
func (m *Metrics) observeDeprecation(version string, deprecated bool) {
	if m == nil {
		return
	}
	m.releaseDeprecated.Reset()
	if version == "" {
		return
	}
	value := 0.0
	if deprecated {
		value = 1
	}
	m.releaseDeprecated.WithLabelValues(version).Set(value)
}

// observeCleanups sets the operand cleanup gauges, dropping components
// whose cleanup the ledger forgot.
func (m *Metrics) observeCleanups(recs []cleanup.Record) {
	if m == nil {
		return
	}
	m.cleanupRemaining.Reset()
	m.cleanupState.Reset()
	for _, r := range recs {
		m.cleanupRemaining.WithLabelValues(r.Component).Set(float64(r.Total()))
		m.cleanupState.WithLabelValues(r.Component, string(r.State)).Set(1)
	}
}

// observeStatusCuts sets the truncation gauge from the cuts of the status
// about to be written, dropping the fields no longer cut.
func (m *Metrics) observeStatusCuts(perField map[string]int) {
	if m == nil {
		return
	}
	m.statusTruncated.Reset()
	for field, n := range perField {
		m.statusTruncated.WithLabelValues(field).Set(float64(n))
	}
}

// observeStatus records the ClusterVersion as written, nil when it was not
// found, for the series computed at scrape time.
func (m *Metrics) observeStatus(cv *configv1.ClusterVersion) {
	if m != nil {
		m.status.setClusterVersion(cv)
	}
}

// observeOperatorChange counts the condition transitions between two
// versions of a ClusterOperator, as the run loop's informer sees them.
func (m *Metrics) observeOperatorChange(older, newer *configv1.ClusterOperator) {
	if m != nil {
		m.status.operatorChanged(older, newer)
	}
}

// observeRetrieval records the update graph query of a pass and its last
// good answer.
func (m *Metrics) observeRetrieval(q graphQuery, good graphAnswer, now time.Time) {
	if m != nil {
		m.status.setRetrieval(q, good, now)
	}
}
