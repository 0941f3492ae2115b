package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	configclient "github.com/openshift/client-go/config/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"

	"github.com/payload-applier/payload-applier/test/cluster"
)

// TestMinorUpdateCarryingTheCurrentReleasesDeletesIsRefused follows seed
// 002: a z-stream may still carry the delete manifests of the release it
// updates from; a minor update that carries them is refused by a
// precondition, whose knowledge comes from the cluster's delete ledger,
// unless forced.
func TestMinorUpdateCarryingTheCurrentReleasesDeletesIsRefused(t *testing.T) {
	bin, c, ns := newCLITest(t)
	keep := configMap(ns, "keep", "x")
	deleteOld := withDelete(configMap(ns, "old", "x"))
	v100 := writePayload(t, "1.0.0", map[string]string{"0000_50_demo_00_keep.yaml": keep, "0000_50_demo_01_old.yaml": configMap(ns, "old", "x")})
	v101 := writePayload(t, "1.0.1", map[string]string{"0000_50_demo_00_keep.yaml": keep, "0000_50_demo_01_old.yaml": deleteOld})
	v102 := writePayload(t, "1.0.2", map[string]string{"0000_50_demo_00_keep.yaml": keep, "0000_50_demo_01_old.yaml": deleteOld})
	v110 := writePayload(t, "1.1.0", map[string]string{"0000_50_demo_00_keep.yaml": keep, "0000_50_demo_01_old.yaml": deleteOld,
		"0000_50_demo_02_minor.yaml": configMap(ns, "minor", "x")})

	for _, dir := range []string{v100, v101} {
		if code, stdout, stderr := runCLI(t, bin, "apply", "--payload", dir); code != 0 {
			t.Fatalf("apply %s: exit %d\n%s\n%s", dir, code, stdout, stderr)
		}
	}
	if c.get(t, configMapGVK, ns, "old") != nil {
		t.Fatal("1.0.1 must delete the ConfigMap")
	}

	t.Log("a z-stream that still carries the delete manifest is accepted; the object reads as already deleted")
	code, stdout, stderr := runCLI(t, bin, "apply", "--payload", v102)
	if code != 0 || !strings.Contains(stdout, "release 1.0.2 (update)") || !strings.Contains(stderr, "already-deleted") {
		t.Fatalf("the z-stream must apply: exit %d\nstdout: %q\nstderr: %q", code, stdout, stderr)
	}

	t.Log("plan says the minor would be refused, and why")
	code, stdout, stderr = runCLI(t, bin, "plan", "--payload", v110)
	if code != 0 || !strings.Contains(stdout, "would be refused") || !strings.Contains(stdout, "0000_50_demo_01_old.yaml:1 (ConfigMap/"+ns+"/old)") {
		t.Fatalf("plan must say the update would be refused: exit %d\n%s\n%s", code, stdout, stderr)
	}

	t.Log("apply of the minor exits 3, applies nothing and explains the refusal on the ClusterVersion")
	// Event times have whole seconds.
	since := metav1.NewTime(time.Now().Truncate(time.Second))
	code, stdout, stderr = runCLI(t, bin, "apply", "--payload", v110)
	if code != 3 || !strings.Contains(stdout+stderr, "DeleteManifestsCarriedAcrossMinor") {
		t.Fatalf("exit %d, want 3 naming the check\n%s\n%s", code, stdout, stderr)
	}
	if c.get(t, configMapGVK, ns, "minor") != nil {
		t.Fatal("nothing of a refused release may be applied")
	}
	cv := clusterVersion(t)
	accepted := findCondition(cv, "ReleaseAccepted")
	if accepted == nil || accepted.Status != configv1.ConditionFalse || accepted.Reason != "PreconditionChecks" ||
		!strings.Contains(accepted.Message, "0000_50_demo_01_old.yaml:1 (ConfigMap/"+ns+"/old)") || !strings.Contains(accepted.Message, "that 1.0.2 carried") {
		t.Fatalf("ReleaseAccepted = %+v, want False/PreconditionChecks naming the manifest", accepted)
	}
	if cv.Status.Desired.Version != "1.0.2" {
		t.Fatalf("desired = %s, want 1.0.2 kept", cv.Status.Desired.Version)
	}
	if !hasEvent(t, "PreconditionBlock", "Update to 1.1.0 refused", since) {
		t.Error("no PreconditionBlock Event for the refusal")
	}

	t.Log("forced, it applies and history records the accepted risk")
	code, stdout, stderr = runCLI(t, bin, "apply", "--payload", v110, "--force")
	if code != 0 || c.get(t, configMapGVK, ns, "minor") == nil {
		t.Fatalf("a forced update must apply: exit %d\n%s\n%s", code, stdout, stderr)
	}
	cv = clusterVersion(t)
	if h := cv.Status.History[0]; h.Version != "1.1.0" || h.State != configv1.CompletedUpdate || !strings.Contains(h.AcceptedRisks, "DeleteManifestsCarriedAcrossMinor") {
		t.Errorf("history[0] = %s %s, accepted risks %q: want 1.1.0 completed with the risk", h.Version, h.State, h.AcceptedRisks)
	}
}

func clusterVersion(t testing.TB) *configv1.ClusterVersion {
	t.Helper()
	cv, err := configClient(t).ConfigV1().ClusterVersions().Get(context.Background(), "version", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cv
}

// requestVersion sets spec.desiredUpdate of the ClusterVersion, as an
// administrator asks a running operator for a release.
// requestVersion sets spec.desiredUpdate, retrying when a status write of
// a running operator came between its read and its write.
func requestVersion(t testing.TB, version string) {
	t.Helper()
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cv := clusterVersion(t)
		cv.Spec.DesiredUpdate = &configv1.Update{Version: version}
		_, err := configClient(t).ConfigV1().ClusterVersions().Update(context.Background(), cv, metav1.UpdateOptions{FieldValidation: "Ignore"})
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

func configClient(t testing.TB) configclient.Interface {
	t.Helper()
	cc, err := configclient.NewForConfig(testCluster.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	return cc
}

func findCondition(cv *configv1.ClusterVersion, t configv1.ClusterStatusConditionType) *configv1.ClusterOperatorStatusCondition {
	for i := range cv.Status.Conditions {
		if cv.Status.Conditions[i].Type == t {
			return &cv.Status.Conditions[i]
		}
	}
	return nil
}

// hasEvent reports whether an Event with reason and a message holding
// fragment was recorded in the applier's namespace since the given time.
func hasEvent(t testing.TB, reason, fragment string, since metav1.Time) bool {
	t.Helper()
	list, err := newClients(t).kube.CoreV1().Events("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range list.Items {
		if e.Reason == reason && strings.Contains(e.Message, fragment) && !e.LastTimestamp.Before(&since) {
			return true
		}
	}
	return false
}

// TestANamespaceDeleteSaysWhatItTakesWithIt: before the DELETE of a
// Namespace, plan and the Event on the ClusterVersion count, per kind, the
// objects in it that the payload does not manage, listed in pages.
func TestANamespaceDeleteSaysWhatItTakesWithIt(t *testing.T) {
	bin, c, _ := newCLITest(t)
	doomed := uniqueName(t, "doomed")
	namespace := "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: " + doomed + "\n  annotations:\n    " + include + "\n"
	owned := configMap(doomed, "owned", "x")
	v100 := writePayload(t, "1.0.0", map[string]string{"0000_50_demo_00_ns.yaml": namespace, "0000_50_demo_01_owned.yaml": owned})
	v101 := writePayload(t, "1.0.1", map[string]string{"0000_50_demo_00_ns.yaml": withDelete(namespace), "0000_50_demo_01_owned.yaml": withDelete(owned)})
	if code, stdout, stderr := runCLI(t, bin, "apply", "--payload", v100); code != 0 {
		t.Fatalf("install: exit %d\n%s\n%s", code, stdout, stderr)
	}
	ctx := context.Background()
	for _, name := range []string{"user-a", "user-b"} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: doomed}}
		if _, err := c.kube.CoreV1().ConfigMaps(doomed).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "user-s", Namespace: doomed}}
	if _, err := c.kube.CoreV1().Secrets(doomed).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// kube-controller-manager adds a ConfigMap and a ServiceAccount to every namespace.
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, saErr := c.kube.CoreV1().ServiceAccounts(doomed).Get(ctx, "default", metav1.GetOptions{})
		_, cmErr := c.kube.CoreV1().ConfigMaps(doomed).Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		return saErr == nil && cmErr == nil, nil
	})
	if err != nil {
		t.Fatalf("the namespace's default ServiceAccount and root CA never appeared: %v", err)
	}
	want := "the payload does not manage: 3 ConfigMap, 1 Secret, 1 ServiceAccount"

	code, stdout, stderr := runCLI(t, bin, "plan", "--payload", v101)
	if code != 0 || !strings.Contains(stdout, "takes with it 5 objects "+want) {
		t.Fatalf("plan must count what the Namespace delete takes: exit %d\n%s\n%s", code, stdout, stderr)
	}
	mark := auditMark(t)
	since := metav1.NewTime(time.Now().Truncate(time.Second))
	if code, stdout, stderr := runCLI(t, bin, "apply", "--payload", v101); code != 0 {
		t.Fatalf("apply: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if !hasEvent(t, "DeleteTakesObjects", "Deleting Namespace/"+doomed+" (0000_50_demo_00_ns.yaml:1) also deletes 5 objects "+want, since) {
		t.Error("no DeleteTakesObjects Event naming what the delete takes")
	}
	// The applier's own LISTs: kube-controller-manager's namespace
	// controller lists the namespace too as it empties it.
	lists := applierAudit(t, mark, cluster.AuditFilter{Verb: "list", Resource: "secrets", Namespace: doomed})
	if len(lists) == 0 {
		t.Fatal("the Namespace's Secrets were never listed")
	}
	for _, l := range lists {
		if !strings.Contains(l.RequestURI, "limit=500") {
			t.Errorf("an unpaged LIST: %s", l.RequestURI)
		}
	}
}
