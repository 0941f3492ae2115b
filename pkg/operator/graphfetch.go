package operator

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/payload-applier/payload-applier/pkg/updategraph"
)

const (
	// defaultGraphRefresh is how long an answer is reused for the same
	// upstream, channel and version.
	defaultGraphRefresh = 2 * time.Minute
	// defaultGraphTimeout bounds one read of the graph, every try and the
	// waits between them: an upstream that never answers costs a one-shot
	// command this long, and the running operator nothing.
	defaultGraphTimeout = time.Minute
)

// graphAnswer is how one read of the graph ended.
type graphAnswer struct {
	// key is the query's; empty for no answer at all. scope is the key
	// without the version: answers of one scope hold the same graph.
	key, scope string
	graph      *updategraph.Graph
	err        error
	at         time.Time
}

// graphFetcher reads the update graph for the operator. Started (by the
// run loop), it reads in its own goroutine, on its own timer and as soon
// as a sync asks about a new query, so that a sync never waits on the
// network, and wakes the loop when an answer changes what a sync writes.
// Not started (apply, tests that call Sync alone), a sync reads through
// it directly, bounded by budget.
type graphFetcher struct {
	clock   clock.Clock
	refresh time.Duration
	budget  time.Duration
	bg      *background

	mu     sync.Mutex
	wanted graphQuery
	// inflight is the key being read and how to give that read up.
	inflight       string
	cancelInflight context.CancelFunc
	// latest is the last read that ended, whatever its query; good is the
	// last one that succeeded.
	latest, good graphAnswer
	// again makes the wanted query due at once, answered or not.
	again bool
}

func newGraphFetcher(clk clock.Clock, refresh, budget time.Duration) *graphFetcher {
	return &graphFetcher{clock: clk, refresh: refresh, budget: budget, bg: newBackground(clk)}
}

// start reads in the background until ctx ends; wake is called when a new
// answer would change what a sync writes.
func (f *graphFetcher) start(ctx context.Context, wake func()) {
	f.bg.start(ctx, wake, f.step)
}

// lookup returns the latest answer and the last good one, as seen by a
// sync about q. Started, it only records q, never waiting; not started, it
// reads q when the latest answer is for another query or due a refresh.
func (f *graphFetcher) lookup(ctx context.Context, q graphQuery) (latest, good graphAnswer) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.bg.started() != nil {
		f.want(q)
		return f.latest, f.good
	}
	if q.readable() && (f.again || f.latest.key != q.key() || f.clock.Since(f.latest.at) >= f.refresh) {
		f.again = false
		f.mu.Unlock()
		a := f.read(ctx, q)
		f.mu.Lock()
		f.store(a)
	}
	return f.latest, f.good
}

// peek is lookup that never reads inline: a sync that has already read
// once learns of a new query, which a started fetcher reads at once.
func (f *graphFetcher) peek(q graphQuery) (latest, good graphAnswer) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.bg.started() != nil {
		f.want(q)
	}
	return f.latest, f.good
}

// want makes q the query the goroutine reads: a new one at once, giving up
// a read of the old one so that a black-holed upstream cannot delay its
// replacement. The caller holds mu.
func (f *graphFetcher) want(q graphQuery) {
	key := q.key()
	if f.wanted.key() == key {
		return
	}
	f.wanted = q
	if f.inflight != "" && f.inflight != key {
		f.cancelInflight()
		f.inflight = ""
	}
	f.bg.request()
}

// readAgain makes the next read of the wanted query due at once: an
// update completed, and the graph may have changed while it ran.
func (f *graphFetcher) readAgain() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.again = true
	if f.bg.started() != nil {
		f.bg.request()
	}
}

// step reads the wanted query when it is due, and says when it is due
// next.
func (f *graphFetcher) step(ctx context.Context) time.Duration {
	q, due := f.next()
	if due == 0 {
		f.readWanted(ctx, q)
	}
	return due
}

// next is the wanted query and how long until it is due: 0 now, -1 never
// (nothing readable is wanted).
func (f *graphFetcher) next() (graphQuery, time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	q := f.wanted
	if !q.readable() {
		return q, -1
	}
	if f.again || f.latest.key != q.key() {
		f.again = false
		return q, 0
	}
	if left := f.refresh - f.clock.Since(f.latest.at); left > 0 {
		return q, left
	}
	return q, 0
}

// readWanted reads q and keeps the answer unless q stopped being wanted
// meanwhile.
func (f *graphFetcher) readWanted(ctx context.Context, q graphQuery) {
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	key := q.key()
	f.mu.Lock()
	f.inflight, f.cancelInflight = key, cancel
	f.mu.Unlock()
	a := f.read(rctx, q)
	f.mu.Lock()
	kept := f.inflight == key && ctx.Err() == nil
	f.inflight, f.cancelInflight = "", nil
	changed := kept && f.store(a)
	f.mu.Unlock()
	if changed {
		f.bg.wake()
	}
}

// store records a and tells whether a sync would write something else
// for it: another query, success or failure, reason or graph. A failure
// that only reads differently waits for the next sync.
func (f *graphFetcher) store(a graphAnswer) bool {
	prev := f.latest
	f.latest = a
	if a.err == nil {
		f.good = a
	}
	if prev.key != a.key || (prev.err == nil) != (a.err == nil) {
		return true
	}
	if a.err != nil {
		return updategraph.ReasonOf(prev.err) != updategraph.ReasonOf(a.err)
	}
	return !reflect.DeepEqual(prev.graph, a.graph)
}

// read makes one bounded read of q.
func (f *graphFetcher) read(ctx context.Context, q graphQuery) graphAnswer {
	bctx, cancel := context.WithTimeout(ctx, f.budget)
	defer cancel()
	g, err := q.read(bctx)
	if err != nil && ctx.Err() == nil && errors.Is(bctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("no answer within %s: %w", f.budget, err)
	}
	// A read given up for a newer query, or at shutdown, is no failure.
	if err != nil && ctx.Err() == nil {
		klog.FromContext(ctx).Info("Reading the update graph failed", "source", q.source.String(), "err", err)
	}
	return graphAnswer{key: q.key(), scope: q.scope(), graph: g, err: err, at: f.clock.Now()}
}

// lastGood is the graph of the last read that succeeded, nil before one did.
func (f *graphFetcher) lastGood() *updategraph.Graph {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.good.graph
}
