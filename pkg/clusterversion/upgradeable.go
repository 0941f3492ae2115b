package clusterversion

import (
	"fmt"
	"sort"
	"strings"

	configv1 "github.com/openshift/api/config/v1"

	"github.com/payload-applier/payload-applier/pkg/apply/cleanup"
	"github.com/payload-applier/payload-applier/pkg/apply/deletion"
	"github.com/payload-applier/payload-applier/pkg/crdcompat"
	"github.com/payload-applier/payload-applier/pkg/precondition"
	"github.com/payload-applier/payload-applier/pkg/textwrap"
)

// blocker is one reason not to start a minor or major update.
type blocker struct {
	Reason  string
	Message string
}

// UpgradeableObservation is what Upgradeable is judged from that the
// cluster holds, read at one moment: after the pass's applies, it sees
// what they wrote.
type UpgradeableObservation struct {
	// Operators are the ClusterOperators; nil when they cannot be listed.
	Operators []configv1.ClusterOperator
	// AdminAckVersion is the version whose admin gates apply, "" before
	// any release; the admin ConfigMaps are not read then.
	AdminAckVersion       string
	AdminGates, AdminAcks precondition.AdminConfigMap
	// CRDRemovals are those of the release status.desired names.
	CRDRemovals []crdcompat.PendingRemoval
}

// UpgradeablePass is what the pass itself knows for Upgradeable: whether
// an update runs, its deletes and operand cleanups, and whether their
// state could be read.
type UpgradeablePass struct {
	// Updating is set while an install or update is under way: the
	// ClusterVersion is Progressing.
	Updating   bool
	Deletes    deletion.Summary
	Cleanups   []cleanup.Record
	LedgerErr  error
	CleanupErr error
}

// Upgradeable is the condition for what obs saw and pass knows,
// under overrides; it reads nothing.
func Upgradeable(obs UpgradeableObservation, pass UpgradeablePass, overrides []configv1.ComponentOverride) configv1.ClusterOperatorStatusCondition {
	var blockers []blocker
	if pass.Updating {
		// As the CVO's ClusterVersionUpdating risk: one update at a time
		// across minor versions.
		blockers = append(blockers, blocker{Reason: ReasonUpdating,
			Message: "An update is already in progress and the details are in the Progressing condition."})
	}
	blockers = append(blockers, upgradeableBlockers(pass.Deletes, pass.Cleanups, obs.Operators, overrides)...)
	blockers = append(blockers, crdRemovalBlocker(obs.CRDRemovals)...)
	for _, b := range precondition.JudgeAdminAcks(obs.AdminAckVersion, obs.AdminGates, obs.AdminAcks).Blockers {
		blockers = append(blockers, blocker{Reason: b.Reason, Message: b.Message})
	}
	if pass.LedgerErr != nil {
		blockers = append(blockers, blocker{Reason: ReasonDeleteLedgerUnreadable,
			Message: "Cluster minor or major version upgrades are not allowed while the delete ledger is unreadable: which deletes are pending is unknown"})
	}
	if pass.CleanupErr != nil {
		blockers = append(blockers, blocker{Reason: ReasonOperandCleanupStateUnreadable,
			Message: "Cluster minor or major version upgrades are not allowed while the operand cleanup state is unreadable: which cleanups are under way is unknown"})
	}
	return upgradeableCondition(blockers, pass.Deletes.Reappeared)
}

// upgradeableBlockers gathers every source of Upgradeable=False.
func upgradeableBlockers(deletes deletion.Summary, cleanups []cleanup.Record, operators []configv1.ClusterOperator, overrides []configv1.ComponentOverride) []blocker {
	var out []blocker
	var cleaning []string
	for _, c := range cleanups {
		if c.State == cleanup.Running || c.State == cleanup.Waiting {
			cleaning = append(cleaning, fmt.Sprintf("%s (%d CRs left)", c.Component, c.Total()))
		}
	}
	if len(cleaning) > 0 {
		out = append(out, blocker{
			Reason:  cleanup.ReasonInProgress,
			Message: "Cluster minor or major version upgrades are not allowed while operand cleanup runs for " + strings.Join(cleaning, ", "),
		})
	}
	failed := append(append([]deletion.Record(nil), deletes.Failed...), without(deletes.Stuck, deletes.Failed)...)
	if len(failed) > 0 {
		out = append(out, blocker{
			Reason: deletion.ReasonFailed,
			Message: "Cluster minor or major version upgrades are not allowed while resource deletions fail or are stuck: " +
				describeRecords(failed, true),
		})
	}
	if pending := without(deletes.InProgress, failed); len(pending) > 0 {
		var issued, paced []deletion.Record
		for _, r := range pending {
			if r.State == deletion.Pending {
				paced = append(paced, r)
			} else {
				issued = append(issued, r)
			}
		}
		msg := "Cluster minor or major version upgrades are not allowed while resource deletions are in progress: "
		switch {
		case len(issued) == 0:
			msg += describeRecords(paced, false)
		case len(paced) == 0:
			msg += describeRecords(issued, false)
		default:
			msg += describeRecords(issued, false) + "; waiting behind them: " + describeRecords(paced, false)
		}
		out = append(out, blocker{Reason: ReasonDeletionInProgress, Message: msg})
	}
	var notUpgradeable []string
	for _, co := range operators {
		for _, c := range co.Status.Conditions {
			if c.Type == configv1.OperatorUpgradeable && c.Status == configv1.ConditionFalse {
				notUpgradeable = append(notUpgradeable, fmt.Sprintf("%s (%s: %s)", co.Name, c.Reason, c.Message))
			}
		}
	}
	if len(notUpgradeable) > 0 {
		sort.Strings(notUpgradeable)
		out = append(out, blocker{
			Reason:  ReasonOperatorsNotUpgrade,
			Message: "Cluster operators are not upgradeable: " + strings.Join(notUpgradeable, "; "),
		})
	}
	for _, o := range overrides {
		if o.Unmanaged {
			out = append(out, blocker{
				Reason:  precondition.ReasonClusterVersionOverridesSet,
				Message: precondition.OverridesMessage,
			})
			break
		}
	}
	return out
}

// upgradeableCondition folds the blockers into one condition. Objects
// that reappeared after their delete block nothing, but the message warns
// of them: they are left in place and never deleted again.
func upgradeableCondition(blockers []blocker, reappeared []deletion.Record) configv1.ClusterOperatorStatusCondition {
	c := foldBlockers(blockers)
	if len(reappeared) > 0 {
		c.Message += "\nWarning: reappeared after their delete, left in place and never deleted again: " + describeRecords(reappeared, false)
	}
	return c
}

func foldBlockers(blockers []blocker) configv1.ClusterOperatorStatusCondition {
	c := configv1.ClusterOperatorStatusCondition{Type: configv1.OperatorUpgradeable}
	switch len(blockers) {
	case 0:
		c.Status, c.Reason, c.Message = configv1.ConditionTrue, ReasonAsExpected, "Minor and major version updates are allowed."
	case 1:
		c.Status, c.Reason, c.Message = configv1.ConditionFalse, blockers[0].Reason, blockers[0].Message
	default:
		lines := make([]string, len(blockers))
		for i, b := range blockers {
			lines[i] = "* " + b.Message
		}
		c.Status, c.Reason = configv1.ConditionFalse, ReasonMultipleReasons
		c.Message = "Cluster should not be upgraded between minor or major versions for multiple reasons:\n" + strings.Join(lines, "\n")
	}
	return c
}

// without returns recs minus the objects in drop.
func without(recs, drop []deletion.Record) []deletion.Record {
	skip := map[string]bool{}
	for _, f := range drop {
		skip[f.ID.String()] = true
	}
	var out []deletion.Record
	for _, r := range recs {
		if !skip[r.ID.String()] {
			out = append(out, r)
		}
	}
	return out
}

// describeRecords names up to ten objects and counts the rest.
func describeRecords(recs []deletion.Record, withDetail bool) string {
	sort.Slice(recs, func(i, j int) bool { return recs[i].ID.String() < recs[j].ID.String() })
	var parts []string
	for i, r := range recs {
		if i == maxNamedObjectsInCondition {
			parts = append(parts, fmt.Sprintf("and %d more", len(recs)-i))
			break
		}
		s := r.ID.String()
		switch {
		case withDetail && r.LastError != "":
			s += " (" + r.LastError + ")"
		case len(r.Finalizers) > 0:
			s += " (finalizers: " + strings.Join(r.Finalizers, ", ") + ")"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

// crdRemovalMessagePrefix starts the message of every
// crdcompat.ReasonVersionRemovalPending blocker, so that plan can find it
// within a MultipleReasons message.
const crdRemovalMessagePrefix = "Cluster minor or major version upgrades are not allowed while CustomResourceDefinition versions that the next minor or major release removes are still stored: "

// maxCRDRemovalMessageBytes bounds the message: CRD names and read errors
// come from outside.
const maxCRDRemovalMessageBytes = 4 << 10

// crdRemovalBlocker is one blocker naming up to ten pending removals, or
// none.
func crdRemovalBlocker(pending []crdcompat.PendingRemoval) []blocker {
	if len(pending) == 0 {
		return nil
	}
	return []blocker{{Reason: crdcompat.ReasonVersionRemovalPending, Message: CRDRemovalMessage(pending)}}
}

// CRDRemovalMessage names each CRD, version, removal release and object
// count, and says how to clear it; one line.
func CRDRemovalMessage(pending []crdcompat.PendingRemoval) string {
	sorted := append([]crdcompat.PendingRemoval(nil), pending...)
	sort.Slice(sorted, func(i, j int) bool {
		if sorted[i].CRD != sorted[j].CRD {
			return sorted[i].CRD < sorted[j].CRD
		}
		return sorted[i].Version < sorted[j].Version
	})
	var parts []string
	for i, p := range sorted {
		if i == maxNamedObjectsInCondition {
			parts = append(parts, fmt.Sprintf("and %d more", len(sorted)-i))
			break
		}
		var count string
		switch {
		case p.Err != "":
			count = "objects not counted: " + p.Err
		case p.Objects == 0:
			count = "no objects left, but status.storedVersions still lists it"
		case p.Objects == 1:
			count = "1 object, which may still be stored in it"
		default:
			count = fmt.Sprintf("%d objects, which may still be stored in it", p.Objects)
		}
		parts = append(parts, fmt.Sprintf("%s %s (removed in %s; %s)", p.CRD, p.Version, p.RemovedIn, count))
	}
	msg := crdRemovalMessagePrefix + strings.Join(parts, ", ") +
		"; run 'payload-applier crd migrate-storage NAME' for each CustomResourceDefinition, which moves its objects to the storage version and leaves only that version in status.storedVersions"
	return textwrap.Bound(strings.ReplaceAll(msg, "\n", " "), maxCRDRemovalMessageBytes)
}
