package operator

import (
	"context"
	"fmt"

	configv1 "github.com/openshift/api/config/v1"

	"github.com/payload-applier/payload-applier/pkg/apply"
	"github.com/payload-applier/payload-applier/pkg/payload"
	"github.com/payload-applier/payload-applier/pkg/precondition"
)

// CheckUpdate runs every acceptance check on an update of the cluster cv
// to rel, requested as target, with what engine's delete ledger remembers.
// The operator runs it before it adopts a target; plan runs it to say
// whether a target would be accepted. A ledger that cannot be read fails
// the carried-deletes check rather than passing it unseen; force still
// overrides that.
func CheckUpdate(ctx context.Context, engine *apply.Engine, cv *configv1.ClusterVersion, target string, rel *payload.Release) []error {
	rc := precondition.ReleaseContext{DesiredVersion: target, ClusterVersion: cv, Release: rel}
	carried, err := engine.CarriedDeletes(ctx)
	rc.CarriedDeletes = carried
	errs := precondition.DefaultList().RunAll(ctx, rc)
	if err != nil {
		errs = append(errs, &precondition.Error{Nested: err, Name: precondition.NameCarriedDeletes, Reason: precondition.ReasonUnknownError,
			Message: fmt.Sprintf("cannot tell which delete manifests the current release carried: %v", err)})
	}
	return errs
}
