package operator

import (
	"context"
	"fmt"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	configinformers "github.com/openshift/client-go/config/informers/externalversions"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"

	"github.com/payload-applier/payload-applier/pkg/apply"
	"github.com/payload-applier/payload-applier/pkg/apply/cleanup"
)

// RunOptions tune the operator loop. Zero values take the defaults given.
type RunOptions struct {
	// ResyncInterval is the base period between syncs; each wait is drawn
	// from [interval, 2×interval). Default 2 minutes, as the CVO.
	ResyncInterval time.Duration
	// DeletePoll is how often in-progress deletes are re-checked between
	// syncs, so Upgradeable turns True soon after they finish. Default 5s.
	DeletePoll time.Duration
	// LeaderElection runs the loop only while holding the Lease LeaseName.
	LeaderElection bool
	// LeaseName defaults to apply.DefaultSelf().Lease, which the engine
	// refuses to delete.
	LeaseName string
	// LeaseDuration, RenewDeadline and RetryPeriod default, under Run, to
	// library-go's timings for OpenShift, as the CVO takes them: 137s,
	// 107s and 26s, or 270s, 240s and 60s on a single-replica control
	// plane. HoldLease (apply) defaults to 30s, 20s and 5s.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

func (o *RunOptions) setDefaults() {
	if o.ResyncInterval == 0 {
		o.ResyncInterval = 2 * time.Minute
	}
	if o.DeletePoll == 0 {
		o.DeletePoll = 5 * time.Second
	}
	if o.LeaseName == "" {
		o.LeaseName = apply.DefaultSelf().Lease
	}
	if o.LeaseDuration == 0 {
		o.LeaseDuration, o.RenewDeadline, o.RetryPeriod = 30*time.Second, 20*time.Second, 5*time.Second
	}
}

// Run bootstraps the cluster and reconciles until ctx ends. With leader
// election it returns when leadership is lost, so that the process restarts
// clean rather than act on stale state.
func (o *Operator) Run(ctx context.Context, opts RunOptions) error {
	if opts.LeaderElection && opts.LeaseDuration == 0 {
		opts.LeaseDuration, opts.RenewDeadline, opts.RetryPeriod = openShiftLeaseTimings(ctx, o.config)
	}
	opts.setDefaults()
	logger := klog.FromContext(ctx)
	if err := wait.PollUntilContextCancel(ctx, 2*time.Second, true, func(ctx context.Context) (bool, error) {
		if err := o.Bootstrap(ctx); err != nil {
			logger.Error(err, "Bootstrap failed; retrying")
			return false, nil
		}
		return true, nil
	}); err != nil {
		return err
	}
	o.health.set(func(h *health) { h.bootstrapped = true })
	o.StartEvents()
	defer o.Shutdown()
	if !opts.LeaderElection {
		o.health.lead(o.clock.Now())
		o.loop(ctx, opts)
		return nil
	}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: o.cfg.Namespace, Name: opts.LeaseName},
		Client:     o.kube.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: o.cfg.Identity, EventRecorder: o.recorder},
	}
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   opts.LeaseDuration,
		RenewDeadline:   opts.RenewDeadline,
		RetryPeriod:     opts.RetryPeriod,
		ReleaseOnCancel: true,
		Name:            opts.LeaseName,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				logger.Info("Acquired leadership", "identity", o.cfg.Identity)
				o.health.lead(o.clock.Now())
				o.loop(ctx, opts)
			},
			OnStoppedLeading: func() {
				logger.Info("Leadership ended", "identity", o.cfg.Identity)
				o.health.set(func(h *health) { h.leading = false })
			},
			OnNewLeader: func(id string) {
				if id != o.cfg.Identity {
					logger.Info("Another instance leads", "leader", id)
				}
			},
		},
	})
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	elector.Run(ctx)
	return ctx.Err()
}

// cacheSyncWait bounds the wait for the loop's informers before its first
// pass.
const cacheSyncWait = 2 * time.Second

// loop syncs on a jittered interval, on relevant changes to the
// ClusterVersion or ClusterOperators, and retries failures sooner.
func (o *Operator) loop(ctx context.Context, opts RunOptions) {
	logger := klog.FromContext(ctx)
	trigger := make(chan struct{}, 1)
	poke := func() {
		select {
		case trigger <- struct{}{}:
		default:
		}
	}
	factory := configinformers.NewSharedInformerFactory(o.config, 0)
	_, _ = factory.Config().V1().ClusterVersions().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(oldObj, newObj interface{}) {
			oldCV, ok1 := oldObj.(*configv1.ClusterVersion)
			newCV, ok2 := newObj.(*configv1.ClusterVersion)
			// The spec, and the admin's operand cleanup policy, which an
			// abort must see at once.
			if ok1 && ok2 && (oldCV.Generation != newCV.Generation ||
				cleanup.PolicyOf(oldCV.Annotations) != cleanup.PolicyOf(newCV.Annotations)) {
				poke()
			}
		},
	})
	_, _ = factory.Config().V1().ClusterOperators().Informer().AddEventHandler(o.clusterOperatorEvents(poke))
	o.caches.set(func(c *loopCaches) {
		c.cvInformer = factory.Config().V1().ClusterVersions().Informer()
		c.coInformer = factory.Config().V1().ClusterOperators().Informer()
	})
	defer o.caches.set(func(c *loopCaches) { c.cvInformer, c.coInformer, c.fgInformer = nil, nil, nil })
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	// The first pass reads through them too when they list at once; one
	// that cannot list does not hold it back for long.
	synced, cancel := context.WithTimeout(ctx, cacheSyncWait)
	factory.WaitForCacheSync(synced.Done())
	cancel()
	// Resyncs then read only the objects that changed since they were
	// found as their manifests want.
	o.engine.WatchLive(ctx)
	defer o.observe.watchAdminAcks(ctx, poke)()
	// The update graph is read beside the syncs, which never wait for it;
	// an answer that changes the status starts one.
	o.graphs.start(ctx, poke)
	// So are conditional update risks, which may ask a slow Prometheus.
	o.risks.start(ctx, poke)
	// So are release images: retrieving and verifying one never holds
	// back the reconcile of the current release.
	if o.images != nil {
		o.images.start(ctx, poke)
	}

	var gates featureGateWatch
	defer gates.stop()

	failures := 0
	deletesPending := false
	for ctx.Err() == nil {
		out, err := o.Sync(forLoop(ctx), nil)
		// Once the pass is reported, not before.
		o.engine.StartWatches()
		gates.startOnce(ctx, o, poke)
		ended := o.clock.Now()
		o.health.set(func(h *health) { h.lastPass = ended })
		next := wait.Jitter(opts.ResyncInterval, 1.0)
		switch {
		case err != nil:
			failures++
			logger.Error(err, "Sync failed")
			next = retryDelay(opts.ResyncInterval, failures)
		case out.Result != nil && !out.Result.Complete():
			failures++
			next = retryDelay(opts.ResyncInterval, failures)
		default:
			failures = 0
		}
		deletesPending = out != nil && out.Result != nil && len(out.Result.Deletes.InProgress) > 0
		o.waitForNextSync(ctx, trigger, next, deletesPending, opts.DeletePoll)
	}
}

// waitForNextSync waits for the timer or a trigger. While deletes are in
// progress it re-checks them every poll and syncs as soon as one finishes.
func (o *Operator) waitForNextSync(ctx context.Context, trigger <-chan struct{}, next time.Duration, deletesPending bool, poll time.Duration) {
	timer := time.NewTimer(next)
	defer timer.Stop()
	var tick <-chan time.Time
	if deletesPending {
		t := time.NewTicker(poll)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-trigger:
			return
		case <-timer.C:
			return
		case <-tick:
			before, err := o.engine.Deletes(ctx, o.cfg.Sync.StuckAfter)
			if err != nil {
				continue
			}
			if err := o.engine.RefreshDeletes(ctx); err != nil {
				continue
			}
			after, err := o.engine.Deletes(ctx, o.cfg.Sync.StuckAfter)
			if err == nil && len(after.InProgress) < len(before.InProgress) {
				return
			}
		}
	}
}

// clusterOperatorEvents pokes a pass when a ClusterOperator appears or
// changes as operatorChanged says; not for those there at start, which the
// first pass reads anyway.
func (o *Operator) clusterOperatorEvents(poke func()) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(_ interface{}, initial bool) {
			if !initial {
				poke()
			}
		},
		UpdateFunc: func(oldObj, newObj interface{}) {
			oldCO, ok1 := oldObj.(*configv1.ClusterOperator)
			newCO, ok2 := newObj.(*configv1.ClusterOperator)
			if !ok1 || !ok2 {
				return
			}
			o.metrics.observeOperatorChange(oldCO, newCO)
			if operatorChanged(oldCO, newCO) {
				poke()
			}
		},
	}
}

// operatorChanged reports the ClusterOperator changes the CVO reacts to:
// its operator version, Available or Degraded.
func operatorChanged(a, b *configv1.ClusterOperator) bool {
	version := func(co *configv1.ClusterOperator) string {
		for _, v := range co.Status.Versions {
			if v.Name == "operator" {
				return v.Version
			}
		}
		return ""
	}
	cond := func(co *configv1.ClusterOperator, t configv1.ClusterStatusConditionType) configv1.ConditionStatus {
		for _, c := range co.Status.Conditions {
			if c.Type == t {
				return c.Status
			}
		}
		return ""
	}
	return version(a) != version(b) ||
		cond(a, configv1.OperatorAvailable) != cond(b, configv1.OperatorAvailable) ||
		cond(a, configv1.OperatorDegraded) != cond(b, configv1.OperatorDegraded) ||
		cond(a, configv1.OperatorUpgradeable) != cond(b, configv1.OperatorUpgradeable)
}
