package operator

import (
	"context"
	"fmt"
	"sort"
	"strings"

	configv1 "github.com/openshift/api/config/v1"
	"k8s.io/klog/v2"

	"github.com/payload-applier/payload-applier/pkg/apply"
	"github.com/payload-applier/payload-applier/pkg/crdcompat"
	"github.com/payload-applier/payload-applier/pkg/payload"
	"github.com/payload-applier/payload-applier/pkg/textwrap"
)

// crdRemovalMessagePrefix starts the message of every
// crdcompat.ReasonVersionRemovalPending blocker, so that plan can find it
// within a MultipleReasons message.
const crdRemovalMessagePrefix = "Cluster minor or major version upgrades are not allowed while CustomResourceDefinition versions that the next minor or major release removes are still stored: "

// maxCRDRemovalMessageBytes bounds the message: CRD names and read errors
// come from outside.
const maxCRDRemovalMessageBytes = 4 << 10

// pendingCRDRemovals judges rel, the release status.desired names, by the
// engine's PendingCRDRemovals. Without that release, as for `apply`, which
// is given only its target, the live CRDs that the target ships stand for
// it, as for plan. With neither, nothing is pending here: the pass reports
// why the release cannot be loaded.
func (o *Operator) pendingCRDRemovals(ctx context.Context, cv *configv1.ClusterVersion, rel *payload.Release, relErr error) []crdcompat.PendingRemoval {
	current := cv.Status.Desired.Version
	if current == "" {
		return nil
	}
	if rel != nil {
		return o.engine.PendingCRDRemovals(ctx, rel)
	}
	target, targetErr := o.loadRelease(targetVersion(cv), cv)
	if targetErr != nil || target.Version == current {
		klog.FromContext(ctx).V(2).Info("CRD version removals not judged: the current release is not loaded", "version", current, "err", relErr)
		return nil
	}
	return o.engine.LivePendingCRDRemovals(ctx, current, crdNames(target))
}

// crdNames names the CRDs rel creates or updates.
func crdNames(rel *payload.Release) []string {
	var names []string
	for _, m := range rel.Manifests {
		if m.IsCRD() && !m.Delete() {
			names = append(names, m.Obj.GetName())
		}
	}
	return names
}

// crdRemovalBlocker is one blocker naming up to ten pending removals, or
// none.
func crdRemovalBlocker(pending []crdcompat.PendingRemoval) []upgradeableBlocker {
	if len(pending) == 0 {
		return nil
	}
	return []upgradeableBlocker{{Reason: crdcompat.ReasonVersionRemovalPending, Message: crdRemovalMessage(pending)}}
}

// crdRemovalMessage names each CRD, version, removal release and object
// count, and says how to clear it; one line.
func crdRemovalMessage(pending []crdcompat.PendingRemoval) string {
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

// LiveCRDRemovals brings cv's Upgradeable condition up to date, in
// memory, with the CRD version removals pending now, as the operator's
// next pass would: for plan, which has no current release and reads the
// live CRDs that target ships instead, judged from status.desired's
// version. The other blockers stay as the operator last wrote them.
func LiveCRDRemovals(ctx context.Context, e *apply.Engine, cv *configv1.ClusterVersion, target *payload.Release) {
	if cv == nil || cv.Status.Desired.Version == "" || target == nil {
		return
	}
	blockers := crdRemovalBlocker(e.LivePendingCRDRemovals(ctx, cv.Status.Desired.Version, crdNames(target)))
	for i := range cv.Status.Conditions {
		if cv.Status.Conditions[i].Type == configv1.OperatorUpgradeable {
			cv.Status.Conditions[i] = withCRDRemovals(cv.Status.Conditions[i], blockers)
			return
		}
	}
	if len(blockers) > 0 {
		cv.Status.Conditions = append(cv.Status.Conditions, foldBlockers(blockers))
	}
}

// withCRDRemovals replaces the CRD removal blocker in c, as
// upgradeableCondition folded it, with blockers (none or one).
func withCRDRemovals(c configv1.ClusterOperatorStatusCondition, blockers []upgradeableBlocker) configv1.ClusterOperatorStatusCondition {
	var others []upgradeableBlocker
	switch {
	case c.Status != configv1.ConditionFalse:
	case c.Reason == crdcompat.ReasonVersionRemovalPending:
	case c.Reason == ReasonMultipleReasons:
		// Each blocker is a "* " line; a line that is not one continues
		// the one before (a warning appended to the condition).
		for _, line := range strings.Split(c.Message, "\n")[1:] {
			msg, ok := strings.CutPrefix(line, "* ")
			switch {
			case ok && strings.HasPrefix(msg, crdRemovalMessagePrefix):
			case ok || len(others) == 0:
				// The reason of one of several is not in the condition.
				others = append(others, upgradeableBlocker{Reason: ReasonMultipleReasons, Message: msg})
			default:
				others[len(others)-1].Message += "\n" + line
			}
		}
	default:
		others = append(others, upgradeableBlocker{Reason: c.Reason, Message: c.Message})
	}
	folded := foldBlockers(append(others, blockers...))
	folded.LastTransitionTime = c.LastTransitionTime
	return folded
}
