package chaos

import (
	"context"
	"fmt"
	"math/rand"
	"net/url"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/payload-applier/payload-applier/pkg/apply"
	"github.com/payload-applier/payload-applier/pkg/operator"
	"github.com/payload-applier/payload-applier/test/chaos/faultproxy"
)

// operatorScenario is the update the operator tests run: v1 installs a mix
// of kinds; v2 changes some, drops some, adds some and deletes some. The
// forced objects make sure of held deletes in two chains, a delete paced
// behind a held one, and untouched neighbours; the rest is random.
func operatorScenario(rng *rand.Rand, tag string, namespaces []string, random int, withNamespace bool) *scenario {
	forced := []forcedObject{
		{kind: kindConfigMap, hold: true, inV1: true, fate: fateDelete, component: "alpha", runLevel: 30},
		{kind: kindSecret, inV1: true, fate: fateDelete, component: "alpha", runLevel: 20}, // waits for the one above
		{kind: kindClusterRole, hold: true, inV1: true, fate: fateDelete, component: "beta", runLevel: 20},
		{kind: kindImageStream, inV1: true, fate: fateDelete, component: "beta", runLevel: 10},
		{kind: kindConfigMap, inV1: true, fate: fateChange, component: "beta", runLevel: 10},
		{kind: kindImageStream, inV1: true, fate: fateDrop, component: "gamma", runLevel: 20},
	}
	if withNamespace {
		forced = append(forced, forcedObject{kind: kindNamespace, inV1: true, fate: fateDelete, component: "gamma", runLevel: 10})
	}
	return newScenario(rng, tag, scenarioOptions{
		Objects:    random,
		Kinds:      []*kind{kindConfigMap, kindSecret, kindClusterRole, kindImageStream},
		Namespaces: namespaces,
		HoldShare:  0.25,
		Forced:     forced,
	})
}

// operatorRun is where an operator test starts: a seeded operatorScenario
// over two new namespaces, its env with the bystanders in place, and a
// namespace for the operator's own objects.
type operatorRun struct {
	seed int64
	rng  *rand.Rand
	// tag names the scenario's objects: chaos-<name>-<random>.
	tag  string
	opNS string
	sc   *scenario
	e    *env
}

func newOperatorRun(t *testing.T, name string, random int, withNamespace bool) *operatorRun {
	t.Helper()
	r := &operatorRun{seed: seedFor(t)}
	r.rng = rand.New(rand.NewSource(r.seed))
	r.opNS = testCluster.CreateNamespace(t)
	namespaces := []string{testCluster.CreateNamespace(t), testCluster.CreateNamespace(t)}
	r.tag = fmt.Sprintf("chaos-%s-%06d", name, r.rng.Intn(1_000_000))
	r.sc = operatorScenario(r.rng, r.tag, namespaces, random, withNamespace)
	t.Logf("scenario:\n%s", r.sc.describe())
	r.e = newEnv(t, r.sc)
	r.e.createBystanders(t, context.Background())
	return r
}

// TestUpdateConvergesThroughAFaultyAPI runs the operator in-process behind
// the fault proxy, which breaks 10% of its requests (-chaos.fault-rate):
// 500s, 429s with Retry-After, hangs, resets and lost responses of writes
// that took effect. The update with deletes must still converge to exactly
// what v2 asks, with one DELETE per deleted object and no stray write.
func TestUpdateConvergesThroughAFaultyAPI(t *testing.T) {
	ctx := context.Background()
	run := newOperatorRun(t, "proxy", 10, true)
	seed, rng, tag, opNS, sc, e := run.seed, run.rng, run.tag, run.opNS, run.sc, run.e
	store := sc.writeStore(t)

	userCfg, err := testCluster.UserRESTConfig(userProxy)
	if err != nil {
		t.Fatal(err)
	}
	upstream, err := url.Parse(userCfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	upstreamTLS, err := faultproxy.TLSConfigFor(userCfg.CAData)
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := faultproxy.Start(faultproxy.Options{Upstream: upstream, UpstreamTLS: upstreamTLS, Rate: *flagFaultRate, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()

	cvName := tag
	requestVersion(t, cvName, "1.0.0")
	t.Cleanup(func() {
		_ = configClient(t).ConfigV1().ClusterVersions().Delete(context.Background(), cvName, metav1.DeleteOptions{})
	})
	op, err := operator.NewForConfig(proxy.RESTConfig(userCfg), operator.Config{
		Releases:  &operator.DirStore{Root: store},
		Namespace: opNS,
		Name:      cvName,
		Sync: apply.SyncOptions{
			Backoff:      &wait.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Steps: 5},
			DeleteSettle: time.Second,
		},
		Identity: tag,
	})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- op.Run(runCtx, operator.RunOptions{ResyncInterval: time.Second, DeletePoll: 500 * time.Millisecond})
	}()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			<-done
		}
	}
	defer stop()
	alive := func() {
		select {
		case err := <-done:
			stopped = true
			t.Fatalf("the operator loop returned by itself: %v", err)
		default:
		}
	}

	e.waitInstalled(t, cvName, alive)
	e.recordInstalled(t, ctx)
	startClearer(t, e, rng, 3*time.Second, false)
	mark, err := testCluster.AuditMark()
	if err != nil {
		t.Fatal(err)
	}
	requestVersion(t, cvName, "1.0.1")
	e.waitConverged(t, cvName, opNS, 4*time.Minute, alive)
	stop()

	t.Logf("fault proxy: %s", proxy.Summary())
	if _, faults := proxy.Stats(); len(faults) == 0 && *flagFaultRate > 0 {
		t.Error("the proxy injected no fault, so this run proved nothing")
	}
	e.checkWrites(t, mark, writeRules{user: userProxy, ledgerNamespace: opNS, ledgerName: ledgerName,
		operatorNamespace: opNS, clusterVersion: cvName})
}
