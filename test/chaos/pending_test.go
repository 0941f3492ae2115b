package chaos

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/payload-applier/payload-applier/pkg/graph"
)

// TestPacedDeleteOfAMissingObjectIsNotReportedInProgress: an update claims
// every delete it carries, and a claim held back behind a finalizer stays
// Pending until the walk reaches it. When its object does not exist, the
// pass must not report it as a deletion in progress: Upgradeable would name
// an object that is not there (found by the crash test, which compares
// Upgradeable with the cluster after every restart).
func TestPacedDeleteOfAMissingObjectIsNotReportedInProgress(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ns := testCluster.CreateNamespace(t)
	sc := &scenario{tag: fmt.Sprintf("chaos-pending-%d", time.Now().UnixNano()%1_000_000), namespaces: []string{ns}, objects: []*object{
		{kind: kindConfigMap, namespace: ns, name: "held", hold: true, inV1: true, fate: fateDelete, file: "0000_30_alpha_000_held.yaml"},
		{kind: kindConfigMap, namespace: ns, name: "never-installed", fate: fateDelete, file: "0000_20_alpha_001_never-installed.yaml"},
	}}
	e := newEnv(t, sc)
	store := sc.writeStore(t)
	cfg, err := testCluster.UserRESTConfig(userPairs)
	if err != nil {
		t.Fatal(err)
	}
	engine := newEngine(t, cfg, ns)
	if _, err := engine.Sync(ctx, loadRelease(t, filepath.Join(store, "1.0.0")), engineOptions(graph.ModeInstall)); err != nil {
		t.Fatal(err)
	}
	res, err := engine.Sync(ctx, loadRelease(t, filepath.Join(store, "1.0.1")), engineOptions(graph.ModeUpdate))
	if err != nil {
		t.Fatal(err)
	}
	var pending []string
	for _, r := range res.Deletes.InProgress {
		pending = append(pending, r.ID.String())
	}
	held, missing := sc.objects[0].String(), sc.objects[1].String()
	if fmt.Sprint(pending) != fmt.Sprint([]string{held}) {
		t.Fatalf("deletes in progress after the update pass: %v; want only %s, which a finalizer holds (%s does not exist)", pending, held, missing)
	}
	if p := releaseTerminating(t, ctx, e); p != 1 {
		t.Fatalf("released %d held objects, want 1", p)
	}
}
