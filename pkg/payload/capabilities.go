package payload

import (
	"fmt"
	"slices"
	"strings"

	configv1 "github.com/openshift/api/config/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

// Capabilities are a cluster's capabilities resolved as the CVO resolves
// them (lib/capability): each list is sorted and holds no repeats.
type Capabilities struct {
	// Known are the capabilities this build's openshift/api knows. The CVO
	// leaves out capabilities behind feature gates that are off; the pinned
	// openshift/api gates none, so every known capability counts.
	Known []configv1.ClusterVersionCapability
	// Enabled is what manifests are included with: the spec's baseline set
	// and additional capabilities, and every capability enabled before.
	// It never shrinks: the CVO cannot uninstall a capability.
	Enabled []configv1.ClusterVersionCapability
	// Implicit are the enabled capabilities the spec does not ask for:
	// ones the spec dropped after they were enabled, and ones an update
	// enabled to keep managing an object. They stay implicit until the
	// spec asks for them.
	Implicit []configv1.ClusterVersionCapability
}

// DefaultCapabilitySet is the baseline set when the spec names none.
const DefaultCapabilitySet = configv1.ClusterVersionCapabilitySetCurrent

// maxNamedUnknownCapabilities bounds the unknown capabilities an error
// names: a spec may list any number of them.
const maxNamedUnknownCapabilities = 10

// ResolveCapabilities resolves spec (nil: the default baseline set, nothing
// additional) on top of prior, the capabilities already enabled
// (status.capabilities.enabledCapabilities). An unknown baseline set adds
// nothing and unknown capability names are dropped, for no manifest can be
// included with them and the ClusterVersion CRD refuses them in status;
// the error names the first of them and counts the rest, and the result is
// still usable. Its cost is linear in the names given, and what it keeps
// is bounded by the known capabilities.
func ResolveCapabilities(spec *configv1.ClusterVersionCapabilitiesSpec, prior []configv1.ClusterVersionCapability) (Capabilities, error) {
	known := sets.New(configv1.KnownClusterVersionCapabilities...)
	var unknown unknownCapabilities
	keepKnown := func(set sets.Set[configv1.ClusterVersionCapability], caps []configv1.ClusterVersionCapability) {
		for _, c := range caps {
			if known.Has(c) {
				set.Insert(c)
			} else {
				unknown.add(c)
			}
		}
	}
	requested, err := requestedCapabilities(spec, keepKnown)
	enabled := sets.New[configv1.ClusterVersionCapability]()
	keepKnown(enabled, prior)
	enabled = enabled.Union(requested)
	if len(unknown.first) > 0 {
		err = joinErr(err, fmt.Errorf("unknown capabilities %s; known capabilities are %s", unknown, joinCapabilities(sets.List(known))))
	}
	return Capabilities{
		Known:    sets.List(known),
		Enabled:  sets.List(enabled),
		Implicit: sets.List(enabled.Difference(requested)),
	}, err
}

// unknownCapabilities keeps the first names, in sorted order, of the
// unknown capabilities it is given, and counts the others.
type unknownCapabilities struct {
	first []configv1.ClusterVersionCapability
	// more counts the names not in first, a name given twice twice.
	more int
}

func (u *unknownCapabilities) add(c configv1.ClusterVersionCapability) {
	if len(u.first) == maxNamedUnknownCapabilities && c > u.first[len(u.first)-1] {
		u.more++
		return
	}
	i, found := slices.BinarySearch(u.first, c)
	switch {
	case found:
	case i == maxNamedUnknownCapabilities:
		u.more++
	default:
		if len(u.first) == maxNamedUnknownCapabilities {
			u.first = u.first[:maxNamedUnknownCapabilities-1]
			u.more++
		}
		u.first = slices.Insert(u.first, i, c)
	}
}

func (u unknownCapabilities) String() string {
	s := joinCapabilities(u.first)
	if u.more > 0 {
		s += fmt.Sprintf(" and %d more", u.more)
	}
	return s
}

// requestedCapabilities is what spec asks for: its baseline set and its
// additional capabilities, each given to keep, which keeps the known ones
// in the set. An unknown set contributes nothing.
func requestedCapabilities(spec *configv1.ClusterVersionCapabilitiesSpec,
	keep func(sets.Set[configv1.ClusterVersionCapability], []configv1.ClusterVersionCapability)) (sets.Set[configv1.ClusterVersionCapability], error) {
	set := DefaultCapabilitySet
	if spec != nil && spec.BaselineCapabilitySet != "" {
		set = spec.BaselineCapabilitySet
	}
	baseline, ok := configv1.ClusterVersionCapabilitySets[set]
	var err error
	if !ok {
		err = fmt.Errorf("unknown baseline capability set %q; known sets are %s", set, strings.Join(KnownCapabilitySets(), ", "))
	}
	requested := sets.New[configv1.ClusterVersionCapability]()
	keep(requested, baseline)
	if spec != nil {
		keep(requested, spec.AdditionalEnabledCapabilities)
	}
	return requested, err
}

// KnownCapabilitySets lists the baseline capability sets, sorted.
func KnownCapabilitySets() []string {
	var names []string
	for s := range configv1.ClusterVersionCapabilitySets {
		names = append(names, string(s))
	}
	slices.Sort(names)
	return names
}

// WithImplicit returns c with implicit also enabled, and implicit.
func (c Capabilities) WithImplicit(implicit []configv1.ClusterVersionCapability) Capabilities {
	if len(implicit) == 0 {
		return c
	}
	return Capabilities{
		Known:    c.Known,
		Enabled:  sets.List(sets.New(c.Enabled...).Insert(implicit...)),
		Implicit: sets.List(sets.New(c.Implicit...).Insert(implicit...)),
	}
}

// Status is c as status.capabilities, and as the capability filter of
// LoadOptions.
func (c Capabilities) Status() *configv1.ClusterVersionCapabilitiesStatus {
	return &configv1.ClusterVersionCapabilitiesStatus{
		EnabledCapabilities: slices.Clone(c.Enabled),
		KnownCapabilities:   slices.Clone(c.Known),
	}
}

// ImplicitCapabilities returns the capabilities an update from current to
// target must enable so that it keeps managing what current manages, as
// the CVO's GetImplicitlyEnabledCapabilities does: for each manifest of
// target that opts drops for its capabilities while the manifest of current
// for the same object (group, kind, namespace, name) is included, the
// target manifest's capabilities that the current one lacks and that are
// not enabled. opts.Capabilities holds the enabled capabilities; nil
// enables all, and nothing is implicit. Capabilities opts does not know
// are left out: no manifest can be included with them. Sorted.
func ImplicitCapabilities(current, target *Release, opts LoadOptions) []configv1.ClusterVersionCapability {
	if current == nil || target == nil || opts.Capabilities == nil {
		return nil
	}
	managed := map[ObjectID][]*Manifest{}
	for _, m := range current.Filter(opts).Manifests {
		managed[m.ID()] = append(managed[m.ID()], m)
	}
	enabled := sets.New(opts.Capabilities.EnabledCapabilities...)
	known := sets.New(opts.Capabilities.KnownCapabilities...)
	implicit := sets.New[configv1.ClusterVersionCapability]()
	for _, s := range target.Filter(opts).Skipped {
		if s.Filter != FilterCapability {
			continue
		}
		wants := sets.New(s.Manifest.GetManifestCapabilities()...)
		for _, cur := range managed[s.Manifest.ID()] {
			add := wants.Difference(sets.New(cur.GetManifestCapabilities()...)).Difference(enabled).Intersection(known)
			implicit = implicit.Union(add)
		}
	}
	return sets.List(implicit)
}

func joinCapabilities(caps []configv1.ClusterVersionCapability) string {
	names := make([]string, len(caps))
	for i, c := range caps {
		names[i] = string(c)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

func joinErr(a, b error) error {
	if a == nil {
		return b
	}
	return fmt.Errorf("%w; %w", a, b)
}

// WithCapabilities returns r with the manifests caps does not include
// moved to Skipped, as the capability filter of Filter would. Unlike
// Filter it keeps r's other filters, whatever they were, so it composes
// with them; it only narrows, so r must be filtered with every capability
// it may keep enabled (DefaultLoadOptions enables every known one). r is
// not changed.
func (r *Release) WithCapabilities(caps *configv1.ClusterVersionCapabilitiesStatus) *Release {
	out := *r
	out.Manifests = nil
	out.Skipped = slices.Clone(r.Skipped)
	for _, m := range r.Manifests {
		c := *m
		if err := c.Include(nil, nil, nil, caps, nil); err != nil {
			c.Index = -1
			out.Skipped = append(out.Skipped, Skipped{Manifest: &c, Reason: err.Error(), Filter: FilterCapability})
			continue
		}
		c.Index = len(out.Manifests)
		out.Manifests = append(out.Manifests, &c)
	}
	slices.SortStableFunc(out.Skipped, func(a, b Skipped) int { return a.Manifest.seq - b.Manifest.seq })
	return &out
}
