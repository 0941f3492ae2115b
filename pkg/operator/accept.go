package operator

import (
	"context"
	"fmt"

	configv1 "github.com/openshift/api/config/v1"

	"github.com/payload-applier/payload-applier/pkg/apply"
	"github.com/payload-applier/payload-applier/pkg/payload"
	"github.com/payload-applier/payload-applier/pkg/precondition"
)

// CheckUpdate runs every acceptance check on a move of the cluster cv to
// rel, requested as target, with what engine's delete ledger remembers and
// the releases the update graph deprecates (nil when none is known), and
// how rel's CRD updates fit the live CRDs and their objects. An install,
// before any release completed, runs precondition.InstallList.
// The operator runs it before it adopts a target; plan runs it to say
// whether a target would be accepted. A ledger that cannot be read fails
// the carried-deletes check rather than passing it unseen; force still
// overrides that.
func CheckUpdate(ctx context.Context, engine *apply.Engine, cv *configv1.ClusterVersion, target string, rel *payload.Release, deprecated map[string]string) []error {
	rc := precondition.ReleaseContext{DesiredVersion: target, ClusterVersion: cv, Release: rel, Deprecated: deprecated}
	if precondition.LastCompletedVersion(cv.Status.History) == "" {
		return precondition.InstallList().RunAll(ctx, rc)
	}
	carried, err := engine.CarriedDeletes(ctx)
	rc.CarriedDeletes = carried
	if rel != nil {
		rc.CRDFindings = engine.CRDCompatibility(ctx, rel)
	}
	errs := precondition.DefaultList().RunAll(ctx, rc)
	if kind, kindErr := precondition.Classify(precondition.LastCompletedVersion(cv.Status.History), target); err != nil && kindErr == nil &&
		(kind == precondition.UpdateMinor || kind == precondition.UpdateMajor) {
		// The check only judges minor and major updates.
		errs = append(errs, &precondition.Error{Nested: err, Name: precondition.NameCarriedDeletes, Reason: precondition.ReasonUnknownError,
			Message: fmt.Sprintf("cannot tell which delete manifests the current release carried: %v", err)})
	}
	return errs
}
