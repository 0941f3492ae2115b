// Package precondition decides whether a requested release may be accepted.
//
// The checks are pure functions of the requested release and the
// ClusterVersion the operator already holds, so they need no client, cannot
// race the cluster, and are tested as tables. Every check runs on every
// request; a typed Error marks each failure as blocking or as a warning, and
// Summarize condenses the failures at the edge, where the operator decides
// whether to adopt the release and which risks it records as accepted.
package precondition

import (
	"context"
	"errors"

	configv1 "github.com/openshift/api/config/v1"
	"k8s.io/klog/v2"

	"github.com/payload-applier/payload-applier/pkg/crdcompat"
	"github.com/payload-applier/payload-applier/pkg/payload"
)

// ReasonUnknownError labels a failure that a check returned as a plain error;
// RunAll gives it this reason so every failure can be reported by name.
const ReasonUnknownError = "UnknownError"

// ReleaseContext is what a check knows about a requested update.
type ReleaseContext struct {
	// DesiredVersion is the Semantic Version of the requested release.
	DesiredVersion string
	// DesiredImage is the pull spec of the requested release, empty when the
	// request names a version only.
	DesiredImage string
	// ClusterVersion is the cluster's state before the update is accepted:
	// status.desired is the current target, status.history and
	// status.conditions tell how the cluster got there, and spec.overrides
	// tells whether parts of the payload are unmanaged. Every check passes
	// when it is nil, because a cluster without a ClusterVersion has nothing
	// installed that an update could break.
	ClusterVersion *configv1.ClusterVersion
	// Release is the requested release as loaded, nil when it is not
	// loaded; checks that read its manifests pass without it.
	Release *payload.Release
	// CarriedDeletes maps each object a delete manifest named to the
	// releases whose passes carried that manifest, as the delete ledger
	// remembers them (deletion.Carriers). It is cluster state, so that
	// `apply` and `start` judge alike.
	CarriedDeletes map[payload.ObjectID][]string
	// CRDFindings are what pkg/crdcompat found wrong with the target's
	// updates of the cluster's CRDs (Engine.CRDCompatibility).
	CRDFindings []crdcompat.Finding
	// Deprecated maps each release the update graph marks deprecated to
	// its message; nil when no graph is known.
	Deprecated map[string]string
	// AcceptRisks are the names of the conditional update risks the
	// ClusterVersion's spec.desiredUpdate.acceptRisks accepts.
	AcceptRisks []string
}

// Precondition is one acceptance check for a requested update.
type Precondition interface {
	// Name identifies the check in messages, events and accepted risks.
	Name() string
	// Run returns nil when the update is acceptable, and otherwise an error,
	// normally an *Error whose NonBlockingWarning says whether the failure
	// blocks the update or is only a risk to record.
	Run(ctx context.Context, rc ReleaseContext) error
}

// Error is one failed check. Reason is a short UpperCamelCase word suitable
// for switch statements and condition reasons; Message is for people.
type Error struct {
	// Nested is the underlying cause, if any, kept for errors.Is and As.
	Nested error
	// Reason classifies the failure, for example LowDesiredVersion.
	Reason string
	// Message explains the failure.
	Message string
	// Name is the name of the check that failed.
	Name string
	// NonBlockingWarning marks a failure that is reported, and recorded as an
	// accepted risk, without blocking the update.
	NonBlockingWarning bool
	// Unforceable marks a blocking failure that force does not override,
	// such as a CRD update that would lose stored data.
	Unforceable bool
}

// Error returns the message alone; Summarize adds the check name and reason.
func (e *Error) Error() string { return e.Message }

// Unwrap returns the nested cause.
func (e *Error) Unwrap() error { return e.Nested }

// List is an ordered set of checks.
type List []Precondition

// DefaultList returns the checks the operator runs on every update request,
// in the CVO's order: rollback, giant hop, then Upgradeable; then the
// payload's own: delete manifests carried across a minor version; then
// the update graph's: a deprecated target, a target not recommended;
// then the cluster's: CRD
// updates that would break stored objects or their clients.
func DefaultList() List {
	return List{Rollback{}, GiantHop{}, Upgradeable{}, CarriedDeletes{}, ReleaseDeprecated{}, RecommendedUpdate{}, CRDCompatibility{}}
}

// InstallList returns the checks an install runs: an install has no
// current release to compare with, but must not start on a deprecated one.
func InstallList() List {
	return List{ReleaseDeprecated{}}
}

// RunAll runs every check, in order, and returns every failure, so that one
// failure never hides another. A check that returns a plain error has it
// wrapped in an *Error carrying the check's name and ReasonUnknownError, so
// each failure can be attributed; such a failure blocks.
func (l List) RunAll(ctx context.Context, rc ReleaseContext) []error {
	logger := klog.FromContext(ctx)
	var errs []error
	for _, p := range l {
		err := p.Run(ctx, rc)
		if err == nil {
			continue
		}
		var pErr *Error
		if !errors.As(err, &pErr) {
			err = &Error{Nested: err, Reason: ReasonUnknownError, Message: err.Error(), Name: p.Name()}
		}
		logger.V(2).Info("Precondition failed", "precondition", p.Name(), "desiredVersion", rc.DesiredVersion, "err", err)
		errs = append(errs, err)
	}
	return errs
}
