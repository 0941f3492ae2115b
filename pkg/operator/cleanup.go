package operator

import (
	"fmt"
	"strings"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/payload-applier/payload-applier/pkg/apply"
	"github.com/payload-applier/payload-applier/pkg/apply/cleanup"
)

// ConditionOperandCleanup reports the operand cleanups of removed
// components. It is True while one runs or waits; it never sets Failing.
// Its reasons are cleanup's (cleanup.Reason*).
const ConditionOperandCleanup configv1.ClusterStatusConditionType = "OperandCleanup"

// cleanupCondition folds the cleanups into the OperandCleanup condition,
// the most pressing first: stalled, unable to start, running, aborted or
// blocked by another API, skipped, completed. ok is false when there is no cleanup to report.
func cleanupCondition(recs []cleanup.Record, now time.Time, stallAfter time.Duration) (c configv1.ClusterOperatorStatusCondition, ok bool) {
	if len(recs) == 0 {
		return c, false
	}
	rank := func(r cleanup.Record) (int, string, string) {
		switch {
		case r.Stalled(now, stallAfter):
			return 0, cleanup.ReasonStalled, fmt.Sprintf("no progress for %s: %s", stallAfter, r.Describe())
		case r.Blocked(now, stallAfter):
			return 1, cleanup.ReasonBlocked, fmt.Sprintf("operand cleanup of component %s cannot start: %s", r.Component, r.Message)
		case r.State == cleanup.Running && r.Message != "":
			return 2, cleanup.ReasonWaiting, fmt.Sprintf("%s; paused: %s", r.Describe(), r.Message)
		case r.State == cleanup.Running:
			return 2, cleanup.ReasonWaiting, r.Describe()
		case r.State == cleanup.Waiting:
			return 2, cleanup.ReasonWaiting, fmt.Sprintf("operand cleanup of component %s waits: %s", r.Component, r.Message)
		case r.State == cleanup.Aborted:
			return 3, cleanup.ReasonAborted, fmt.Sprintf("operand cleanup of component %s aborted: %s", r.Component, r.Message)
		case r.State == cleanup.Blocked:
			return 3, cleanup.ReasonBlocked, fmt.Sprintf("operand cleanup of component %s blocked, its operands are left in place: %s", r.Component, r.SkipSummary())
		case r.State == cleanup.Skipped:
			return 4, cleanup.ReasonSkipped, fmt.Sprintf("operand cleanup of component %s skipped: %s", r.Component, r.SkipSummary())
		default:
			return 5, cleanup.ReasonCompleted, fmt.Sprintf("operand cleanup of component %s completed", r.Component)
		}
	}
	best := 99
	var messages []string
	for _, r := range recs {
		n, reason, msg := rank(r)
		if n < best {
			best, c.Reason = n, reason
		}
		if n <= 2 && len(r.Skips) > 0 {
			msg += "; skipped: " + r.SkipSummary()
		}
		messages = append(messages, msg)
	}
	c.Type, c.Message = ConditionOperandCleanup, strings.Join(messages, "\n")
	c.Status = configv1.ConditionFalse
	if best <= 2 {
		c.Status = configv1.ConditionTrue
	}
	return c, true
}

// setCleanupCondition writes the OperandCleanup condition and metrics.
func (o *Operator) setCleanupCondition(cv *configv1.ClusterVersion, recs []cleanup.Record, now metav1.Time) {
	after := o.cfg.OperandCleanupStallAfter
	if after == 0 {
		after = apply.DefaultStuckAfter
	}
	if c, ok := cleanupCondition(recs, now.Time, after); ok {
		cv.Status.Conditions = setCondition(cv.Status.Conditions, c, now)
	} else {
		cv.Status.Conditions = removeCondition(cv.Status.Conditions, ConditionOperandCleanup)
	}
	o.metrics.observeCleanups(recs)
}
