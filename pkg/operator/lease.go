package operator

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	configclient "github.com/openshift/client-go/config/clientset/versioned"
	libgoleaderelection "github.com/openshift/library-go/pkg/config/leaderelection"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
)

// LeaseHeldError: another instance holds the operator's Lease.
type LeaseHeldError struct {
	Holder    string
	RenewedAt time.Time
}

func (e *LeaseHeldError) Error() string {
	return fmt.Sprintf("another instance, %q, holds the applier's Lease (renewed %s)", e.Holder, e.RenewedAt.UTC().Format(time.RFC3339))
}

// maxObservedLeaseDuration caps how long HoldLease watches a Lease that
// looks abandoned, whatever duration its holder wrote in it.
const maxObservedLeaseDuration = 5 * time.Minute

// HoldLease runs fn while holding the operator's leader-election Lease,
// the one `start` takes, so that a running operator waits meanwhile and
// the two never write at once. It runs client-go's leader election, so a
// Lease is taken over only once this process has seen it unchanged, on its
// own clock, for the duration its holder wrote in it: a holder whose clock
// lags keeps its Lease. A Lease another instance renewed within that
// duration, by this clock, is refused at once unless waitFor allows a
// wait; one that looks abandoned is watched for its duration before it is
// taken. Either way the answer is a *LeaseHeldError when the Lease stays
// held. The Lease is renewed while fn runs and released after; losing it
// cancels fn's ctx.
func (o *Operator) HoldLease(ctx context.Context, waitFor time.Duration, fn func(context.Context) error) error {
	opts := RunOptions{}
	opts.setDefaults()
	lock := &gatedLock{Interface: &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: o.cfg.Namespace, Name: opts.LeaseName},
		Client:     o.kube.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: o.cfg.Identity},
	}}
	rec, _, err := lock.Get(ctx)
	switch {
	case apierrors.IsNotFound(err):
		rec = &resourcelock.LeaderElectionRecord{}
	case err != nil:
		return fmt.Errorf("read the Lease %s/%s: %w", o.cfg.Namespace, opts.LeaseName, err)
	}
	held := heldBy(o.cfg.Identity, rec)
	duration, retry, renew := leaseTiming(held != nil, rec, opts)
	// A free Lease is taken at the first try, which may take a request's
	// time; a held one is waited for.
	acquireWithin := max(waitFor, renew)
	if held != nil {
		if waitFor == 0 && o.clock.Since(held.RenewedAt) < duration {
			return held
		}
		// Seen unchanged for its duration, checked every retry, from now.
		acquireWithin = max(waitFor, duration+3*retry)
		klog.FromContext(ctx).Info("Watching the Lease before taking it", "holder", held.Holder, "renewed", held.RenewedAt, "for", acquireWithin)
	}

	electCtx, stopElection := context.WithCancel(ctx)
	defer stopElection()
	var (
		finished = make(chan struct{})
		done     = make(chan error, 1)
	)
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   duration,
		RenewDeadline:   renew,
		RetryPeriod:     retry,
		ReleaseOnCancel: true,
		Name:            opts.LeaseName,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(leadCtx context.Context) {
				err := fn(leadCtx)
				close(finished)
				stopElection()
				done <- err
			},
			OnStoppedLeading: func() {},
		},
	})
	if err != nil {
		return fmt.Errorf("acquire the Lease %s/%s: %w", o.cfg.Namespace, opts.LeaseName, err)
	}
	go func() {
		deadline := time.NewTimer(acquireWithin)
		defer deadline.Stop()
		select {
		case <-deadline.C:
			if lock.close() {
				stopElection()
			}
		case <-electCtx.Done():
		}
	}()
	// Run returns once fn's Lease is released or lost, or when it was
	// never won.
	elector.Run(electCtx)
	if lock.won() {
		lost := false
		select {
		case <-finished:
		default:
			lost = ctx.Err() == nil
		}
		err := <-done
		if lost {
			return errors.Join(fmt.Errorf("lost the Lease %s/%s to %q while applying", o.cfg.Namespace, opts.LeaseName, elector.GetLeader()), err)
		}
		return err
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	latest, _, err := lock.Get(context.WithoutCancel(ctx))
	if err != nil {
		return fmt.Errorf("acquire the Lease %s/%s: %w", o.cfg.Namespace, opts.LeaseName, err)
	}
	if held := heldBy(o.cfg.Identity, latest); held != nil {
		return held
	}
	return &LeaseHeldError{Holder: elector.GetLeader(), RenewedAt: latest.RenewTime.Time}
}

// heldBy is the Lease's holder when an instance other than identity
// holds rec, else nil.
func heldBy(identity string, rec *resourcelock.LeaderElectionRecord) *LeaseHeldError {
	if rec.HolderIdentity == "" || rec.HolderIdentity == identity {
		return nil
	}
	return &LeaseHeldError{Holder: rec.HolderIdentity, RenewedAt: rec.RenewTime.Time}
}

// leaseTiming is the Lease duration HoldLease honours: for a Lease another
// instance holds, the one its holder promised to renew within (capped),
// else the operator's own; and retry and renew periods that fit in it, as
// client-go's leader election requires.
func leaseTiming(held bool, rec *resourcelock.LeaderElectionRecord, opts RunOptions) (duration, retry, renew time.Duration) {
	duration = opts.LeaseDuration
	if held && rec.LeaseDurationSeconds > 0 {
		duration = min(time.Duration(rec.LeaseDurationSeconds)*time.Second, maxObservedLeaseDuration)
	}
	retry = min(opts.RetryPeriod, duration/4)
	renew = min(opts.RenewDeadline, duration*2/3)
	return duration, retry, renew
}

// gatedLock is a Lease lock that stops taking the Lease once HoldLease's
// wait ends, so that whether fn runs is decided in one place: by the write
// that won the Lease, before the wait ended, or by none.
type gatedLock struct {
	resourcelock.Interface
	mu       sync.Mutex
	closed   bool
	acquired bool
}

var errWaitEnded = errors.New("the wait for the Lease ended")

func (l *gatedLock) Create(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	return l.write(rec, func() error { return l.Interface.Create(ctx, rec) })
}

func (l *gatedLock) Update(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	return l.write(rec, func() error { return l.Interface.Update(ctx, rec) })
}

func (l *gatedLock) write(rec resourcelock.LeaderElectionRecord, write func() error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed && !l.acquired {
		return errWaitEnded
	}
	err := write()
	if err == nil && rec.HolderIdentity == l.Identity() {
		l.acquired = true
	}
	return err
}

// close ends the wait; it reports false when the Lease was already won.
func (l *gatedLock) close() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	return !l.acquired
}

func (l *gatedLock) won() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.acquired
}

// openShiftLeaseTimings are library-go's leader election timings for
// OpenShift, which the CVO uses: a renewal every 26 seconds tolerates 78
// seconds of apiserver downtime; on a single-replica control plane
// (Infrastructure "cluster"), one every 60 seconds tolerates 180. An
// Infrastructure that cannot be read counts as highly available, as in
// the CVO.
func openShiftLeaseTimings(ctx context.Context, cc configclient.Interface) (duration, renew, retry time.Duration) {
	// The lock is RunOptions'; naming one keeps library-go from looking
	// for the pod's namespace.
	le := libgoleaderelection.LeaderElectionDefaulting(configv1.LeaderElection{Namespace: "-", Name: "-"}, "", "")
	infra, err := cc.ConfigV1().Infrastructures().Get(ctx, "cluster", metav1.GetOptions{})
	switch {
	case err != nil:
		klog.FromContext(ctx).V(2).Info("Infrastructure unreadable; using the highly available lease timings", "err", err)
	case infra.Status.ControlPlaneTopology == configv1.SingleReplicaTopologyMode:
		le = libgoleaderelection.LeaderElectionSNOConfig(le)
	}
	return le.LeaseDuration.Duration, le.RenewDeadline.Duration, le.RetryPeriod.Duration
}
