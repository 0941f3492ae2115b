package payload

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	configv1 "github.com/openshift/api/config/v1"
	"github.com/openshift/api/features"
	"github.com/openshift/library-go/pkg/manifest"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	utilversion "k8s.io/apimachinery/pkg/util/version"
)

// Annotations the inclusion filters read.
const (
	FeatureSetAnnotation   = "release.openshift.io/feature-set"
	FeatureGateAnnotation  = "release.openshift.io/feature-gate"
	MajorVersionAnnotation = "release.openshift.io/major-version"
	CapabilityAnnotation   = manifest.CapabilityAnnotation
	IncludePrefix          = "include.release.openshift.io/"
	ExcludePrefix          = "exclude.release.openshift.io/"
	// DefaultClusterProfile is the profile of a self-managed cluster.
	DefaultClusterProfile = manifest.DefaultClusterProfile
)

// Filter names, in the order the filters run, for Skipped.Filter.
const (
	FilterAnnotations  = "annotations" // the manifest has no annotations at all
	FilterExclude      = "exclude"
	FilterFeatureSet   = "feature-set"
	FilterFeatureGate  = "feature-gate"
	FilterMajorVersion = "major-version"
	FilterProfile      = "profile"
	FilterCapability   = "capability"
	FilterOverride     = "override"
)

// KnownProfiles are the cluster profiles that payloads target.
var KnownProfiles = []string{
	"self-managed-high-availability",
	"single-node-developer",
	"ibm-cloud-managed",
	"hypershift",
}

// LoadOptions selects the manifests of a release, as the CVO's inclusion
// filters do. A nil field disables its filter, as in library-go.
type LoadOptions struct {
	// ExcludeIdentifier drops manifests annotated
	// exclude.release.openshift.io/<id>: "true" (the CVO's
	// EXCLUDE_MANIFESTS). Default: nil.
	ExcludeIdentifier *string
	// RequiredFeatureSet keeps manifests whose
	// release.openshift.io/feature-set lists it, or that have none; ""
	// means Default. Default: "".
	RequiredFeatureSet *string
	// EnabledFeatureGates keeps manifests whose
	// release.openshift.io/feature-gate ("A,-B") names only enabled gates
	// and, with a leading "-", only disabled ones. Default: the gates that
	// openshift/api enables in the Default feature set for the default
	// profile.
	EnabledFeatureGates sets.Set[string]
	// MajorVersion keeps manifests whose release.openshift.io/major-version
	// ("4,5", "-3") allows it. Default: nil, with UseReleaseMajorVersion.
	MajorVersion *uint64
	// UseReleaseMajorVersion filters on the release's own major version
	// when MajorVersion is nil, as the CVO does. Default: true.
	UseReleaseMajorVersion bool
	// Profile keeps manifests annotated
	// include.release.openshift.io/<profile>: "true". Default:
	// self-managed-high-availability.
	Profile *string
	// Capabilities drops manifests whose capability.openshift.io/name
	// names a capability that is unknown or not enabled. Default: every
	// capability openshift/api knows, all enabled, which drops only
	// manifests naming unknown capabilities (the CVO's load-time filter).
	Capabilities *configv1.ClusterVersionCapabilitiesStatus
	// Overrides drops the objects that a ClusterVersion marks unmanaged.
	// Default: none.
	Overrides []configv1.ComponentOverride
	// AlwaysEnabled are capabilities enabled whatever the ClusterVersion
	// asks, as the CVO's --always-enable-capabilities: an input of the
	// Capabilities above where a ClusterVersion's are resolved, no filter
	// of its own. Default: none.
	AlwaysEnabled []configv1.ClusterVersionCapability
}

// DefaultLoadOptions returns the filters of a self-managed cluster with the
// Default feature set, before its capabilities and overrides are known.
func DefaultLoadOptions() LoadOptions {
	profile := DefaultClusterProfile
	featureSet := ""
	known := append([]configv1.ClusterVersionCapability(nil), configv1.KnownClusterVersionCapabilities...)
	return LoadOptions{
		RequiredFeatureSet:     &featureSet,
		EnabledFeatureGates:    DefaultFeatureGates(profile),
		UseReleaseMajorVersion: true,
		Profile:                &profile,
		Capabilities: &configv1.ClusterVersionCapabilitiesStatus{
			KnownCapabilities:   known,
			EnabledCapabilities: append([]configv1.ClusterVersionCapability(nil), known...),
		},
	}
}

// ProfileLoadOptions is DefaultLoadOptions for a cluster of profile: its
// profile filter and the feature gates openshift/api enables for it.
func ProfileLoadOptions(profile string) LoadOptions {
	opts := DefaultLoadOptions()
	opts.Profile = &profile
	opts.EnabledFeatureGates = DefaultFeatureGates(profile)
	return opts
}

// DefaultFeatureGates returns the feature gates that openshift/api enables
// in the Default feature set for profile. openshift/api describes two
// profiles; single-node-developer follows self-managed-high-availability
// and hypershift follows ibm-cloud-managed.
func DefaultFeatureGates(profile string) sets.Set[string] {
	apiProfile := features.SelfManaged
	if profile == "ibm-cloud-managed" || profile == "hypershift" {
		apiProfile = features.Hypershift
	}
	gates := sets.New[string]()
	enabled, err := features.FeatureSets(apiProfile, configv1.Default)
	if err != nil {
		return gates
	}
	for _, g := range enabled.Enabled {
		gates.Insert(string(g.FeatureGateAttributes.Name))
	}
	return gates
}

// Filter returns a release holding the manifests that opts includes, in
// payload order, and the others in Skipped with the reason. It reads no
// files: it works from every manifest r holds, kept or skipped, so a
// release can be filtered again with other options, for example with the
// capabilities and overrides of a ClusterVersion. r is not changed.
func (r *Release) Filter(opts LoadOptions) *Release {
	out := &Release{
		Dir:      r.Dir,
		Version:  r.Version,
		Channels: r.Channels,
		URL:      r.URL,
		Images:   r.Images,
	}
	major := opts.MajorVersion
	if major == nil && opts.UseReleaseMajorVersion {
		if v, err := utilversion.ParseSemantic(r.Version); err == nil {
			m := uint64(v.Major())
			major = &m
		}
	}
	for _, m := range r.every() {
		c := *m
		if filter, err := include(&c, opts, major); err != nil {
			c.Index = -1
			out.Skipped = append(out.Skipped, Skipped{Manifest: &c, Reason: err.Error(), Filter: filter})
			continue
		}
		c.Index = len(out.Manifests)
		out.Manifests = append(out.Manifests, &c)
	}
	return out
}

// every returns the kept and the skipped manifests in payload order.
func (r *Release) every() []*Manifest {
	all := make([]*Manifest, 0, len(r.Manifests)+len(r.Skipped))
	all = append(all, r.Manifests...)
	for _, s := range r.Skipped {
		all = append(all, s.Manifest)
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].seq < all[j].seq })
	return all
}

// include runs the filters in the CVO's order and names the one that
// drops m. library-go covers all but the feature-gate and major-version
// filters; each library-go filter runs on its own to know which one failed.
func include(m *Manifest, opts LoadOptions, major *uint64) (string, error) {
	if err := m.Include(nil, nil, nil, nil, nil); err != nil {
		return FilterAnnotations, err
	}
	if opts.ExcludeIdentifier != nil {
		if err := m.Include(opts.ExcludeIdentifier, nil, nil, nil, nil); err != nil {
			return FilterExclude, err
		}
	}
	annotations := m.Obj.GetAnnotations()
	if opts.RequiredFeatureSet != nil || opts.EnabledFeatureGates != nil {
		if err := checkFeatureSetAndGate(annotations); err != nil {
			return FilterFeatureSet, err
		}
	}
	if opts.RequiredFeatureSet != nil {
		if err := m.Include(nil, opts.RequiredFeatureSet, nil, nil, nil); err != nil {
			return FilterFeatureSet, err
		}
	}
	if opts.EnabledFeatureGates != nil {
		if err := checkFeatureGates(annotations, opts.EnabledFeatureGates); err != nil {
			return FilterFeatureGate, err
		}
	}
	if major != nil {
		if err := checkMajorVersion(m, *major); err != nil {
			return FilterMajorVersion, err
		}
	}
	if opts.Profile != nil {
		if err := m.Include(nil, nil, opts.Profile, nil, nil); err != nil {
			return FilterProfile, err
		}
	}
	if opts.Capabilities != nil {
		if err := m.Include(nil, nil, nil, opts.Capabilities, nil); err != nil {
			return FilterCapability, err
		}
	}
	if len(opts.Overrides) > 0 {
		if err := m.Include(nil, nil, nil, nil, opts.Overrides); err != nil {
			return FilterOverride, err
		}
	}
	return "", nil
}

func checkFeatureSetAndGate(annotations map[string]string) error {
	_, hasSet := annotations[FeatureSetAnnotation]
	_, hasGate := annotations[FeatureGateAnnotation]
	if hasSet && hasGate {
		return fmt.Errorf("both %s and %s are set; use one", FeatureSetAnnotation, FeatureGateAnnotation)
	}
	return nil
}

// parseFeatureGates splits "A,-B" into the gates that must be enabled and
// those that must be disabled.
func parseFeatureGates(value string) (required, forbidden []string, err error) {
	for _, item := range strings.Split(value, ",") {
		item = strings.TrimSpace(item)
		name := strings.TrimPrefix(item, "-")
		if name == "" {
			return nil, nil, fmt.Errorf("%s=%q has an empty gate name", FeatureGateAnnotation, value)
		}
		if strings.HasPrefix(item, "-") {
			forbidden = append(forbidden, name)
		} else {
			required = append(required, name)
		}
	}
	return required, forbidden, nil
}

func checkFeatureGates(annotations map[string]string, enabled sets.Set[string]) error {
	value, ok := annotations[FeatureGateAnnotation]
	if !ok {
		return nil
	}
	required, forbidden, err := parseFeatureGates(value)
	if err != nil {
		return err
	}
	for _, g := range required {
		if !enabled.Has(g) {
			return fmt.Errorf("feature gate %s is not enabled (%s=%s)", g, FeatureGateAnnotation, value)
		}
	}
	for _, g := range forbidden {
		if enabled.Has(g) {
			return fmt.Errorf("feature gate %s is enabled (%s=%s)", g, FeatureGateAnnotation, value)
		}
	}
	return nil
}

// majorVersionKinds are the only kinds that may carry the major-version
// annotation.
var majorVersionKinds = map[schema.GroupKind]bool{FeatureGateKind: true, CRDKind: true}

// parseMajorVersions splits "4,5" or "-3" into included and excluded
// major versions; a version may not be in both.
func parseMajorVersions(value string) (included, excluded sets.Set[uint64], err error) {
	included, excluded = sets.New[uint64](), sets.New[uint64]()
	for _, item := range strings.Split(value, ",") {
		item = strings.TrimSpace(item)
		target := included
		if strings.HasPrefix(item, "-") {
			target, item = excluded, item[1:]
		}
		v, convErr := strconv.ParseUint(item, 10, 64)
		if convErr != nil {
			return nil, nil, fmt.Errorf("%s=%q: %q is not a major version", MajorVersionAnnotation, value, item)
		}
		target.Insert(v)
	}
	if both := included.Intersection(excluded); both.Len() > 0 {
		return nil, nil, fmt.Errorf("%s=%q both includes and excludes %v", MajorVersionAnnotation, value, sets.List(both))
	}
	return included, excluded, nil
}

func checkMajorVersion(m *Manifest, major uint64) error {
	value, ok := m.Obj.GetAnnotations()[MajorVersionAnnotation]
	if !ok {
		return nil
	}
	if !majorVersionKinds[m.GVK.GroupKind()] {
		return fmt.Errorf("%s is only allowed on config.openshift.io FeatureGate and CustomResourceDefinition manifests, not %s", MajorVersionAnnotation, m.GVK.Kind)
	}
	included, excluded, err := parseMajorVersions(value)
	if err != nil {
		return err
	}
	switch {
	case included.Has(major):
		return nil
	case excluded.Has(major):
		return fmt.Errorf("major version %d is excluded (%s=%s)", major, MajorVersionAnnotation, value)
	case included.Len() > 0:
		return fmt.Errorf("major version %d is not included (%s=%s)", major, MajorVersionAnnotation, value)
	}
	return nil
}
