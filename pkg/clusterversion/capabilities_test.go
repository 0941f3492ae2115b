package clusterversion

import (
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
