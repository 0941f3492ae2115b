package operator

import (
	"context"
	"errors"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	configclient "github.com/openshift/client-go/config/clientset/versioned"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/payload-applier/payload-applier/pkg/apply"
	"github.com/payload-applier/payload-applier/pkg/apply/deletion"
	"github.com/payload-applier/payload-applier/pkg/clusterversion"
	"github.com/payload-applier/payload-applier/pkg/crdcompat"
	"github.com/payload-applier/payload-applier/pkg/payload"
	"github.com/payload-applier/payload-applier/pkg/precondition"
)

// observer reads what a decision about the ClusterVersion needs; the
// operator and plan share it, so that both decide on the same knowledge.
type observer struct {
	kube    kubernetes.Interface
	config  configclient.Interface
	dynamic dynamic.Interface
	engine  *apply.Engine
	// adminGates and adminAcks name the admin ConfigMaps.
	adminGates, adminAcks types.NamespacedName
	// current reads the release status.desired names; nil when none can
	// be read, as in plan.
	current func(context.Context, *configv1.ClusterVersion) (*payload.Release, error)
	// target is the release the spec asks for, when one is at hand: its
	// CRDs stand for the current release's when that cannot be read.
	target func(*configv1.ClusterVersion) *payload.Release
	// fields caches what the typed ClusterVersion lacks, shared with the
	// status writer; nil reads nothing.
	fields *fieldCache
	// caches are the operator loop's informer stores; nil in plan.
	caches *loopCaches
}

// Observe reads, as the operator's next pass would, what a decision on
// rel, requested as an update of the cluster cv, needs: the cluster's
// Upgradeable state, the engine's deletes and cleanups, and the target's
// checks. plan decides from it with clusterversion.Decide. deprecated is
// what the update graph deprecates, nil when unknown. The CRD checks made
// are returned for plan to reuse.
func Observe(ctx context.Context, kube kubernetes.Interface, cc configclient.Interface, e *apply.Engine, cv *configv1.ClusterVersion,
	rel *payload.Release, deprecated map[string]string) (clusterversion.Observed, *apply.CRDChecks, error) {
	b := &observer{kube: kube, config: cc, dynamic: e.DynamicClient(), engine: e, fields: &fieldCache{dynamic: e.DynamicClient()},
		adminGates: precondition.DefaultAdminGates, adminAcks: precondition.DefaultAdminAcks,
		target: func(*configv1.ClusterVersion) *payload.Release { return rel }}
	obs := clusterversion.Observed{CV: cv, CleanupStallAfter: apply.DefaultStuckAfter}
	if cv == nil {
		t := clusterversion.TargetObservation{Version: rel.Version, Release: rel}
		obs.Target = &t
		return obs, nil, nil
	}
	var err error
	if obs.Deletes, err = b.deletes(ctx, apply.DefaultStuckAfter); err != nil {
		return obs, nil, err
	}
	up := b.upgradeable(ctx, cv)
	obs.Upgradeable = &up
	t, crds := b.targetChecks(ctx, cv, rel, forces(cv, rel.Version), deprecated)
	obs.Target = &t
	return obs, crds, nil
}

// deletes reads the engine's deletes and operand cleanups. A ledger or
// cleanup state that cannot be decoded is reported in the result, not as
// an error: the pass still applies.
func (b *observer) deletes(ctx context.Context, stuckAfter time.Duration) (clusterversion.UpgradeablePass, error) {
	var p clusterversion.UpgradeablePass
	var unreadable *deletion.UnreadableError
	var err error
	p.Deletes, err = b.engine.Deletes(ctx, stuckAfter)
	switch {
	case errors.As(err, &unreadable):
		p.LedgerErr = err
	case err != nil:
		return p, err
	}
	p.Cleanups, err = b.engine.Cleanups(ctx)
	switch {
	case errors.As(err, &unreadable):
		p.CleanupErr = err
	case err != nil:
		return p, err
	}
	return p, nil
}

// upgradeable reads what Upgradeable needs for cv as it is now: the
// ClusterOperators, the two admin ConfigMaps once a release is known,
// and the CRD removals of status.desired's release.
func (b *observer) upgradeable(ctx context.Context, cv *configv1.ClusterVersion) clusterversion.UpgradeableObservation {
	var obs clusterversion.UpgradeableObservation
	if cos, ok := b.caches.clusterOperators(ctx); ok {
		obs.Operators = cos
	} else if cos, err := b.config.ConfigV1().ClusterOperators().List(ctx, metav1.ListOptions{}); err == nil {
		obs.Operators = cos.Items
	}
	var rel *payload.Release
	var relErr error = errNoCurrentRelease
	if cv.Status.Desired.Version != "" && b.current != nil {
		rel, relErr = b.current(ctx, cv)
	}
	obs.CRDRemovals = b.crdRemovals(ctx, cv, rel, relErr)
	if obs.AdminAckVersion = precondition.AdminAckVersion(cv.Status.History); obs.AdminAckVersion != "" {
		obs.AdminGates, obs.AdminAcks = b.adminConfigMaps(ctx, rel)
	}
	return obs
}

// errNoCurrentRelease is why plan judges CRD removals without the current
// release: it has none.
var errNoCurrentRelease = errors.New("no current release at hand")

// crdRemovals judges rel, the release status.desired names, by the
// engine's PendingCRDRemovals. Without that release (apply is given only
// its target, plan has none) the live CRDs that the target ships stand
// for it. With neither, nothing is pending here: the pass reports why the
// release cannot be loaded.
func (b *observer) crdRemovals(ctx context.Context, cv *configv1.ClusterVersion, rel *payload.Release, relErr error) []crdcompat.PendingRemoval {
	current := cv.Status.Desired.Version
	if current == "" {
		return nil
	}
	if rel != nil {
		return b.engine.PendingCRDRemovals(ctx, rel)
	}
	var target *payload.Release
	if b.target != nil {
		target = b.target(cv)
	}
	if target == nil || target.Version == current {
		klog.FromContext(ctx).V(2).Info("CRD version removals not judged: the current release is not loaded", "version", current, "err", relErr)
		return nil
	}
	return b.engine.LivePendingCRDRemovals(ctx, current, crdNames(target))
}

// adminConfigMaps reads the two admin ConfigMaps, and whether rel, the
// release judged (nil when it could not be loaded), ships an absent one.
func (b *observer) adminConfigMaps(ctx context.Context, rel *payload.Release) (gates, acks precondition.AdminConfigMap) {
	read := func(name types.NamespacedName) precondition.AdminConfigMap {
		if cm, ok := b.caches.adminConfigMap(ctx, name); ok {
			return cm
		}
		return ReadAdminConfigMap(ctx, b.kube, name)
	}
	gates, acks = read(b.adminGates), read(b.adminAcks)
	if rel != nil {
		gates.Shipped = ships(rel, b.adminGates)
		acks.Shipped = ships(rel, b.adminAcks)
	}
	return gates, acks
}

// targetChecks reads what Judge needs of rel, requested as an update of
// cv: the ledger's carried deletes, the CRD checks and acceptRisks.
func (b *observer) targetChecks(ctx context.Context, cv *configv1.ClusterVersion, rel *payload.Release, force bool, deprecated map[string]string) (clusterversion.TargetObservation, *apply.CRDChecks) {
	t := clusterversion.TargetObservation{Version: rel.Version, Release: rel, Force: force, Deprecated: deprecated}
	if clusterversion.AlreadyTarget(cv, rel.Version) {
		// Not judged again: nothing to read.
		return t, nil
	}
	t.AcceptRisks = b.acceptRisks(ctx, cv)
	if precondition.LastCompletedVersion(cv.Status.History) == "" {
		return t, nil
	}
	t.CarriedDeletes, t.CarriedErr = b.engine.CarriedDeletes(ctx)
	crds := b.engine.CheckCRDs(ctx, rel)
	t.CRDFindings = crds.Findings
	return t, crds
}

// acceptRisks returns the names in cv's spec.desiredUpdate.acceptRisks,
// read through the dynamic client once per resourceVersion; none when it
// cannot be read, which is logged: an unread acceptance refuses, it never
// accepts.
func (b *observer) acceptRisks(ctx context.Context, cv *configv1.ClusterVersion) []string {
	f, err := b.fields.of(ctx, cv)
	if err != nil {
		klog.FromContext(ctx).Info("Reading spec.desiredUpdate.acceptRisks failed; no risk is accepted", "err", err)
		return nil
	}
	return f.acceptRisks
}
