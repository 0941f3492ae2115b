package main

import (
	"context"
	"slices"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	configfake "github.com/openshift/client-go/config/clientset/versioned/fake"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/payload-applier/payload-applier/pkg/payload"
	"github.com/payload-applier/payload-applier/pkg/payload/payloadtest"
)

// TestPlanUsesTheClusterFeatureGate: against a cluster, plan includes
// what the cluster's FeatureGate enables for the version it runs, and
// keeps --profile's filters otherwise.
func TestPlanUsesTheClusterFeatureGate(t *testing.T) {
	cm := func(name, ann string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n  namespace: demo\n  annotations:\n" +
			"    include.release.openshift.io/self-managed-high-availability: \"true\"\n" + ann
	}
	dir := payloadtest.WriteRelease(t, t.TempDir(), "1.1.0", nil, map[string]string{
		"0000_50_a_00_plain.yaml": cm("plain", ""),
		"0000_50_a_01_tp.yaml":    cm("techpreview", "    release.openshift.io/feature-set: TechPreviewNoUpgrade\n"),
		"0000_50_a_02_gated.yaml": cm("gated", "    release.openshift.io/feature-gate: ExampleGate\n"),
	})
	base := payload.ProfileLoadOptions(payload.DefaultClusterProfile)
	rel, err := payload.Load(dir, base)
	if err != nil {
		t.Fatal(err)
	}
	included := func(objs ...runtime.Object) []string {
		t.Helper()
		got, err := liveInclusion(context.Background(), configfake.NewSimpleClientset(objs...), rel, base)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, m := range got.Manifests {
			out = append(out, m.Obj.GetName())
		}
		slices.Sort(out)
		return out
	}
	if got := included(); !slices.Equal(got, []string{"plain"}) {
		t.Errorf("no FeatureGate: %v", got)
	}
	fg := &configv1.FeatureGate{ObjectMeta: metav1.ObjectMeta{Name: "cluster"},
		Spec: configv1.FeatureGateSpec{FeatureGateSelection: configv1.FeatureGateSelection{FeatureSet: configv1.TechPreviewNoUpgrade}},
		Status: configv1.FeatureGateStatus{FeatureGates: []configv1.FeatureGateDetails{
			{Version: "1.0.0", Enabled: []configv1.FeatureGateAttributes{{Name: "ExampleGate"}}}}}}
	cv := &configv1.ClusterVersion{ObjectMeta: metav1.ObjectMeta{Name: "version"},
		Status: configv1.ClusterVersionStatus{Desired: configv1.Release{Version: "1.0.0"}}}
	if got := included(fg, cv); !slices.Equal(got, []string{"gated", "plain", "techpreview"}) {
		t.Errorf("TechPreviewNoUpgrade with ExampleGate for the running 1.0.0: %v", got)
	}
	// Without a ClusterVersion the target's own version is looked up: no
	// entry for 1.1.0, so no gate.
	if got := included(fg); !slices.Equal(got, []string{"plain", "techpreview"}) {
		t.Errorf("no entry for the version: %v", got)
	}
}
