package clusterconditions

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	clocktesting "k8s.io/utils/clock/testing"
)

// countingEval answers from answers (true when absent) and counts calls per
// query.
type countingEval struct {
	mu      sync.Mutex
	calls   map[string]int
	answers map[string]error
}

func (e *countingEval) eval(_ context.Context, q string) (bool, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.calls == nil {
		e.calls = map[string]int{}
	}
	e.calls[q]++
	return true, e.answers[q]
}

func (e *countingEval) total() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, c := range e.calls {
		n += c
	}
	return n
}

// newTestCache returns a cache on a fake clock whose calls wait wait (real
// time) for their turn.
func newTestCache(wait time.Duration) (*cache, *countingEval, *clocktesting.FakeClock) {
	e := &countingEval{answers: map[string]error{}}
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	return newCache(e.eval, clk, wait), e, clk
}

func mustMatch(t *testing.T, c *cache, q string) {
	t.Helper()
	if match, err := c.match(context.Background(), q); err != nil || !match {
		t.Errorf("match(%q) = %v, %v; want true", q, match, err)
	}
}

func TestCacheReusesAnAnswerForItsMinimumAge(t *testing.T) {
	c, e, clk := newTestCache(time.Second)
	mustMatch(t, c, "q")
	clk.Step(ResultMinAge - time.Second)
	mustMatch(t, c, "q")
	if e.calls["q"] != 1 {
		t.Fatalf("%d evaluations within the minimum age, want 1", e.calls["q"])
	}
	clk.Step(time.Second)
	mustMatch(t, c, "q")
	if e.calls["q"] != 2 {
		t.Fatalf("%d evaluations once the answer is %s old, want 2", e.calls["q"], ResultMinAge)
	}
}

func TestCacheKeepsAFailureForItsMinimumAge(t *testing.T) {
	c, e, clk := newTestCache(time.Second)
	e.answers["broken"] = errors.New("prometheus down")
	for range 5 {
		if _, err := c.match(context.Background(), "broken"); err == nil {
			t.Fatal("no error from a failing evaluation")
		}
		clk.Step(10 * time.Minute)
	}
	// 0, 10, ..., 40 minutes: a broken Prometheus was asked once.
	if e.calls["broken"] != 1 {
		t.Errorf("%d evaluations of a failing query within an hour, want 1", e.calls["broken"])
	}
	if got := testutil.ToFloat64(c.queries.WithLabelValues(queryError)); got != 1 {
		t.Errorf("payload_applier_risk_queries_total{result=error} = %v, want 1", got)
	}
}

func TestCacheSpacesQueriesApart(t *testing.T) {
	c, e, clk := newTestCache(time.Minute)
	mustMatch(t, c, "a")

	done := make(chan struct{})
	go func() {
		defer close(done)
		mustMatch(t, c, "b")
	}()
	waitFor(t, clk.HasWaiters)
	if n := e.total(); n != 1 {
		t.Fatalf("%d evaluations before %s passed, want 1", n, QueryInterval)
	}
	clk.Step(QueryInterval - time.Millisecond)
	select {
	case <-done:
		t.Fatalf("a second query ran %s after the first", QueryInterval-time.Millisecond)
	case <-time.After(50 * time.Millisecond):
	}
	clk.Step(time.Millisecond)
	<-done
	if n := e.total(); n != 2 {
		t.Fatalf("%d evaluations, want 2", n)
	}
}

func TestCacheManyCallersQueryOnceEach(t *testing.T) {
	c, e, clk := newTestCache(time.Minute)
	const queries, callers = 5, 4
	var wg sync.WaitGroup
	for q := range queries {
		for range callers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				mustMatch(t, c, fmt.Sprint("q", q))
			}()
		}
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	for steps := 0; ; steps++ {
		select {
		case <-finished:
			if n := e.total(); n != queries {
				t.Fatalf("%d callers of %d queries made %d evaluations, want %d", queries*callers, queries, n, queries)
			}
			// The first query needs no wait; each other one waits a step.
			if steps < queries-1 {
				t.Fatalf("%d queries ran within %d steps of %s", queries, steps, QueryInterval)
			}
			return
		case <-time.After(10 * time.Millisecond):
			if clk.HasWaiters() {
				clk.Step(QueryInterval)
			}
		}
	}
}

func TestCacheAnswersFromAnUnexpiredEntryWhenItCannotQuery(t *testing.T) {
	c, e, clk := newTestCache(50 * time.Millisecond)
	e.answers["old"] = nil
	mustMatch(t, c, "old")
	clk.Step(2 * time.Hour)
	mustMatch(t, c, "other") // takes the turn: "old" must now wait QueryInterval

	// The clock does not move, so the wait ends first: "old" is due for a
	// new evaluation but answers from its 2-hour-old entry.
	mustMatch(t, c, "old")
	if e.calls["old"] != 1 {
		t.Errorf("%d evaluations of old, want 1", e.calls["old"])
	}

	// A query never answered cannot answer from the cache.
	_, err := c.match(context.Background(), "new")
	checkErr(t, err, "not evaluated yet: queries are spaced 1s apart")
}

func TestCacheForgetsAnswersPastExpiry(t *testing.T) {
	c, e, clk := newTestCache(50 * time.Millisecond)
	mustMatch(t, c, "old")
	clk.Step(ResultExpiry + time.Second)
	mustMatch(t, c, "other")
	_, err := c.match(context.Background(), "old")
	checkErr(t, err, "not evaluated yet")
	if e.calls["old"] != 1 {
		t.Errorf("%d evaluations of old, want 1", e.calls["old"])
	}
	if _, ok := c.entries["old"]; ok {
		t.Error("an answer nobody asked for in 24h is still cached")
	}
}

func TestCacheHoldsAtMostCacheEntries(t *testing.T) {
	c, _, clk := newTestCache(time.Second)
	for i := range CacheEntries + 1 {
		mustMatch(t, c, fmt.Sprint("q", i))
		clk.Step(QueryInterval)
	}
	if len(c.entries) != CacheEntries {
		t.Errorf("%d entries, want %d", len(c.entries), CacheEntries)
	}
	if _, ok := c.entries["q0"]; ok {
		t.Error("the least recently asked entry was kept")
	}
}

func TestCacheKeepsNoAnswerOfACallerThatGaveUp(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	clk := clocktesting.NewFakeClock(time.Now())
	calls := 0
	c := newCache(func(ctx context.Context, _ string) (bool, error) {
		calls++
		cancel()
		return false, ctx.Err()
	}, clk, time.Second)
	if _, err := c.match(ctx, "q"); err == nil {
		t.Fatal("no error from a cancelled evaluation")
	}
	clk.Step(QueryInterval)
	mustMatchEval(t, c, "q")
	if calls != 2 {
		t.Errorf("%d evaluations, want 2: a cancelled one is not an answer", calls)
	}
}

func mustMatchEval(t *testing.T, c *cache, q string) {
	t.Helper()
	if _, err := c.match(context.Background(), q); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}

// waitFor polls cond for up to 10 seconds.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestCacheCallerThatGivesUpWaitingGetsItsOwnError(t *testing.T) {
	c, e, _ := newTestCache(time.Minute)
	mustMatch(t, c, "first") // the next query must wait QueryInterval
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	if _, err := c.match(ctx, "second"); !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want context.Canceled", err)
	}
	if e.calls["second"] != 0 {
		t.Error("a caller that gave up was evaluated")
	}
}
