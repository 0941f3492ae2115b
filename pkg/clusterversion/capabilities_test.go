package clusterversion

import (
	"slices"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
)

func TestImplicitlyEnabledCondition(t *testing.T) {
	c := ImplicitlyEnabledCondition([]configv1.ClusterVersionCapability{"Build", "Console"})
	if c.Status != configv1.ConditionTrue || c.Reason != "CapabilitiesImplicitlyEnabled" || c.Message != "The following capabilities could not be disabled: Build, Console" {
		t.Errorf("condition %+v", c)
	}
	if c := ImplicitlyEnabledCondition(nil); c.Status != configv1.ConditionFalse || c.Reason != "AsExpected" {
		t.Errorf("condition %+v", c)
	}
}

// TestAlwaysEnabledCapabilities: as the CVO's --always-enable-capabilities,
// they are enabled whatever the spec asks, and implicitly so when it does
// not ask for them.
func TestAlwaysEnabledCapabilities(t *testing.T) {
	cv := &configv1.ClusterVersion{Spec: configv1.ClusterVersionSpec{Capabilities: &configv1.ClusterVersionCapabilitiesSpec{
		BaselineCapabilitySet: configv1.ClusterVersionCapabilitySetNone}}}
	caps, err := Capabilities(cv, configv1.ClusterVersionCapabilityIngress)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(caps.Enabled, configv1.ClusterVersionCapabilityIngress) || !slices.Contains(caps.Implicit, configv1.ClusterVersionCapabilityIngress) {
		t.Errorf("enabled %v, implicit %v: want Ingress in both", caps.Enabled, caps.Implicit)
	}
	if none, _ := Capabilities(cv); slices.Contains(none.Enabled, configv1.ClusterVersionCapabilityIngress) {
		t.Errorf("Ingress enabled without being asked: %v", none.Enabled)
	}
}
