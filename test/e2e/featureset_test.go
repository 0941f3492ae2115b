package e2e

import (
	"context"
	"os"
	gosync "sync"
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

	ctx, cancel := context.WithCancel(context.Background())
	var wg gosync.WaitGroup
	wg.Add(1)
	var runErr error
	go func() {
		defer wg.Done()
		// Only a FeatureGate change wakes it within the test.
		runErr = op.Run(ctx, operator.RunOptions{ResyncInterval: 10 * time.Minute})
	}()
	defer func() {
		cancel()
		wg.Wait()
	}()

	t.Log("TechPreviewNoUpgrade with ExampleGate for 1.0.0: the watch wakes the operator")
	// Let Run's first pass end and start the watch: with a resync of 10
	// minutes, only the watch can wake it then.
	time.Sleep(3 * time.Second)
	setFeatureGate(t, fgName, configv1.TechPreviewNoUpgrade, "1.0.0", "ExampleGate")
	waitFor(t, "the TechPreview and gated manifests", time.Minute, func() bool { return present("techpreview") && present("gated") })

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
	cancel()
	wg.Wait()
	if runErr != nil {
		t.Fatalf("Run: %v", runErr)
	}
}
