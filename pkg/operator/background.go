package operator

import (
	"context"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// background is the goroutine a worker (the graph fetcher, the risk
// evaluator, the image retriever) runs beside the syncs: started by the
// run loop with the poke that wakes it, stopped by the end of ctx. A
// worker never started is read inline by its syncs (apply, tests that
// call Sync alone); what to read, when and what counts as a change stay
// the worker's own.
type background struct {
	clock clock.Clock
	// kick tells the goroutine that a sync asked for something new.
	kick chan struct{}

	mu sync.Mutex
	// runs tells a goroutine left from an earlier start from the current.
	runs int
	// ctx and poke are the current start's; nil when not started.
	ctx  context.Context
	poke func()
}

func newBackground(clk clock.Clock) *background {
	return &background{clock: clk, kick: make(chan struct{}, 1)}
}

// start runs step until ctx ends, and poke is what wake calls meanwhile.
// step does what is due and says how long until it should run again: 0
// at once, below 0 when kicked. A nil step only marks the worker started,
// for one that runs goroutines of its own under ctx.
func (b *background) start(ctx context.Context, poke func(), step func(context.Context) time.Duration) {
	b.mu.Lock()
	b.runs++
	run := b.runs
	b.ctx, b.poke = ctx, poke
	b.mu.Unlock()
	go func() {
		defer func() {
			b.mu.Lock()
			if b.runs == run {
				b.ctx, b.poke = nil, nil
			}
			b.mu.Unlock()
		}()
		for ctx.Err() == nil {
			due := time.Duration(-1)
			if step != nil {
				due = step(ctx)
			}
			if due != 0 {
				b.wait(ctx, due)
			}
		}
	}()
}

// wait returns after due (never when below 0), a kick or the end of ctx.
func (b *background) wait(ctx context.Context, due time.Duration) {
	var fire <-chan time.Time
	if due > 0 {
		timer := b.clock.NewTimer(due)
		defer timer.Stop()
		fire = timer.C()
	}
	select {
	case <-ctx.Done():
	case <-b.kick:
	case <-fire:
	}
}

// started is the current start's context, nil when the worker is not
// started and its syncs read inline.
func (b *background) started() context.Context {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ctx
}

// request kicks the goroutine to run its step now.
func (b *background) request() {
	select {
	case b.kick <- struct{}{}:
	default:
	}
}

// wake pokes the run loop, if started, because an answer changed what a
// sync writes.
func (b *background) wake() {
	b.mu.Lock()
	poke := b.poke
	b.mu.Unlock()
	if poke != nil {
		poke()
	}
}
