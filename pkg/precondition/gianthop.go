package precondition

import (
	"context"
	"fmt"

	"github.com/blang/semver/v4"
)

const (
	// NameGiantHop names the GiantHop check.
	NameGiantHop = "ClusterVersionGiantHop"
	// ReasonMajorVersionUpdate: the update crosses a major version.
	ReasonMajorVersionUpdate = "MajorVersionUpdate"
	// ReasonMultipleMinorVersionsUpdate: the update skips a minor version.
	ReasonMultipleMinorVersionsUpdate = "MultipleMinorVersionsUpdate"
)

// GiantHop blocks updates that skip releases. Components are written and
// tested to migrate their state from the previous minor only, so an update
// must pass through every minor, and major versions are not crossed at all.
type GiantHop struct{}

var _ Precondition = GiantHop{}

// Name returns NameGiantHop.
func (GiantHop) Name() string { return NameGiantHop }

// Run compares rc.DesiredVersion with status.desired. Rollbacks are left to
// Rollback.
func (g GiantHop) Run(_ context.Context, rc ReleaseContext) error {
	cv := rc.ClusterVersion
	if cv == nil {
		return nil
	}
	current, target, err := parseVersions(g.Name(), cv, rc.DesiredVersion)
	if err != nil {
		return err
	}

	switch classify(current, target) {
	case UpdateMajor:
		if majorHopAllowed(current, target) {
			return nil
		}
		return &Error{
			Reason:  ReasonMajorVersionUpdate,
			Message: fmt.Sprintf("%s is a major version update from the current target %s, and updates across major versions are not supported", target, current),
			Name:    g.Name(),
		}
	case UpdateMinor:
		if target.Minor > current.Minor+1 {
			return &Error{
				Reason:  ReasonMultipleMinorVersionsUpdate,
				Message: fmt.Sprintf("%s is more than one minor version beyond the current target %s; update through each minor version in between", target, current),
				Name:    g.Name(),
			}
		}
	}
	return nil
}

// majorHopAllowed is the CVO's temporary exception to the major-version rule:
// OpenShift 5.0 is built as the next release after the last 4.y, so 4 to 5.0
// is an ordinary next-minor update in all but number. It is kept narrow (only
// 5.0, only from 4) so any other major change still blocks; drop it when the
// CVO drops it.
func majorHopAllowed(current, target semver.Version) bool {
	return current.Major == 4 && target.Major == 5 && target.Minor == 0
}
