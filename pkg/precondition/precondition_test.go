package precondition

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"reflect"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
)

// fakeCheck records that it ran and returns a scripted error.
type fakeCheck struct {
	name string
	err  error
	ran  *[]string
}

func (f fakeCheck) Name() string { return f.name }

func (f fakeCheck) Run(_ context.Context, _ ReleaseContext) error {
	*f.ran = append(*f.ran, f.name)
	return f.err
}

func TestRunAll(t *testing.T) {
	var ran []string
	first := &Error{Name: "First", Reason: "Blocked", Message: "first failed"}
	plain := fmt.Errorf("lookup failed: %w", fs.ErrNotExist)
	list := List{
		fakeCheck{name: "First", err: first, ran: &ran},
		fakeCheck{name: "Second", ran: &ran},
		fakeCheck{name: "Third", err: plain, ran: &ran},
	}

	errs := list.RunAll(context.Background(), ReleaseContext{DesiredVersion: "4.2.0"})

	t.Run("every check runs in order even after a failure", func(t *testing.T) {
		if want := []string{"First", "Second", "Third"}; !reflect.DeepEqual(ran, want) {
			t.Errorf("want %q to run, got %q", want, ran)
		}
	})
	t.Run("only failures are returned, in order", func(t *testing.T) {
		if len(errs) != 2 {
			t.Fatalf("want 2 errors, got %d: %v", len(errs), errs)
		}
		if errs[0] != first {
			t.Errorf("a precondition error must be returned unchanged, got %#v", errs[0])
		}
	})
	t.Run("a plain error is attributed to its check and blocks", func(t *testing.T) {
		checkResult(t, "Third", errs[1], &wantError{reason: ReasonUnknownError, message: "lookup failed: file does not exist"})
		if !errors.Is(errs[1], fs.ErrNotExist) {
			t.Errorf("the wrapped plain error must keep its cause reachable")
		}
	})
}

func TestDefaultList(t *testing.T) {
	var names []string
	for _, p := range DefaultList() {
		names = append(names, p.Name())
	}
	want := []string{"ClusterVersionRollback", "ClusterVersionGiantHop", "ClusterVersionUpgradeable", "DeleteManifestsCarriedAcrossMinor", "ReleaseDeprecated", "ClusterVersionRecommendedUpdate", "CustomResourceDefinitionCompatibility"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("want checks %q in that order, got %q", want, names)
	}
}

// TestDefaultListScenarios runs the default checks and Summarize together, as
// the operator does when an update is requested.
func TestDefaultListScenarios(t *testing.T) {
	deletesPending := clusterVersion("4.19.3",
		notUpgradeableBecause(deletionReason, deletionMessage),
		withHistory(completed("4.19.3"), completed("4.19.1")))
	blockedLine := `Precondition "ClusterVersionUpgradeable" failed because of "ResourceDeletionInProgress": ` + deletionMessage

	tests := map[string]struct {
		cv           *configv1.ClusterVersion
		target       string
		force        bool
		wantBlocking bool
		wantMessage  string // empty means every check passes
	}{
		"a z-stream update is accepted while deletes keep Upgradeable False": {
			cv: deletesPending, target: "4.19.5",
		},
		"a minor update is blocked while deletes keep Upgradeable False": {
			cv: deletesPending, target: "4.20.0", wantBlocking: true, wantMessage: blockedLine,
		},
		"force lets the minor update through and records the accepted risk": {
			cv: deletesPending, target: "4.20.0", force: true,
			wantMessage: "Forced through blocking failures: " + blockedLine,
		},
		"a two-minor update is blocked by both the giant hop and Upgradeable": {
			cv: deletesPending, target: "4.21.0", wantBlocking: true,
			wantMessage: "Multiple precondition checks failed:\n" +
				`* Precondition "ClusterVersionGiantHop" failed because of "MultipleMinorVersionsUpdate": ` +
				"4.21.0 is more than one minor version beyond the current target 4.19.3; update through each minor version in between\n" +
				"* " + blockedLine,
		},
		"a rollback past the previous version is blocked only by the rollback check": {
			cv: deletesPending, target: "4.19.0", wantBlocking: true,
			wantMessage: `Precondition "ClusterVersionRollback" failed because of "LowDesiredVersion": ` +
				"4.19.0 is less than the current target 4.19.3, but the only supported rollback is to the cluster's previous version " +
				"4.19.1 (quay.io/ocp/release:4.19.1)",
		},
		"every check passes without a ClusterVersion": {
			cv: nil, target: "9.0.0",
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			errs := DefaultList().RunAll(context.Background(), ReleaseContext{DesiredVersion: tt.target, ClusterVersion: tt.cv})
			blocking, err := Summarize(errs, tt.force)
			if blocking != tt.wantBlocking {
				t.Errorf("blocking: want %v, got %v", tt.wantBlocking, blocking)
			}
			switch {
			case tt.wantMessage == "" && err != nil:
				t.Errorf("want no failure, got %v", err)
			case tt.wantMessage != "" && err == nil:
				t.Errorf("want %q, got no failure", tt.wantMessage)
			case err != nil && err.Error() != tt.wantMessage:
				t.Errorf("message:\nwant %q\n got %q", tt.wantMessage, err.Error())
			}
		})
	}
}
