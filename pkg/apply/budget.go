package apply

import (
	"context"
	"fmt"
	"sync/atomic"

	"golang.org/x/time/rate"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/payload-applier/payload-applier/pkg/graph"
)

// Rate is a client-side request budget: a token bucket refilled with QPS
// requests per second that holds Burst. A zero QPS sets no limit.
type Rate struct {
	QPS   float32
	Burst int
}

// Unlimited reports whether r sets no limit.
func (r Rate) Unlimited() bool { return r.QPS == 0 }

// Validate refuses a rate a token bucket cannot have.
func (r Rate) Validate() error {
	switch {
	case r.QPS < 0:
		return fmt.Errorf("QPS %g is negative (0 sets no limit)", r.QPS)
	case r.QPS > 0 && r.Burst < 1:
		return fmt.Errorf("burst %d must be at least 1 with QPS %g", r.Burst, r.QPS)
	}
	return nil
}

func (r Rate) String() string {
	if r.Unlimited() {
		return "no limit"
	}
	return fmt.Sprintf("%g requests/s, burst %d", r.QPS, r.Burst)
}

// Budget is the engine's client-side request rate, shared by all its
// requests: one rate while a pass installs, another while it updates or
// reconciles, as the CVO's manifest clients have.
type Budget struct {
	Install, Steady Rate
}

// CVOBudget is the CVO's: a token bucket of 40 requests per second, burst
// 80, for an install and of 20, burst 40, otherwise (highQPS and
// defaultQPS in its pkg/start).
var CVOBudget = Budget{Install: Rate{QPS: 40, Burst: 80}, Steady: Rate{QPS: 20, Burst: 40}}

// Unlimited reports whether b limits no pass.
func (b Budget) Unlimited() bool { return b.Install.Unlimited() && b.Steady.Unlimited() }

// For is the rate of a pass in mode.
func (b Budget) For(mode graph.Mode) Rate {
	if mode == graph.ModeInstall {
		return b.Install
	}
	return b.Steady
}

// Validate refuses a budget with a rate a token bucket cannot have.
func (b Budget) Validate() error {
	if err := b.Install.Validate(); err != nil {
		return fmt.Errorf("install: %w", err)
	}
	if err := b.Steady.Validate(); err != nil {
		return fmt.Errorf("steady: %w", err)
	}
	return nil
}

// budgetLimiter is a flowcontrol.RateLimiter at the rate of its budget
// that each pass picks by its mode: client-go's token bucket cannot change
// its rate once built. Each pick starts a full bucket; requests already
// waiting finish on the old one.
type budgetLimiter struct {
	budget Budget
	l      atomic.Pointer[rate.Limiter]
}

var _ flowcontrol.RateLimiter = (*budgetLimiter)(nil)

func newBudgetLimiter(b Budget) *budgetLimiter {
	l := &budgetLimiter{budget: b}
	l.use(graph.ModeReconcile)
	return l
}

// use sets the rate of a pass in mode.
func (b *budgetLimiter) use(mode graph.Mode) {
	r := b.budget.For(mode)
	if r.Unlimited() {
		b.l.Store(nil)
		return
	}
	b.l.Store(rate.NewLimiter(rate.Limit(r.QPS), r.Burst))
}

func (b *budgetLimiter) TryAccept() bool {
	l := b.l.Load()
	return l == nil || l.Allow()
}

func (b *budgetLimiter) Accept() { _ = b.Wait(context.Background()) }

func (b *budgetLimiter) Wait(ctx context.Context) error {
	if l := b.l.Load(); l != nil {
		return l.Wait(ctx)
	}
	return nil
}

func (b *budgetLimiter) Stop() {}

// QPS is client-go's view of the rate; 0 for no limit.
func (b *budgetLimiter) QPS() float32 {
	if l := b.l.Load(); l != nil {
		return float32(l.Limit())
	}
	return 0
}

// withBudget gives rc's clients the limiter, which then governs every
// request they send; without one, rc keeps its own limit or none.
func withBudget(rc *rest.Config, l *budgetLimiter) *rest.Config {
	if l == nil {
		return rc
	}
	rc = rest.CopyConfig(rc)
	rc.RateLimiter = l
	return rc
}
