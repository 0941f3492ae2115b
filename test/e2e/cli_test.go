package e2e

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	configclient "github.com/openshift/client-go/config/clientset/versioned"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

// buildCLI builds payload-applier once per test binary.
func buildCLI(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "payload-applier")
	cmd := exec.Command("go", "build", "-o", bin, "../../cmd/payload-applier")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build CLI: %v\n%s", err, out)
	}
	return bin
}

// runCLI runs the CLI against the test cluster, as cluster.ApplierUser,
// and returns its exit code.
func runCLI(t testing.TB, bin string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, append(args, "--kubeconfig", testCluster.ApplierKubeconfig())...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, stdout.String(), stderr.String()
	case errors.As(err, &exit):
		return exit.ExitCode(), stdout.String(), stderr.String()
	}
	t.Fatalf("run %v: %v", args, err)
	return -1, "", ""
}

// resetClusterVersion removes the shared state `apply` uses, so the test
// starts from a cluster that was never installed.
func resetClusterVersion(t testing.TB) {
	t.Helper()
	cc, err := configclient.NewForConfig(testCluster.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_ = cc.ConfigV1().ClusterVersions().Delete(ctx, "version", metav1.DeleteOptions{})
	_ = newClients(t).kube.CoreV1().ConfigMaps("openshift-cluster-version").Delete(ctx, "payload-applier-delete-ledger", metav1.DeleteOptions{})
}

// newCLITest builds the CLI and gives a test a cluster that was never
// installed, its clients and a namespace of its own.
func newCLITest(t *testing.T) (string, *clients, string) {
	t.Helper()
	bin := buildCLI(t)
	resetClusterVersion(t)
	t.Cleanup(func() { resetClusterVersion(t) })
	return bin, newClients(t), testCluster.CreateNamespace(t)
}

func TestApplyCommandExitCodes(t *testing.T) {
	bin, c, ns := newCLITest(t)
	releases := storyReleases(ns)
	dirs := map[string]string{}
	for v, files := range releases {
		dirs[v] = writePayload(t, v, files)
	}
	invalid := writePayload(t, "1.0.9", map[string]string{"0000_50_demo_00_a.yaml": configMap(ns, "a", "x", `release.openshift.io/delete: "True"`)})
	broken := writePayload(t, "1.0.3", map[string]string{"0000_50_demo_00_a.yaml": configMap(ns, "Not_A_Valid_Name", "x")})

	steps := []struct {
		name     string
		args     []string
		want     int
		contains string
	}{
		{"the first apply installs", []string{"apply", "--payload", dirs["1.0.0"]}, 0, "(install)"},
		{"the same version again reconciles", []string{"apply", "--payload", dirs["1.0.0"]}, 0, "(reconcile)"},
		{"an invalid payload exits 2 naming file and line", []string{"apply", "--payload", invalid}, 2, "0000_50_demo_00_a.yaml:"},
		{"another version updates and lists pending deletes", []string{"apply", "--payload", dirs["1.0.1"]}, 0, "still in progress"},
		{"a minor update while deletes are pending exits 3", []string{"apply", "--payload", dirs["1.1.0"]}, 3, "refused"},
		{"a task failure exits 1", []string{"apply", "--payload", broken}, 1, "Not_A_Valid_Name"},
		{"an unknown output format is a usage error", []string{"apply", "--payload", dirs["1.0.0"], "-o", "yaml"}, 2, "--output"},
	}
	for _, s := range steps {
		code, stdout, stderr := runCLI(t, bin, s.args...)
		if code != s.want || !strings.Contains(stdout+stderr, s.contains) {
			t.Fatalf("%s: exit %d (want %d), output lacks %q?\nstdout:\n%s\nstderr:\n%s", s.name, code, s.want, s.contains, stdout, stderr)
		}
	}

	code, stdout, _ := runCLI(t, bin, "status")
	if code != 0 || !strings.Contains(stdout, "ConfigMap/"+ns+"/held") || !strings.Contains(stdout, "example.com/hold") || !strings.Contains(stdout, "Upgradeable") {
		t.Fatalf("status must show the pending delete with its finalizer (exit %d):\n%s", code, stdout)
	}
	code, stdout, _ = runCLI(t, bin, "status", "-o", "json")
	if code != 0 || !strings.Contains(stdout, `"deletes"`) {
		t.Fatalf("status -o json (exit %d):\n%s", code, stdout)
	}

	c.removeFinalizers(t, schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, ns, "held")
	c.waitGone(t, configMapGVK, ns, "held")
	// Only a pass of the release that asked for the paced delete may issue it.
	if code, stdout, stderr := runCLI(t, bin, "apply", "--payload", dirs["1.0.1"]); code != 0 || !strings.Contains(stdout, "Upgradeable=True") {
		t.Fatalf("re-applying 1.0.1 must finish its deletes (exit %d):\n%s\n%s", code, stdout, stderr)
	}
	if c.get(t, configMapGVK, ns, "first") != nil {
		t.Fatal("the paced delete was not issued")
	}
	if code, stdout, stderr := runCLI(t, bin, "apply", "--payload", dirs["1.1.0"], "-o", "json"); code != 0 || !strings.Contains(stdout, `"mode": "update"`) {
		t.Fatalf("after the delete completes, 1.1.0 must apply (exit %d):\n%s\n%s", code, stdout, stderr)
	}
}

func TestCommandsHaveHelp(t *testing.T) {
	bin := buildCLI(t)
	for _, cmd := range []string{"lint", "plan", "apply", "start", "status", "version", "update-graph", "update-graph deprecate", "crd migrate-storage", "release", "release pack", "release sign"} {
		out, err := exec.Command(bin, append(strings.Fields(cmd), "--help")...).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "Usage:") {
			t.Errorf("%s --help: %v\n%s", cmd, err, out)
		}
	}
	_ = os.Remove(bin)
}

func TestApplyExitsOneOnARefusedDeleteAndDeletesTheRest(t *testing.T) {
	bin, c, ns := newCLITest(t)
	// The applier runs in ns here: the engine protects its own namespace,
	// which lint, judging by the default names, cannot know of.
	self := "--namespace=" + ns
	own := "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: " + ns + "\n  annotations:\n    " + include + "\n"
	kubePublic := "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: kube-public\n  annotations:\n    " + include + "\n"
	v100 := writePayload(t, "1.0.0", map[string]string{"0000_50_demo_00_old.yaml": configMap(ns, "old", "x")})
	v101 := writePayload(t, "1.0.1", map[string]string{
		"0000_50_demo_00_old.yaml": withDelete(configMap(ns, "old", "x")),
		"0000_50_demo_01_ns.yaml":  withDelete(own),
	})
	linted := writePayload(t, "1.0.2", map[string]string{
		"0000_50_demo_00_old.yaml": withDelete(configMap(ns, "old", "x")),
		"0000_50_demo_01_ns.yaml":  withDelete(kubePublic),
	})
	if code, stdout, stderr := runCLI(t, bin, "apply", "--payload", v100, self); code != 0 {
		t.Fatalf("install: exit %d\n%s\n%s", code, stdout, stderr)
	}

	t.Log("lint rejects a delete of a protected object at load: exit 2, nothing applied")
	mark := auditMark(t)
	if code, stdout, stderr := runCLI(t, bin, "apply", "--payload", linted, self); code != 2 || !strings.Contains(stderr, "0000_50_demo_01_ns.yaml:") || !strings.Contains(stderr, "protected-delete") {
		t.Fatalf("exit %d, want 2 naming the file and the rule\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if writes := applierWrites(t, mark); len(writes) != 0 {
		t.Errorf("a rejected payload wrote %d times: %v", len(writes), writes)
	}

	t.Log("the engine refuses what lint cannot see, and deletes the rest: exit 1")
	mark = auditMark(t)
	for pass := range 2 {
		code, stdout, stderr := runCLI(t, bin, "apply", "--payload", v101, self)
		if code != 1 || !strings.Contains(stdout, "1 delete(s) refused") || !strings.Contains(stdout, "it is a protected namespace") ||
			strings.Contains(stdout, "still in progress") {
			t.Fatalf("pass %d: exit %d, want 1 with the refusal apart from deletes in progress\nstdout:\n%s\nstderr:\n%s", pass, code, stdout, stderr)
		}
	}
	if c.get(t, configMapGVK, ns, "old") != nil {
		t.Error("the delete beside the refused one must go ahead")
	}
	if d := applierDeletes(t, mark); d[ns] != 0 {
		t.Errorf("the applier's namespace was sent %d DELETEs", d[ns])
	}

	code, stdout, _ := runCLI(t, bin, "status", self)
	if code != 0 || !strings.Contains(stdout, "Namespace/"+ns) ||
		!strings.Contains(stdout, "Refused: refusing to delete Namespace/"+ns+": it is a protected namespace") ||
		!strings.Contains(stdout, "ResourceDeletionFailed") {
		t.Fatalf("status must show the refusal on one line and Upgradeable=False ResourceDeletionFailed (exit %d):\n%s", code, stdout)
	}
}

func TestDeleteStuckAfterDecidesWhenAHeldDeleteIsStuck(t *testing.T) {
	bin, c, ns := newCLITest(t)
	v100 := writePayload(t, "1.0.0", map[string]string{"0000_50_demo_00_held.yaml": heldConfigMap(ns, "held")})
	v101 := writePayload(t, "1.0.1", map[string]string{"0000_50_demo_00_held.yaml": withDelete(heldConfigMap(ns, "held"))})
	t.Cleanup(func() {
		c.removeFinalizers(t, schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, ns, "held")
	})
	for _, dir := range []string{v100, v101} {
		if code, stdout, stderr := runCLI(t, bin, "apply", "--payload", dir); code != 0 {
			t.Fatalf("apply %s: exit %d\n%s\n%s", dir, code, stdout, stderr)
		}
	}
	time.Sleep(2 * time.Second)
	if code, stdout, stderr := runCLI(t, bin, "apply", "--payload", v101); code != 0 || !strings.Contains(stdout, "Upgradeable=False ResourceDeletionInProgress") {
		t.Fatalf("with the default of 10m the held delete is in progress, not stuck: exit %d\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, stderr := runCLI(t, bin, "apply", "--payload", v101, "--delete-stuck-after", "1s")
	if code != 0 || !strings.Contains(stdout, "Upgradeable=False ResourceDeletionFailed") {
		t.Fatalf("with --delete-stuck-after 1s the held delete reads as stuck: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if u := findCondition(clusterVersion(t), "Upgradeable"); u == nil || !strings.Contains(u.Message, "ConfigMap/"+ns+"/held") {
		t.Errorf("Upgradeable must name the stuck delete: %+v", u)
	}
	if code, _, stderr := runCLI(t, bin, "apply", "--payload", v101, "--delete-stuck-after", "0s"); code != 2 || !strings.Contains(stderr, "--delete-stuck-after") {
		t.Errorf("a non-positive threshold is a usage error: exit %d\n%s", code, stderr)
	}
}

func TestACorruptLedgerIsLoudAndRepairable(t *testing.T) {
	bin, c, ns := newCLITest(t)
	v100 := writePayload(t, "1.0.0", map[string]string{"0000_50_demo_00_old.yaml": configMap(ns, "old", "x")})
	v101 := writePayload(t, "1.0.1", map[string]string{
		"0000_50_demo_00_old.yaml": withDelete(configMap(ns, "old", "x")),
		"0000_50_demo_01_new.yaml": configMap(ns, "new", "x"),
	})
	if code, stdout, stderr := runCLI(t, bin, "apply", "--payload", v100); code != 0 {
		t.Fatalf("install: exit %d\n%s\n%s", code, stdout, stderr)
	}
	ledgers := c.kube.CoreV1().ConfigMaps("openshift-cluster-version")
	garbage := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "payload-applier-delete-ledger", Namespace: "openshift-cluster-version"},
		BinaryData: map[string][]byte{"records.json.gz": []byte("this is not gzip")}}
	_ = ledgers.Delete(context.Background(), garbage.Name, metav1.DeleteOptions{})
	if _, err := ledgers.Create(context.Background(), garbage, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	t.Log("an update over the corrupt ledger applies, deletes nothing and says why")
	code, stdout, stderr := runCLI(t, bin, "apply", "--payload", v101)
	if code != 1 || !strings.Contains(stderr, "the delete ledger is unreadable") || !strings.Contains(stderr, "payload-applier-delete-ledger") {
		t.Fatalf("exit %d, want 1 naming the ledger\n%s\n%s", code, stdout, stderr)
	}
	if c.get(t, configMapGVK, ns, "new") == nil || c.get(t, configMapGVK, ns, "old") == nil {
		t.Fatal("the applies must go ahead and the delete must wait")
	}
	wantE2ECondition(t, clusterVersion(t), "Failing", "True", "DeleteLedgerUnreadable", "not gzip")
	if code, stdout, stderr := runCLI(t, bin, "status"); code != 0 || !strings.Contains(stderr, "the delete ledger is unreadable") || !strings.Contains(stdout, "DeleteLedgerUnreadable") {
		t.Errorf("status must warn and still show the conditions: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if cm, err := ledgers.Get(context.Background(), garbage.Name, metav1.GetOptions{}); err != nil || string(cm.BinaryData["records.json.gz"]) != "this is not gzip" {
		t.Errorf("the corrupt ledger must be left for the admin to repair, not overwritten: %v", err)
	}

	t.Log("deleting the ConfigMap repairs it: the update starts its delete")
	if err := ledgers.Delete(context.Background(), garbage.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if code, stdout, stderr := runCLI(t, bin, "apply", "--payload", v101); code != 0 {
		t.Fatalf("after the repair: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if c.get(t, configMapGVK, ns, "old") != nil {
		t.Error("the delete must run once the ledger reads again")
	}
	wantE2ECondition(t, clusterVersion(t), "Failing", "False", "", "")
}

func TestApplyHoldsTheOperatorsLease(t *testing.T) {
	bin, c, ns := newCLITest(t)
	dir := writePayload(t, "1.0.0", map[string]string{"0000_50_demo_00_a.yaml": configMap(ns, "a", "x")})
	leases := c.kube.CoordinationV1().Leases("openshift-cluster-version")
	ctx := context.Background()
	hold := func(holder string, renewed time.Time, seconds int32) {
		t.Helper()
		_ = leases.Delete(ctx, "payload-applier", metav1.DeleteOptions{})
		lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "payload-applier", Namespace: "openshift-cluster-version"},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(holder), LeaseDurationSeconds: ptr.To(seconds),
				RenewTime: &metav1.MicroTime{Time: renewed}, AcquireTime: &metav1.MicroTime{Time: renewed}}}
		if _, err := leases.Create(ctx, lease, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _ = leases.Delete(ctx, "payload-applier", metav1.DeleteOptions{}) })
	// Bootstrap creates the namespace; a first apply ignoring the Lease does it.
	if code, stdout, stderr := runCLI(t, bin, "apply", "--payload", dir, "--ignore-lease"); code != 0 {
		t.Fatalf("install: exit %d\n%s\n%s", code, stdout, stderr)
	}

	t.Log("a Lease another instance renews makes apply refuse, naming it")
	hold("operator-7f9c", time.Now(), 60)
	mark := auditMark(t)
	code, stdout, stderr := runCLI(t, bin, "apply", "--payload", dir)
	if code != 1 || !strings.Contains(stderr, `"operator-7f9c", holds the applier's Lease`) || !strings.Contains(stderr, "--lease-wait") {
		t.Fatalf("exit %d, want 1 naming the holder\n%s\n%s", code, stdout, stderr)
	}
	for _, w := range applierWrites(t, mark) {
		if w.ObjectRef != nil && w.ObjectRef.Resource != "events" {
			t.Errorf("a refused apply wrote %s", w)
		}
	}

	t.Log("--ignore-lease writes beside it")
	if code, stdout, stderr := runCLI(t, bin, "apply", "--payload", dir, "--ignore-lease"); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}

	t.Log("a holder whose clock lags 31s keeps its Lease: apply watches it renewed and refuses")
	hold("skewed-operator", time.Now().Add(-31*time.Second), 3)
	renewing, stopRenewing := context.WithCancel(ctx)
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		for renewing.Err() == nil {
			if l, err := leases.Get(renewing, "payload-applier", metav1.GetOptions{}); err == nil && ptr.Deref(l.Spec.HolderIdentity, "") == "skewed-operator" {
				l.Spec.RenewTime = &metav1.MicroTime{Time: time.Now().Add(-31 * time.Second)}
				_, _ = leases.Update(renewing, l, metav1.UpdateOptions{})
			}
			select {
			case <-renewing.Done():
			case <-time.After(500 * time.Millisecond):
			}
		}
	}()
	code, stdout, stderr = runCLI(t, bin, "apply", "--payload", dir)
	stopRenewing()
	<-renewed
	if code != 1 || !strings.Contains(stderr, `"skewed-operator", holds the applier's Lease`) {
		t.Fatalf("exit %d, want 1 naming the skewed holder\n%s\n%s", code, stdout, stderr)
	}

	t.Log("a Lease its holder stopped renewing is taken over once seen unchanged for its duration, and released after")
	hold("crashed-instance", time.Now().Add(-2*time.Minute), 3)
	if code, stdout, stderr := runCLI(t, bin, "apply", "--payload", dir); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	lease, err := leases.Get(ctx, "payload-applier", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h := ptr.Deref(lease.Spec.HolderIdentity, ""); h != "" || ptr.Deref(lease.Spec.LeaseTransitions, 0) != 1 {
		t.Errorf("lease holder %q, transitions %d: want it taken over once and released", h, ptr.Deref(lease.Spec.LeaseTransitions, 0))
	}
}
