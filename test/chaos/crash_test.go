package chaos

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"

	"github.com/payload-applier/payload-applier/pkg/apply"
	"github.com/payload-applier/payload-applier/pkg/clusterversion"
	"github.com/payload-applier/payload-applier/pkg/payload"
)

// TestOperatorSurvivesSIGKILLDuringAnUpdateWithDeletes kills `payload-applier
// start` with SIGKILL at random points of an update with deletes
// (-chaos.crashes times) and starts it again each time. Kill points are
// random counts of the operator's own writes (so they land between any two
// of its requests: applies, ledger saves, DELETEs, status) or random delays
// after start. Held objects keep deletes pending across the crashes and are
// released one at a time while the operator is down.
//
// After each restart whose first sync completes, Upgradeable must tell the
// truth about the marked objects; at the end the update must converge with
// no delete lost (every marked object gone, the stored ledger agreeing) and
// no object deleted twice, per the audit log.
func TestOperatorSurvivesSIGKILLDuringAnUpdateWithDeletes(t *testing.T) {
	ctx := context.Background()
	resetStartCV(t)
	// More crashes get more objects, so that deletes stay pending through
	// most of them: held objects are released one at a time.
	run := newOperatorRun(t, "crash", 6+*flagCrashes/2, false)
	rng, opNS, sc, e := run.rng, run.opNS, run.sc, run.e
	procOpts := processOptions{store: sc.writeStore(t), namespace: opNS, user: userCrash}

	installer := startOperator(t, procOpts)
	requestVersion(t, startCV, "1.0.0")
	e.waitInstalled(t, startCV, func() { installer.requireRunning(t) })
	installer.stop(t)
	e.recordInstalled(t, ctx)

	// The clearer only runs for the final convergence. During the crashes
	// held objects are released one at a time while the operator is down,
	// so that each restart has a delete to finish and the next one in its
	// chain to issue, and the cluster changes only through the operator
	// while it runs.
	clear := startClearer(t, e, rng, time.Second, true)
	held := len(sc.filter(func(o *object) bool { return o.hold && o.fate == fateDelete && o.inV1 }))
	releaseChance := math.Min(1, 2*float64(held)/float64(max(*flagCrashes, 1)))
	mark, err := testCluster.AuditMark()
	if err != nil {
		t.Fatal(err)
	}
	requestVersion(t, startCV, "1.0.1")
	checked := 0
	for i := 1; i <= *flagCrashes; i++ {
		released := ""
		if rng.Float64() < releaseChance {
			released = e.releaseOneTerminating(t, ctx)
		}
		before := e.presentMarked(t, ctx)
		// Kill at the operator's k-th write: anywhere in the update pass
		// while it has not completed, and among the few writes a restart
		// makes to finish deletes afterwards. k = 0 kills after a random
		// delay instead, often before the first request.
		span := 13
		if !completed(getCV(t, startCV), "1.0.1") {
			span = 3 * len(sc.objects)
		}
		killAt := rng.Intn(span)
		killDelay := time.Duration(rng.Int63n(int64(3 * time.Second)))
		// Every other restart must finish its first sync and be checked
		// before it dies; the others may die at any point.
		mustCheck := i%2 == 0
		p := startOperator(t, procOpts)
		started := time.Now()
		var checkedAt time.Time
		for {
			p.requireRunning(t)
			writes := p.writes(t)
			if checkedAt.IsZero() && p.syncs() >= 2 {
				// A sync is counted before it writes status: after two, the
				// first one's status is in.
				if problems := e.upgradeableProblems(t, ctx, before); len(problems) > 0 {
					t.Fatalf("crash %d: after the restart, Upgradeable is not truthful:\n  %s", i, strings.Join(problems, "\n  "))
				}
				checked++
				checkedAt = time.Now()
			}
			var kill bool
			switch {
			case mustCheck && checkedAt.IsZero():
			case killAt == 0:
				kill = time.Since(started) >= killDelay
			default:
				// Or, once checked, when the operator has gone idle.
				kill = writes >= killAt || (!checkedAt.IsZero() && time.Since(checkedAt) >= killDelay)
			}
			if kill {
				p.kill()
				t.Logf("crash %d: SIGKILL after %d writes, %s after start (released before: %q; Upgradeable checked: %v)",
					i, writes, time.Since(started).Round(time.Millisecond), released, !checkedAt.IsZero())
				break
			}
			if time.Since(started) > 3*time.Minute {
				t.Fatalf("crash %d: the operator made %d writes and %d syncs in 3 minutes; no kill point was reached", i, writes, p.syncs())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	t.Logf("%d of %d restarts were checked for a truthful Upgradeable", checked, *flagCrashes)

	clear.Resume()
	last := startOperator(t, procOpts)
	alive := func() { last.requireRunning(t) }
	// Convergence counts only once this process has synced and written status.
	waitFor(t, "two syncs of the last operator process", 2*time.Minute, alive, func() (bool, string) {
		n := last.syncs()
		return n >= 2, fmt.Sprintf("%d syncs", n)
	})
	e.waitConverged(t, startCV, opNS, 3*time.Minute, alive)
	last.stop(t)
	e.checkWrites(t, mark, writeRules{user: userCrash, ledgerNamespace: opNS, ledgerName: ledgerName,
		operatorNamespace: opNS, clusterVersion: startCV})
}

// upgradeableProblems compares the ClusterVersion's Upgradeable with the
// objects v2 marks for deletion; see judgeUpgradeable.
func (e *env) upgradeableProblems(t *testing.T, ctx context.Context, before map[payload.ObjectID]bool) []string {
	t.Helper()
	cv := getCV(t, startCV)
	up := condition(cv, configv1.OperatorUpgradeable)
	if up.Status == "" {
		return []string{fmt.Sprintf("no Upgradeable condition: %s", describeCV(cv))}
	}
	return judgeUpgradeable(up, e.sc.marked(), before, e.presentMarked(t, ctx))
}

// judgeUpgradeable decides whether up tells the truth about the marked
// objects. before is what existed when the operator started and after what
// exists now; nothing but the operator changed the cluster in between, and
// a deleted object never comes back, so:
//
//   - Upgradeable=True is a lie if a marked object still exists;
//   - Upgradeable=False names the pending deletes: every marked object that
//     still exists must be named, and nothing that was already gone when the
//     operator started may be.
func judgeUpgradeable(up configv1.ClusterOperatorStatusCondition, marked []*object, before, after map[payload.ObjectID]bool) []string {
	var out []string
	switch up.Status {
	case configv1.ConditionTrue:
		for _, o := range marked {
			if after[o.id()] {
				out = append(out, fmt.Sprintf("Upgradeable=True, but %s is marked for deletion and still exists", o))
			}
		}
	case configv1.ConditionFalse:
		switch up.Reason {
		case clusterversion.ReasonDeletionInProgress, string(apply.ReasonDeletionFailed), clusterversion.ReasonMultipleReasons:
		default:
			out = append(out, fmt.Sprintf("Upgradeable=False for an unexpected reason %s: %q", up.Reason, up.Message))
		}
		for _, o := range marked {
			named := mentions(up.Message, o.id().String())
			switch {
			case named && !before[o.id()]:
				out = append(out, fmt.Sprintf("Upgradeable names %s, which was gone before the operator started: %q", o, up.Message))
			case !named && after[o.id()] && !strings.Contains(up.Message, " more"):
				out = append(out, fmt.Sprintf("%s is pending deletion, but Upgradeable does not name it: %q", o, up.Message))
			}
		}
	default:
		out = append(out, fmt.Sprintf("Upgradeable is %q", up.Status))
	}
	return out
}

// mentions reports whether msg names id as a whole word.
func mentions(msg, id string) bool {
	for rest := msg; ; {
		i := strings.Index(rest, id)
		if i < 0 {
			return false
		}
		end := i + len(id)
		if end == len(rest) || strings.ContainsRune(" ,)\n", rune(rest[end])) {
			return true
		}
		rest = rest[end:]
	}
}
