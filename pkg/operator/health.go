package operator

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// health is what /healthz and /readyz report: whether the operator
// bootstrapped, whether it leads, and when its last pass ended.
type health struct {
	mu           sync.Mutex
	started      time.Time
	bootstrapped bool
	leading      bool
	lastPass     time.Time
}

func (h *health) set(f func(*health)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f(h)
}

// Live reports an error when the operator leads but no pass has ended for
// window: a pass that hangs, or a loop that stopped, should restart the
// process. A standby waiting for the Lease runs no pass and is live.
func (o *Operator) Live(window time.Duration) error {
	h := &o.health
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.leading {
		return nil
	}
	last := h.lastPass
	if last.IsZero() {
		last = h.started
	}
	if since := o.clock.Since(last); since > window {
		if h.lastPass.IsZero() {
			return fmt.Errorf("no pass has ended in the %s since the operator started leading", since.Round(time.Second))
		}
		return fmt.Errorf("no pass has ended for %s, more than %s", since.Round(time.Second), window)
	}
	return nil
}

// Ready reports an error until the operator bootstrapped the cluster: its
// CRDs and ClusterVersion exist, and it leads or waits for the Lease.
func (o *Operator) Ready() error {
	o.health.mu.Lock()
	defer o.health.mu.Unlock()
	if !o.health.bootstrapped {
		return errors.New("not bootstrapped yet")
	}
	return nil
}

// lead records that this instance leads since now.
func (h *health) lead(now time.Time) {
	h.set(func(h *health) { h.leading, h.started = true, now })
}
