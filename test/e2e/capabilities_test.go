package e2e

import (
	"context"
	"slices"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/payload-applier/payload-applier/pkg/clusterversion"
	"github.com/payload-applier/payload-applier/pkg/graph"
)

const (
	consoleCapability  = `capability.openshift.io/name: Console`
	buildCapability    = `capability.openshift.io/name: Build`
	insightsCapability = `capability.openshift.io/name: Insights`
)

// setCapabilities writes spec.capabilities as an admin would.
func (o *testOperator) setCapabilities(t testing.TB, caps *configv1.ClusterVersionCapabilitiesSpec) {
	t.Helper()
	cv := o.clusterVersion(t)
	cv.Spec.Capabilities = caps
	if _, err := o.config.ConfigV1().ClusterVersions().Update(context.Background(), cv, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func noCapabilitiesBut(caps ...configv1.ClusterVersionCapability) *configv1.ClusterVersionCapabilitiesSpec {
	return &configv1.ClusterVersionCapabilitiesSpec{BaselineCapabilitySet: configv1.ClusterVersionCapabilitySetNone, AdditionalEnabledCapabilities: caps}
}

// configMapData is the ConfigMap's data key, "" when it does not exist.
func configMapData(t testing.TB, c *clients, ns, name string) (string, bool) {
	t.Helper()
	cm, err := c.kube.CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", false
	}
	if err != nil {
		t.Fatal(err)
	}
	return cm.Data["key"], true
}

// requireCapabilityMetric fails unless cluster_version_capability{name}
// is want.
func requireCapabilityMetric(t testing.TB, metricsURL, name string, want float64) {
	t.Helper()
	if v := scrape(t, metricsURL, `cluster_version_capability\{name="`+name+`"\}`); v != want {
		t.Errorf(`cluster_version_capability{name=%q} = %v, want %v`, name, v, want)
	}
}

func requireEnabledCapabilities(t testing.TB, cv *configv1.ClusterVersion, want ...configv1.ClusterVersionCapability) {
	t.Helper()
	if got := cv.Status.Capabilities.EnabledCapabilities; !slices.Equal(got, want) {
		t.Fatalf("status.capabilities.enabledCapabilities = %v, want %v", got, want)
	}
	if n := len(cv.Status.Capabilities.KnownCapabilities); n != len(configv1.KnownClusterVersionCapabilities) {
		t.Errorf("%d known capabilities in status, want %d", n, len(configv1.KnownClusterVersionCapabilities))
	}
}

func TestCapabilityDisabledInTheSpecStaysEnabled(t *testing.T) {
	c := newClients(t)
	ns := testCluster.CreateNamespace(t)
	metrics, metricsURL := servedMetrics(t)
	files := map[string]string{
		"0000_50_demo_00_plain.yaml":   configMap(ns, "plain", "x"),
		"0000_50_demo_01_console.yaml": configMap(ns, "console", "x", consoleCapability),
		"0000_50_demo_02_build.yaml":   configMap(ns, "build", "x", buildCapability),
	}
	op := newOperator(t, writeStore(t, map[string]map[string]string{"1.0.0": files}), uniqueName(t, "caps"), ns, nil, metrics)
	op.request(t, "1.0.0", false)
	op.setCapabilities(t, noCapabilitiesBut("Console"))

	t.Log("install with Console alone")
	if out := op.sync(t); out.Mode != graph.ModeInstall || !out.Result.Complete() {
		t.Fatalf("install: mode %s, result %+v", out.Mode, out.Result)
	}
	cv := op.clusterVersion(t)
	requireEnabledCapabilities(t, cv, "Console")
	requireCondition(t, cv, clusterversion.ConditionImplicitlyEnabledCapabilities, configv1.ConditionFalse, clusterversion.ReasonAsExpected)
	if _, ok := configMapData(t, c, ns, "console"); !ok {
		t.Fatal("the ConfigMap behind the enabled Console was not applied")
	}
	if _, ok := configMapData(t, c, ns, "build"); ok {
		t.Fatal("the ConfigMap behind the disabled Build was applied")
	}
	requireCapabilityMetric(t, metricsURL, "Console", 1)
	requireCapabilityMetric(t, metricsURL, "Build", 0)

	t.Log("the spec drops Console; its ConfigMap, deleted meanwhile, is applied again")
	op.setCapabilities(t, noCapabilitiesBut())
	if err := c.kube.CoreV1().ConfigMaps(ns).Delete(context.Background(), "console", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if out := op.sync(t); !out.Result.Complete() {
		t.Fatalf("reconcile: %+v", out.Result)
	}
	cv = op.clusterVersion(t)
	requireEnabledCapabilities(t, cv, "Console")
	cond := requireCondition(t, cv, clusterversion.ConditionImplicitlyEnabledCapabilities, configv1.ConditionTrue, clusterversion.ReasonCapabilitiesImplicitlyEnabled)
	if cond.Message != "The following capabilities could not be disabled: Console" {
		t.Errorf("condition message %q", cond.Message)
	}
	if _, ok := configMapData(t, c, ns, "console"); !ok {
		t.Error("the ConfigMap behind Console was not applied after the spec dropped Console")
	}
	requireCapabilityMetric(t, metricsURL, "Console", 1)
}

func TestCapabilityImplicitlyEnabledByAnUpdate(t *testing.T) {
	c := newClients(t)
	ns := testCluster.CreateNamespace(t)
	metrics, metricsURL := servedMetrics(t)
	store := writeStore(t, map[string]map[string]string{
		"1.0.0": {
			"0000_50_demo_00_moved.yaml": configMap(ns, "moved", "1.0.0"),
		},
		"1.0.1": {
			"0000_50_demo_00_moved.yaml": configMap(ns, "moved", "1.0.1", buildCapability),
			"0000_50_demo_01_new.yaml":   configMap(ns, "new", "1.0.1", insightsCapability),
		},
	})
	op := newOperator(t, store, uniqueName(t, "caps-update"), ns, nil, metrics)
	op.request(t, "1.0.0", false)
	op.setCapabilities(t, noCapabilitiesBut())
	if out := op.sync(t); out.Mode != graph.ModeInstall || !out.Result.Complete() {
		t.Fatalf("install: mode %s, result %+v", out.Mode, out.Result)
	}
	requireEnabledCapabilities(t, op.clusterVersion(t))

	t.Log("1.0.1 puts the running ConfigMap behind the disabled Build")
	op.request(t, "1.0.1", false)
	if out := op.sync(t); out.Mode != graph.ModeUpdate || out.Refused != nil || !out.Result.Complete() {
		t.Fatalf("update: mode %s, refused %v, result %+v", out.Mode, out.Refused, out.Result)
	}
	cv := op.clusterVersion(t)
	requireEnabledCapabilities(t, cv, "Build")
	cond := requireCondition(t, cv, clusterversion.ConditionImplicitlyEnabledCapabilities, configv1.ConditionTrue, clusterversion.ReasonCapabilitiesImplicitlyEnabled)
	if cond.Message != "The following capabilities could not be disabled: Build" {
		t.Errorf("condition message %q", cond.Message)
	}
	if data, _ := configMapData(t, c, ns, "moved"); data != "1.0.1" {
		t.Errorf("moved holds %q, want 1.0.1's manifest applied", data)
	}
	if _, ok := configMapData(t, c, ns, "new"); ok {
		t.Error("a new object behind the disabled Insights was applied")
	}
	requireCapabilityMetric(t, metricsURL, "Build", 1)
	requireCapabilityMetric(t, metricsURL, "Insights", 0)

	t.Log("the next pass keeps Build, and still says so")
	op.sync(t)
	cv = op.clusterVersion(t)
	requireEnabledCapabilities(t, cv, "Build")
	requireCondition(t, cv, clusterversion.ConditionImplicitlyEnabledCapabilities, configv1.ConditionTrue, clusterversion.ReasonCapabilitiesImplicitlyEnabled)
}
