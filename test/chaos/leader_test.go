package chaos

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestTwoOperatorProcessesOneWriter runs two `payload-applier start`
// processes with leader election, each as its own token user, through an
// install and an update with deletes. Per the audit log, every write to
// payload objects, the ClusterVersion's status and the ledger must come
// from one of them, the Lease holder, and the other must write nothing but
// its attempts at the Lease.
func TestTwoOperatorProcessesOneWriter(t *testing.T) {
	ctx := context.Background()
	resetStartCV(t)
	run := newOperatorRun(t, "leader", 8, false)
	rng, opNS, sc, e := run.rng, run.opNS, run.sc, run.e
	store := sc.writeStore(t)

	// The ClusterVersion exists before either starts, so that neither
	// bootstrap creates it.
	requestVersion(t, startCV, "1.0.0")
	mark, err := testCluster.AuditMark()
	if err != nil {
		t.Fatal(err)
	}
	users := []string{userLeaderA, userLeaderB}
	procs := map[string]*operatorProcess{}
	for _, u := range users {
		procs[u] = startOperator(t, processOptions{store: store, namespace: opNS, user: u, leaderElect: true})
	}
	alive := func() {
		for _, p := range procs {
			p.requireRunning(t)
		}
	}
	e.waitInstalled(t, startCV, alive)
	e.recordInstalled(t, ctx)
	startClearer(t, e, rng, 3*time.Second, false)
	updateMark, err := testCluster.AuditMark()
	if err != nil {
		t.Fatal(err)
	}
	requestVersion(t, startCV, "1.0.1")
	e.waitConverged(t, startCV, opNS, 3*time.Minute, alive)

	lease, err := e.kube.CoordinationV1().Leases(opNS).Get(ctx, "payload-applier", metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil {
		t.Fatalf("no lease holder in %s: %v", opNS, err)
	}
	var leader string
	for u, p := range procs {
		if p.identity == *lease.Spec.HolderIdentity {
			leader = u
		}
	}
	if leader == "" {
		t.Fatalf("the lease is held by %q, which is neither process", *lease.Spec.HolderIdentity)
	}
	// The follower goes first: the leader releases the Lease when it
	// stops, and the follower would take over.
	for _, u := range users {
		if u != leader {
			procs[u].stop(t)
		}
	}
	procs[leader].stop(t)

	writers := writersSince(t, mark, users, "leases")
	for _, u := range users {
		if u != leader && len(writers[u]) > 0 {
			t.Errorf("%s does not hold the lease but wrote %d times:\n  %s", u, len(writers[u]), strings.Join(firstN(writers[u], 20), "\n  "))
		}
	}
	if len(writers[leader]) == 0 {
		t.Errorf("the leader %s made no writes; the install and update went through someone else", leader)
	}
	e.checkWrites(t, updateMark, writeRules{user: leader, ledgerNamespace: opNS, ledgerName: ledgerName,
		operatorNamespace: opNS, clusterVersion: startCV})
}
