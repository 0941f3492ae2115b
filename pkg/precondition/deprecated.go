package precondition

import (
	"context"
	"fmt"
)

const (
	// NameReleaseDeprecated names the ReleaseDeprecated check.
	NameReleaseDeprecated = "ReleaseDeprecated"
	// ReasonReleaseDeprecated: the update graph marks the target deprecated.
	ReasonReleaseDeprecated = "ReleaseDeprecated"
)

// ReleaseDeprecated refuses a target that the update graph marks
// deprecated: a deprecated release may be updated from, never installed or
// updated to: the graph keeps it only so that clusters on it can leave.
// force accepts it.
type ReleaseDeprecated struct{}

var _ Precondition = ReleaseDeprecated{}

// Name returns NameReleaseDeprecated.
func (ReleaseDeprecated) Name() string { return NameReleaseDeprecated }

// Run looks the target up in rc.Deprecated.
func (r ReleaseDeprecated) Run(_ context.Context, rc ReleaseContext) error {
	msg, deprecated := rc.Deprecated[rc.DesiredVersion]
	if !deprecated {
		return nil
	}
	text := fmt.Sprintf("release %s is deprecated in the update graph", rc.DesiredVersion)
	if msg != "" {
		text += ": " + msg
	}
	return &Error{Reason: ReasonReleaseDeprecated, Message: text, Name: r.Name()}
}
