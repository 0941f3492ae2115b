package chaos

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	configv1 "github.com/openshift/api/config/v1"
	configclient "github.com/openshift/client-go/config/clientset/versioned"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"

	"github.com/payload-applier/payload-applier/pkg/apply"
)

// startCV is the ClusterVersion `payload-applier start` always reconciles.
const startCV = "version"

// ledgerName is the ledger ConfigMap in the operator's namespace.
var ledgerName = apply.DefaultSelf().Ledger

func configClient(t *testing.T) configclient.Interface {
	t.Helper()
	cc, err := configclient.NewForConfig(testCluster.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	return cc
}

// resetStartCV deletes the ClusterVersion `version` now and when the test
// ends, so that each test using `start` begins with a cluster that was
// never installed. Its ledger lives in a namespace of its own.
func resetStartCV(t *testing.T) {
	t.Helper()
	cc := configClient(t)
	reset := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err := cc.ConfigV1().ClusterVersions().Delete(ctx, startCV, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		return wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			_, err := cc.ConfigV1().ClusterVersions().Get(ctx, startCV, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
	}
	if err := reset(); err != nil {
		t.Fatalf("reset ClusterVersion %s: %v", startCV, err)
	}
	t.Cleanup(func() {
		if err := reset(); err != nil {
			t.Errorf("reset ClusterVersion %s: %v", startCV, err)
		}
	})
}

// requestVersion sets spec.desiredUpdate, creating the ClusterVersion when
// it does not exist yet, as an administrator would.
func requestVersion(t *testing.T, name, version string) {
	t.Helper()
	cvs := configClient(t).ConfigV1().ClusterVersions()
	ctx := context.Background()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cv, err := cvs.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = cvs.Create(ctx, &configv1.ClusterVersion{
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec: configv1.ClusterVersionSpec{ClusterID: configv1.ClusterID(uuid.NewString()),
					DesiredUpdate: &configv1.Update{Version: version}},
			}, metav1.CreateOptions{})
			return err
		}
		if err != nil {
			return err
		}
		cv.Spec.DesiredUpdate = &configv1.Update{Version: version}
		_, err = cvs.Update(ctx, cv, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("request %s on ClusterVersion %s: %v", version, name, err)
	}
}

func getCV(t *testing.T, name string) *configv1.ClusterVersion {
	t.Helper()
	cv, err := configClient(t).ConfigV1().ClusterVersions().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get ClusterVersion %s: %v", name, err)
	}
	return cv
}

func condition(cv *configv1.ClusterVersion, ct configv1.ClusterStatusConditionType) configv1.ClusterOperatorStatusCondition {
	for _, c := range cv.Status.Conditions {
		if c.Type == ct {
			return c
		}
	}
	return configv1.ClusterOperatorStatusCondition{}
}

// completed reports whether version is the newest completed history entry.
func completed(cv *configv1.ClusterVersion, version string) bool {
	h := cv.Status.History
	return len(h) > 0 && h[0].Version == version && h[0].State == configv1.CompletedUpdate
}

func describeCV(cv *configv1.ClusterVersion) string {
	var hist []string
	for _, h := range cv.Status.History {
		hist = append(hist, fmt.Sprintf("%s %s", h.Version, h.State))
	}
	up := condition(cv, configv1.OperatorUpgradeable)
	return fmt.Sprintf("history [%s], Upgradeable=%s %s: %q", strings.Join(hist, ", "), up.Status, up.Reason, up.Message)
}

// waitFor polls check until it reports done, failing the test with its
// last description of what is missing when timeout passes. alive, when
// set, runs every round and fails the test early, e.g. when an operator
// process died.
func waitFor(t *testing.T, what string, timeout time.Duration, alive func(), check func() (bool, string)) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), 250*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		if alive != nil {
			alive()
		}
		var ok bool
		ok, last = check()
		return ok, nil
	})
	if err != nil {
		t.Fatalf("timed out after %s waiting for %s; last seen:\n%s", timeout, what, last)
	}
}

// waitInstalled waits until cvName reports 1.0.0 completed and v1 is in place.
func (e *env) waitInstalled(t *testing.T, cvName string, alive func()) {
	t.Helper()
	ctx := context.Background()
	waitFor(t, "the install of 1.0.0", 3*time.Minute, alive, func() (bool, string) {
		cv := getCV(t, cvName)
		p := e.installProblems(ctx)
		return completed(cv, "1.0.0") && len(p) == 0, describeCV(cv) + "\n" + strings.Join(firstN(p, 10), "\n")
	})
}

// waitConverged waits until the update to 1.0.1 is complete and its
// deletes are done: the ClusterVersion says so, Upgradeable is True, the
// stored ledger records every delete as done, and the cluster holds
// exactly what v2 asks.
func (e *env) waitConverged(t *testing.T, cvName, ledgerNamespace string, timeout time.Duration, alive func()) {
	t.Helper()
	ctx := context.Background()
	waitFor(t, "the update to 1.0.1 to converge", timeout, alive, func() (bool, string) {
		cv := getCV(t, cvName)
		p := append(e.problems(ctx), e.ledgerProblems(ctx, ledgerNamespace, ledgerName)...)
		up := condition(cv, configv1.OperatorUpgradeable)
		ok := completed(cv, "1.0.1") && up.Status == configv1.ConditionTrue && len(p) == 0
		return ok, describeCV(cv) + "\n" + strings.Join(firstN(p, 20), "\n")
	})
}
