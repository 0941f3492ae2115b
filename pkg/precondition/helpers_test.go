package precondition

import (
	"errors"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// cvOption edits a ClusterVersion built by clusterVersion.
type cvOption func(*configv1.ClusterVersion)

// clusterVersion builds a ClusterVersion whose current target is desired,
// at image "quay.io/ocp/release:<desired>" unless withImage says otherwise.
func clusterVersion(desired string, opts ...cvOption) *configv1.ClusterVersion {
	cv := &configv1.ClusterVersion{
		ObjectMeta: metav1.ObjectMeta{Name: "version"},
		Status: configv1.ClusterVersionStatus{
			Desired: configv1.Release{Version: desired, Image: image(desired)},
		},
	}
	for _, opt := range opts {
		opt(cv)
	}
	return cv
}

func image(version string) string { return "quay.io/ocp/release:" + version }

func withImage(pullSpec string) cvOption {
	return func(cv *configv1.ClusterVersion) { cv.Status.Desired.Image = pullSpec }
}

// withHistory sets status.history, newest first.
func withHistory(entries ...configv1.UpdateHistory) cvOption {
	return func(cv *configv1.ClusterVersion) { cv.Status.History = entries }
}

func completed(version string) configv1.UpdateHistory {
	return configv1.UpdateHistory{State: configv1.CompletedUpdate, Version: version, Image: image(version)}
}

func partial(version string) configv1.UpdateHistory {
	return configv1.UpdateHistory{State: configv1.PartialUpdate, Version: version, Image: image(version)}
}

func withCondition(t configv1.ClusterStatusConditionType, status configv1.ConditionStatus, reason, message string) cvOption {
	return func(cv *configv1.ClusterVersion) {
		cv.Status.Conditions = append(cv.Status.Conditions, configv1.ClusterOperatorStatusCondition{
			Type: t, Status: status, Reason: reason, Message: message,
		})
	}
}

func notUpgradeableBecause(reason, message string) cvOption {
	return withCondition(configv1.OperatorUpgradeable, configv1.ConditionFalse, reason, message)
}

func progressing() cvOption {
	return withCondition(configv1.OperatorProgressing, configv1.ConditionTrue, "", "Working towards the target")
}

func withUnmanagedOverride() cvOption {
	return func(cv *configv1.ClusterVersion) {
		cv.Spec.Overrides = append(cv.Spec.Overrides, configv1.ComponentOverride{
			Kind: "Deployment", Group: "apps", Namespace: "openshift-monitoring", Name: "prometheus-operator", Unmanaged: true,
		})
	}
}

// wantError describes the *Error a check should return.
type wantError struct {
	reason  string
	message string
	warning bool
}

// checkResult fails t unless got matches want, where a nil want means no
// error. name is the check that must be named in the error.
func checkResult(t *testing.T, name string, got error, want *wantError) {
	t.Helper()
	if want == nil {
		if got != nil {
			t.Fatalf("want no error, got %v", got)
		}
		return
	}
	if got == nil {
		t.Fatalf("want a %s error %q, got none", want.reason, want.message)
	}
	var pErr *Error
	if !errors.As(got, &pErr) {
		t.Fatalf("want an *Error, got %T: %v", got, got)
	}
	if pErr.Name != name {
		t.Errorf("name: want %q, got %q", name, pErr.Name)
	}
	if pErr.Reason != want.reason {
		t.Errorf("reason: want %q, got %q", want.reason, pErr.Reason)
	}
	if pErr.Message != want.message {
		t.Errorf("message:\nwant %q\n got %q", want.message, pErr.Message)
	}
	if pErr.NonBlockingWarning != want.warning {
		t.Errorf("NonBlockingWarning: want %v, got %v", want.warning, pErr.NonBlockingWarning)
	}
}
