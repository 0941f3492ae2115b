package e2e

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"

	"github.com/payload-applier/payload-applier/pkg/operator"
	"github.com/payload-applier/payload-applier/pkg/payload"
)

// featureGateCRD is openshift/api's FeatureGate CRD, byte-identical to
// config/v1/zz_generated.crd-manifests/0000_10_config-operator_01_featuregates.crd.yaml
// of the pinned module. The config operator installs it in OpenShift;
// bootstrap does not.
const featureGateCRD = "testdata/0000_10_config-operator_01_featuregates.crd.yaml"

// installFeatureGateCRD creates the FeatureGate CRD unless it is there, and
// waits until FeatureGates are served. It stays: other tests use their own
// FeatureGate names.
func installFeatureGateCRD(t *testing.T) {
	t.Helper()
	raw, err := os.ReadFile(featureGateCRD)
	if err != nil {
		t.Fatal(err)
	}
	crd := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(raw, &crd.Object); err != nil {
		t.Fatal(err)
	}
	c := newClients(t)
	_, err = c.dynamic.Resource(payload.CRDGVR).Create(context.Background(), crd, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	cc := configClient(t)
	if err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := cc.ConfigV1().FeatureGates().List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil, nil
	}); err != nil {
		t.Fatal("FeatureGates are not served")
	}
}

// setFeatureGate writes the FeatureGate's feature set and, for version,
// the gates it enables, as the config operator does; it creates the
// FeatureGate if needed.
func setFeatureGate(t *testing.T, name string, set configv1.FeatureSet, version string, enabled ...string) {
	t.Helper()
	fgs := configClient(t).ConfigV1().FeatureGates()
	ctx := context.Background()
	fg, err := fgs.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		fg, err = fgs.Create(ctx, &configv1.FeatureGate{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		t.Cleanup(func() { _ = fgs.Delete(context.Background(), name, metav1.DeleteOptions{}) })
	}
	if err != nil {
		t.Fatal(err)
	}
	if fg.Spec.FeatureSet != set {
		fg.Spec.FeatureSet = set
		if fg, err = fgs.Update(ctx, fg, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	details := configv1.FeatureGateDetails{Version: version, Enabled: []configv1.FeatureGateAttributes{}, Disabled: []configv1.FeatureGateAttributes{}}
	for _, g := range enabled {
		details.Enabled = append(details.Enabled, configv1.FeatureGateAttributes{Name: configv1.FeatureGateName(g)})
	}
	fg.Status.FeatureGates = []configv1.FeatureGateDetails{details}
	if _, err := fgs.UpdateStatus(ctx, fg, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestFeatureSetFromFeatureGate: the running operator includes manifests
// for the FeatureGate's feature set and the gates it enables for the
// running version, wakes up when they change, and leaves a gated manifest
// out again once its gate is gone.
func TestFeatureSetFromFeatureGate(t *testing.T) {
	installFeatureGateCRD(t)
	c := newClients(t)
	ns := testCluster.CreateNamespace(t)
	fgName := uniqueName(t, "featuregate")
	store := writeStore(t, map[string]map[string]string{"1.0.0": {
		"0000_50_demo_00_plain.yaml":       configMap(ns, "plain", "x"),
		"0000_50_demo_01_techpreview.yaml": configMap(ns, "techpreview", "x", `release.openshift.io/feature-set: TechPreviewNoUpgrade`),
		"0000_50_demo_02_gated.yaml":       configMap(ns, "gated", "x", `release.openshift.io/feature-gate: ExampleGate`),
		"0000_50_demo_03_without.yaml":     configMap(ns, "without-gate", "x", `release.openshift.io/feature-gate: -ExampleGate`),
	}})
	setFeatureGate(t, fgName, "", "1.0.0")
	op := newOperatorOn(t, &operator.DirStore{Root: store}, uniqueName(t, "featureset"), ns, nil, nil,
		func(cfg *operator.Config) { cfg.FeatureGateName = fgName })
	present := func(name string) bool { return c.get(t, configMapGVK, ns, name) != nil }

	t.Log("Default feature set, no gate enabled")
	op.request(t, "1.0.0", false)
	if out := op.sync(t); out.Result == nil || !out.Result.Complete() {
		t.Fatalf("install: %+v", out)
	}
	if !present("plain") || !present("without-gate") || present("techpreview") || present("gated") {
		t.Fatalf("Default: plain %t, without-gate %t, techpreview %t, gated %t",
			present("plain"), present("without-gate"), present("techpreview"), present("gated"))
	}

	// Only a FeatureGate change wakes it within the test.
	running := runInBackground(t, op, operator.RunOptions{ResyncInterval: 10 * time.Minute})

	t.Log("TechPreviewNoUpgrade with ExampleGate for 1.0.0: the watch wakes the operator")
	// Let Run's first pass end and start the watch: with a resync of 10
	// minutes, only the watch can wake it then.
	time.Sleep(3 * time.Second)
	setFeatureGate(t, fgName, configv1.TechPreviewNoUpgrade, "1.0.0", "ExampleGate")
	waitFor(t, "the TechPreview and gated manifests", time.Minute, func() bool { return present("techpreview") && present("gated") })
	waitFor(t, "the FeatureSetChanged Event", time.Minute, func() bool {
		events, err := c.kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range events.Items {
			if e.Reason == operator.EventFeatureSetChanged && strings.Contains(e.Message, `"TechPreviewNoUpgrade"; restarting the sync`) {
				return true
			}
		}
		return false
	})

	t.Log("the config operator drops ExampleGate: the gated manifest is left out again")
	if err := c.kube.CoreV1().ConfigMaps(ns).Delete(context.Background(), "without-gate", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	setFeatureGate(t, fgName, configv1.TechPreviewNoUpgrade, "1.0.0")
	waitFor(t, "the manifest for ExampleGate disabled", time.Minute, func() bool { return present("without-gate") })
	if err := c.kube.CoreV1().ConfigMaps(ns).Delete(context.Background(), "gated", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	out := op.sync(t)
	for _, o := range out.Result.Objects {
		if o.ID.Name == "gated" {
			t.Fatalf("the gated manifest is still applied: %+v", o)
		}
	}
	if present("gated") {
		t.Fatal("the gated manifest was applied again")
	}
	if !present("techpreview") {
		t.Fatal("the TechPreview manifest is gone")
	}
	running.stop(t)
}

// running is an operator's Run in the background.
type running struct {
	cancel context.CancelFunc
	done   chan error
}

// runInBackground starts op.Run; the test's cleanup stops it if the test
// does not.
func runInBackground(t *testing.T, op *testOperator, opts operator.RunOptions) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- op.Run(ctx, opts) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-r.done:
		case <-time.After(time.Minute):
		}
	})
	return r
}

// requireServing fails if Run returned before being stopped.
func (r *running) requireServing(t *testing.T) {
	t.Helper()
	select {
	case err := <-r.done:
		r.done <- err
		t.Fatalf("Run returned while serving: %v", err)
	default:
	}
}

// stop ends Run and fails unless it returned cleanly.
func (r *running) stop(t *testing.T) {
	t.Helper()
	r.requireServing(t)
	r.cancel()
	if err := <-r.done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	r.done <- nil
}
