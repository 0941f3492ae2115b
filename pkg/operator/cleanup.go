package operator

import (
	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/payload-applier/payload-applier/pkg/apply"
	"github.com/payload-applier/payload-applier/pkg/apply/cleanup"
	"github.com/payload-applier/payload-applier/pkg/clusterversion"
)

// setCleanupCondition writes the OperandCleanup condition and metrics.
func (o *Operator) setCleanupCondition(cv *configv1.ClusterVersion, recs []cleanup.Record, now metav1.Time) {
	after := o.cfg.OperandCleanupStallAfter
	if after == 0 {
		after = apply.DefaultStuckAfter
	}
	if c, ok := clusterversion.CleanupCondition(recs, now.Time, after); ok {
		cv.Status.Conditions = clusterversion.SetCondition(cv.Status.Conditions, c, now)
	} else {
		cv.Status.Conditions = clusterversion.RemoveCondition(cv.Status.Conditions, clusterversion.ConditionOperandCleanup)
	}
	o.metrics.observeCleanups(recs)
}
