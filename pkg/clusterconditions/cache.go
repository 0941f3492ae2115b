package clusterconditions

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"
)

// The cache's figures, as the CVO's (pkg/clusterconditions/promql): a
// broken or slow Prometheus sees at most one query a second from this
// operator, and each distinct query at most once an hour.
const (
	// QueryInterval is the least time between the end of one query and the
	// start of the next, whatever they ask.
	QueryInterval = time.Second
	// ResultMinAge is how long an answer, a failure included, is reused
	// before the query is asked again.
	ResultMinAge = time.Hour
	// ResultExpiry is how long an answer is kept: past it, a query that
	// cannot get its turn fails instead of answering from the cache, and an
	// answer nobody asked for since is dropped.
	ResultExpiry = 24 * time.Hour
	// CacheEntries bounds how many distinct queries are remembered; the
	// least recently asked is forgotten first.
	CacheEntries = 1000
)

// Results of payload_applier_risk_queries_total.
const (
	queryMatch   = "match"
	queryNoMatch = "no_match"
	queryError   = "error"
)

// cacheEntry is the last answer to one query.
type cacheEntry struct {
	when  time.Time // when the query ended
	asked time.Time // when a caller last wanted it
	match bool
	err   error
}

// cache answers queries through eval, reusing an answer for ResultMinAge
// and spacing evaluations QueryInterval apart. A call waits for its turn
// at most wait, then answers from an unexpired entry or fails: it returns
// within wait plus eval's own bound.
type cache struct {
	eval    func(ctx context.Context, query string) (bool, error)
	clock   clock.Clock
	wait    time.Duration
	queries *prometheus.CounterVec

	turn chan struct{} // one evaluation at a time

	mu      sync.Mutex
	last    time.Time // when the last evaluation ended
	entries map[string]*cacheEntry
}

func newCache(eval func(context.Context, string) (bool, error), clk clock.Clock, wait time.Duration) *cache {
	return &cache{
		eval:  eval,
		clock: clk,
		wait:  wait,
		queries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "payload_applier_risk_queries_total",
			Help: "PromQL queries of conditional update risks sent to Prometheus, by result: match, no_match or error.",
		}, []string{"result"}),
		turn:    make(chan struct{}, 1),
		entries: map[string]*cacheEntry{},
	}
}

// match answers query from a fresh entry, or evaluates it once its turn
// comes.
func (c *cache) match(ctx context.Context, query string) (bool, error) {
	if e, ok := c.fresh(query); ok {
		return e.match, e.err
	}
	waitCtx, cancel := context.WithTimeout(ctx, c.wait)
	defer cancel()
	select {
	case c.turn <- struct{}{}:
	case <-waitCtx.Done():
		return c.stale(ctx, query, "waited %s for other risk queries", c.wait)
	}
	defer func() { <-c.turn }()
	// Another caller may have asked the same while this one waited.
	if e, ok := c.fresh(query); ok {
		return e.match, e.err
	}
	c.mu.Lock()
	next := c.last.Add(QueryInterval)
	c.mu.Unlock()
	if d := next.Sub(c.clock.Now()); d > 0 {
		t := c.clock.NewTimer(d)
		select {
		case <-t.C():
		case <-waitCtx.Done():
			t.Stop()
			return c.stale(ctx, query, "queries are spaced %s apart", QueryInterval)
		}
	}

	match, err := c.eval(ctx, query)
	now := c.clock.Now()
	result := queryNoMatch
	switch {
	case err != nil:
		result = queryError
	case match:
		result = queryMatch
	}
	c.queries.WithLabelValues(result).Inc()

	c.mu.Lock()
	defer c.mu.Unlock()
	c.last = now
	if ctx.Err() != nil {
		// The caller gave up (the operator stopping): not an answer to keep.
		return match, err
	}
	c.store(query, &cacheEntry{when: now, asked: now, match: match, err: err})
	return match, err
}

// fresh returns the entry of query when it is younger than ResultMinAge.
func (c *cache) fresh(query string) (*cacheEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	c.prune(now)
	e, ok := c.entries[query]
	if !ok {
		return nil, false
	}
	e.asked = now
	return e, now.Sub(e.when) < ResultMinAge
}

// stale answers a query that did not get its turn: from its entry while
// that has not expired, else with an error saying why.
func (c *cache) stale(ctx context.Context, query, why string, args ...any) (bool, error) {
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[query]; ok && c.clock.Since(e.when) < ResultExpiry {
		return e.match, e.err
	}
	return false, fmt.Errorf("not evaluated yet: %s", fmt.Sprintf(why, args...))
}

// store records e, forgetting the least recently asked entry when full.
func (c *cache) store(query string, e *cacheEntry) {
	if _, ok := c.entries[query]; !ok && len(c.entries) >= CacheEntries {
		var oldest string
		for q, o := range c.entries {
			if oldest == "" || o.asked.Before(c.entries[oldest].asked) {
				oldest = q
			}
		}
		delete(c.entries, oldest)
	}
	c.entries[query] = e
}

// prune drops entries nobody asked for within ResultExpiry.
func (c *cache) prune(now time.Time) {
	for q, e := range c.entries {
		if now.Sub(e.asked) > ResultExpiry {
			delete(c.entries, q)
		}
	}
}
