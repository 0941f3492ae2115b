package precondition

import (
	"context"
	"fmt"

	"github.com/blang/semver/v4"
	configv1 "github.com/openshift/api/config/v1"
)

const (
	// NameRollback names the Rollback check.
	NameRollback = "ClusterVersionRollback"
	// ReasonLowDesiredVersion: a rollback other than the one supported kind.
	ReasonLowDesiredVersion = "LowDesiredVersion"
)

// Rollback accepts a move to a lower version only when it returns to the
// release the cluster ran just before its current target, within the same
// major.minor. That is the one rollback whose manifests the cluster has
// already run against its current state; anything older may meet objects
// and schemas it has never seen.
type Rollback struct{}

var _ Precondition = Rollback{}

// Name returns NameRollback.
func (Rollback) Name() string { return NameRollback }

// Run checks rc.DesiredVersion against status.desired and status.history.
// The previous release is the newest history entry whose version or image
// differs from status.desired, so a retarget to another image of the same
// version, or an update left partial, counts as the previous release. The
// target is compared to it by version alone, as the CVO does.
func (r Rollback) Run(_ context.Context, rc ReleaseContext) error {
	cv := rc.ClusterVersion
	if cv == nil {
		return nil
	}
	current, target, err := parseVersions(r.Name(), cv, rc.DesiredVersion)
	if err != nil {
		return err
	}
	if !target.LT(current) {
		return nil
	}

	previous, ok := previousRelease(cv)
	if !ok {
		return r.lowDesired(nil, "%s is less than the current target %s, and the cluster has no previous Semantic Version", target, current)
	}
	previousVersion, parseErr := semver.Parse(previous.Version)
	if parseErr != nil {
		return r.lowDesired(parseErr, "%s is less than the current target %s, and the cluster has no previous Semantic Version: its previous version %q does not parse", target, current, previous.Version)
	}
	if !target.EQ(previousVersion) {
		return r.lowDesired(nil, "%s is less than the current target %s, but the only supported rollback is to the cluster's previous version %s", target, current, describeRelease(previousVersion.String(), previous.Image))
	}
	if !sameMinor(target, current) {
		return r.lowDesired(nil, "%s is less than the current target %s and matches the cluster's previous version, but rollbacks that change major or minor versions are not recommended", target, current)
	}
	return nil
}

func (r Rollback) lowDesired(nested error, format string, args ...any) *Error {
	return &Error{Nested: nested, Reason: ReasonLowDesiredVersion, Message: fmt.Sprintf(format, args...), Name: r.Name()}
}

// previousRelease returns the newest history entry that differs from the
// current target in version or image.
func previousRelease(cv *configv1.ClusterVersion) (configv1.UpdateHistory, bool) {
	desired := cv.Status.Desired
	for _, h := range cv.Status.History {
		if h.Version != desired.Version || h.Image != desired.Image {
			return h, true
		}
	}
	return configv1.UpdateHistory{}, false
}

// describeRelease names a release by version, and by image when known.
func describeRelease(version, image string) string {
	if image == "" {
		return version
	}
	return fmt.Sprintf("%s (%s)", version, image)
}
