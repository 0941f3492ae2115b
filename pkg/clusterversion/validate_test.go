package clusterversion

import (
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const validClusterID = "2b2ac0a1-6e0b-4d0e-9c8e-3b6a4b1f0d7e"

func TestValidateClusterVersion(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec configv1.ClusterVersionSpec
		// fields are the invalid fields, in order; none when valid.
		fields []string
		// cleared says which spec fields clearInvalidFields drops.
		cleared func(configv1.ClusterVersionSpec) bool
	}{
		{name: "valid", spec: configv1.ClusterVersionSpec{ClusterID: validClusterID, DesiredUpdate: &configv1.Update{Version: "1.2.3"}}},
		{name: "no clusterID is valid", spec: configv1.ClusterVersionSpec{}},
		{name: "image only", spec: configv1.ClusterVersionSpec{DesiredUpdate: &configv1.Update{Image: "quay.io/r@sha256:00"}}},
		{name: "architecture only", spec: configv1.ClusterVersionSpec{DesiredUpdate: &configv1.Update{Architecture: configv1.ClusterVersionArchitectureMulti}}},
		{name: "desiredUpdate with neither version nor image",
			spec:    configv1.ClusterVersionSpec{DesiredUpdate: &configv1.Update{Force: true}},
			fields:  []string{"spec.desiredUpdate"},
			cleared: func(s configv1.ClusterVersionSpec) bool { return s.DesiredUpdate == nil }},
		{name: "version not semver",
			spec:    configv1.ClusterVersionSpec{DesiredUpdate: &configv1.Update{Version: "four"}},
			fields:  []string{"spec.desiredUpdate.version"},
			cleared: func(s configv1.ClusterVersionSpec) bool { return s.DesiredUpdate == nil }},
		{name: "clusterID not a UUID",
			spec:    configv1.ClusterVersionSpec{ClusterID: "not-a-uuid"},
			fields:  []string{"spec.clusterID"},
			cleared: func(s configv1.ClusterVersionSpec) bool { return s.ClusterID == "" }},
		{name: "clusterID a version-1 UUID",
			spec:    configv1.ClusterVersionSpec{ClusterID: "6ba7b810-9dad-11d1-80b4-00c04fd430c8"},
			fields:  []string{"spec.clusterID"},
			cleared: func(s configv1.ClusterVersionSpec) bool { return s.ClusterID == "" }},
		{name: "clusterID not RFC4122 variant",
			spec:   configv1.ClusterVersionSpec{ClusterID: "2b2ac0a1-6e0b-4d0e-cc8e-3b6a4b1f0d7e"},
			fields: []string{"spec.clusterID"}},
		{name: "upstream not a URL",
			spec:    configv1.ClusterVersionSpec{Upstream: "http://[::1"},
			fields:  []string{"spec.upstream"},
			cleared: func(s configv1.ClusterVersionSpec) bool { return s.Upstream == "" }},
		{name: "unknown baseline capability set, kept",
			spec:    configv1.ClusterVersionSpec{Capabilities: &configv1.ClusterVersionCapabilitiesSpec{BaselineCapabilitySet: "v9.99"}},
			fields:  []string{"spec.capabilities.baselineCapabilitySet"},
			cleared: func(s configv1.ClusterVersionSpec) bool { return s.Capabilities.BaselineCapabilitySet == "v9.99" }},
		{name: "unknown additional capability",
			spec: configv1.ClusterVersionSpec{Capabilities: &configv1.ClusterVersionCapabilitiesSpec{
				AdditionalEnabledCapabilities: []configv1.ClusterVersionCapability{"Console", "Teleporter"}}},
			fields: []string{"spec.capabilities.additionalEnabledCapabilities[1]"}},
		{name: "known capabilities", spec: configv1.ClusterVersionSpec{Capabilities: &configv1.ClusterVersionCapabilitiesSpec{
			BaselineCapabilitySet: configv1.ClusterVersionCapabilitySetNone, AdditionalEnabledCapabilities: []configv1.ClusterVersionCapability{"Console"}}}},
		{name: "several",
			spec:   configv1.ClusterVersionSpec{ClusterID: "x", DesiredUpdate: &configv1.Update{}},
			fields: []string{"spec.clusterID", "spec.desiredUpdate"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cv := &configv1.ClusterVersion{Spec: tc.spec}
			errs := Validate(cv)
			var got []string
			for _, e := range errs {
				got = append(got, e.Field)
			}
			if strings.Join(got, ",") != strings.Join(tc.fields, ",") {
				t.Fatalf("invalid fields %v, want %v (%v)", got, tc.fields, errs)
			}
			c := invalidCondition(errs)
			if len(tc.fields) == 0 {
				if c != nil {
					t.Fatalf("valid spec gave %+v", c)
				}
				return
			}
			if c == nil || c.Type != ConditionInvalid || c.Status != configv1.ConditionTrue || c.Reason != ReasonInvalidClusterVersion {
				t.Fatalf("condition %+v", c)
			}
			for _, f := range tc.fields {
				if !strings.Contains(c.Message, f) {
					t.Errorf("message %q does not name %s", c.Message, f)
				}
			}
			if !strings.HasPrefix(c.Message, "The cluster version is invalid:") {
				t.Errorf("message %q", c.Message)
			}
			clearInvalidFields(cv, errs)
			if tc.cleared != nil && !tc.cleared(cv.Spec) {
				t.Errorf("after clearing: %+v", cv.Spec)
			}
		})
	}
}

func TestInvalidMessageIsBounded(t *testing.T) {
	cv := &configv1.ClusterVersion{Spec: configv1.ClusterVersionSpec{ClusterID: configv1.ClusterID(strings.Repeat("z", 100_000))}}
	c := invalidCondition(Validate(cv))
	if c == nil || len(c.Message) > maxInvalidMessageBytes {
		t.Fatalf("message of %d bytes", len(c.Message))
	}
}

func TestCheckSpecSetsAndRemovesInvalid(t *testing.T) {
	now := metav1.Now()
	cv := &configv1.ClusterVersion{Spec: configv1.ClusterVersionSpec{DesiredUpdate: &configv1.Update{}}}
	if errs := CheckSpec(cv, now); len(errs) != 1 || cv.Spec.DesiredUpdate != nil {
		t.Fatalf("errs %v, desiredUpdate %+v", errs, cv.Spec.DesiredUpdate)
	}
	if c := FindCondition(cv.Status.Conditions, ConditionInvalid); c == nil || c.Status != configv1.ConditionTrue {
		t.Fatalf("Invalid = %+v", c)
	}
	cv.Spec.DesiredUpdate = &configv1.Update{Version: "1.0.0"}
	if errs := CheckSpec(cv, now); len(errs) != 0 {
		t.Fatal(errs)
	}
	if c := FindCondition(cv.Status.Conditions, ConditionInvalid); c != nil {
		t.Fatalf("Invalid stays once the spec is valid: %+v", c)
	}
}

func TestProgressingWhileInvalid(t *testing.T) {
	now := metav1.Now()
	for _, tc := range []struct {
		in              configv1.ClusterOperatorStatusCondition
		failing         bool
		reason, message string
	}{
		{configv1.ClusterOperatorStatusCondition{Type: configv1.OperatorProgressing, Status: configv1.ConditionFalse, Message: "Cluster version is 1.0.0"},
			false, ReasonInvalidClusterVersion, "Stopped at 1.0.0: the cluster version is invalid"},
		{configv1.ClusterOperatorStatusCondition{Type: configv1.OperatorProgressing, Status: configv1.ConditionTrue, Message: "Working towards 1.0.0"},
			false, ReasonInvalidClusterVersion, "Reconciling 1.0.0: the cluster version is invalid"},
		// A failing pass keeps its own reason and message.
		{configv1.ClusterOperatorStatusCondition{Type: configv1.OperatorProgressing, Status: configv1.ConditionFalse, Reason: "UpdatePayloadFailed", Message: "Error while reconciling 1.0.0: x"},
			true, "UpdatePayloadFailed", "Error while reconciling 1.0.0: x"},
		// A wait is no failure: its reason gives way.
		{configv1.ClusterOperatorStatusCondition{Type: configv1.OperatorProgressing, Status: configv1.ConditionTrue, Reason: "ClusterOperatorUpdating", Message: "Working towards 1.0.0"},
			false, ReasonInvalidClusterVersion, "Reconciling 1.0.0: the cluster version is invalid"},
	} {
		st := &configv1.ClusterVersionStatus{Desired: configv1.Release{Version: "1.0.0"}, Conditions: []configv1.ClusterOperatorStatusCondition{tc.in}}
		if tc.failing {
			st.Conditions = append(st.Conditions, configv1.ClusterOperatorStatusCondition{Type: ConditionFailing, Status: configv1.ConditionTrue})
		}
		ProgressingWhileInvalid(st, now)
		if c := st.Conditions[0]; c.Reason != tc.reason || c.Message != tc.message {
			t.Errorf("%q → %s %q, want %s %q", tc.in.Message, c.Reason, c.Message, tc.reason, tc.message)
		}
	}
}
