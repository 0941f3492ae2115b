package operator

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/payload-applier/payload-applier/pkg/clusterversion"
	"github.com/payload-applier/payload-applier/pkg/payload"
	"github.com/payload-applier/payload-applier/pkg/payload/payloadtest"
)

const (
	consoleCap = `capability.openshift.io/name: Console`
	buildCap   = `capability.openshift.io/name: Build`
	insightCap = `capability.openshift.io/name: Insights`
)

// capabilityCluster installs 1.0.0 (files100) with spec.capabilities caps,
// 1.0.1 (files101) ready as an update, and metrics.
func capabilityCluster(t testing.TB, caps *configv1.ClusterVersionCapabilitiesSpec, files100, files101 map[string]string) (*fakeCluster, *Metrics) {
	t.Helper()
	root := t.TempDir()
	payloadtest.WriteRelease(t, root, "1.0.0", nil, files100)
	payloadtest.WriteRelease(t, root, "1.0.1", []string{"1.0.0"}, files101)
	c := newFakeCluster(t, &DirStore{Root: root}, "1.0.0")
	c.setCapabilitiesSpec(t, caps)
	metrics, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	c.op.metrics = metrics
	c.op.writer.metrics = metrics
	c.op.updates.metrics = metrics
	return c, metrics
}

func (c *fakeCluster) setCapabilitiesSpec(t testing.TB, caps *configv1.ClusterVersionCapabilitiesSpec) {
	t.Helper()
	cv := c.clusterVersion(t)
	cv.Spec.Capabilities = caps
	if _, err := c.config.ConfigV1().ClusterVersions().Update(context.Background(), cv, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func noneWith(caps ...configv1.ClusterVersionCapability) *configv1.ClusterVersionCapabilitiesSpec {
	return &configv1.ClusterVersionCapabilitiesSpec{BaselineCapabilitySet: configv1.ClusterVersionCapabilitySetNone, AdditionalEnabledCapabilities: caps}
}

func wantEnabled(t *testing.T, cv *configv1.ClusterVersion, want ...configv1.ClusterVersionCapability) {
	t.Helper()
	if got := cv.Status.Capabilities.EnabledCapabilities; !slices.Equal(got, want) {
		t.Errorf("status.capabilities.enabledCapabilities = %v, want %v", got, want)
	}
	if got := cv.Status.Capabilities.KnownCapabilities; len(got) != len(configv1.KnownClusterVersionCapabilities) {
		t.Errorf("status.capabilities.knownCapabilities = %v, want every capability openshift/api knows", got)
	}
}

func TestDisablingACapabilityLeavesItEnabled(t *testing.T) {
	files := map[string]string{
		"0000_50_demo_00_plain.yaml":   configMapManifest("plain"),
		"0000_50_demo_01_console.yaml": configMapManifest("console", consoleCap),
		"0000_50_demo_02_build.yaml":   configMapManifest("build", buildCap),
	}
	c, metrics := capabilityCluster(t, noneWith("Console"), files, files)

	c.sync(t)
	cv := c.clusterVersion(t)
	wantEnabled(t, cv, "Console")
	wantCondition(t, cv, clusterversion.ConditionImplicitlyEnabledCapabilities, configv1.ConditionFalse, clusterversion.ReasonAsExpected, "Capabilities match configured spec")
	if !c.exists("console") || c.exists("build") {
		t.Fatalf("console applied %t, build applied %t; want only the enabled capability's ConfigMap", c.exists("console"), c.exists("build"))
	}
	if on, off := testutil.ToFloat64(metrics.capability.WithLabelValues("Console")), testutil.ToFloat64(metrics.capability.WithLabelValues("Build")); on != 1 || off != 0 {
		t.Errorf("cluster_version_capability Console=%v Build=%v, want 1 and 0", on, off)
	}
	if n := testutil.CollectAndCount(metrics.capability); n != len(configv1.KnownClusterVersionCapabilities) {
		t.Errorf("%d cluster_version_capability series, want one per known capability", n)
	}

	t.Log("the spec drops Console: it stays enabled, and its ConfigMap applied")
	c.setCapabilitiesSpec(t, noneWith())
	if err := c.dynamic.Tracker().Delete(configMaps, demoNamespace, "console"); err != nil {
		t.Fatal(err)
	}
	c.sync(t)
	cv = c.clusterVersion(t)
	wantEnabled(t, cv, "Console")
	wantCondition(t, cv, clusterversion.ConditionImplicitlyEnabledCapabilities, configv1.ConditionTrue, clusterversion.ReasonCapabilitiesImplicitlyEnabled,
		"The following capabilities could not be disabled: Console")
	if !c.exists("console") {
		t.Error("the ConfigMap behind Console was not applied again after the spec dropped Console")
	}
	if v := testutil.ToFloat64(metrics.capability.WithLabelValues("Console")); v != 1 {
		t.Errorf("cluster_version_capability Console=%v after the spec dropped it, want 1", v)
	}

	t.Log("the spec asks for Console again: nothing is implicit any more")
	c.setCapabilitiesSpec(t, &configv1.ClusterVersionCapabilitiesSpec{BaselineCapabilitySet: configv1.ClusterVersionCapabilitySet4_12})
	c.sync(t)
	cv = c.clusterVersion(t)
	wantCondition(t, cv, clusterversion.ConditionImplicitlyEnabledCapabilities, configv1.ConditionFalse, clusterversion.ReasonAsExpected)
	if slices.Contains(cv.Status.Capabilities.EnabledCapabilities, "Build") || c.exists("build") {
		t.Errorf("Build enabled or applied though no spec asked for it: %v", cv.Status.Capabilities.EnabledCapabilities)
	}
}

func TestAnUpdateEnablesTheCapabilityAManagedObjectMovesBehind(t *testing.T) {
	c, metrics := capabilityCluster(t, noneWith(),
		map[string]string{
			"0000_50_demo_00_moved.yaml": configMapManifest("moved"),
			"0000_50_demo_01_kept.yaml":  configMapManifest("kept"),
		},
		map[string]string{
			"0000_50_demo_00_moved.yaml": configMapManifest("moved", buildCap),
			"0000_50_demo_01_kept.yaml":  configMapManifest("kept"),
			"0000_50_demo_02_new.yaml":   configMapManifest("new", insightCap),
		})
	c.sync(t)
	cv := c.clusterVersion(t)
	wantSettled(t, cv, "1.0.0")
	wantEnabled(t, cv)

	if err := c.dynamic.Tracker().Delete(configMaps, demoNamespace, "moved"); err != nil {
		t.Fatal(err)
	}
	cv = c.acceptUpdate(t, "1.0.1", "moved")
	wantEnabled(t, cv, "Build")
	wantCondition(t, cv, clusterversion.ConditionImplicitlyEnabledCapabilities, configv1.ConditionTrue, clusterversion.ReasonCapabilitiesImplicitlyEnabled,
		"The following capabilities could not be disabled: Build")
	if c.exists("new") {
		t.Error("an object new in the update, behind a disabled capability, was applied")
	}
	if v := testutil.ToFloat64(metrics.capability.WithLabelValues("Build")); v != 1 {
		t.Errorf("cluster_version_capability Build=%v, want 1", v)
	}

	t.Log("later passes keep it, and say so")
	c.sync(t)
	cv = c.clusterVersion(t)
	wantEnabled(t, cv, "Build")
	wantCondition(t, cv, clusterversion.ConditionImplicitlyEnabledCapabilities, configv1.ConditionTrue, clusterversion.ReasonCapabilitiesImplicitlyEnabled)
}

// An install has no current release: nothing is implicit.
func TestAnInstallEnablesNoCapabilityImplicitly(t *testing.T) {
	files := map[string]string{"0000_50_demo_00_build.yaml": configMapManifest("build", buildCap)}
	c, _ := capabilityCluster(t, noneWith(), files, files)
	c.sync(t)
	cv := c.clusterVersion(t)
	wantEnabled(t, cv)
	wantCondition(t, cv, clusterversion.ConditionImplicitlyEnabledCapabilities, configv1.ConditionFalse, clusterversion.ReasonAsExpected)
	if c.exists("build") {
		t.Error("a ConfigMap behind a disabled capability was installed")
	}
}

// An unknown baseline set (which the CRD refuses, but an older CRD may
// not) neither crashes nor disables what is enabled.
func TestAnUnknownCapabilitySetKeepsWhatIsEnabled(t *testing.T) {
	files := map[string]string{"0000_50_demo_00_console.yaml": configMapManifest("console", consoleCap)}
	c, _ := capabilityCluster(t, noneWith("Console"), files, files)
	c.sync(t)
	c.setCapabilitiesSpec(t, &configv1.ClusterVersionCapabilitiesSpec{BaselineCapabilitySet: "v9.99"})
	if err := c.dynamic.Tracker().Delete(configMaps, demoNamespace, "console"); err != nil {
		t.Fatal(err)
	}
	c.sync(t)
	cv := c.clusterVersion(t)
	wantEnabled(t, cv, "Console")
	if !c.exists("console") {
		t.Error("the enabled capability's ConfigMap was not applied under an unknown baseline set")
	}
}

// A spec that lists 100,000 capabilities no release knows costs a pass
// little: the Invalid condition names the first ten and counts the rest,
// the known one is enabled, and the pass allocates under 16 MiB (it
// allocated 400 MiB when each resolve kept every unknown name).
func TestAPassWith100kUnknownCapabilitiesIsSmall(t *testing.T) {
	files := map[string]string{"0000_50_demo_00_console.yaml": configMapManifest("console", consoleCap)}
	c, _ := capabilityCluster(t, unknownCapabilities(100_000), files, files)
	c.sync(t)
	cv := c.clusterVersion(t)
	wantEnabled(t, cv, "Console")
	wantCondition(t, cv, clusterversion.ConditionInvalid, configv1.ConditionTrue, clusterversion.ReasonInvalidClusterVersion,
		`* spec.capabilities.additionalEnabledCapabilities[10]: Invalid value: "Unknown000009": is not a capability this release knows`,
		`* spec.capabilities.additionalEnabledCapabilities: Invalid value: "99990 more": are not capabilities this release knows`)
	if !c.exists("console") {
		t.Error("the enabled capability's ConfigMap was not applied")
	}

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	c.sync(t)
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n > 16<<20 {
		t.Errorf("a pass allocated %d MiB, want under 16 MiB", n>>20)
	}
}

// Without spec.capabilities, the CVO's default set applies: vCurrent.
func TestNoCapabilitiesSpecEnablesTheDefaultSet(t *testing.T) {
	files := map[string]string{"0000_50_demo_00_build.yaml": configMapManifest("build", buildCap)}
	c, _ := capabilityCluster(t, nil, files, files)
	c.sync(t)
	cv := c.clusterVersion(t)
	want := slices.Clone(configv1.ClusterVersionCapabilitySets[payload.DefaultCapabilitySet])
	slices.Sort(want)
	wantEnabled(t, cv, want...)
	got, err := c.dynamic.Tracker().Get(configMaps, demoNamespace, "build")
	if err != nil || got.(*unstructured.Unstructured).GetName() != "build" {
		t.Errorf("the ConfigMap behind Build (in vCurrent) was not applied: %v", err)
	}
}

// TestAnUnreadableCurrentReleaseRefusesAnUpdateThatMovesObjects: with
// RequireCurrentRelease (apply), an update that moves objects behind a
// capability is refused while the current release cannot be read, rather
// than leaving them unmanaged; without it, as in the CVO, it goes ahead
// and enables nothing.
func TestAnUnreadableCurrentReleaseRefusesAnUpdateThatMovesObjects(t *testing.T) {
	for _, require := range []bool{true, false} {
		t.Run(fmt.Sprintf("require=%v", require), func(t *testing.T) {
			root := t.TempDir()
			payloadtest.WriteRelease(t, root, "1.0.0", nil, map[string]string{"0000_50_demo_00_moved.yaml": configMapManifest("moved")})
			payloadtest.WriteRelease(t, root, "1.0.1", []string{"1.0.0"}, map[string]string{
				"0000_50_demo_00_moved.yaml": configMapManifest("moved", buildCap),
				"0000_50_demo_01_kept.yaml":  configMapManifest("kept"),
			})
			c := newFakeCluster(t, &DirStore{Root: root}, "1.0.0")
			c.setCapabilitiesSpec(t, noneWith())
			c.op.cfg.RequireCurrentRelease = require
			c.sync(t)
			wantSettled(t, c.clusterVersion(t), "1.0.0")

			// The current release is lost: gone from the store and from memory.
			if err := os.RemoveAll(filepath.Join(root, "1.0.0")); err != nil {
				t.Fatal(err)
			}
			c.op.reader.releases = map[string]*payload.Release{}
			c.request(t, "1.0.1")
			out := c.sync(t)
			cv := c.clusterVersion(t)
			if require {
				if !errors.Is(out.Refused, ErrCurrentReleaseUnreadable) || c.exists("kept") {
					t.Fatalf("refused %v, kept applied %v: want the update refused before anything of it is applied", out.Refused, c.exists("kept"))
				}
				wantCondition(t, cv, clusterversion.ConditionReleaseAccepted, configv1.ConditionFalse, clusterversion.ReasonCurrentReleaseUnreadable,
					"the current release cannot be read")
				return
			}
			if out.Refused != nil || !c.exists("kept") {
				t.Fatalf("refused %v: want the update applied, as the CVO does", out.Refused)
			}
			wantEnabled(t, cv)
		})
	}
}
