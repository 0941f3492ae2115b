package precondition

import (
	"context"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
)

func TestGiantHopRun(t *testing.T) {
	tests := map[string]struct {
		cv     *configv1.ClusterVersion
		target string
		want   *wantError
	}{
		"a missing ClusterVersion passes": {
			cv: nil, target: "2.0.0",
		},
		"a z-stream update from 1.0.0 to 1.0.1 passes": {
			cv: clusterVersion("1.0.0"), target: "1.0.1",
		},
		"a one-minor update from 1.0.0 to 1.1.0 passes": {
			cv: clusterVersion("1.0.0"), target: "1.1.0",
		},
		"a major update from 1.0.0 to 2.0.0 fails": {
			cv: clusterVersion("1.0.0"), target: "2.0.0",
			want: &wantError{
				reason:  ReasonMajorVersionUpdate,
				message: "2.0.0 is a major version update from the current target 1.0.0, and updates across major versions are not supported",
			},
		},
		"an update from 4 to 5.0.0 passes under the temporary 4-to-5.0 rule": {
			cv: clusterVersion("4.22.3"), target: "5.0.0",
		},
		"an update from 4 to a 5.0 release candidate passes under the temporary 4-to-5.0 rule": {
			cv: clusterVersion("4.22.3"), target: "5.0.0-rc.1",
		},
		"an update from 4 to 5.1.0 fails": {
			cv: clusterVersion("4.22.3"), target: "5.1.0",
			want: &wantError{
				reason:  ReasonMajorVersionUpdate,
				message: "5.1.0 is a major version update from the current target 4.22.3, and updates across major versions are not supported",
			},
		},
		"an update from 3 to 5.0.0 fails": {
			cv: clusterVersion("3.11.0"), target: "5.0.0",
			want: &wantError{
				reason:  ReasonMajorVersionUpdate,
				message: "5.0.0 is a major version update from the current target 3.11.0, and updates across major versions are not supported",
			},
		},
		"a two-minor update from 1.0.0 to 1.2.0 fails": {
			cv: clusterVersion("1.0.0"), target: "1.2.0",
			want: &wantError{
				reason:  ReasonMultipleMinorVersionsUpdate,
				message: "1.2.0 is more than one minor version beyond the current target 1.0.0; update through each minor version in between",
			},
		},
		"a two-minor update to a release candidate fails": {
			cv: clusterVersion("4.18.9"), target: "4.20.0-rc.1",
			want: &wantError{
				reason:  ReasonMultipleMinorVersionsUpdate,
				message: "4.20.0-rc.1 is more than one minor version beyond the current target 4.18.9; update through each minor version in between",
			},
		},
		"a two-minor downgrade is left to the rollback check": {
			cv: clusterVersion("1.2.0"), target: "1.0.0",
		},
		"an invalid target is blocked with InvalidDesiredVersion": {
			cv: clusterVersion("1.0.0"), target: "",
			want: &wantError{
				reason:  ReasonInvalidDesiredVersion,
				message: `the desired version "" is not a Semantic Version: Version string empty`,
			},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			err := GiantHop{}.Run(context.Background(), ReleaseContext{DesiredVersion: tt.target, ClusterVersion: tt.cv})
			checkResult(t, NameGiantHop, err, tt.want)
		})
	}
}
