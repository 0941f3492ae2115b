package clusterversion

import (
	"context"
	"fmt"

	configv1 "github.com/openshift/api/config/v1"

	"github.com/payload-applier/payload-applier/pkg/crdcompat"
	"github.com/payload-applier/payload-applier/pkg/payload"
	"github.com/payload-applier/payload-applier/pkg/precondition"
)

// TargetObservation is what was read about a requested release to judge
// it: the release itself and the cluster state its checks need.
type TargetObservation struct {
	// Version is the version requested.
	Version string
	// Release is the requested release as loaded, nil when it is not.
	Release *payload.Release
	// Force is set when the spec requests Version with force.
	Force bool
	// CarriedDeletes are the delete ledger's carriers
	// (precondition.ReleaseContext.CarriedDeletes); CarriedErr is set
	// when the ledger cannot be read.
	CarriedDeletes map[payload.ObjectID][]string
	CarriedErr     error
	// CRDFindings are what crdcompat found wrong with the target's CRD
	// updates.
	CRDFindings []crdcompat.Finding
	// Deprecated maps the releases the update graph deprecates to its
	// message; nil when no graph is known.
	Deprecated map[string]string
	// AcceptRisks names the risks spec.desiredUpdate.acceptRisks accepts.
	AcceptRisks []string
}

// Verdict is what Judge decided about a target.
type Verdict struct {
	// Checked is false when the target needs no acceptance; NotChecked
	// then says why.
	Checked    bool
	NotChecked string
	// Current is the last completed release, "" before one completed:
	// then Install is set, and only precondition.InstallList ran.
	Current string
	Install bool
	// Force is set when the ClusterVersion requests the target with force.
	Force bool
	// Errors holds every failed check, in run order.
	Errors []error
	// Blocking refuses the target, force taken into account.
	Blocking bool
	// Forceable is set when force would accept the target: no blocking
	// failure is Unforceable.
	Forceable bool
	// Summary condenses Errors (precondition.Summarize), nil when none
	// failed; Message is its text, "" then.
	Summary error
	Message string
}

// AlreadyTarget says whether version is the release cv already works
// towards, once a pass began: it is not judged again.
func AlreadyTarget(cv *configv1.ClusterVersion, version string) bool {
	return cv.Status.Desired.Version == version && len(cv.Status.History) > 0
}

// Judge decides whether the operator accepts the target t on the cluster
// cv, whose status carries the Upgradeable condition to judge by. It is
// the one acceptance rule: the operator follows it before it adopts a
// target, and plan reports it.
//
// A target that is already the cluster's desired release, once a pass
// began, is not checked again; nor is anything without a ClusterVersion.
// Before a release completed, only precondition.InstallList runs; after,
// precondition.DefaultList. A ledger that cannot be read fails the
// carried-deletes check of a minor or major update rather than passing it
// unseen; force still overrides that.
func Judge(cv *configv1.ClusterVersion, t TargetObservation) Verdict {
	switch {
	case cv == nil:
		return Verdict{NotChecked: "the cluster has no ClusterVersion, so applying the payload installs it"}
	case AlreadyTarget(cv, t.Version):
		return Verdict{NotChecked: fmt.Sprintf("%s is already the cluster's target", t.Version)}
	}
	v := Verdict{Checked: true, Current: precondition.LastCompletedVersion(cv.Status.History), Force: t.Force}
	rc := precondition.ReleaseContext{DesiredVersion: t.Version, ClusterVersion: cv, Release: t.Release, Deprecated: t.Deprecated,
		AcceptRisks: t.AcceptRisks, CarriedDeletes: t.CarriedDeletes, CRDFindings: t.CRDFindings}
	// The checks read nothing: rc holds all they judge.
	ctx := context.Background()
	if v.Current == "" {
		v.Install = true
		v.Errors = precondition.InstallList().RunAll(ctx, rc)
	} else {
		v.Errors = precondition.DefaultList().RunAll(ctx, rc)
		if kind, err := precondition.Classify(v.Current, t.Version); t.CarriedErr != nil && err == nil &&
			(kind == precondition.UpdateMinor || kind == precondition.UpdateMajor) {
			// The check only judges minor and major updates.
			v.Errors = append(v.Errors, &precondition.Error{Nested: t.CarriedErr, Name: precondition.NameCarriedDeletes, Reason: precondition.ReasonUnknownError,
				Message: fmt.Sprintf("cannot tell which delete manifests the current release carried: %v", t.CarriedErr)})
		}
	}
	v.Blocking, v.Summary = precondition.Summarize(v.Errors, v.Force)
	if v.Summary != nil {
		v.Message = v.Summary.Error()
	}
	forcedBlocking, _ := precondition.Summarize(v.Errors, true)
	v.Forceable = !forcedBlocking
	return v
}
