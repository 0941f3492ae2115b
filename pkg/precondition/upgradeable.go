package precondition

import (
	"context"
	"fmt"

	"github.com/blang/semver/v4"
	configv1 "github.com/openshift/api/config/v1"
)

const (
	// NameUpgradeable names the Upgradeable check.
	NameUpgradeable = "ClusterVersionUpgradeable"
	// ReasonClusterVersionOverridesSet: spec.overrides leaves objects
	// unmanaged. The operator sets Upgradeable=False with it, and a
	// patch-level update goes ahead with it as a warning.
	ReasonClusterVersionOverridesSet = "ClusterVersionOverridesSet"
	// ReasonMinorVersionClusterUpdateInProgress: a patch-level retarget while
	// a minor update has not completed, so the cluster is still partly on the
	// older minor that Upgradeable=False was judging.
	ReasonMinorVersionClusterUpdateInProgress = "MinorVersionClusterUpdateInProgress"
	// ReasonMajorVersionClusterUpdateInProgress: as above, during a major
	// update.
	ReasonMajorVersionClusterUpdateInProgress = "MajorVersionClusterUpdateInProgress"
	// ReasonNotUpgradeable stands in when the Upgradeable=False condition
	// carries no reason of its own, so the failure still has one.
	ReasonNotUpgradeable = "NotUpgradeable"
)

// OverridesMessage explains ReasonClusterVersionOverridesSet in the CVO's
// words, which users and tools already know from `oc adm upgrade`.
const OverridesMessage = "Disabling ownership via cluster version overrides prevents upgrades between minor or major versions. Please remove overrides before requesting a minor or major version update."

// Upgradeable enforces the ClusterVersion Upgradeable condition. False means
// something in the cluster (a component, a pending delete, an update in
// flight) cannot survive the next minor or major version, so such updates
// block with the condition's own reason and message. Patch-level updates stay
// allowed: they are how fixes, including fixes for whatever set
// Upgradeable=False, reach the cluster. Downgrades are left to Rollback.
type Upgradeable struct{}

var _ Precondition = Upgradeable{}

// Name returns NameUpgradeable.
func (Upgradeable) Name() string { return NameUpgradeable }

// Run passes when the Upgradeable condition is missing or not False. While
// it is False, an update to the same or a lower version, or within the
// current major.minor, passes with at most one warning: overrides set, or
// else a minor or major update still in progress from the last Completed
// version. A minor or major update blocks.
func (u Upgradeable) Run(_ context.Context, rc ReleaseContext) error {
	cv := rc.ClusterVersion
	if cv == nil {
		return nil
	}
	upgradeable := findCondition(cv.Status.Conditions, configv1.OperatorUpgradeable)
	if upgradeable == nil || upgradeable.Status != configv1.ConditionFalse {
		return nil
	}
	current, target, err := parseVersions(u.Name(), cv, rc.DesiredVersion)
	if err != nil {
		return err
	}

	switch classify(current, target) {
	case UpdateMinor, UpdateMajor:
		return notUpgradeable(u.Name(), upgradeable, current, target)
	}

	if hasUnmanagedOverride(cv) {
		return &Error{Reason: ReasonClusterVersionOverridesSet, Message: OverridesMessage, Name: u.Name(), NonBlockingWarning: true}
	}
	if !sameMinor(current, target) {
		return nil
	}
	if reason, from := updateInProgress(cv.Status, current); reason != "" {
		level := "minor"
		if reason == ReasonMajorVersionClusterUpdateInProgress {
			level = "major"
		}
		return &Error{
			Reason:             reason,
			Message:            fmt.Sprintf("Retarget to %s while a %s level update from %s to %s is in progress", target, level, from, current),
			Name:               u.Name(),
			NonBlockingWarning: true,
		}
	}
	return nil
}

// updateInProgress reports whether the cluster is Progressing on a minor or
// major update away from its last Completed version, and returns the reason
// to warn with and that version. Upgradeable=False is typically set by the
// update in flight, so a patch-level retarget then leaves the cluster between
// minors; it is accepted, but recorded as a risk.
func updateInProgress(status configv1.ClusterVersionStatus, current semver.Version) (reason, from string) {
	progressing := findCondition(status.Conditions, configv1.OperatorProgressing)
	if progressing == nil || progressing.Status != configv1.ConditionTrue {
		return "", ""
	}
	completed := LastCompletedVersion(status.History)
	completedVersion, err := semver.Parse(completed)
	if err != nil {
		return "", ""
	}
	switch classify(completedVersion, current) {
	case UpdateMajor:
		return ReasonMajorVersionClusterUpdateInProgress, completed
	case UpdateMinor:
		return ReasonMinorVersionClusterUpdateInProgress, completed
	}
	return "", ""
}

// notUpgradeable blocks with the Upgradeable condition's reason and message,
// which name the cause better than this package could; it fills in only what
// the condition leaves empty.
func notUpgradeable(name string, upgradeable *configv1.ClusterOperatorStatusCondition, current, target semver.Version) *Error {
	reason, message := upgradeable.Reason, upgradeable.Message
	if reason == "" {
		reason = ReasonNotUpgradeable
	}
	if message == "" {
		message = fmt.Sprintf("the cluster is not upgradeable, so the update from %s to %s is blocked", current, target)
	}
	return &Error{Reason: reason, Message: message, Name: name}
}
