package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	configclient "github.com/openshift/client-go/config/clientset/versioned"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"

	"github.com/payload-applier/payload-applier/pkg/operator"
)

// writeStore writes a release store: one payload directory per version.
func writeStore(t testing.TB, releases map[string]map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for version, files := range releases {
		dir := writePayload(t, version, files)
		if err := os.Rename(dir, filepath.Join(root, version)); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// testOperator is an operator on its own ClusterVersion and namespace, so
// tests do not share state.
type testOperator struct {
	*operator.Operator
	name      string
	namespace string
	config    configclient.Interface
	identity  string
}

// newOperator builds an operator acting as cfg's user; nil means
// cluster.ApplierUser. The test reads its ClusterVersion as the admin.
func newOperator(t testing.TB, store, cvName, ns string, cfg *rest.Config, metrics *operator.Metrics) *testOperator {
	t.Helper()
	return newOperatorOn(t, &operator.DirStore{Root: store}, cvName, ns, cfg, metrics)
}

// newOperatorOn is newOperator on any release source; edits, if any,
// change the operator's Config before it is built.
func newOperatorOn(t testing.TB, releases operator.ReleaseSource, cvName, ns string, cfg *rest.Config, metrics *operator.Metrics, edits ...func(*operator.Config)) *testOperator {
	t.Helper()
	if cfg == nil {
		cfg = testCluster.ApplierRESTConfig()
	}
	ocfg := operator.Config{
		Releases:  releases,
		Namespace: ns,
		Name:      cvName,
		Sync:      fastOptions(""),
		Metrics:   metrics,
		Identity:  uniqueName(t, cvName),
		// A FeatureGate of the test's own, which does not exist: the
		// shared "cluster" one appears once a test applies ocp-real with
		// the FeatureGate CRD installed, and would change what every later
		// test includes.
		FeatureGateName: cvName + "-featuregate",
	}
	for _, edit := range edits {
		edit(&ocfg)
	}
	op, err := operator.NewForConfig(cfg, ocfg)
	if err != nil {
		t.Fatal(err)
	}
	cc := configClient(t)
	if err := op.Bootstrap(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cc.ConfigV1().ClusterVersions().Delete(context.Background(), cvName, metav1.DeleteOptions{})
	})
	return &testOperator{Operator: op, name: cvName, namespace: ns, config: cc, identity: op.Identity()}
}

func (o *testOperator) sync(t testing.TB) *operator.Outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := o.Sync(ctx, nil)
	if err != nil {
		t.Fatalf("sync: %v", err)
	}
	return out
}

// run runs the operator's loop until the test ends.
func (o *testOperator) run(t testing.TB, opts operator.RunOptions) {
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		_ = o.Run(ctx, opts)
	}()
	t.Cleanup(func() {
		cancel()
		<-stopped
	})
}

func (o *testOperator) request(t testing.TB, version string, force bool) {
	t.Helper()
	if err := o.RequestRelease(context.Background(), version, force); err != nil {
		t.Fatal(err)
	}
}

func (o *testOperator) clusterVersion(t testing.TB) *configv1.ClusterVersion {
	t.Helper()
	cv, err := o.config.ConfigV1().ClusterVersions().Get(context.Background(), o.name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cv
}

func condition(cv *configv1.ClusterVersion, t configv1.ClusterStatusConditionType) configv1.ClusterOperatorStatusCondition {
	for _, c := range cv.Status.Conditions {
		if c.Type == t {
			return c
		}
	}
	return configv1.ClusterOperatorStatusCondition{}
}

// requireCondition fails unless the condition has status and reason.
func requireCondition(t testing.TB, cv *configv1.ClusterVersion, ct configv1.ClusterStatusConditionType, status configv1.ConditionStatus, reason string) configv1.ClusterOperatorStatusCondition {
	t.Helper()
	c := condition(cv, ct)
	if c.Status != status || (reason != "" && c.Reason != reason) {
		t.Fatalf("%s = %s/%s (%q), want %s/%s", ct, c.Status, c.Reason, c.Message, status, reason)
	}
	return c
}

// waitFor polls until cond holds.
func waitFor(t testing.TB, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		return cond(), nil
	}); err != nil {
		t.Fatalf("timed out waiting for %s", what)
	}
}
