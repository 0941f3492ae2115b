package chaos

import (
	"context"
	"fmt"
	"math/rand"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/payload-applier/payload-applier/pkg/apply"
	"github.com/payload-applier/payload-applier/pkg/apply/deletion"
	"github.com/payload-applier/payload-applier/pkg/graph"
	"github.com/payload-applier/payload-applier/pkg/payload"
)

// engineOptions keep retries and delete settling short: a held object
// makes its chain wait for a later pass either way.
func engineOptions(mode graph.Mode) apply.SyncOptions {
	return apply.SyncOptions{
		Mode:         mode,
		Backoff:      &wait.Backoff{Duration: 100 * time.Millisecond, Factor: 2, Steps: 4},
		DeleteSettle: 300 * time.Millisecond,
	}
}

// newEngine builds an engine acting as cfg's user, its ledger in ledgerNS.
func newEngine(t *testing.T, cfg *rest.Config, ledgerNS string) *apply.Engine {
	t.Helper()
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e, err := apply.NewForConfig(cfg, apply.Config{
		Ledger: deletion.NewConfigMapStore(kube, ledgerNS, ledgerName),
	})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func loadRelease(t *testing.T, dir string) *payload.Release {
	t.Helper()
	rel, err := payload.Load(dir, payload.DefaultLoadOptions())
	if err != nil {
		t.Fatalf("load %s: %v", dir, err)
	}
	return rel
}

// TestRandomReleasePairs applies random release pairs through the engine:
// v1 installs a mix of kinds in two namespaces and cluster scope, some held
// by finalizers; v2 keeps, changes, deletes, drops and adds objects. After
// convergence the cluster must hold exactly what v2 asks, and the audit log
// must show no write v2 did not ask for.
func TestRandomReleasePairs(t *testing.T) {
	seed := seedFor(t)
	rng := rand.New(rand.NewSource(seed))
	cfg, err := testCluster.UserRESTConfig(userPairs)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < *flagPairs; i++ {
		pairSeed := rng.Int63()
		t.Run(fmt.Sprintf("pair %d", i), func(t *testing.T) {
			runPair(t, cfg, i, pairSeed)
		})
		if t.Failed() {
			t.Fatalf("pair %d failed (seed %d); the rest are skipped", i, seed)
		}
	}
}

func runPair(t *testing.T, cfg *rest.Config, index int, seed int64) {
	rng := rand.New(rand.NewSource(seed))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	namespaces := []string{testCluster.CreateNamespace(t), testCluster.CreateNamespace(t)}
	opts := scenarioOptions{
		Objects:    6 + rng.Intn(10),
		Kinds:      []*kind{kindConfigMap, kindSecret, kindClusterRole, kindImageStream},
		Namespaces: namespaces,
		HoldShare:  0.3,
	}
	// A payload namespace in one pair out of four: its delete takes the
	// namespace controller's five seconds.
	if rng.Intn(4) == 0 {
		fates := []fate{fateKeep, fateChange, fateDelete, fateDrop}
		opts.Forced = []forcedObject{{kind: kindNamespace, inV1: true, fate: fates[rng.Intn(len(fates))],
			component: components[rng.Intn(len(components))], runLevel: 10 * (1 + rng.Intn(3))}}
	}
	sc := newScenario(rng, fmt.Sprintf("chaos-pair-%d-%06d", index, rng.Intn(1_000_000)), opts)
	t.Logf("pair seed %d:\n%s", seed, sc.describe())
	e := newEnv(t, sc)
	e.createBystanders(t, ctx)
	store := sc.writeStore(t)
	v1, v2 := loadRelease(t, filepath.Join(store, "1.0.0")), loadRelease(t, filepath.Join(store, "1.0.1"))
	engine := newEngine(t, cfg, namespaces[0])

	sync := func(rel *payload.Release, mode graph.Mode) *apply.SyncResult {
		res, err := engine.Sync(ctx, rel, engineOptions(mode))
		if err != nil {
			t.Fatalf("sync %s (%s): %v", rel.Version, mode, err)
		}
		return res
	}
	for pass := 1; ; pass++ {
		if res := sync(v1, graph.ModeInstall); res.Complete() {
			break
		} else if pass == 3 {
			t.Fatalf("install incomplete after %d passes: %v", pass, res.Errors)
		}
	}
	e.recordInstalled(t, ctx)

	mark, err := testCluster.AuditMark()
	if err != nil {
		t.Fatal(err)
	}
	// As the operator does: update passes until the applies complete, then
	// reconcile passes while deletes are pending. Held objects are released
	// at random between passes.
	mode := graph.ModeUpdate
	var last []string
	for pass := 1; ; pass++ {
		res := sync(v2, mode)
		if mode == graph.ModeUpdate && res.Complete() {
			mode = graph.ModeReconcile
		}
		last = e.problems(ctx)
		if mode == graph.ModeReconcile && len(res.Deletes.InProgress) == 0 && len(last) == 0 {
			break
		}
		if pass == 60 || ctx.Err() != nil {
			t.Fatalf("no convergence after %d passes (mode %s, %d deletes in progress, errors %v):\n  %s",
				pass, mode, len(res.Deletes.InProgress), res.Errors, strings.Join(last, "\n  "))
		}
		released := 0
		if rng.Intn(2) == 0 {
			released = releaseTerminating(t, ctx, e)
		}
		if released == 0 {
			time.Sleep(200 * time.Millisecond) // a namespace takes its time
		}
	}
	if p := e.ledgerProblems(ctx, namespaces[0], ledgerName); len(p) > 0 {
		t.Errorf("the stored ledger disagrees with the cluster:\n  %s", strings.Join(p, "\n  "))
	}
	e.checkWrites(t, mark, writeRules{user: userPairs, ledgerNamespace: namespaces[0], ledgerName: ledgerName})
}
