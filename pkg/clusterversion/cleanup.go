package clusterversion

import (
	"fmt"
	"strings"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	"github.com/payload-applier/payload-applier/pkg/apply/cleanup"
)

// CleanupCondition folds the cleanups into the OperandCleanup condition,
// the most pressing first: stalled, unable to start, running, aborted or
// blocked by another API, skipped, completed. ok is false when there is no cleanup to report.
func CleanupCondition(recs []cleanup.Record, now time.Time, stallAfter time.Duration) (c configv1.ClusterOperatorStatusCondition, ok bool) {
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
