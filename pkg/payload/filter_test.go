package payload

import (
	"reflect"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

func ptr[T any](v T) *T { return &v }

// filterRelease loads one document per file and returns the release.
func filterRelease(t *testing.T, version string, docs map[string]string) *Release {
	t.Helper()
	all, findings, err := LoadAll(writePayload(t, version, docs))
	if err != nil {
		t.Fatal(err)
	}
	if HasErrors(findings) {
		t.Fatalf("load findings:\n%s", formatFindings(findings))
	}
	return all
}

func keptNames(r *Release) []string {
	var names []string
	for _, m := range r.Manifests {
		names = append(names, m.Obj.GetName())
	}
	return names
}

func TestFilter(t *testing.T) {
	crd := func(name string, extra ...string) string {
		return annotated("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", name, extra...)
	}
	tests := map[string]struct {
		doc        string
		opts       LoadOptions
		wantFilter string
		wantReason string
	}{
		"no annotations at all": {
			doc:        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  namespace: ns\n",
			opts:       LoadOptions{},
			wantFilter: FilterAnnotations, wantReason: "no annotations",
		},
		"an exclude annotation for the identifier": {
			doc:        annotated("v1", "ConfigMap", "ns", "x", `exclude.release.openshift.io/internal-openshift-hosted: "true"`),
			opts:       LoadOptions{ExcludeIdentifier: ptr("internal-openshift-hosted")},
			wantFilter: FilterExclude, wantReason: "exclude.release.openshift.io/internal-openshift-hosted=true",
		},
		"another feature set": {
			doc:        annotated("v1", "ConfigMap", "ns", "x", "release.openshift.io/feature-set: TechPreviewNoUpgrade"),
			opts:       LoadOptions{RequiredFeatureSet: ptr("")},
			wantFilter: FilterFeatureSet, wantReason: `"Default" is required`,
		},
		"both feature set and feature gate": {
			doc:        annotated("v1", "ConfigMap", "ns", "x", "release.openshift.io/feature-set: Default", "release.openshift.io/feature-gate: A"),
			opts:       LoadOptions{EnabledFeatureGates: sets.New("A")},
			wantFilter: FilterFeatureSet, wantReason: "both release.openshift.io/feature-set and release.openshift.io/feature-gate",
		},
		"a feature gate that is not enabled": {
			doc:        annotated("v1", "ConfigMap", "ns", "x", `release.openshift.io/feature-gate: "A,B"`),
			opts:       LoadOptions{EnabledFeatureGates: sets.New("A")},
			wantFilter: FilterFeatureGate, wantReason: "feature gate B is not enabled",
		},
		"a feature gate that must be disabled": {
			doc:        annotated("v1", "ConfigMap", "ns", "x", `release.openshift.io/feature-gate: "A,-B"`),
			opts:       LoadOptions{EnabledFeatureGates: sets.New("A", "B")},
			wantFilter: FilterFeatureGate, wantReason: "feature gate B is enabled",
		},
		"a major version the release is not": {
			doc:        crd("foos.example.com", `release.openshift.io/major-version: "5"`),
			opts:       LoadOptions{UseReleaseMajorVersion: true},
			wantFilter: FilterMajorVersion, wantReason: "major version 4 is not included",
		},
		"an excluded major version": {
			doc:        crd("foos.example.com", `release.openshift.io/major-version: "-4"`),
			opts:       LoadOptions{MajorVersion: ptr(uint64(4))},
			wantFilter: FilterMajorVersion, wantReason: "major version 4 is excluded",
		},
		"a major version on a kind that may not carry it": {
			doc:        annotated("v1", "ConfigMap", "ns", "x", `release.openshift.io/major-version: "4"`),
			opts:       LoadOptions{UseReleaseMajorVersion: true},
			wantFilter: FilterMajorVersion, wantReason: "only allowed on config.openshift.io FeatureGate and CustomResourceDefinition",
		},
		"another profile": {
			doc:        annotated("v1", "ConfigMap", "ns", "x"),
			opts:       LoadOptions{Profile: ptr("hypershift")},
			wantFilter: FilterProfile, wantReason: "include.release.openshift.io/hypershift unset",
		},
		"a disabled capability": {
			doc: annotated("v1", "ConfigMap", "ns", "x", "capability.openshift.io/name: Console"),
			opts: LoadOptions{Capabilities: &configv1.ClusterVersionCapabilitiesStatus{
				KnownCapabilities: []configv1.ClusterVersionCapability{"Console"},
			}},
			wantFilter: FilterCapability, wantReason: "disabled capabilities: Console",
		},
		"an unmanaged override": {
			doc: annotated("v1", "ConfigMap", "ns", "x"),
			opts: LoadOptions{Overrides: []configv1.ComponentOverride{
				{Kind: "ConfigMap", Group: "", Namespace: "ns", Name: "x", Unmanaged: true},
			}},
			wantFilter: FilterOverride, wantReason: "overridden",
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			all := filterRelease(t, "4.20.0", map[string]string{"0000_50_x_00_a.yaml": tt.doc})
			r := all.Filter(tt.opts)
			if len(r.Manifests) != 0 || len(r.Skipped) != 1 {
				t.Fatalf("kept %v, skipped %d", keptNames(r), len(r.Skipped))
			}
			s := r.Skipped[0]
			if s.Filter != tt.wantFilter || !strings.Contains(s.Reason, tt.wantReason) {
				t.Errorf("skipped by %s: %q; want %s: %q", s.Filter, s.Reason, tt.wantFilter, tt.wantReason)
			}
			if s.Manifest.Index != -1 {
				t.Errorf("a skipped manifest has Index %d", s.Manifest.Index)
			}
			// Every filter is disabled by a nil option, except that
			// library-go always drops a manifest without annotations.
			if tt.wantFilter != FilterAnnotations {
				if kept := all.Filter(LoadOptions{}); len(kept.Manifests) != 1 {
					t.Errorf("with every filter disabled the manifest is skipped: %+v", kept.Skipped)
				}
			}
		})
	}
}

func TestFilterKeepsMatchingManifests(t *testing.T) {
	all := filterRelease(t, "4.20.0", map[string]string{
		"0000_50_x_00_gate.yaml":  annotated("v1", "ConfigMap", "ns", "gate", `release.openshift.io/feature-gate: "A,-B"`),
		"0000_50_x_01_major.yaml": annotated("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "foos.example.com", `release.openshift.io/major-version: "4,5"`),
		"0000_50_x_02_cap.yaml":   annotated("v1", "ConfigMap", "ns", "cap", "capability.openshift.io/name: Console+Build"),
		"0000_50_x_03_set.yaml":   annotated("v1", "ConfigMap", "ns", "set", "release.openshift.io/feature-set: Default,TechPreviewNoUpgrade"),
	})
	opts := DefaultLoadOptions()
	opts.EnabledFeatureGates = sets.New("A")
	r := all.Filter(opts)
	if want := []string{"gate", "foos.example.com", "cap", "set"}; !reflect.DeepEqual(keptNames(r), want) {
		t.Errorf("kept %v, want %v; skipped %+v", keptNames(r), want, r.Skipped)
	}
}

func TestFilterAgain(t *testing.T) {
	all := filterRelease(t, "4.20.0", map[string]string{
		"0000_10_x_00_a.yaml": annotated("v1", "ConfigMap", "ns", "a"),
		"0000_20_x_00_b.yaml": annotated("v1", "ConfigMap", "ns", "b", "capability.openshift.io/name: Console"),
		"0000_30_x_00_c.yaml": annotated("v1", "ConfigMap", "ns", "c"),
	})
	noConsole := DefaultLoadOptions()
	noConsole.Capabilities = &configv1.ClusterVersionCapabilitiesStatus{
		KnownCapabilities: configv1.KnownClusterVersionCapabilities,
	}
	first := all.Filter(noConsole)
	if want := []string{"a", "c"}; !reflect.DeepEqual(keptNames(first), want) {
		t.Fatalf("kept %v, want %v", keptNames(first), want)
	}
	if first.Manifests[1].Index != 1 {
		t.Errorf("Index %d, want the position in Manifests", first.Manifests[1].Index)
	}
	// Filtering the filtered release again restores the skipped manifest
	// in payload order, without reading files.
	again := first.Filter(DefaultLoadOptions())
	if want := []string{"a", "b", "c"}; !reflect.DeepEqual(keptNames(again), want) {
		t.Errorf("re-filtered kept %v, want %v", keptNames(again), want)
	}
	for i, m := range again.Manifests {
		if m.Index != i {
			t.Errorf("manifest %d has Index %d", i, m.Index)
		}
	}
	if len(first.Manifests) != 2 || first.Manifests[1].Index != 1 || all.Manifests[2].Index != 2 {
		t.Error("Filter changed the release it was called on")
	}
}

func TestDefaultFeatureGates(t *testing.T) {
	for _, profile := range KnownProfiles {
		if DefaultFeatureGates(profile).Len() == 0 {
			t.Errorf("no default feature gates for %s", profile)
		}
	}
}
