package clusterversion

import (
	"slices"
	"strings"

	configv1 "github.com/openshift/api/config/v1"
	"github.com/payload-applier/payload-applier/pkg/payload"
)

// Capabilities resolves cv's capabilities as the CVO does: its spec on top
// of what its status already enabled, which never shrinks, and always (the
// CVO's --always-enable-capabilities). An error names an unknown baseline
// set or capability, which the result leaves out.
func Capabilities(cv *configv1.ClusterVersion, always ...configv1.ClusterVersionCapability) (payload.Capabilities, error) {
	prior := cv.Status.Capabilities.EnabledCapabilities
	if len(always) > 0 {
		prior = append(slices.Clone(prior), always...)
	}
	return payload.ResolveCapabilities(cv.Spec.Capabilities, prior)
}

// ImplicitlyEnabledCondition is the CVO's condition for implicit, the
// enabled capabilities the spec does not ask for.
func ImplicitlyEnabledCondition(implicit []configv1.ClusterVersionCapability) configv1.ClusterOperatorStatusCondition {
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

// DropsForCapabilities reports whether rel leaves out a manifest for its
// capabilities: only then can an update enable one implicitly.
func DropsForCapabilities(rel *payload.Release) bool {
	return slices.ContainsFunc(rel.Skipped, func(s payload.Skipped) bool { return s.Filter == payload.FilterCapability })
}
