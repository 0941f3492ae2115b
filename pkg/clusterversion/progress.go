package clusterversion

import (
	"fmt"
	"sort"
	"strings"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/payload-applier/payload-applier/pkg/apply/cleanup"
	"github.com/payload-applier/payload-applier/pkg/apply/deletion"
	"github.com/payload-applier/payload-applier/pkg/graph"
	"github.com/payload-applier/payload-applier/pkg/precondition"
)

// Failure is one task of a pass that did not finish, as status tells it.
type Failure struct {
	// Reason classifies it (the engine's apply.Reason).
	Reason string
	// Message is the task's error: the object, its file, and what failed.
	Message string
	// Subject names the object.
	Subject string
	// Wait is set for progress that is not failure: a CRD establishing,
	// an operator still updating.
	Wait bool
}

// Pass is what status needs of one engine pass over a release.
type Pass struct {
	Mode graph.Mode
	// Done and Total count the apply tasks.
	Done, Total int
	// Complete is set when every apply task succeeded.
	Complete bool
	// Failures are the apply tasks that failed or wait, in any order.
	Failures []Failure
	// Deletes and Cleanups are the engine's view once the pass ended.
	Deletes  deletion.Summary
	Cleanups []cleanup.Record
	// LedgerErr and CleanupErr are set while the delete ledger, or the
	// operand cleanup state, cannot be read.
	LedgerErr, CleanupErr error
}

// split parts failures from waits.
func split(all []Failure) (failures, waits []Failure) {
	for _, f := range all {
		if f.Wait {
			waits = append(waits, f)
		} else {
			failures = append(failures, f)
		}
	}
	return failures, waits
}

// summarizeFailures condenses failures into a reason and message, keeping
// every message: one error gives its own reason, several give MultipleErrors.
func summarizeFailures(failures []Failure) (reason, message string) {
	if len(failures) == 1 {
		return failures[0].Reason, failures[0].Message
	}
	msgs := map[string]bool{}
	for _, f := range failures {
		msgs["* "+f.Message] = true
	}
	lines := make([]string, 0, len(msgs))
	for m := range msgs {
		lines = append(lines, m)
	}
	sort.Strings(lines)
	return ReasonMultipleErrors, "Multiple errors are preventing progress:\n" + strings.Join(lines, "\n")
}

// WorkingTowards is the Progressing message of an install or update.
func WorkingTowards(version string, done, total int) string {
	pct := 0
	if total > 0 {
		pct = done * 100 / total
	}
	return fmt.Sprintf("Working towards %s: %d of %d done (%d%% complete)", version, done, total, pct)
}

// Progress sets Available, Progressing and Failing from a pass; nil sets
// Available only.
func Progress(status *configv1.ClusterVersionStatus, pass *Pass, now metav1.Time) {
	version := status.Desired.Version
	current := precondition.LastCompletedVersion(status.History)
	if current != "" {
		status.Conditions = SetCondition(status.Conditions, configv1.ClusterOperatorStatusCondition{
			Type: configv1.OperatorAvailable, Status: configv1.ConditionTrue, Message: "Done applying " + current}, now)
	} else {
		status.Conditions = SetCondition(status.Conditions, configv1.ClusterOperatorStatusCondition{
			Type: configv1.OperatorAvailable, Status: configv1.ConditionFalse}, now)
	}
	if pass == nil {
		return
	}
	failures, waits := split(pass.Failures)
	failing := configv1.ClusterOperatorStatusCondition{Type: ConditionFailing, Status: configv1.ConditionFalse}
	if len(failures) > 0 {
		failing.Status = configv1.ConditionTrue
		failing.Reason, failing.Message = summarizeFailures(failures)
	}
	status.Conditions = SetCondition(status.Conditions, failing, now)

	progressing := configv1.ClusterOperatorStatusCondition{Type: configv1.OperatorProgressing}
	switch {
	case pass.Complete:
		progressing.Status, progressing.Message = configv1.ConditionFalse, "Cluster version is "+version
	case pass.Mode == graph.ModeReconcile:
		progressing.Status, progressing.Reason = configv1.ConditionFalse, failing.Reason
		progressing.Message = fmt.Sprintf("Error while reconciling %s: %s", version, firstLine(failing.Message, waits))
	default:
		progressing.Status = configv1.ConditionTrue
		progressing.Reason = failing.Reason
		if progressing.Reason == "" {
			// As the CVO: a wait's reason says what the update waits for.
			progressing.Reason = waitReason(waits)
		}
		progressing.Message = WorkingTowards(version, pass.Done, pass.Total)
		if len(waits) > 0 {
			progressing.Message += ", waiting on " + waitSubjects(waits)
		}
	}
	status.Conditions = SetCondition(status.Conditions, progressing, now)
}

func firstLine(msg string, waits []Failure) string {
	if msg == "" && len(waits) > 0 {
		return "waiting on " + waitSubjects(waits)
	}
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		return msg[:i]
	}
	return msg
}

func waitSubjects(waits []Failure) string {
	names := make([]string, 0, len(waits))
	for _, w := range waits {
		names = append(names, w.Subject)
	}
	sort.Strings(names)
	if len(names) > maxNamedObjectsInCondition {
		names = append(names[:maxNamedObjectsInCondition], fmt.Sprintf("and %d more", len(names)-maxNamedObjectsInCondition))
	}
	return strings.Join(names, ", ")
}

// waitReason is the reason the waits share, or MultipleErrors.
func waitReason(waits []Failure) string {
	if len(waits) == 0 {
		return ""
	}
	for _, w := range waits[1:] {
		if w.Reason != waits[0].Reason {
			return ReasonMultipleErrors
		}
	}
	return waits[0].Reason
}
