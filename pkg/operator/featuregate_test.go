package operator

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/payload-applier/payload-applier/pkg/payload"
	"github.com/payload-applier/payload-applier/pkg/payload/payloadtest"
)

// featureGate is a FeatureGate with featureSet and, per version, the
// gates its status enables.
func featureGate(name string, set configv1.FeatureSet, enabled map[string][]string) *configv1.FeatureGate {
	fg := &configv1.FeatureGate{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: configv1.FeatureGateSpec{
		FeatureGateSelection: configv1.FeatureGateSelection{FeatureSet: set}}}
	for version, gates := range enabled {
		d := configv1.FeatureGateDetails{Version: version}
		for _, g := range gates {
			d.Enabled = append(d.Enabled, configv1.FeatureGateAttributes{Name: configv1.FeatureGateName(g)})
		}
		fg.Status.FeatureGates = append(fg.Status.FeatureGates, d)
	}
	return fg
}

func TestEnabledFeatureGatesMatchesTheVersion(t *testing.T) {
	fg := featureGate("cluster", "", map[string][]string{"1.0.0": {"A", "B"}, "2.0.0": {"C"}})
	for _, tc := range []struct {
		version string
		want    []string
		found   bool
	}{
		{"1.0.0", []string{"A", "B"}, true},
		{"2.0.0", []string{"C"}, true},
		// No entry: none enabled, as the CVO's ExtractEnabledGates.
		{"3.0.0", nil, false},
		{"", nil, false},
	} {
		got, found := EnabledFeatureGates(fg, tc.version)
		if found != tc.found || !got.Equal(sets.New(tc.want...)) {
			t.Errorf("%q: %v %v, want %v %v", tc.version, sets.List(got), found, tc.want, tc.found)
		}
	}
}

// gatedRelease holds a plain manifest, one per feature set, and one per
// gate and per disabled gate.
func gatedRelease(t *testing.T, version string) *payload.Release {
	t.Helper()
	dir := payloadtest.WriteRelease(t, t.TempDir(), version, nil, map[string]string{
		"0000_50_a_00_plain.yaml":     configMapManifest("plain"),
		"0000_50_a_01_techpre.yaml":   configMapManifest("techpreview", `release.openshift.io/feature-set: TechPreviewNoUpgrade`),
		"0000_50_a_02_default.yaml":   configMapManifest("default-only", `release.openshift.io/feature-set: Default`),
		"0000_50_a_03_gated.yaml":     configMapManifest("gated", `release.openshift.io/feature-gate: ExampleGate`),
		"0000_50_a_04_ungated.yaml":   configMapManifest("without-gate", `release.openshift.io/feature-gate: -ExampleGate`),
		"0000_50_a_05_othergate.yaml": configMapManifest("other-gate", `release.openshift.io/feature-gate: OtherGate`),
	})
	rel, err := payload.Load(dir, payload.DefaultLoadOptions())
	if err != nil {
		t.Fatal(err)
	}
	return rel
}

func names(rel *payload.Release) []string {
	var out []string
	for _, m := range rel.Manifests {
		out = append(out, m.Obj.GetName())
	}
	slices.Sort(out)
	return out
}

func TestFeatureGateInclusion(t *testing.T) {
	rel := gatedRelease(t, "1.0.0")
	for _, tc := range []struct {
		name    string
		fg      *configv1.FeatureGate
		version string
		want    string
	}{
		{"no FeatureGate: the defaults", nil, "1.0.0", "default-only,plain,without-gate"},
		{"Default, gates for the version", featureGate("cluster", "", map[string][]string{"1.0.0": {"ExampleGate"}}), "1.0.0",
			"default-only,gated,plain"},
		{"Default, no entry for the version: no gate enabled", featureGate("cluster", "", map[string][]string{"0.9.0": {"ExampleGate"}}), "1.0.0",
			"default-only,plain,without-gate"},
		{"TechPreviewNoUpgrade with its gates", featureGate("cluster", configv1.TechPreviewNoUpgrade, map[string][]string{"1.0.0": {"ExampleGate", "OtherGate"}}), "1.0.0",
			"gated,other-gate,plain,techpreview"},
		{"TechPreviewNoUpgrade, gates not yet written", featureGate("cluster", configv1.TechPreviewNoUpgrade, nil), "1.0.0",
			"plain,techpreview,without-gate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := names(rel.Filter(FeatureGateLoadOptions(payload.DefaultLoadOptions(), tc.fg, tc.version)))
			if strings.Join(got, ",") != tc.want {
				t.Errorf("included %v, want %s", got, tc.want)
			}
		})
	}
}

func TestFeatureGateVersionIsTheDesiredRelease(t *testing.T) {
	cv := &configv1.ClusterVersion{}
	if v := FeatureGateVersion(cv, "2.0.0"); v != "2.0.0" {
		t.Errorf("before any release: %s", v)
	}
	if v := FeatureGateVersion(nil, "2.0.0"); v != "2.0.0" {
		t.Errorf("without a ClusterVersion: %s", v)
	}
	cv.Status.Desired.Version = "1.0.0"
	if v := FeatureGateVersion(cv, "2.0.0"); v != "1.0.0" {
		t.Errorf("a target is filtered with the running release's gates, as the CVO running it does: %s", v)
	}
}

// TestSyncFollowsTheFeatureGate: the pass includes what the FeatureGate
// enables for the running version, a change of gates is seen by the next
// pass, and a change of feature set restarts the sync.
func TestSyncFollowsTheFeatureGate(t *testing.T) {
	root := t.TempDir()
	gatedDir := gatedRelease(t, "1.0.0").Dir
	c := newFakeCluster(t, &DirStore{Root: root}, "1.0.0")
	if err := os.Rename(gatedDir, root+"/1.0.0"); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	applied := func() string {
		t.Helper()
		out, err := c.op.Sync(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if out.Result == nil {
			t.Fatalf("nothing applied: %+v", out)
		}
		var got []string
		for _, o := range out.Result.Objects {
			got = append(got, o.ID.Name)
		}
		slices.Sort(got)
		return strings.Join(got, ",")
	}
	if got := applied(); got != "default-only,plain,without-gate" {
		t.Fatalf("without a FeatureGate: %s", got)
	}
	fgs := c.config.ConfigV1().FeatureGates()
	fg, err := fgs.Create(ctx, featureGate("cluster", "", map[string][]string{"1.0.0": {"ExampleGate"}}), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := applied(); got != "default-only,gated,plain" {
		t.Fatalf("with ExampleGate: %s", got)
	}
	c.takeEvents()
	if len(c.op.reader.releases) == 0 {
		t.Fatal("no release cached")
	}

	fg.Spec.FeatureSet = configv1.TechPreviewNoUpgrade
	if _, err := fgs.Update(ctx, fg, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := applied(); got != "gated,plain,techpreview" {
		t.Fatalf("TechPreviewNoUpgrade: %s", got)
	}
	if !slices.ContainsFunc(c.takeEvents(), func(e string) bool {
		return strings.Contains(e, EventFeatureSetChanged) && strings.Contains(e, `FeatureSet was "", but the current feature set is "TechPreviewNoUpgrade"`)
	}) {
		t.Error("no FeatureSetChanged Event")
	}

	if err := fgs.Delete(ctx, "cluster", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := applied(); got != "default-only,plain,without-gate" {
		t.Fatalf("FeatureGate gone: %s", got)
	}
}
