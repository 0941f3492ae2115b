package e2e

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/payload-applier/payload-applier/pkg/apply/cleanup"
	"github.com/payload-applier/payload-applier/pkg/graph"
	"github.com/payload-applier/payload-applier/test/cluster"
)

const (
	deleteAnn    = `release.openshift.io/delete: "true"`
	supportedAnn = `release.openshift.io/operand-cleanup: "Supported"`
)

// removalFiles is the release that removes the widgets component, its CRD
// marked Supported.
func (w widgetComponent) removalFiles() map[string]string {
	return map[string]string{
		"0000_50_widgets_00_crd.yaml":      w.crdManifest(deleteAnn, supportedAnn),
		"0000_50_widgets_10_operator.yaml": w.operatorManifest(deleteAnn),
	}
}

// noOperandDeletes fails the test when the applier deleted a Widget since mark.
func noOperandDeletes(t *testing.T, mark cluster.AuditMark) {
	t.Helper()
	for _, d := range applierWrites(t, mark) {
		if d.Verb == "delete" && d.ObjectRef != nil && d.ObjectRef.Resource == "widgets" {
			t.Errorf("an operand was deleted: %s", d)
		}
	}
}

// TestOperandCleanupSkipRules: with both keys set, a release that breaks
// rule 2, 3 or 4 leaves the operands alone, says which rule, and the
// removal goes ahead as without the feature. Lint rejects the payloads of
// rules 3 and 4 (api-still-used, created-and-deleted), so the engine is
// given them unlinted, as a payload that slipped past release CI.
func TestOperandCleanupSkipRules(t *testing.T) {
	for _, tc := range []struct {
		name  string
		extra func(w widgetComponent) map[string]string
		rule  string
	}{
		{"another component also deletes the CRD", func(w widgetComponent) map[string]string {
			return map[string]string{"0000_50_gizmos_00_crd.yaml": w.crdManifest(deleteAnn)}
		}, "rule 2 (SingleOwner): component gizmos"},
		{"the release still uses the API (rule 3)", func(w widgetComponent) map[string]string {
			return map[string]string{"0000_60_users_00_widget.yaml": fmt.Sprintf(
				"apiVersion: %s/v1\nkind: Widget\nmetadata:\n  name: kept\n  namespace: %s\n  annotations:\n    %s\n", w.group, w.ns, include)}
		}, "still uses kind Widget"},
		{"the release ships the CRD again", func(w widgetComponent) map[string]string {
			return map[string]string{"0000_50_widgets_01_crd.yaml": w.crdManifest()}
		}, "rule 4 (NotReplaced): the release ships"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClients(t)
			ns := testCluster.CreateNamespace(t)
			w := newWidgetComponent(t, ns)
			e := newEngine(t, ns)
			requireComplete(t, sync(t, e, load(t, writePayload(t, "1.0.0", map[string]string{
				"0000_50_widgets_00_crd.yaml": w.crdManifest(), "0000_50_widgets_10_operator.yaml": w.operatorManifest()})), graph.ModeInstall))
			t.Cleanup(func() { w.releaseAll(t, c) })
			w.createWidget(t, c, ns, "mine", true)

			files := w.removalFiles()
			for name, body := range tc.extra(w) {
				files[name] = body
			}
			rel := loadUnlinted(t, writePayload(t, "1.0.1", files))
			mark := auditMark(t)
			opts := fastOptions(graph.ModeUpdate)
			opts.OperandCleanup = cleanup.PolicyDelete
			res, err := e.Sync(context.Background(), rel, opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Cleanups) != 1 || res.Cleanups[0].State != cleanup.Skipped {
				t.Fatalf("cleanups %+v, want widgets Skipped", res.Cleanups)
			}
			if skips := strings.Join(res.Cleanups[0].Skips, "; "); !strings.Contains(skips, tc.rule) {
				t.Errorf("skips %q, want %q", skips, tc.rule)
			}
			noOperandDeletes(t, mark)
			if _, err := c.kube.AppsV1().Deployments(ns).Get(context.Background(), "widget-operator", metav1.GetOptions{}); err == nil {
				t.Error("a skipped cleanup must not hold the removal: the operator is still there")
			}
		})
	}
}

// TestOperandCleanupNeverStartsInARollbackOrAReconcile: a cleanup starts
// only in an update that moves forward.
func TestOperandCleanupNeverStartsInARollbackOrAReconcile(t *testing.T) {
	t.Run("rollback", func(t *testing.T) {
		bin, c, ns := newCLITest(t)
		w := newWidgetComponent(t, ns)
		v110 := writePayload(t, "1.1.0", map[string]string{"0000_50_widgets_00_crd.yaml": w.crdManifest(), "0000_50_widgets_10_operator.yaml": w.operatorManifest()})
		v109 := writePayload(t, "1.0.9", w.removalFiles())
		w.install(t, bin, c, v110)
		w.createWidget(t, c, ns, "held", true)
		setCleanupPolicy(t, "Delete")
		mark := auditMark(t)
		if code, stdout, stderr := runCLI(t, bin, "apply", "--payload", v109, "--force"); code != 0 {
			t.Fatalf("forced rollback: exit %d\n%s\n%s", code, stdout, stderr)
		}
		noOperandDeletes(t, mark)
		wantE2ECondition(t, clusterVersion(t), "OperandCleanup", "False", "OperandCleanupSkipped", "the update is a rollback")
	})
	t.Run("reconcile", func(t *testing.T) {
		bin, c, ns := newCLITest(t)
		w := newWidgetComponent(t, ns)
		v100, v101 := w.releases(t, supportedAnn)
		w.install(t, bin, c, v100)
		w.createWidget(t, c, ns, "held", true)
		// The update ran without the admin's key: the removal went ahead.
		if code, stdout, stderr := runCLI(t, bin, "apply", "--payload", v101); code != 0 {
			t.Fatalf("update: exit %d\n%s\n%s", code, stdout, stderr)
		}
		setCleanupPolicy(t, "Delete")
		mark := auditMark(t)
		code, stdout, stderr := runCLI(t, bin, "apply", "--payload", v101)
		if code != 0 || !strings.Contains(stdout, "(reconcile)") {
			t.Fatalf("reconcile: exit %d\n%s\n%s", code, stdout, stderr)
		}
		noOperandDeletes(t, mark)
		if cond := findCondition(clusterVersion(t), "OperandCleanup"); cond != nil {
			t.Errorf("a reconcile started a cleanup: %+v", cond)
		}
	})
}

// TestARestartMidCleanupCarriesItOn: the operator is killed (SIGKILL)
// while its gate waits on held operands; the next process reads the
// persisted cleanup, keeps its start, recounts what is left from the API,
// and finishes the removal once the operands are gone.
func TestARestartMidCleanupCarriesItOn(t *testing.T) {
	bin, c, ns := newCLITest(t)
	w := newWidgetComponent(t, ns)
	v100, v101 := w.releases(t, supportedAnn)
	w.install(t, bin, c, v100)
	for i := range 3 {
		w.createWidget(t, c, ns, fmt.Sprintf("w%d", i), true)
	}
	setCleanupPolicy(t, "Delete")
	store := t.TempDir()
	for version, dir := range map[string]string{"1.0.0": v100, "1.0.1": v101} {
		if err := os.Rename(dir, filepath.Join(store, version)); err != nil {
			t.Fatal(err)
		}
	}
	requestVersion(t, "1.0.1")

	start := func() *exec.Cmd {
		cmd := exec.Command(bin, "start", "--payloads", store, "--listen", "", "--leader-elect=false", "--resync-interval", "1s",
			"--kubeconfig", testCluster.ApplierKubeconfig())
		cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	waitUntil := func(what string, cond func() bool) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 90*time.Second, true,
			func(context.Context) (bool, error) { return cond(), nil }); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}

	first := start()
	waitUntil("the gate deletes every operand", func() bool {
		list, err := c.dynamic.Resource(w.gvr).Namespace(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil || len(list.Items) != 3 {
			return false
		}
		for _, item := range list.Items {
			if item.GetDeletionTimestamp() == nil {
				return false
			}
		}
		return true
	})
	waitUntil("the cleanup is persisted", func() bool {
		cm, err := c.kube.CoreV1().ConfigMaps("openshift-cluster-version").Get(context.Background(), "payload-applier-operand-cleanup", metav1.GetOptions{})
		return err == nil && strings.Contains(cm.Data["records.json"], `"startedAt"`)
	})
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = first.Wait()
	started := cleanupStartedAt(t, c)
	if _, err := c.kube.AppsV1().Deployments(ns).Get(context.Background(), "widget-operator", metav1.GetOptions{}); err != nil {
		t.Fatalf("the operator must outlive its held operands: %v", err)
	}

	// The operator finishes its operands while the applier is down.
	w.runOperator(t, c)
	second := start()
	defer func() { _ = second.Process.Kill(); _ = second.Wait() }()
	waitUntil("the removal completes after the restart", func() bool { return c.get(t, crdGVKOf(), "", w.crd) == nil })
	if again := cleanupStartedAt(t, c); again != started {
		t.Errorf("the cleanup's start moved from %s to %s across the restart", started, again)
	}
	waitUntil("the condition reads completed", func() bool {
		cond := findCondition(clusterVersion(t), "OperandCleanup")
		return cond != nil && cond.Reason == "OperandCleanupCompleted"
	})
}
