package chaos

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestUpdateConvergesAcrossAPIServerRestarts restarts kube-apiserver
// (-chaos.restarts times) while `payload-applier start` applies an update
// with deletes: each restart comes after a random number of the operator's
// writes or a random delay, so it can land in the apply walk, the delete
// walk or between passes, while held deletes are still pending. Every connection and watch breaks, and requests fail while the
// apiserver is down. The operator process must stay up and converge to
// exactly what v2 asks, deleting each marked object once.
func TestUpdateConvergesAcrossAPIServerRestarts(t *testing.T) {
	ctx := context.Background()
	resetStartCV(t)
	run := newOperatorRun(t, "restart", 10, false)
	rng, opNS, sc, e := run.rng, run.opNS, run.sc, run.e

	p := startOperator(t, processOptions{store: sc.writeStore(t), namespace: opNS, user: userRestart})
	alive := func() { p.requireRunning(t) }
	requestVersion(t, startCV, "1.0.0")
	e.waitInstalled(t, startCV, alive)
	e.recordInstalled(t, ctx)

	// Held objects go one per restart, released just before it, so that
	// restarts land while the operator finishes a delete and issues the
	// next one of its chain; the clearer lets the rest go afterwards.
	clear := startClearer(t, e, rng, time.Second, true)
	mark, err := testCluster.AuditMark()
	if err != nil {
		t.Fatal(err)
	}
	requestVersion(t, startCV, "1.0.1")
	for i := 1; i <= *flagRestarts; i++ {
		released := e.releaseOneTerminating(t, ctx)
		// Restart after a few more of the operator's writes, or after a
		// random delay when it has nothing to write.
		after := p.writes(t) + 1 + rng.Intn(8)
		deadline := time.Now().Add(time.Duration(rng.Int63n(int64(4 * time.Second))))
		waitFor(t, fmt.Sprintf("a point for restart %d", i), 2*time.Minute, alive, func() (bool, string) {
			n := p.writes(t)
			return n >= after || time.Now().After(deadline), fmt.Sprintf("%d writes so far", n)
		})
		writes := p.writes(t)
		converged := completed(getCV(t, startCV), "1.0.1") && len(e.presentMarked(t, ctx)) == 0
		restartCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		started := time.Now()
		err := testCluster.RestartAPIServer(restartCtx)
		cancel()
		if err != nil {
			t.Fatalf("restart %d: %v", i, err)
		}
		t.Logf("restart %d: kube-apiserver restarted after the operator's write #%d (released before: %q; all deletes done already: %v), down for %s",
			i, writes, released, converged, time.Since(started).Round(100*time.Millisecond))
	}
	clear.Resume()
	e.waitConverged(t, startCV, opNS, 4*time.Minute, alive)
	p.stop(t)
	e.checkWrites(t, mark, writeRules{user: userRestart, ledgerNamespace: opNS, ledgerName: ledgerName,
		operatorNamespace: opNS, clusterVersion: startCV})
}
