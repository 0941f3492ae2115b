package operator

import (
	"context"
	"fmt"

	configv1 "github.com/openshift/api/config/v1"
	"k8s.io/klog/v2"

	"github.com/payload-applier/payload-applier/pkg/apply"
	"github.com/payload-applier/payload-applier/pkg/payload"
	"github.com/payload-applier/payload-applier/pkg/precondition"
)

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
	// CRDs are the CRD compatibility checks the judge made, nil when it
	// made none (not checked, or an install).
	CRDs *apply.CRDChecks
}

// Judge decides whether the operator accepts rel, requested as target, on
// the cluster cv, with what engine reads of the cluster (the delete
// ledger's carried deletes; the live CRDs and their objects) and the
// releases the update graph deprecates (nil when none is known). It is
// the one acceptance rule: the operator's Sync follows it before it adopts
// a target, and plan reports it.
//
// A target that is already the cluster's desired release, once a pass
// began, is not checked again; nor is anything without a ClusterVersion.
// Before a release completed, only precondition.InstallList runs; after,
// precondition.DefaultList. Force comes from cv's spec.desiredUpdate when
// it requests target. A ledger that cannot be read fails the
// carried-deletes check rather than passing it unseen; force still
// overrides that.
func Judge(ctx context.Context, engine *apply.Engine, cv *configv1.ClusterVersion, target string, rel *payload.Release, deprecated map[string]string) Verdict {
	switch {
	case cv == nil:
		return Verdict{NotChecked: "the cluster has no ClusterVersion, so applying the payload installs it"}
	case cv.Status.Desired.Version == target && len(cv.Status.History) > 0:
		return Verdict{NotChecked: fmt.Sprintf("%s is already the cluster's target", target)}
	}
	v := Verdict{Checked: true, Current: precondition.LastCompletedVersion(cv.Status.History)}
	v.Force = forces(cv, target)
	rc := precondition.ReleaseContext{DesiredVersion: target, ClusterVersion: cv, Release: rel, Deprecated: deprecated,
		AcceptRisks: judgedAcceptRisks(ctx, engine, cv)}
	if v.Current == "" {
		v.Install = true
		v.Errors = precondition.InstallList().RunAll(ctx, rc)
	} else {
		v.Errors, v.CRDs = checkUpdate(ctx, engine, rc, v.Current)
	}
	v.Blocking, v.Summary = precondition.Summarize(v.Errors, v.Force)
	if v.Summary != nil {
		v.Message = v.Summary.Error()
	}
	forcedBlocking, _ := precondition.Summarize(v.Errors, true)
	v.Forceable = !forcedBlocking
	return v
}

// checkUpdate runs precondition.DefaultList on an update from current,
// with the carried deletes and the CRD checks engine reads; it returns the
// failures and the CRD checks, nil without a release.
func checkUpdate(ctx context.Context, engine *apply.Engine, rc precondition.ReleaseContext, current string) ([]error, *apply.CRDChecks) {
	carried, err := engine.CarriedDeletes(ctx)
	rc.CarriedDeletes = carried
	var crds *apply.CRDChecks
	if rc.Release != nil {
		crds = engine.CheckCRDs(ctx, rc.Release)
		rc.CRDFindings = crds.Findings
	}
	errs := precondition.DefaultList().RunAll(ctx, rc)
	if kind, kindErr := precondition.Classify(current, rc.DesiredVersion); err != nil && kindErr == nil &&
		(kind == precondition.UpdateMinor || kind == precondition.UpdateMajor) {
		// The check only judges minor and major updates.
		errs = append(errs, &precondition.Error{Nested: err, Name: precondition.NameCarriedDeletes, Reason: precondition.ReasonUnknownError,
			Message: fmt.Sprintf("cannot tell which delete manifests the current release carried: %v", err)})
	}
	return errs, crds
}

// judgedAcceptRisks reads cv's spec.desiredUpdate.acceptRisks for Judge;
// an unreadable list accepts nothing.
func judgedAcceptRisks(ctx context.Context, engine *apply.Engine, cv *configv1.ClusterVersion) []string {
	if engine == nil || engine.DynamicClient() == nil {
		return nil
	}
	names, err := AcceptRisks(ctx, engine.DynamicClient(), cv.Name)
	if err != nil {
		klog.FromContext(ctx).Info("Reading spec.desiredUpdate.acceptRisks failed; no risk is accepted", "err", err)
	}
	return names
}

// forces says whether cv's spec asks for target with force: by version, or
// by image, whose release is target.
func forces(cv *configv1.ClusterVersion, target string) bool {
	du := cv.Spec.DesiredUpdate
	if du == nil || !du.Force {
		return false
	}
	if du.Version == "" && du.Image != "" {
		return true
	}
	return targetVersion(cv) == target
}
