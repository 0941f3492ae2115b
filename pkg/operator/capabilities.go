package operator

import (
	"context"
	"errors"
	"fmt"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/payload-applier/payload-applier/pkg/clusterversion"
	"github.com/payload-applier/payload-applier/pkg/payload"
)

// setCapabilities writes cv's resolved capabilities to its status, with
// the ImplicitlyEnabledCapabilities condition and the capability metric.
// Every pass does, so that a capability once enabled stays enabled and its
// manifests applied whatever the spec says later.
func setCapabilities(ctx context.Context, cv *configv1.ClusterVersion, always []configv1.ClusterVersionCapability, now metav1.Time, metrics *Metrics) {
	caps, err := clusterversion.Capabilities(cv, always...)
	if err != nil {
		klog.FromContext(ctx).Error(err, "Ignoring what the ClusterVersion's capabilities name that is unknown")
	}
	cv.Status.Capabilities = *caps.Status()
	cv.Status.Conditions = clusterversion.SetCondition(cv.Status.Conditions, clusterversion.ImplicitlyEnabledCondition(caps.Implicit), now)
	if metrics != nil {
		metrics.observeCapabilities(caps)
	}
}

// ErrCurrentReleaseUnreadable is why, with Config.RequireCurrentRelease, an
// update is refused.
var ErrCurrentReleaseUnreadable = errors.New("the current release cannot be read to find the capabilities the update must keep enabled")

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
	current, err := o.reader.currentRelease(ctx, cv)
	if err != nil {
		if o.cfg.RequireCurrentRelease && clusterversion.DropsForCapabilities(target) {
			return nil, fmt.Errorf("%w (%s): %w", ErrCurrentReleaseUnreadable, cv.Status.Desired.Version, err)
		}
		klog.FromContext(ctx).Error(err, "Cannot read the current release to find capabilities the update must keep enabled", "current", cv.Status.Desired.Version)
		return target, nil
	}
	implicit := payload.ImplicitCapabilities(current, target, o.reader.loadOptionsFor(cv, target.Version))
	if len(implicit) == 0 {
		return target, nil
	}
	klog.FromContext(ctx).Info("Enabling capabilities implicitly: the update moves objects the cluster runs behind them",
		"capabilities", implicit, "target", target.Version)
	cv.Status.Capabilities.EnabledCapabilities = append(cv.Status.Capabilities.EnabledCapabilities, implicit...)
	setCapabilities(ctx, cv, o.cfg.LoadOptions.AlwaysEnabled, now, o.metrics)
	return target.Filter(o.reader.loadOptionsFor(cv, target.Version)), nil
}
