package precondition

import (
	"fmt"

	"github.com/blang/semver/v4"
	configv1 "github.com/openshift/api/config/v1"
)

// Reasons shared by every check that compares the current and target
// versions.
const (
	// ReasonInvalidCurrentVersion: the cluster's current target is not a
	// Semantic Version, so the check cannot judge the update. It only warns,
	// because a cluster stuck on an odd version must still be able to leave it.
	ReasonInvalidCurrentVersion = "InvalidCurrentVersion"
	// ReasonInvalidDesiredVersion: the requested version is not a Semantic
	// Version. It blocks, because nothing can be said about where it leads.
	ReasonInvalidDesiredVersion = "InvalidDesiredVersion"
)

// UpdateKind classifies a move from one version to another.
type UpdateKind string

const (
	// UpdateSame is no version change; only build metadata or the image may
	// differ, as when retargeting to a rebuilt release.
	UpdateSame UpdateKind = "Same"
	// UpdateZStream moves forward within one major.minor, including between
	// pre-releases of the same patch (4.20.0-rc.1 to 4.20.0).
	UpdateZStream UpdateKind = "ZStream"
	// UpdateMinor moves to a higher minor of the same major.
	UpdateMinor UpdateKind = "Minor"
	// UpdateMajor moves to a higher major.
	UpdateMajor UpdateKind = "Major"
	// UpdateRollback moves to a lower version, at any level.
	UpdateRollback UpdateKind = "Rollback"
)

// Classify tells what kind of update moves a cluster from version from to
// version to. Versions are compared as Semantic Versions, as the CVO does: a
// pre-release sorts before its release and build metadata is ignored.
func Classify(from, to string) (UpdateKind, error) {
	fromVersion, err := semver.Parse(from)
	if err != nil {
		return "", fmt.Errorf("classify update: from version %q: %w", from, err)
	}
	toVersion, err := semver.Parse(to)
	if err != nil {
		return "", fmt.Errorf("classify update: to version %q: %w", to, err)
	}
	return classify(fromVersion, toVersion), nil
}

func classify(from, to semver.Version) UpdateKind {
	switch {
	case to.LT(from):
		return UpdateRollback
	case to.EQ(from):
		return UpdateSame
	case to.Major > from.Major:
		return UpdateMajor
	case to.Minor > from.Minor:
		return UpdateMinor
	default:
		return UpdateZStream
	}
}

// sameMinor reports whether two versions share major.minor, the line inside
// which updates are patch-only whichever direction they go.
func sameMinor(a, b semver.Version) bool {
	return a.Major == b.Major && a.Minor == b.Minor
}

// parseVersions parses the cluster's current target and the requested
// version for the check named name. A current target that does not parse
// gives a non-blocking ReasonInvalidCurrentVersion error; a requested version
// that does not parse gives a blocking ReasonInvalidDesiredVersion error.
func parseVersions(name string, cv *configv1.ClusterVersion, desired string) (current, target semver.Version, err *Error) {
	current, parseErr := semver.Parse(cv.Status.Desired.Version)
	if parseErr != nil {
		return current, target, &Error{
			Nested:             parseErr,
			Reason:             ReasonInvalidCurrentVersion,
			Message:            fmt.Sprintf("the current target version %q is not a Semantic Version: %v", cv.Status.Desired.Version, parseErr),
			Name:               name,
			NonBlockingWarning: true,
		}
	}
	target, parseErr = semver.Parse(desired)
	if parseErr != nil {
		return current, target, &Error{
			Nested:  parseErr,
			Reason:  ReasonInvalidDesiredVersion,
			Message: fmt.Sprintf("the desired version %q is not a Semantic Version: %v", desired, parseErr),
			Name:    name,
		}
	}
	return current, target, nil
}

// findCondition returns the condition of type t, or nil when it is absent.
func findCondition(conditions []configv1.ClusterOperatorStatusCondition, t configv1.ClusterStatusConditionType) *configv1.ClusterOperatorStatusCondition {
	for i := range conditions {
		if conditions[i].Type == t {
			return &conditions[i]
		}
	}
	return nil
}

// LastCompletedVersion returns the version of the newest history entry that
// completed, the one the cluster runs, or "" when none has completed yet.
// History is newest first.
func LastCompletedVersion(history []configv1.UpdateHistory) string {
	for _, h := range history {
		if h.State == configv1.CompletedUpdate {
			return h.Version
		}
	}
	return ""
}

// hasUnmanagedOverride reports whether any spec.overrides entry takes an
// object out of the operator's hands.
func hasUnmanagedOverride(cv *configv1.ClusterVersion) bool {
	for _, o := range cv.Spec.Overrides {
		if o.Unmanaged {
			return true
		}
	}
	return false
}
