package operator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/payload-applier/payload-applier/pkg/payload"
)

// The CVO's condition on capabilities the spec does not ask for but that
// stay enabled.
const (
	ConditionImplicitlyEnabledCapabilities configv1.ClusterStatusConditionType = "ImplicitlyEnabledCapabilities"
	ReasonCapabilitiesImplicitlyEnabled                                        = "CapabilitiesImplicitlyEnabled"
	// ReasonCurrentReleaseUnreadable refuses an update, with
	// Config.RequireCurrentRelease, whose current release cannot be read.
	ReasonCurrentReleaseUnreadable = "CurrentReleaseUnreadable"
)

// Capabilities resolves cv's capabilities as the CVO does: its spec on top
// of what its status already enabled, which never shrinks. An error names
// an unknown baseline set or capability, which the result leaves out.
func Capabilities(cv *configv1.ClusterVersion) (payload.Capabilities, error) {
	return payload.ResolveCapabilities(cv.Spec.Capabilities, cv.Status.Capabilities.EnabledCapabilities)
}

// setCapabilities writes cv's resolved capabilities to its status, with
// the ImplicitlyEnabledCapabilities condition and the capability metric.
// Every pass does, so that a capability once enabled stays enabled and its
// manifests applied whatever the spec says later.
func (o *Operator) setCapabilities(ctx context.Context, cv *configv1.ClusterVersion, now metav1.Time) {
	caps, err := Capabilities(cv)
	if err != nil {
		klog.FromContext(ctx).Error(err, "Ignoring what the ClusterVersion's capabilities name that is unknown")
	}
	cv.Status.Capabilities = *caps.Status()
	cv.Status.Conditions = setCondition(cv.Status.Conditions, implicitlyEnabledCondition(caps.Implicit), now)
	if o.metrics != nil {
		o.metrics.observeCapabilities(caps)
	}
}

// implicitlyEnabledCondition is the CVO's condition for implicit, the
// enabled capabilities the spec does not ask for.
func implicitlyEnabledCondition(implicit []configv1.ClusterVersionCapability) configv1.ClusterOperatorStatusCondition {
	if len(implicit) == 0 {
		return configv1.ClusterOperatorStatusCondition{Type: ConditionImplicitlyEnabledCapabilities, Status: configv1.ConditionFalse,
			Reason: ReasonAsExpected, Message: "Capabilities match configured spec"}
	}
	names := make([]string, len(implicit))
	for i, c := range implicit {
		names[i] = string(c)
	}
	return configv1.ClusterOperatorStatusCondition{Type: ConditionImplicitlyEnabledCapabilities, Status: configv1.ConditionTrue,
		Reason: ReasonCapabilitiesImplicitlyEnabled, Message: "The following capabilities could not be disabled: " + strings.Join(names, ", ")}
}

// ErrCurrentReleaseUnreadable is why, with Config.RequireCurrentRelease, an
// update is refused.
var ErrCurrentReleaseUnreadable = errors.New("the current release cannot be read to find the capabilities the update must keep enabled")

// dropsForCapabilities reports whether rel leaves out a manifest for its
// capabilities: only then can an update enable one implicitly.
func dropsForCapabilities(rel *payload.Release) bool {
	return slices.ContainsFunc(rel.Skipped, func(s payload.Skipped) bool { return s.Filter == payload.FilterCapability })
}

// enableImplicitCapabilities runs when an update to target is accepted,
// before status.desired moves on: each capability that target puts in
// front of an object the current release manages is enabled, and target
// is filtered again with them. As in the CVO, an install (no current
// release) enables none; so does a current release that cannot be read
// now, which is logged, unless Config.RequireCurrentRelease makes it an
// error: the update would stop managing what it moves behind a capability.
func (o *Operator) enableImplicitCapabilities(ctx context.Context, cv *configv1.ClusterVersion, target *payload.Release, now metav1.Time) (*payload.Release, error) {
	if cv.Status.Desired.Version == "" {
		return target, nil
	}
	current, err := o.currentRelease(ctx, cv)
	if err != nil {
		if o.cfg.RequireCurrentRelease && dropsForCapabilities(target) {
			return nil, fmt.Errorf("%w (%s): %w", ErrCurrentReleaseUnreadable, cv.Status.Desired.Version, err)
		}
		klog.FromContext(ctx).Error(err, "Cannot read the current release to find capabilities the update must keep enabled", "current", cv.Status.Desired.Version)
		return target, nil
	}
	implicit := payload.ImplicitCapabilities(current, target, o.loadOptionsFor(cv, target.Version))
	if len(implicit) == 0 {
		return target, nil
	}
	klog.FromContext(ctx).Info("Enabling capabilities implicitly: the update moves objects the cluster runs behind them",
		"capabilities", implicit, "target", target.Version)
	cv.Status.Capabilities.EnabledCapabilities = append(cv.Status.Capabilities.EnabledCapabilities, implicit...)
	o.setCapabilities(ctx, cv, now)
	return target.Filter(o.loadOptionsFor(cv, target.Version)), nil
}
