package chaos

import (
	"context"
	"fmt"
	"math/rand"
	"testing"
	"time"
)

// TestUpdateConvergesAcrossAPIServerRestarts restarts kube-apiserver
// (-chaos.restarts times) while `payload-applier start` applies an update
// with deletes: each restart comes after a random number of the operator's
// writes, so it can land in the apply walk, the delete walk or between
// passes. Every connection and watch breaks, and requests fail while the
// apiserver is down. The operator process must stay up and converge to
// exactly what v2 asks, deleting each marked object once.
func TestUpdateConvergesAcrossAPIServerRestarts(t *testing.T) {
	seed := seedFor(t)
	rng := rand.New(rand.NewSource(seed))
	ctx := context.Background()
	resetStartCV(t)
	opNS := testCluster.CreateNamespace(t)
	namespaces := []string{testCluster.CreateNamespace(t), testCluster.CreateNamespace(t)}
	sc := operatorScenario(rng, fmt.Sprintf("chaos-restart-%06d", rng.Intn(1_000_000)), namespaces, 10, false)
	t.Logf("scenario:\n%s", sc.describe())
	e := newEnv(t, sc)
	e.createBystanders(t, ctx)

	p := startOperator(t, processOptions{store: sc.writeStore(t), namespace: opNS, user: userRestart})
	alive := func() { p.requireRunning(t) }
	requestVersion(t, startCV, "1.0.0")
	e.waitInstalled(t, startCV, alive)
	e.recordInstalled(t, ctx)

	startClearer(t, e, rng, 3*time.Second, false)
	mark, err := testCluster.AuditMark()
	if err != nil {
		t.Fatal(err)
	}
	requestVersion(t, startCV, "1.0.1")
	for i := 1; i <= *flagRestarts; i++ {
		// Restarts spread over the first few dozen writes of the update.
		// Once the update has converged the operator writes no more, and
		// the restart goes ahead anyway.
		after := p.writes(t) + 1 + rng.Intn(12)
		waitFor(t, fmt.Sprintf("the operator's write #%d before restart %d", after, i), 2*time.Minute, alive, func() (bool, string) {
			n := p.writes(t)
			cv := getCV(t, startCV)
			done := completed(cv, "1.0.1") && condition(cv, "Upgradeable").Status == "True"
			return n >= after || done, fmt.Sprintf("%d writes so far; %s", n, describeCV(cv))
		})
		restartCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		started := time.Now()
		err := testCluster.RestartAPIServer(restartCtx)
		cancel()
		if err != nil {
			t.Fatalf("restart %d: %v", i, err)
		}
		t.Logf("restart %d: kube-apiserver restarted after the operator's write #%d (down for %s)", i, after, time.Since(started).Round(100*time.Millisecond))
	}
	e.waitConverged(t, startCV, opNS, 4*time.Minute, alive)
	p.stop(t)
	e.checkWrites(t, mark, writeRules{user: userRestart, ledgerNamespace: opNS, ledgerName: ledgerName,
		operatorNamespace: opNS, clusterVersion: startCV})
}
