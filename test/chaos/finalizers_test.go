package chaos

import (
	"context"
	"math/rand"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/payload-applier/payload-applier/pkg/payload"
)

// clearer plays the controllers that own finalizers: once a held object
// that v2 marks for deletion is terminating, it removes the finalizer after
// a random delay, so that deletes stay pending across passes, crashes and
// restarts and then complete. It can start paused, for tests that first
// change the cluster only through the operator.
type clearer struct {
	env     *env
	holdFor map[payload.ObjectID]time.Duration

	mu     sync.Mutex // held for a whole round
	paused bool
	seen   map[payload.ObjectID]time.Time
	errs   []error

	stop chan struct{}
	done chan struct{}
}

// startClearer starts the clearer; each held object waits up to maxHold.
func startClearer(t *testing.T, e *env, rng *rand.Rand, maxHold time.Duration, paused bool) *clearer {
	c := &clearer{env: e, holdFor: map[payload.ObjectID]time.Duration{}, seen: map[payload.ObjectID]time.Time{},
		paused: paused, stop: make(chan struct{}), done: make(chan struct{})}
	for _, o := range e.sc.marked() {
		if o.hold {
			c.holdFor[o.id()] = time.Duration(rng.Int63n(int64(maxHold)))
		}
	}
	go c.run()
	t.Cleanup(func() {
		c.close()
		for _, err := range c.errs {
			t.Errorf("finalizer clearer: %v", err)
		}
	})
	return c
}

func (c *clearer) run() {
	defer close(c.done)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-tick.C:
			c.round()
		}
	}
}

func (c *clearer) round() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.paused {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, o := range c.env.sc.marked() {
		hold, ok := c.holdFor[o.id()]
		if !ok {
			continue
		}
		live, err := c.env.get(ctx, o)
		if err != nil || live == nil || live.GetDeletionTimestamp() == nil || len(live.GetFinalizers()) == 0 {
			continue
		}
		first, ok := c.seen[o.id()]
		if !ok {
			c.seen[o.id()] = time.Now()
			first = time.Now()
		}
		if time.Since(first) < hold {
			continue
		}
		if err := c.env.release(ctx, o); err != nil && !apierrors.IsNotFound(err) {
			c.errs = append(c.errs, err)
			continue
		}
	}
}

// Resume starts releasing.
func (c *clearer) Resume() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.paused = false
}

func (c *clearer) close() {
	select {
	case <-c.stop:
	default:
		close(c.stop)
	}
	<-c.done
}

// releaseTerminating removes the finalizer of every held, marked object
// that is terminating now: the synchronous version for in-process tests.
func releaseTerminating(t *testing.T, ctx context.Context, e *env) int {
	t.Helper()
	return len(e.releaseHeld(t, ctx, -1))
}

// releaseOneTerminating removes the finalizer of one held, marked object
// that is terminating, and names it; "" when none is.
func (e *env) releaseOneTerminating(t *testing.T, ctx context.Context) string {
	t.Helper()
	if released := e.releaseHeld(t, ctx, 1); len(released) > 0 {
		return released[0]
	}
	return ""
}

// releaseHeld removes the finalizer of up to limit (all when negative)
// held, marked objects that are terminating, and names them.
func (e *env) releaseHeld(t *testing.T, ctx context.Context, limit int) []string {
	t.Helper()
	var released []string
	for _, o := range e.sc.marked() {
		if len(released) == limit {
			break
		}
		if !o.hold {
			continue
		}
		live, err := e.get(ctx, o)
		if err != nil {
			t.Fatalf("read %s: %v", o, err)
		}
		if live == nil || live.GetDeletionTimestamp() == nil {
			continue
		}
		if err := e.release(ctx, o); err != nil && !apierrors.IsNotFound(err) {
			t.Fatalf("release %s: %v", o, err)
		}
		released = append(released, o.String())
	}
	return released
}
