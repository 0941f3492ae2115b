// Package chaos is the reliability harness: it drives the applier against a
// real control plane while things go wrong (injected API faults, operator
// crashes, an apiserver restart, two instances at once, random release
// pairs) and checks that updates with deletes still converge to exactly the
// state the payloads ask for.
//
// `make test` runs the bounded counts below; `make soak` the full ones, e.g.
//
//	go test ./test/chaos/ -chaos.crashes=50 -chaos.pairs=200 -chaos.restarts=5
//
// Randomized tests log their seed; -chaos.seed=N replays the draws.
package chaos

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/payload-applier/payload-applier/test/cluster"
)

var (
	flagCrashes   = flag.Int("chaos.crashes", 10, "SIGKILLs of the operator during an update with deletes")
	flagPairs     = flag.Int("chaos.pairs", 20, "random release pairs applied through the engine")
	flagRestarts  = flag.Int("chaos.restarts", 2, "kube-apiserver restarts during an update")
	flagFaultRate = flag.Float64("chaos.fault-rate", 0.10, "share of API requests the fault proxy breaks")
	flagSeed      = flag.Int64("chaos.seed", 0, "seed for every randomized test; 0 draws one from the clock")
)

// Token users, one per actor, so that the audit log tells them apart from
// the tests' own requests (made as cluster.AdminUser) and from each other.
const (
	userProxy   = "chaos-proxy"
	userCrash   = "chaos-crash"
	userRestart = "chaos-restart"
	userPairs   = "chaos-pairs"
	userLeaderA = "chaos-a"
	userLeaderB = "chaos-b"
)

// testCluster is the control plane this package's tests share. They run
// one at a time: several use the ClusterVersion "version" that `start`
// always reconciles, and one restarts kube-apiserver.
var testCluster *cluster.Cluster

func TestMain(m *testing.M) {
	var users []cluster.User
	for _, name := range []string{userProxy, userCrash, userRestart, userPairs, userLeaderA, userLeaderB} {
		users = append(users, cluster.User{Name: name, Groups: []string{"system:masters"}})
	}
	code := cluster.RunTests(m, cluster.Options{Users: users}, &testCluster)
	if cliDir != "" {
		_ = os.RemoveAll(cliDir)
	}
	os.Exit(code)
}

// seedFor returns -chaos.seed or a fresh seed, and logs how to replay it.
func seedFor(t *testing.T) int64 {
	t.Helper()
	seed := *flagSeed
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	t.Logf("seed %d (replay: go test ./test/chaos/ -run '^%s$' -chaos.seed=%d)", seed, t.Name(), seed)
	return seed
}

var (
	cliOnce  sync.Once
	cliDir   string
	cliPath  string
	cliError error
)

// buildCLI builds payload-applier once per test binary.
func buildCLI(t *testing.T) string {
	t.Helper()
	cliOnce.Do(func() {
		cliDir, cliError = os.MkdirTemp("", "payload-applier-chaos-cli-")
		if cliError != nil {
			return
		}
		cliPath = filepath.Join(cliDir, "payload-applier")
		out, err := exec.Command("go", "build", "-o", cliPath, "../../cmd/payload-applier").CombinedOutput()
		if err != nil {
			cliError = fmt.Errorf("go build ./cmd/payload-applier: %v\n%s", err, out)
		}
	})
	if cliError != nil {
		t.Fatal(cliError)
	}
	return cliPath
}
