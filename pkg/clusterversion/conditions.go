package clusterversion

import (
	"fmt"
	"slices"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SetCondition sets c in conds, keeping the transition time when the status
// did not change so that an unchanged status compares equal.
func SetCondition(conds []configv1.ClusterOperatorStatusCondition, c configv1.ClusterOperatorStatusCondition, now metav1.Time) []configv1.ClusterOperatorStatusCondition {
	for i := range conds {
		if conds[i].Type != c.Type {
			continue
		}
		c.LastTransitionTime = conds[i].LastTransitionTime
		if conds[i].Status != c.Status {
			c.LastTransitionTime = now
		}
		conds[i] = c
		return conds
	}
	c.LastTransitionTime = now
	return append(conds, c)
}

// LedgerUnreadable is the Failing condition of an unreadable ledger: it
// says what is wrong and how to repair it.
func LedgerUnreadable(err error) configv1.ClusterOperatorStatusCondition {
	return unreadableState(ReasonDeleteLedgerUnreadable, "delete ledger", err, "no delete starts until it is repaired",
		"; an update in progress stays in progress and starts its deletes once the ledger reads again", "Repairing the delete ledger")
}

// CleanupStateUnreadable is the Failing condition of an unreadable
// operand cleanup state.
func CleanupStateUnreadable(err error) configv1.ClusterOperatorStatusCondition {
	return unreadableState(ReasonOperandCleanupStateUnreadable, "operand cleanup state", err,
		"other deletes go ahead too; no operand is deleted and no component with operand cleanup is removed until it is repaired", "", "Repairing the operand cleanup state")
}

func unreadableState(reason, what string, err error, held, after, section string) configv1.ClusterOperatorStatusCondition {
	return configv1.ClusterOperatorStatusCondition{Type: ConditionFailing, Status: configv1.ConditionTrue, Reason: reason,
		Message: fmt.Sprintf("The %s cannot be read (%v). Applies go ahead; %s: restore the ConfigMap from a backup, or delete it%s (docs/operations.md, %q).",
			what, err, held, after, section)}
}

// RemoveCondition drops the condition of type t, if any.
func RemoveCondition(conds []configv1.ClusterOperatorStatusCondition, t configv1.ClusterStatusConditionType) []configv1.ClusterOperatorStatusCondition {
	return slices.DeleteFunc(conds, func(c configv1.ClusterOperatorStatusCondition) bool { return c.Type == t })
}

func FindCondition(conds []configv1.ClusterOperatorStatusCondition, t configv1.ClusterStatusConditionType) *configv1.ClusterOperatorStatusCondition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

// progressing is whether conds say an install or update is under way.
func progressing(conds []configv1.ClusterOperatorStatusCondition) bool {
	c := FindCondition(conds, configv1.OperatorProgressing)
	return c != nil && c.Status == configv1.ConditionTrue
}
