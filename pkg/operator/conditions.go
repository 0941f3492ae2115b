package operator

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/payload-applier/payload-applier/pkg/apply"
	"github.com/payload-applier/payload-applier/pkg/precondition"
)

// Condition types the ClusterVersion carries beyond the operator ones.
const (
	ConditionFailing         configv1.ClusterStatusConditionType = "Failing"
	ConditionReleaseAccepted configv1.ClusterStatusConditionType = "ReleaseAccepted"
	ConditionRetrieved       configv1.ClusterStatusConditionType = "RetrievedUpdates"
	// ConditionInvalid is True while the spec fails validation.
	ConditionInvalid configv1.ClusterStatusConditionType = "Invalid"
)

// Reasons the operator sets.
const (
	ReasonPayloadLoaded      = "PayloadLoaded"
	ReasonLoadPayload        = "LoadPayload"
	ReasonPreconditionChecks = "PreconditionChecks"
	ReasonMultipleErrors     = "MultipleErrors"
	ReasonNoDesiredUpdate    = "NoDesiredUpdate"
	// ReasonInvalidClusterVersion is Invalid's reason, and Progressing's
	// while the spec is invalid.
	ReasonInvalidClusterVersion = "InvalidClusterVersion"
)

// setCondition sets c in conds, keeping the transition time when the status
// did not change so that an unchanged status compares equal.
func setCondition(conds []configv1.ClusterOperatorStatusCondition, c configv1.ClusterOperatorStatusCondition, now metav1.Time) []configv1.ClusterOperatorStatusCondition {
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

// Reasons of a record store whose ConfigMap holds data that cannot be
// decoded: the delete ledger's, or the operand cleanup state's.
const (
	ReasonDeleteLedgerUnreadable        = "DeleteLedgerUnreadable"
	ReasonOperandCleanupStateUnreadable = "OperandCleanupStateUnreadable"
)

// ledgerUnreadable is the Failing condition of an unreadable ledger: it
// says what is wrong and how to repair it.
func ledgerUnreadable(err error) configv1.ClusterOperatorStatusCondition {
	return unreadableState(ReasonDeleteLedgerUnreadable, "delete ledger", err, "no delete starts until it is repaired",
		"; an update in progress stays in progress and starts its deletes once the ledger reads again", "Repairing the delete ledger")
}

// cleanupStateUnreadable is the Failing condition of an unreadable
// operand cleanup state.
func cleanupStateUnreadable(err error) configv1.ClusterOperatorStatusCondition {
	return unreadableState(ReasonOperandCleanupStateUnreadable, "operand cleanup state", err,
		"other deletes go ahead too; no operand is deleted and no component with operand cleanup is removed until it is repaired", "", "Repairing the operand cleanup state")
}

func unreadableState(reason, what string, err error, held, after, section string) configv1.ClusterOperatorStatusCondition {
	return configv1.ClusterOperatorStatusCondition{Type: ConditionFailing, Status: configv1.ConditionTrue, Reason: reason,
		Message: fmt.Sprintf("The %s cannot be read (%v). Applies go ahead; %s: restore the ConfigMap from a backup, or delete it%s (docs/operations.md, %q).",
			what, err, held, after, section)}
}

// removeCondition drops the condition of type t, if any.
func removeCondition(conds []configv1.ClusterOperatorStatusCondition, t configv1.ClusterStatusConditionType) []configv1.ClusterOperatorStatusCondition {
	return slices.DeleteFunc(conds, func(c configv1.ClusterOperatorStatusCondition) bool { return c.Type == t })
}

func findCondition(conds []configv1.ClusterOperatorStatusCondition, t configv1.ClusterStatusConditionType) *configv1.ClusterOperatorStatusCondition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

// failingErrors splits a pass's errors into failures and waits. A wait (a
// CRD establishing, an operator still updating) is progress, not failure.
func failingErrors(errs []error) (failures, waits []*apply.TaskError) {
	for _, err := range errs {
		var te *apply.TaskError
		if !errors.As(err, &te) {
			te = &apply.TaskError{Reason: apply.ReasonFailed, Effect: apply.EffectFail, Message: err.Error(), Err: err}
		}
		if te.Effect == apply.EffectNone {
			waits = append(waits, te)
		} else {
			failures = append(failures, te)
		}
	}
	return failures, waits
}

// summarizeFailures condenses failures into a reason and message, keeping
// every message: one error gives its own reason, several give MultipleErrors.
func summarizeFailures(failures []*apply.TaskError) (reason, message string) {
	if len(failures) == 1 {
		return string(failures[0].Reason), failures[0].Error()
	}
	msgs := map[string]bool{}
	for _, f := range failures {
		msgs["* "+f.Error()] = true
	}
	lines := make([]string, 0, len(msgs))
	for m := range msgs {
		lines = append(lines, m)
	}
	sort.Strings(lines)
	return ReasonMultipleErrors, "Multiple errors are preventing progress:\n" + strings.Join(lines, "\n")
}

// progressConditions sets Available, Progressing and Failing from a pass.
func progressConditions(status *configv1.ClusterVersionStatus, res *apply.SyncResult, now metav1.Time) {
	version := status.Desired.Version
	current := precondition.LastCompletedVersion(status.History)
	if current != "" {
		status.Conditions = setCondition(status.Conditions, configv1.ClusterOperatorStatusCondition{
			Type: configv1.OperatorAvailable, Status: configv1.ConditionTrue, Message: "Done applying " + current}, now)
	} else {
		status.Conditions = setCondition(status.Conditions, configv1.ClusterOperatorStatusCondition{
			Type: configv1.OperatorAvailable, Status: configv1.ConditionFalse}, now)
	}
	if res == nil {
		return
	}
	failures, waits := failingErrors(res.Errors)
	failing := configv1.ClusterOperatorStatusCondition{Type: ConditionFailing, Status: configv1.ConditionFalse}
	if len(failures) > 0 {
		failing.Status = configv1.ConditionTrue
		failing.Reason, failing.Message = summarizeFailures(failures)
	}
	status.Conditions = setCondition(status.Conditions, failing, now)

	progressing := configv1.ClusterOperatorStatusCondition{Type: configv1.OperatorProgressing}
	switch {
	case res.Complete():
		progressing.Status, progressing.Message = configv1.ConditionFalse, "Cluster version is "+version
	case res.Mode == "reconcile":
		progressing.Status, progressing.Reason = configv1.ConditionFalse, failing.Reason
		progressing.Message = fmt.Sprintf("Error while reconciling %s: %s", version, firstLine(failing.Message, waits))
	default:
		progressing.Status = configv1.ConditionTrue
		progressing.Reason = failing.Reason
		progressing.Message = workingTowards(version, res.Done, res.Total)
		if len(waits) > 0 {
			progressing.Message += ", waiting on " + waitSubjects(waits)
		}
	}
	status.Conditions = setCondition(status.Conditions, progressing, now)
}

func firstLine(msg string, waits []*apply.TaskError) string {
	if msg == "" && len(waits) > 0 {
		return "waiting on " + waitSubjects(waits)
	}
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		return msg[:i]
	}
	return msg
}

func waitSubjects(waits []*apply.TaskError) string {
	names := make([]string, 0, len(waits))
	for _, w := range waits {
		names = append(names, w.Subject.String())
	}
	sort.Strings(names)
	if len(names) > maxNamedObjectsInCondition {
		names = append(names[:maxNamedObjectsInCondition], fmt.Sprintf("and %d more", len(names)-maxNamedObjectsInCondition))
	}
	return strings.Join(names, ", ")
}
