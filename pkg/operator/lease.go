package operator

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
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

// HoldLease runs fn while holding the operator's leader-election Lease,
// the one `start` takes, so that a running operator waits meanwhile and
// the two never write at once. It waits at most wait for a Lease another
// instance holds (0: not at all) and then returns a *LeaseHeldError; a
// Lease whose holder stopped renewing it is taken over. The Lease is
// renewed while fn runs and released after; losing it cancels fn's ctx.
func (o *Operator) HoldLease(ctx context.Context, waitFor time.Duration, fn func(context.Context) error) error {
	opts := RunOptions{}
	opts.setDefaults()
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: o.cfg.Namespace, Name: opts.LeaseName},
		Client:     o.kube.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: o.cfg.Identity},
	}
	held, err := o.tryAcquire(ctx, lock, opts.LeaseDuration)
	if held != nil && waitFor > 0 {
		err = wait.PollUntilContextTimeout(ctx, opts.RetryPeriod, waitFor, false, func(ctx context.Context) (bool, error) {
			var err error
			held, err = o.tryAcquire(ctx, lock, opts.LeaseDuration)
			return held == nil, err
		})
	}
	if held != nil {
		return held
	}
	if err != nil {
		return fmt.Errorf("acquire the Lease %s/%s: %w", o.cfg.Namespace, opts.LeaseName, err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		_ = wait.PollUntilContextCancel(runCtx, opts.RetryPeriod, false, func(ctx context.Context) (bool, error) {
			if held, err := o.tryAcquire(ctx, lock, opts.LeaseDuration); held != nil || (err != nil && !errors.Is(err, context.Canceled)) {
				klog.FromContext(ctx).Info("Lost the Lease; stopping", "holder", held, "err", err)
				cancel()
			}
			return false, nil
		})
	}()
	err = fn(runCtx)
	cancel()
	<-renewed
	o.releaseLease(lock)
	return err
}

// tryAcquire takes or renews the Lease for this instance. It returns the
// holder when another instance holds a Lease it renewed within duration.
func (o *Operator) tryAcquire(ctx context.Context, lock *resourcelock.LeaseLock, duration time.Duration) (*LeaseHeldError, error) {
	now := metav1.NewTime(o.clock.Now())
	mine := resourcelock.LeaderElectionRecord{HolderIdentity: o.cfg.Identity, LeaseDurationSeconds: int(duration.Seconds()),
		AcquireTime: now, RenewTime: now}
	rec, _, err := lock.Get(ctx)
	if apierrors.IsNotFound(err) {
		return nil, lock.Create(ctx, mine)
	}
	if err != nil {
		return nil, err
	}
	expires := rec.RenewTime.Add(time.Duration(rec.LeaseDurationSeconds) * time.Second)
	if rec.HolderIdentity != "" && rec.HolderIdentity != o.cfg.Identity && expires.After(now.Time) {
		return &LeaseHeldError{Holder: rec.HolderIdentity, RenewedAt: rec.RenewTime.Time}, nil
	}
	mine.LeaderTransitions = rec.LeaderTransitions
	if rec.HolderIdentity == o.cfg.Identity {
		mine.AcquireTime = rec.AcquireTime
	} else {
		mine.LeaderTransitions++
	}
	// Update sends the resourceVersion Get read: a race is a conflict.
	return nil, lock.Update(ctx, mine)
}

// releaseLease hands the Lease back at once, as a cancelled `start` does.
func (o *Operator) releaseLease(lock *resourcelock.LeaseLock) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rec, _, err := lock.Get(ctx)
	if err != nil || rec.HolderIdentity != o.cfg.Identity {
		return
	}
	now := metav1.NewTime(o.clock.Now())
	_ = lock.Update(ctx, resourcelock.LeaderElectionRecord{LeaseDurationSeconds: 1, RenewTime: now, AcquireTime: now, LeaderTransitions: rec.LeaderTransitions})
}
