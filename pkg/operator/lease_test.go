package operator

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	configfake "github.com/openshift/client-go/config/clientset/versioned/fake"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
)

const leaseNS = "openshift-cluster-version"

// leaseOperator is an Operator with just what HoldLease uses, and a Lease
// held by holder, renewed at renewed, with a duration of seconds.
func leaseOperator(t *testing.T, holder string, renewed time.Time, seconds int32) (*Operator, *kubefake.Clientset) {
	t.Helper()
	kube := kubefake.NewClientset()
	if holder != "" {
		lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "payload-applier", Namespace: leaseNS},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(holder), LeaseDurationSeconds: ptr.To(seconds),
				RenewTime: &metav1.MicroTime{Time: renewed}, AcquireTime: &metav1.MicroTime{Time: renewed}}}
		if _, err := kube.CoordinationV1().Leases(leaseNS).Create(context.Background(), lease, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return &Operator{cfg: Config{Namespace: leaseNS, Identity: "apply-1"}, kube: kube, clock: clock.RealClock{}}, kube
}

// readLease is the Lease as stored.
func readLease(t *testing.T, kube *kubefake.Clientset) *coordinationv1.Lease {
	t.Helper()
	l, err := kube.CoordinationV1().Leases(leaseNS).Get(context.Background(), "payload-applier", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// renewLagging renews the Lease as its holder does, every period, with a
// clock that lags by lag, until the test ends.
func renewLagging(t *testing.T, kube *kubefake.Clientset, lag, period time.Duration) {
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	t.Cleanup(func() { cancel(); <-stopped })
	go func() {
		defer close(stopped)
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(period):
			}
			leases := kube.CoordinationV1().Leases(leaseNS)
			l, err := leases.Get(ctx, "payload-applier", metav1.GetOptions{})
			if err != nil || ptr.Deref(l.Spec.HolderIdentity, "") != "operator-0" {
				return
			}
			l.Spec.RenewTime = &metav1.MicroTime{Time: time.Now().Add(-lag)}
			_, _ = leases.Update(ctx, l, metav1.UpdateOptions{})
		}
	}()
}

func TestHoldLeaseKeepsALeaseWhoseHoldersClockLags(t *testing.T) {
	op, kube := leaseOperator(t, "operator-0", time.Now().Add(-31*time.Second), 1)
	renewLagging(t, kube, 31*time.Second, 100*time.Millisecond)
	ran := false
	err := op.HoldLease(context.Background(), 0, func(context.Context) error { ran = true; return nil })
	var held *LeaseHeldError
	if !errors.As(err, &held) || held.Holder != "operator-0" {
		t.Fatalf("err %v: want the Lease held by operator-0, whose renewals it saw", err)
	}
	if ran {
		t.Error("apply ran while another instance renewed the Lease")
	}
}

func TestHoldLeaseTakesALeaseSeenUnchangedForItsDuration(t *testing.T) {
	op, kube := leaseOperator(t, "crashed", time.Now().Add(-2*time.Minute), 1)
	start := time.Now()
	var ranAfter atomic.Int64
	err := op.HoldLease(context.Background(), 0, func(ctx context.Context) error {
		ranAfter.Store(int64(time.Since(start)))
		l, err := kube.CoordinationV1().Leases(leaseNS).Get(ctx, "payload-applier", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if h := ptr.Deref(l.Spec.HolderIdentity, ""); h != "apply-1" {
			t.Errorf("fn ran while %q held the Lease", h)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// A lower bound only: the Lease was watched for its whole duration.
	if got := time.Duration(ranAfter.Load()); got < time.Second {
		t.Errorf("took the Lease after %s: it was not yet seen unchanged for its duration of 1s", got)
	}
	l := readLease(t, kube)
	if h, n := ptr.Deref(l.Spec.HolderIdentity, ""), ptr.Deref(l.Spec.LeaseTransitions, 0); h != "" || n != 1 {
		t.Errorf("after: holder %q, transitions %d; want it taken over once and released", h, n)
	}
}

func TestHoldLeaseRefusesALiveLeaseAtOnce(t *testing.T) {
	op, kube := leaseOperator(t, "operator-0", time.Now(), 60)
	kube.ClearActions()
	err := op.HoldLease(context.Background(), 0, func(context.Context) error { t.Error("fn ran"); return nil })
	var held *LeaseHeldError
	if !errors.As(err, &held) || held.Holder != "operator-0" {
		t.Fatalf("err %v: want the Lease held by operator-0", err)
	}
	for _, a := range kube.Actions() {
		if a.GetVerb() != "get" {
			t.Errorf("a refused apply sent %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
}

func TestHoldLeaseWaitsForTheHoldersRelease(t *testing.T) {
	op, kube := leaseOperator(t, "operator-0", time.Now(), 2)
	go func() {
		time.Sleep(300 * time.Millisecond)
		leases := kube.CoordinationV1().Leases(leaseNS)
		l, err := leases.Get(context.Background(), "payload-applier", metav1.GetOptions{})
		if err == nil {
			l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds = nil, ptr.To[int32](1)
			_, _ = leases.Update(context.Background(), l, metav1.UpdateOptions{})
		}
	}()
	ran := false
	if err := op.HoldLease(context.Background(), time.Minute, func(context.Context) error { ran = true; return nil }); err != nil {
		t.Fatal(err)
	}
	if !ran {
		t.Error("fn did not run once the holder released the Lease")
	}
}

func TestHoldLeaseCreatesAMissingLeaseAndReturnsFnsError(t *testing.T) {
	op, kube := leaseOperator(t, "", time.Time{}, 0)
	boom := errors.New("boom")
	if err := op.HoldLease(context.Background(), 0, func(context.Context) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("err %v, want fn's", err)
	}
	l := readLease(t, kube)
	if h, d := ptr.Deref(l.Spec.HolderIdentity, ""), ptr.Deref(l.Spec.LeaseDurationSeconds, 0); h != "" || d != 1 {
		t.Errorf("after: holder %q, duration %d; want it released", h, d)
	}
}

func TestRunTakesOpenShiftsLeaseTimings(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name                   string
		objs                   []runtime.Object
		duration, renew, retry time.Duration
	}{
		{"no Infrastructure: highly available", nil, 137 * time.Second, 107 * time.Second, 26 * time.Second},
		{"highly available", []runtime.Object{&configv1.Infrastructure{ObjectMeta: metav1.ObjectMeta{Name: "cluster"},
			Status: configv1.InfrastructureStatus{ControlPlaneTopology: configv1.HighlyAvailableTopologyMode}}}, 137 * time.Second, 107 * time.Second, 26 * time.Second},
		{"single replica", []runtime.Object{&configv1.Infrastructure{ObjectMeta: metav1.ObjectMeta{Name: "cluster"},
			Status: configv1.InfrastructureStatus{ControlPlaneTopology: configv1.SingleReplicaTopologyMode}}}, 270 * time.Second, 240 * time.Second, 60 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, renew, retry := openShiftLeaseTimings(ctx, configfake.NewSimpleClientset(tc.objs...))
			if d != tc.duration || renew != tc.renew || retry != tc.retry {
				t.Errorf("lease %s, renew %s, retry %s; want %s, %s, %s", d, renew, retry, tc.duration, tc.renew, tc.retry)
			}
		})
	}
}
