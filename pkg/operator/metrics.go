package operator

import (
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
	clusterVersion      *prometheus.GaugeVec
	payload             *prometheus.GaugeVec
	operatorUp          *prometheus.GaugeVec
	operatorConditions  *prometheus.GaugeVec
	payloadErrors       *prometheus.CounterVec
	deletesInProgress   prometheus.Gauge
	deleteOldestPending prometheus.Gauge
	deletesTotal        *prometheus.CounterVec
	syncDuration        *prometheus.HistogramVec
	releaseDeprecated   *prometheus.GaugeVec
	cleanupRemaining    *prometheus.GaugeVec
	cleanupState        *prometheus.GaugeVec
	finalizerHolds      *prometheus.GaugeVec
	statusTruncated     *prometheus.GaugeVec
	capability          *prometheus.GaugeVec
	// conditional holds the conditional update metrics (metrics_conditional.go).
	conditional *conditionalMetrics
}

// NewMetrics creates the metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		clusterVersion: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "cluster_version",
			Help: "Reports the version of the cluster in terms of seconds since the epoch. Type 'current' is the version being applied and the value is the creation date of the payload. 'desired' is the version the cluster is reconciling towards. 'completed' is the time the most recent version was completely applied. 'initial' is the version the cluster was installed with. 'updating' is set while an update is in progress, with the start time.",
		}, []string{"type", "version", "image", "from_version"}),
		payload: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "cluster_version_payload",
			Help: "Reports the number of manifests applied ('applied') and not yet applied ('pending') for a version.",
		}, []string{"version", "type"}),
		operatorUp: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "cluster_operator_up",
			Help: "1 if a cluster operator is Available=True, 0 otherwise.",
		}, []string{"name", "version", "reason"}),
		operatorConditions: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "cluster_operator_conditions",
			Help: "Cluster operator conditions: 1 True, 0 False, -1 Unknown.",
		}, []string{"name", "condition", "reason"}),
		payloadErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cluster_operator_payload_errors",
			Help: "Counts failed manifest applies per version.",
		}, []string{"version"}),
		deletesInProgress: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "payload_applier_deletes_in_progress",
			Help: "Deletes requested by a payload that have not completed.",
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
	}
	for _, c := range []prometheus.Collector{m.clusterVersion, m.payload, m.operatorUp, m.operatorConditions,
		m.payloadErrors, m.deletesInProgress, m.deleteOldestPending, m.deletesTotal, m.syncDuration, m.releaseDeprecated, m.cleanupRemaining, m.cleanupState, m.finalizerHolds,
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
func (m *Metrics) observeSync(d time.Duration, cv *configv1.ClusterVersion, res *apply.SyncResult) {
	m.syncDuration.WithLabelValues(string(res.Mode)).Observe(d.Seconds())
	m.payload.Reset()
	m.payload.WithLabelValues(res.Release, "applied").Set(float64(res.Done))
	m.payload.WithLabelValues(res.Release, "pending").Set(float64(res.Total - res.Done))
	if n := len(res.Errors); n > 0 {
		m.payloadErrors.WithLabelValues(res.Release).Add(float64(n))
	}
	m.clusterVersion.Reset()
	h := cv.Status.History
	if len(h) == 0 {
		return
	}
	desired := cv.Status.Desired
	m.clusterVersion.WithLabelValues("desired", desired.Version, desired.Image, "").Set(float64(h[0].StartedTime.Unix()))
	initial := h[len(h)-1]
	m.clusterVersion.WithLabelValues("initial", initial.Version, initial.Image, "").Set(float64(initial.StartedTime.Unix()))
	for i, e := range h {
		if e.State != configv1.CompletedUpdate || e.CompletionTime == nil {
			continue
		}
		m.clusterVersion.WithLabelValues("current", e.Version, e.Image, "").Set(float64(e.StartedTime.Unix()))
		m.clusterVersion.WithLabelValues("completed", e.Version, e.Image, "").Set(float64(e.CompletionTime.Unix()))
		if i > 0 {
			m.clusterVersion.WithLabelValues("updating", desired.Version, desired.Image, e.Version).Set(float64(h[0].StartedTime.Unix()))
		}
		break
	}
}

// observeDeletes records the ledger's view and the ClusterOperators.
func (m *Metrics) observeDeletes(deletes deletion.Summary, operators []configv1.ClusterOperator) {
	m.deletesInProgress.Set(float64(len(deletes.InProgress)))
	m.deleteOldestPending.Set(deletes.OldestPending.Seconds())
	// Reset first: a finalizer that let go must not linger as a series.
	m.finalizerHolds.Reset()
	for _, r := range deletes.InProgress {
		for _, f := range r.Finalizers {
			m.finalizerHolds.WithLabelValues(f).Inc()
		}
	}
	m.operatorUp.Reset()
	m.operatorConditions.Reset()
	for _, co := range operators {
		version := ""
		for _, v := range co.Status.Versions {
			if v.Name == "operator" {
				version = v.Version
			}
		}
		up, reason := 0.0, ""
		for _, c := range co.Status.Conditions {
			val := -1.0
			switch c.Status {
			case configv1.ConditionTrue:
				val = 1
			case configv1.ConditionFalse:
				val = 0
			}
			m.operatorConditions.WithLabelValues(co.Name, string(c.Type), c.Reason).Set(val)
			if c.Type == configv1.OperatorAvailable {
				up, reason = val, c.Reason
				if up < 0 {
					up = 0
				}
			}
		}
		m.operatorUp.WithLabelValues(co.Name, version, reason).Set(up)
	}
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
