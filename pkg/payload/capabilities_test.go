package payload

import (
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
)

type capList = []configv1.ClusterVersionCapability

func TestResolveCapabilities(t *testing.T) {
	vCurrent := capList(configv1.ClusterVersionCapabilitySets[configv1.ClusterVersionCapabilitySetCurrent])
	tests := []struct {
		name         string
		spec         *configv1.ClusterVersionCapabilitiesSpec
		prior        capList
		wantEnabled  capList
		wantImplicit capList
		wantErr      string
	}{
		{name: "nil spec is the default set", wantEnabled: vCurrent},
		{name: "empty baseline is the default set", spec: &configv1.ClusterVersionCapabilitiesSpec{}, wantEnabled: vCurrent},
		{name: "None enables nothing", spec: &configv1.ClusterVersionCapabilitiesSpec{BaselineCapabilitySet: configv1.ClusterVersionCapabilitySetNone}},
		{name: "baseline and additional are united",
			spec: &configv1.ClusterVersionCapabilitiesSpec{BaselineCapabilitySet: configv1.ClusterVersionCapabilitySet4_11,
				AdditionalEnabledCapabilities: capList{"Console", "baremetal"}},
			wantEnabled: capList{"Console", "MachineAPI", "baremetal", "marketplace", "openshift-samples"}},
		{name: "never shrinks: a capability the spec dropped stays enabled, implicitly",
			spec:  &configv1.ClusterVersionCapabilitiesSpec{BaselineCapabilitySet: configv1.ClusterVersionCapabilitySetNone},
			prior: capList{"Console", "Build"}, wantEnabled: capList{"Build", "Console"}, wantImplicit: capList{"Build", "Console"}},
		{name: "a prior capability the spec asks for again is explicit",
			spec:  &configv1.ClusterVersionCapabilitiesSpec{BaselineCapabilitySet: configv1.ClusterVersionCapabilitySetNone, AdditionalEnabledCapabilities: capList{"Console"}},
			prior: capList{"Console", "Build"}, wantEnabled: capList{"Build", "Console"}, wantImplicit: capList{"Build"}},
		{name: "prior and spec repeat: listed once",
			spec:  &configv1.ClusterVersionCapabilitiesSpec{BaselineCapabilitySet: configv1.ClusterVersionCapabilitySetNone, AdditionalEnabledCapabilities: capList{"Console", "Console"}},
			prior: capList{"Console", "Console"}, wantEnabled: capList{"Console"}},
		{name: "unknown baseline set adds nothing and says so",
			spec:  &configv1.ClusterVersionCapabilitiesSpec{BaselineCapabilitySet: "v9.99", AdditionalEnabledCapabilities: capList{"Console"}},
			prior: capList{"Build"}, wantEnabled: capList{"Build", "Console"}, wantImplicit: capList{"Build"},
			wantErr: `unknown baseline capability set "v9.99"`},
		{name: "unknown names are dropped and named",
			spec:  &configv1.ClusterVersionCapabilitiesSpec{BaselineCapabilitySet: configv1.ClusterVersionCapabilitySetNone, AdditionalEnabledCapabilities: capList{"Console", "Teleport"}},
			prior: capList{"Warp"}, wantEnabled: capList{"Console"},
			wantErr: "unknown capabilities Teleport, Warp"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ResolveCapabilities(tt.spec, tt.prior)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
			}
			if want := sorted(tt.wantEnabled); !slices.Equal(got.Enabled, want) {
				t.Errorf("Enabled = %v, want %v", got.Enabled, want)
			}
			if !slices.Equal(got.Implicit, tt.wantImplicit) {
				t.Errorf("Implicit = %v, want %v", got.Implicit, tt.wantImplicit)
			}
			if want := sorted(configv1.KnownClusterVersionCapabilities); !slices.Equal(got.Known, want) {
				t.Errorf("Known = %v, want %v", got.Known, want)
			}
			st := got.Status()
			if !slices.Equal(st.EnabledCapabilities, got.Enabled) || !slices.Equal(st.KnownCapabilities, got.Known) {
				t.Errorf("Status() = %+v, not %+v", st, got)
			}
		})
	}
}

// manyUnknown is a spec of None with Console and n capabilities no
// release knows, given in descending order.
func manyUnknown(n int) *configv1.ClusterVersionCapabilitiesSpec {
	spec := &configv1.ClusterVersionCapabilitiesSpec{BaselineCapabilitySet: configv1.ClusterVersionCapabilitySetNone, AdditionalEnabledCapabilities: capList{"Console"}}
	for i := range n {
		spec.AdditionalEnabledCapabilities = append(spec.AdditionalEnabledCapabilities, configv1.ClusterVersionCapability(fmt.Sprintf("Unknown%06d", n-1-i)))
	}
	return spec
}

// allocated is how many bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestResolveCapabilitiesOfManyUnknownNamesTheFirst: a spec may list
// any number of unknown capabilities. The error names the first ten, in
// sorted order, counts the rest, and resolving keeps nothing of them: it
// allocates the same for 100,000 as for one.
func TestResolveCapabilitiesOfManyUnknownNamesTheFirst(t *testing.T) {
	spec := manyUnknown(100_000)
	spec.AdditionalEnabledCapabilities = append(spec.AdditionalEnabledCapabilities, "Unknown000003", "Unknown000001")
	got, err := ResolveCapabilities(spec, capList{"Unknown000000", "Build"})
	if !slices.Equal(got.Enabled, capList{"Build", "Console"}) || !slices.Equal(got.Implicit, capList{"Build"}) {
		t.Errorf("Enabled %v, Implicit %v; want Build and Console, Build implicit", got.Enabled, got.Implicit)
	}
	want := "unknown capabilities Unknown000000, Unknown000001, Unknown000002, Unknown000003, Unknown000004, Unknown000005, " +
		"Unknown000006, Unknown000007, Unknown000008, Unknown000009 and 99990 more; known capabilities are "
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v, want it to contain %q", err, want)
	}

	one := manyUnknown(1)
	small := allocated(func() { _, _ = ResolveCapabilities(one, nil) })
	large := allocated(func() { _, _ = ResolveCapabilities(spec, nil) })
	t.Logf("ResolveCapabilities allocates %d bytes with 1 unknown capability, %d with 100,000", small, large)
	if large > small+4<<10 {
		t.Errorf("ResolveCapabilities allocates %d bytes with 100,000 unknown capabilities, %d with one: it keeps what it drops", large, small)
	}
}

// The never-shrink rule holds whatever the spec becomes: every capability
// enabled once stays enabled through any sequence of specs.
func TestResolveCapabilitiesNeverShrinks(t *testing.T) {
	specs := []*configv1.ClusterVersionCapabilitiesSpec{
		nil,
		{BaselineCapabilitySet: configv1.ClusterVersionCapabilitySetNone},
		{BaselineCapabilitySet: configv1.ClusterVersionCapabilitySet4_12, AdditionalEnabledCapabilities: capList{"Build"}},
		{BaselineCapabilitySet: configv1.ClusterVersionCapabilitySetNone, AdditionalEnabledCapabilities: capList{"Ingress"}},
		{BaselineCapabilitySet: "bogus"},
	}
	for start := range specs {
		var prior capList
		for i := range specs {
			spec := specs[(start+i)%len(specs)]
			got, _ := ResolveCapabilities(spec, prior)
			for _, c := range prior {
				if !slices.Contains(got.Enabled, c) {
					t.Fatalf("start %d, step %d: %s was enabled and is not any more: %v", start, i, c, got.Enabled)
				}
			}
			prior = got.Enabled
		}
	}
}

func TestWithImplicit(t *testing.T) {
	c, _ := ResolveCapabilities(&configv1.ClusterVersionCapabilitiesSpec{BaselineCapabilitySet: configv1.ClusterVersionCapabilitySetNone}, capList{"Build"})
	got := c.WithImplicit(capList{"Console", "Build"})
	if want := (capList{"Build", "Console"}); !slices.Equal(got.Enabled, want) || !slices.Equal(got.Implicit, want) {
		t.Errorf("WithImplicit = %+v, want enabled and implicit %v", got, want)
	}
	if same := c.WithImplicit(nil); !slices.Equal(same.Enabled, c.Enabled) {
		t.Errorf("WithImplicit(nil) changed %v to %v", c.Enabled, same.Enabled)
	}
}

// capConfigMap is a ConfigMap manifest behind caps ("" for none).
func capConfigMap(namespace, name, caps string) string {
	// library-go drops a manifest without annotations before any filter.
	annotation := "\n  annotations:\n    include.release.openshift.io/self-managed-high-availability: \"true\""
	if caps != "" {
		annotation += fmt.Sprintf("\n    %s: %q", CapabilityAnnotation, caps)
	}
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  namespace: %s\n  name: %s%s\n", namespace, name, annotation)
}

// capRelease loads a release of docs, one file each, unfiltered.
func capRelease(t *testing.T, version string, docs ...string) *Release {
	t.Helper()
	files := map[string]string{}
	for i, d := range docs {
		files[fmt.Sprintf("0000_50_test_%02d_doc.yaml", i)] = d
	}
	r, _, err := LoadAll(writePayload(t, version, files))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// The cases of the CVO's TestGetImplicitlyEnabledCapabilities, on this
// package's releases. The CVO carries what was implicit before along;
// here that is ResolveCapabilities' job, so only new ones are returned.
func TestImplicitCapabilities(t *testing.T) {
	caps := func(known, enabled capList) *configv1.ClusterVersionCapabilitiesStatus {
		return &configv1.ClusterVersionCapabilitiesStatus{KnownCapabilities: known, EnabledCapabilities: enabled}
	}
	many := func(prefix string, n int) capList {
		var out capList
		for i := 1; i <= n; i++ {
			out = append(out, configv1.ClusterVersionCapability(fmt.Sprintf("%s%d", prefix, i)))
		}
		return out
	}
	tests := []struct {
		name    string
		current []string
		target  []string
		caps    *configv1.ClusterVersionCapabilitiesStatus
		want    capList
	}{
		{name: "basic: a managed object moves behind a disabled capability",
			current: []string{capConfigMap("ns", "a", "cap1")},
			target:  []string{capConfigMap("ns", "a", "cap1+cap2")},
			caps:    caps(capList{"cap1", "cap2"}, capList{"cap1"}), want: capList{"cap2"}},
		{name: "basic with unknown cap: left out, as no manifest can be included with it",
			current: []string{capConfigMap("ns", "a", "cap1")},
			target:  []string{capConfigMap("ns", "a", "cap1+cap2")},
			caps:    caps(capList{"cap1"}, capList{"cap1"})},
		{name: "different manifest: another object behind the capability",
			current: []string{capConfigMap("ns", "a", "")},
			target:  []string{capConfigMap("ns", "b", "cap1")},
			caps:    caps(capList{"cap1"}, nil)},
		{name: "different namespace is another object",
			current: []string{capConfigMap("ns", "a", "")},
			target:  []string{capConfigMap("other", "a", "cap1")},
			caps:    caps(capList{"cap1"}, nil)},
		{name: "different kind is another object",
			current: []string{capConfigMap("ns", "a", "")},
			target:  []string{strings.Replace(capConfigMap("ns", "a", "cap1"), "kind: ConfigMap", "kind: Secret", 1)},
			caps:    caps(capList{"cap1"}, nil)},
		{name: "same group, kind, namespace and name across API versions is the same object",
			current: []string{"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  namespace: ns\n  name: a\n  annotations:\n    include.release.openshift.io/self-managed-high-availability: \"true\"\n"},
			target:  []string{fmt.Sprintf("apiVersion: apps/v1beta1\nkind: Deployment\nmetadata:\n  namespace: ns\n  name: a\n  annotations:\n    %s: cap1\n", CapabilityAnnotation)},
			caps:    caps(capList{"cap1"}, nil), want: capList{"cap1"}},
		{name: "current manifest not enabled: nothing was managed",
			current: []string{capConfigMap("ns", "a", "cap1")},
			target:  []string{capConfigMap("ns", "a", "cap1+cap2")},
			caps:    caps(capList{"cap1", "cap2"}, capList{"cap2"})},
		{name: "new cap already enabled",
			current: []string{capConfigMap("ns", "a", "cap1")},
			target:  []string{capConfigMap("ns", "a", "cap1+cap2")},
			caps:    caps(capList{"cap1", "cap2"}, capList{"cap1", "cap2"})},
		{name: "already implicitly enabled: enabled, so nothing new",
			current: []string{capConfigMap("ns", "a", "")},
			target:  []string{capConfigMap("ns", "a", "cap2")},
			caps:    caps(capList{"cap1", "cap2"}, capList{"cap1", "cap2"})},
		{name: "only add cap once",
			current: []string{capConfigMap("ns", "a", ""), capConfigMap("ns", "b", "")},
			target:  []string{capConfigMap("ns", "a", "cap2"), capConfigMap("ns", "b", "cap2")},
			caps:    caps(capList{"cap1", "cap2"}, capList{"cap1"}), want: capList{"cap2"}},
		{name: "duplicate manifests",
			current: []string{capConfigMap("ns", "a", "cap1")},
			target:  []string{capConfigMap("ns", "a", "cap1+cap2"), capConfigMap("ns", "a", "cap1+cap2")},
			caps:    caps(capList{"cap1", "cap2"}, capList{"cap1"}), want: capList{"cap2"}},
		{name: "no update manifests",
			current: []string{capConfigMap("ns", "a", "")},
			caps:    caps(capList{"cap1"}, nil)},
		{name: "no current manifests",
			target: []string{capConfigMap("ns", "a", "cap1")},
			caps:   caps(capList{"cap1"}, nil)},
		{name: "no capability filter: everything is enabled",
			current: []string{capConfigMap("ns", "a", "")},
			target:  []string{capConfigMap("ns", "a", "cap1")}},
		{name: "complex: several objects, moves, removals and capabilities the current manifest had",
			current: []string{
				capConfigMap("ns", "stays-put", "cap1"),
				capConfigMap("ns", "moves", "cap1"),
				capConfigMap("ns", "moves-far", ""),
				capConfigMap("ns", "was-disabled", "cap9"),
				capConfigMap("ns", "dropped", ""),
				capConfigMap("ns", "to-enabled", ""),
			},
			target: []string{
				capConfigMap("ns", "stays-put", "cap1"),
				capConfigMap("ns", "moves", "cap1+cap3"),
				capConfigMap("ns", "moves-far", "cap4+cap5+cap6+cap2"),
				capConfigMap("ns", "was-disabled", "cap9+cap7"),
				capConfigMap("ns", "new", "cap8"),
				capConfigMap("ns", "to-enabled", "cap2"),
			},
			caps: caps(many("cap", 9), capList{"cap1", "cap2"}),
			want: capList{"cap3", "cap4", "cap5", "cap6"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			current := capRelease(t, "1.0.0", tt.current...)
			target := capRelease(t, "1.1.0", tt.target...)
			got := ImplicitCapabilities(current, target, LoadOptions{Capabilities: tt.caps})
			if !slices.Equal(got, tt.want) {
				t.Errorf("ImplicitCapabilities = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestImplicitCapabilitiesNilReleases(t *testing.T) {
	opts := LoadOptions{Capabilities: &configv1.ClusterVersionCapabilitiesStatus{KnownCapabilities: capList{"cap1"}}}
	if got := ImplicitCapabilities(nil, capRelease(t, "1.0.0", capConfigMap("ns", "a", "cap1")), opts); got != nil {
		t.Errorf("an install (no current release) enabled %v", got)
	}
}

// On ocp-real, an update to itself with every capability disabled after
// install enables nothing: each manifest is behind the same capabilities.
func TestImplicitCapabilitiesOCPReal(t *testing.T) {
	all, _, err := LoadAll(ocpRealDir)
	if err != nil {
		t.Skipf("%s: %v", filepath.Base(ocpRealDir), err)
	}
	none, _ := ResolveCapabilities(&configv1.ClusterVersionCapabilitiesSpec{BaselineCapabilitySet: configv1.ClusterVersionCapabilitySetNone}, nil)
	opts := DefaultLoadOptions()
	opts.Capabilities = none.Status()
	if got := ImplicitCapabilities(all, all, opts); len(got) != 0 {
		t.Errorf("same release enabled %v", got)
	}
}

func sorted(c capList) capList {
	out := slices.Clone(c)
	slices.Sort(out)
	if len(out) == 0 {
		return nil
	}
	return out
}

// WithCapabilities narrows a filtered release as Filter would with the
// same capabilities, on the real payload.
func TestWithCapabilitiesMatchesFilter(t *testing.T) {
	all, _, err := LoadAll(ocpRealDir)
	if err != nil {
		t.Skipf("%s: %v", filepath.Base(ocpRealDir), err)
	}
	base := all.Filter(DefaultLoadOptions())
	for _, set := range []configv1.ClusterVersionCapabilitySet{configv1.ClusterVersionCapabilitySetNone, configv1.ClusterVersionCapabilitySet4_11, configv1.ClusterVersionCapabilitySetCurrent} {
		caps, err := ResolveCapabilities(&configv1.ClusterVersionCapabilitiesSpec{BaselineCapabilitySet: set}, nil)
		if err != nil {
			t.Fatal(err)
		}
		opts := DefaultLoadOptions()
		opts.Capabilities = caps.Status()
		want := all.Filter(opts)
		got := base.WithCapabilities(caps.Status())
		if len(got.Manifests) != len(want.Manifests) || len(got.Skipped) != len(want.Skipped) {
			t.Fatalf("%s: %d kept, %d skipped; Filter keeps %d and skips %d", set, len(got.Manifests), len(got.Skipped), len(want.Manifests), len(want.Skipped))
		}
		for i, m := range got.Manifests {
			if m.Position() != want.Manifests[i].Position() || m.Index != i {
				t.Fatalf("%s: manifest %d is %s (index %d), Filter's is %s", set, i, m.Position(), m.Index, want.Manifests[i].Position())
			}
		}
		for i, s := range got.Skipped {
			w := want.Skipped[i]
			if s.Manifest.Position() != w.Manifest.Position() || s.Filter != w.Filter || s.Reason != w.Reason {
				t.Fatalf("%s: skipped %d is %s (%s: %s), Filter's is %s (%s: %s)", set, i, s.Manifest.Position(), s.Filter, s.Reason, w.Manifest.Position(), w.Filter, w.Reason)
			}
		}
		t.Logf("%s: %d kept, %d skipped", set, len(got.Manifests), len(got.Skipped))
	}
	if len(base.Manifests) == 0 {
		t.Fatal("nothing kept")
	}
}
