package precondition

import (
	"context"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
)

const (
	deletionReason  = "ResourceDeletionInProgress"
	deletionMessage = "Deletes of 2 resources are in progress, beginning with deployment \"openshift-monitoring/old-exporter\"; minor updates are blocked until they finish"
)

func TestUpgradeableRun(t *testing.T) {
	deletesPending := notUpgradeableBecause(deletionReason, deletionMessage)
	blockedByDeletes := &wantError{reason: deletionReason, message: deletionMessage}

	tests := map[string]struct {
		cv     *configv1.ClusterVersion
		target string
		want   *wantError
	}{
		// Passing cases.
		"a missing ClusterVersion passes": {
			cv: nil, target: "4.2.1",
		},
		"a minor update passes when there is no Upgradeable condition": {
			cv: clusterVersion("4.1.1"), target: "4.2.1",
		},
		"a minor update passes when Upgradeable is True": {
			cv:     clusterVersion("4.1.1", withCondition(configv1.OperatorUpgradeable, configv1.ConditionTrue, "AsExpected", "")),
			target: "4.2.1",
		},
		"a minor update passes when Upgradeable is Unknown": {
			cv:     clusterVersion("4.1.1", withCondition(configv1.OperatorUpgradeable, configv1.ConditionUnknown, "Checking", "")),
			target: "4.2.1",
		},
		"a z-stream update passes while Upgradeable is False with reason ResourceDeletionInProgress": {
			cv: clusterVersion("4.1.1", deletesPending), target: "4.1.3",
		},
		"a z-stream downgrade passes while Upgradeable is False": {
			cv: clusterVersion("4.1.3", deletesPending), target: "4.1.1",
		},
		"a z-stream downgrade passes without an Upgradeable condition": {
			cv: clusterVersion("4.1.3"), target: "4.1.1",
		},
		"a minor downgrade passes while Upgradeable is False, leaving it to the rollback check": {
			cv: clusterVersion("4.2.1", deletesPending), target: "4.1.1",
		},
		"a minor downgrade passes without an Upgradeable condition": {
			cv: clusterVersion("4.2.1"), target: "4.1.1",
		},
		"a retarget to the same version passes while Upgradeable is False": {
			cv: clusterVersion("4.1.1", deletesPending), target: "4.1.1",
		},
		"a two-minor update passes without an Upgradeable condition, leaving it to the giant hop check": {
			cv: clusterVersion("4.1.1"), target: "4.3.1",
		},
		"a cluster-bot build updates to a release candidate of the same minor while Upgradeable is False": {
			cv:     clusterVersion("4.10.0-0.ci.test-2022-02-21-141220-ci-ln-5x3lmkb-latest", deletesPending),
			target: "4.10.0-rc.1",
		},
		"a z-stream retarget during a z-stream update passes while Upgradeable is False": {
			cv:     clusterVersion("4.1.2", deletesPending, progressing(), withHistory(partial("4.1.2"), completed("4.1.1"))),
			target: "4.1.3",
		},
		"a z-stream update after a completed minor update passes once no longer Progressing": {
			cv:     clusterVersion("4.2.1", deletesPending, withHistory(completed("4.2.1"), completed("4.1.1"))),
			target: "4.2.3",
		},

		// Blocking cases.
		"a minor update is blocked while Upgradeable is False, carrying the condition's reason and message": {
			cv: clusterVersion("4.1.1", deletesPending), target: "4.2.1",
			want: blockedByDeletes,
		},
		"a minor update is blocked while Upgradeable is False even when overrides are set": {
			cv: clusterVersion("4.1.1", deletesPending, withUnmanagedOverride()), target: "4.2.1",
			want: blockedByDeletes,
		},
		"a two-minor update is blocked while Upgradeable is False": {
			cv: clusterVersion("4.1.1", deletesPending), target: "4.3.1",
			want: blockedByDeletes,
		},
		"a minor update to a release candidate is blocked while Upgradeable is False": {
			cv: clusterVersion("4.19.7", deletesPending), target: "4.20.0-rc.1",
			want: blockedByDeletes,
		},
		"a major update is blocked while Upgradeable is False": {
			cv: clusterVersion("4.22.3", deletesPending), target: "5.0.0",
			want: blockedByDeletes,
		},
		"a minor update is blocked with a stand-in reason when the condition has none": {
			cv: clusterVersion("4.1.1", notUpgradeableBecause("", "")), target: "4.2.1",
			want: &wantError{reason: ReasonNotUpgradeable, message: "the cluster is not upgradeable, so the update from 4.1.1 to 4.2.1 is blocked"},
		},
		"an invalid target is blocked with InvalidDesiredVersion": {
			cv: clusterVersion("4.1.1", deletesPending), target: "4.2",
			want: &wantError{reason: ReasonInvalidDesiredVersion, message: `the desired version "4.2" is not a Semantic Version: No Major.Minor.Patch elements found`},
		},

		// Warning cases.
		"an invalid current version warns with InvalidCurrentVersion": {
			cv: clusterVersion("not-a-version", deletesPending), target: "4.2.1",
			want: &wantError{reason: ReasonInvalidCurrentVersion, message: `the current target version "not-a-version" is not a Semantic Version: No Major.Minor.Patch elements found`, warning: true},
		},
		"a z-stream update while Upgradeable is False with overrides set warns with ClusterVersionOverridesSet": {
			cv: clusterVersion("4.1.1", deletesPending, withUnmanagedOverride()), target: "4.1.3",
			want: &wantError{reason: ReasonClusterVersionOverridesSet, message: OverridesMessage, warning: true},
		},
		"a z-stream retarget during a minor update warns with MinorVersionClusterUpdateInProgress": {
			cv:     clusterVersion("4.2.1", deletesPending, progressing(), withHistory(partial("4.2.1"), completed("4.1.1"))),
			target: "4.2.3",
			want: &wantError{
				reason:  ReasonMinorVersionClusterUpdateInProgress,
				message: "Retarget to 4.2.3 while a minor level update from 4.1.1 to 4.2.1 is in progress",
				warning: true,
			},
		},
		"a z-stream retarget during a major update warns with MajorVersionClusterUpdateInProgress": {
			cv:     clusterVersion("5.0.1", deletesPending, progressing(), withHistory(partial("5.0.1"), completed("4.22.4"))),
			target: "5.0.2",
			want: &wantError{
				reason:  ReasonMajorVersionClusterUpdateInProgress,
				message: "Retarget to 5.0.2 while a major level update from 4.22.4 to 5.0.1 is in progress",
				warning: true,
			},
		},
		"overrides take precedence over an update in progress": {
			cv:     clusterVersion("4.2.1", deletesPending, progressing(), withUnmanagedOverride(), withHistory(partial("4.2.1"), completed("4.1.1"))),
			target: "4.2.3",
			want:   &wantError{reason: ReasonClusterVersionOverridesSet, message: OverridesMessage, warning: true},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			err := Upgradeable{}.Run(context.Background(), ReleaseContext{DesiredVersion: tt.target, ClusterVersion: tt.cv})
			checkResult(t, NameUpgradeable, err, tt.want)
		})
	}
}
