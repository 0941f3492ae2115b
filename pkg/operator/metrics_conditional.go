package operator

import (
	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/payload-applier/payload-applier/pkg/clusterversion"
	"github.com/payload-applier/payload-applier/pkg/precondition"
)

// conditionalMetrics are the CVO's conditional update metrics, with its
// names, labels and meaning.
type conditionalMetrics struct {
	// conditionSeconds: when each conditional update's Recommended
	// condition changed to its current state.
	conditionSeconds *prometheus.GaugeVec
	// riskConditions: whether each risk applies, 1 True, 0 False, -1
	// Unknown.
	riskConditions *prometheus.GaugeVec
}

func newConditionalMetrics(reg prometheus.Registerer) (*conditionalMetrics, error) {
	m := &conditionalMetrics{
		conditionSeconds: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "cluster_version_conditional_update_condition_seconds",
			Help: "Reports when the Recommended condition status on a conditional update changed to its current state.",
		}, []string{"version", "condition", "status", "reason"}),
		riskConditions: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "cluster_version_risk_conditions",
			Help: "Report the risk conditions for the cluster version. -1 is Unknown, 0 is False and 1 is True.",
		}, []string{"condition", "risk", "reason"}),
	}
	for _, c := range []prometheus.Collector{m.conditionSeconds, m.riskConditions} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// observeConditionalUpdates replaces the series with those of entries, as
// written to status, and of the risks evaluated for them.
func (m *Metrics) observeConditionalUpdates(entries []configv1.ConditionalUpdate, risks map[string]clusterversion.RiskResult) {
	if m == nil || m.conditional == nil {
		return
	}
	c := m.conditional
	c.conditionSeconds.Reset()
	for _, u := range entries {
		for _, cond := range u.Conditions {
			if cond.Type == precondition.ConditionRecommended {
				c.conditionSeconds.WithLabelValues(u.Release.Version, cond.Type, string(cond.Status), cond.Reason).Set(float64(cond.LastTransitionTime.Unix()))
			}
		}
	}
	c.riskConditions.Reset()
	for name, r := range risks {
		v := 0.0
		switch r.Status {
		case metav1.ConditionTrue:
			v = 1
		case metav1.ConditionUnknown:
			v = -1
		}
		c.riskConditions.WithLabelValues(clusterversion.ConditionApplies, name, r.Reason).Set(v)
	}
}
