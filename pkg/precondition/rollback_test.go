package precondition

import (
	"context"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
)

func TestRollbackRun(t *testing.T) {
	lowDesired := func(message string) *wantError {
		return &wantError{reason: ReasonLowDesiredVersion, message: message}
	}

	tests := map[string]struct {
		cv     *configv1.ClusterVersion
		target string
		want   *wantError
	}{
		"a missing ClusterVersion passes": {
			cv: nil, target: "4.1.0",
		},
		"an update passes": {
			cv: clusterVersion("4.1.1", withHistory(completed("4.1.1"))), target: "4.1.2",
		},
		"no change passes": {
			cv: clusterVersion("4.1.1", withHistory(completed("4.1.1"))), target: "4.1.1",
		},
		"a rollback with no history fails": {
			cv:     clusterVersion("4.1.1"),
			target: "4.1.0",
			want:   lowDesired("4.1.0 is less than the current target 4.1.1, and the cluster has no previous Semantic Version"),
		},
		"a rollback fails when history holds only the current target": {
			cv:     clusterVersion("4.1.1", withHistory(completed("4.1.1"))),
			target: "4.1.0",
			want:   lowDesired("4.1.0 is less than the current target 4.1.1, and the cluster has no previous Semantic Version"),
		},
		"a rollback to the previous entry in the same minor passes": {
			cv:     clusterVersion("4.1.2", withHistory(partial("4.1.2"), completed("4.1.1"))),
			target: "4.1.1",
		},
		"a rollback from a release to its previous release candidate passes": {
			cv:     clusterVersion("4.20.0", withHistory(partial("4.20.0"), completed("4.20.0-rc.1"))),
			target: "4.20.0-rc.1",
		},
		"an intermediate partial entry makes that entry the only allowed rollback": {
			cv:     clusterVersion("4.1.3", withHistory(partial("4.1.3"), partial("4.1.2"), completed("4.1.1"))),
			target: "4.1.1",
			want: lowDesired("4.1.1 is less than the current target 4.1.3, but the only supported rollback is to the cluster's previous version " +
				"4.1.2 (quay.io/ocp/release:4.1.2)"),
		},
		"an intermediate image change of the current version makes that entry the only allowed rollback": {
			cv: clusterVersion("4.1.2", withImage("quay.io/ocp/release@sha256:bbbb"), withHistory(
				configv1.UpdateHistory{State: configv1.PartialUpdate, Version: "4.1.2", Image: "quay.io/ocp/release@sha256:bbbb"},
				configv1.UpdateHistory{State: configv1.CompletedUpdate, Version: "4.1.2", Image: "quay.io/ocp/release@sha256:aaaa"},
				completed("4.1.1"),
			)),
			target: "4.1.1",
			want: lowDesired("4.1.1 is less than the current target 4.1.2, but the only supported rollback is to the cluster's previous version " +
				"4.1.2 (quay.io/ocp/release@sha256:aaaa)"),
		},
		"the previous version is named without an image when history has none": {
			cv: clusterVersion("4.1.3", withHistory(
				partial("4.1.3"),
				configv1.UpdateHistory{State: configv1.CompletedUpdate, Version: "4.1.2"},
			)),
			target: "4.1.1",
			want:   lowDesired("4.1.1 is less than the current target 4.1.3, but the only supported rollback is to the cluster's previous version 4.1.2"),
		},
		"a rollback across a minor boundary fails even to the previous version": {
			cv:     clusterVersion("4.2.1", withHistory(partial("4.2.1"), completed("4.1.1"))),
			target: "4.1.1",
			want: lowDesired("4.1.1 is less than the current target 4.2.1 and matches the cluster's previous version, " +
				"but rollbacks that change major or minor versions are not recommended"),
		},
		"a rollback across a major boundary fails even to the previous version": {
			cv:     clusterVersion("5.0.0", withHistory(partial("5.0.0"), completed("4.22.1"))),
			target: "4.22.1",
			want: lowDesired("4.22.1 is less than the current target 5.0.0 and matches the cluster's previous version, " +
				"but rollbacks that change major or minor versions are not recommended"),
		},
		"a rollback fails when the previous version does not parse": {
			cv:     clusterVersion("4.1.2", withHistory(partial("4.1.2"), completed("4.1"))),
			target: "4.1.1",
			want: lowDesired(`4.1.1 is less than the current target 4.1.2, and the cluster has no previous Semantic Version: ` +
				`its previous version "4.1" does not parse`),
		},
		"an invalid current version warns with InvalidCurrentVersion": {
			cv:     clusterVersion(""),
			target: "4.1.1",
			want: &wantError{
				reason:  ReasonInvalidCurrentVersion,
				message: `the current target version "" is not a Semantic Version: Version string empty`,
				warning: true,
			},
		},
		"an invalid target is blocked with InvalidDesiredVersion": {
			cv:     clusterVersion("4.1.1"),
			target: "latest",
			want: &wantError{
				reason:  ReasonInvalidDesiredVersion,
				message: `the desired version "latest" is not a Semantic Version: No Major.Minor.Patch elements found`,
			},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			err := Rollback{}.Run(context.Background(), ReleaseContext{DesiredVersion: tt.target, ClusterVersion: tt.cv})
			checkResult(t, NameRollback, err, tt.want)
		})
	}
}
