package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"strings"

	configv1 "github.com/openshift/api/config/v1"
	configclient "github.com/openshift/client-go/config/clientset/versioned"
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/payload-applier/payload-applier/pkg/apply"
	"github.com/payload-applier/payload-applier/pkg/clusterversion"
	"github.com/payload-applier/payload-applier/pkg/graph"
	"github.com/payload-applier/payload-applier/pkg/operator"
	"github.com/payload-applier/payload-applier/pkg/payload"
)

// capabilityFlags are plan's capability flags: a spec.capabilities to plan
// for.
type capabilityFlags struct {
	baseline   string
	additional []string
}

func (f *capabilityFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.baseline, "baseline-capability-set", "",
		"baseline capability set to plan for: "+strings.Join(payload.KnownCapabilitySets(), ", ")+
			"; default "+string(payload.DefaultCapabilitySet)+" offline, the ClusterVersion's spec against a cluster")
	cmd.Flags().StringArrayVar(&f.additional, "capability", nil,
		"capability to enable beyond the baseline set; repeat for more")
}

// spec is the flags as spec.capabilities; nil when neither is set.
func (f *capabilityFlags) spec() *configv1.ClusterVersionCapabilitiesSpec {
	if f.baseline == "" && len(f.additional) == 0 {
		return nil
	}
	s := &configv1.ClusterVersionCapabilitiesSpec{BaselineCapabilitySet: configv1.ClusterVersionCapabilitySet(f.baseline)}
	for _, c := range f.additional {
		s.AdditionalEnabledCapabilities = append(s.AdditionalEnabledCapabilities, configv1.ClusterVersionCapability(c))
	}
	return s
}

// validate refuses an unknown set or capability name.
func (f *capabilityFlags) validate() error {
	if _, err := payload.ResolveCapabilities(f.spec(), nil); err != nil {
		return withExitCode(exitUsage, fmt.Errorf("--baseline-capability-set/--capability: %w", err))
	}
	return nil
}

// planCapabilities is the "capabilities" of `plan -o json`.
type planCapabilities struct {
	// Enabled are the capabilities the plan includes manifests with.
	Enabled []string `json:"enabled"`
	// ImplicitlyEnabled are enabled though the spec does not ask for them.
	ImplicitlyEnabled []string `json:"implicitlyEnabled"`
	// WouldImplicitlyEnable are those the update would enable, as
	// previewed against a cluster; included in Enabled.
	WouldImplicitlyEnable []string `json:"wouldImplicitlyEnable"`
	// Message says where the capabilities come from, and what the
	// preview found.
	Message string `json:"message"`
}

func newPlanCapabilities(caps payload.Capabilities, would []configv1.ClusterVersionCapability, message string) planCapabilities {
	return planCapabilities{Enabled: capNames(caps.Enabled), ImplicitlyEnabled: capNames(caps.Implicit),
		WouldImplicitlyEnable: capNames(would), Message: message}
}

func capNames(caps []configv1.ClusterVersionCapability) []string {
	out := make([]string, len(caps))
	for i, c := range caps {
		out[i] = string(c)
	}
	return out
}

// offlineCapabilities narrows rel to the flags' capabilities, the default
// set without them.
func (f *capabilityFlags) offlineCapabilities(rel *payload.Release, always []configv1.ClusterVersionCapability) (*payload.Release, planCapabilities) {
	caps, _ := payload.ResolveCapabilities(f.spec(), always) // validated
	return rel.WithCapabilities(caps.Status()), newPlanCapabilities(caps, nil, f.source()+" (offline)")
}

// source names the flags' capabilities.
func (f *capabilityFlags) source() string {
	s := "baseline set " + cmp.Or(f.baseline, string(payload.DefaultCapabilitySet))
	if len(f.additional) > 0 {
		s += " and " + strings.Join(f.additional, ", ")
	}
	return s
}

// liveCapabilities narrows rel to the capabilities of the cluster's
// ClusterVersion "version" as the operator resolves them: its spec (or
// the flags, when set, in its place) on top of what its status enabled,
// which never shrinks. In update mode it also previews implicit
// enablement, as the operator decides it, from the current release that
// current reads. Without it, an object that rel puts behind a disabled
// capability counts as managed today when it exists on the cluster; that
// over-reports an object created outside any release, and misses a
// managed object deleted since.
func (f *capabilityFlags) liveCapabilities(ctx context.Context, cc configclient.Interface, e *apply.Engine,
	rel *payload.Release, mode graph.Mode, base payload.LoadOptions, current func(*configv1.ClusterVersion) (*payload.Release, error)) (*payload.Release, planCapabilities, error) {
	cv, err := readClusterVersion(ctx, cc)
	if err != nil {
		return nil, planCapabilities{}, err
	}
	if cv == nil {
		cv = &configv1.ClusterVersion{}
	}
	where := "the ClusterVersion's spec and status"
	if spec := f.spec(); spec != nil {
		cv = cv.DeepCopy()
		cv.Spec.Capabilities = spec
		where = f.source() + " in place of the ClusterVersion's spec, and its status"
	}
	// An unknown name is left out, as the operator leaves it out.
	caps, _ := clusterversion.Capabilities(cv, base.AlwaysEnabled...)
	narrowed := rel.WithCapabilities(caps.Status())
	running := cv.Status.Desired.Version
	switch {
	case mode != graph.ModeUpdate:
		return narrowed, newPlanCapabilities(caps, nil, where+"; implicit enablement is previewed in update mode only"), nil
	case running == "" || running == rel.Version:
		return narrowed, newPlanCapabilities(caps, nil, where+"; no update from another release, so nothing is enabled implicitly"), nil
	}
	cur, curErr := current(cv)
	if curErr == nil {
		fg, err := operator.ReadFeatureGate(ctx, cc, operator.DefaultFeatureGateName)
		if err != nil {
			return nil, planCapabilities{}, err
		}
		would := payload.ImplicitCapabilities(cur, rel, operator.LoadOptionsFor(base, fg, cv, rel.Version))
		msg := fmt.Sprintf("%s; the update would enable no capability implicitly: it puts nothing the current release %s manages behind a disabled capability", where, running)
		if len(would) > 0 {
			msg = fmt.Sprintf("%s; the update would enable implicitly: %s, for it puts objects the current release %s manages behind them",
				where, strings.Join(capNames(would), ", "), running)
			caps = caps.WithImplicit(would)
		}
		return rel.WithCapabilities(caps.Status()), newPlanCapabilities(caps, would, msg), nil
	}
	where += fmt.Sprintf(" (the current release cannot be read: %v; previewed from the objects the cluster holds)", curErr)
	would, objects, err := existingBehindCapabilities(ctx, e, narrowed, caps)
	if err != nil {
		return nil, planCapabilities{}, err
	}
	msg := where + "; the update would enable no capability implicitly: no object it puts behind a disabled capability exists on the cluster"
	if len(would) > 0 {
		msg = fmt.Sprintf("%s; the update would enable implicitly: %s, for it puts objects the cluster holds behind them: %s",
			where, strings.Join(capNames(would), ", "), boundedList(objects, 10))
		caps = caps.WithImplicit(would)
	}
	return rel.WithCapabilities(caps.Status()), newPlanCapabilities(caps, would, msg), nil
}

// existingBehindCapabilities returns the capabilities, not enabled in
// caps, of rel's manifests skipped for them whose objects exist, and
// those objects.
func existingBehindCapabilities(ctx context.Context, e *apply.Engine, rel *payload.Release,
	caps payload.Capabilities) ([]configv1.ClusterVersionCapability, []string, error) {
	enabled := sets.New(caps.Enabled...)
	known := sets.New(caps.Known...)
	would := sets.New[configv1.ClusterVersionCapability]()
	var objects []string
	for _, s := range rel.Skipped {
		if s.Filter != payload.FilterCapability {
			continue
		}
		m := s.Manifest
		exists, err := e.Exists(ctx, m)
		if err != nil {
			return nil, nil, fmt.Errorf("read %s: %w", m.ID(), err)
		}
		if !exists {
			continue
		}
		add := sets.New(m.GetManifestCapabilities()...).Difference(enabled).Intersection(known)
		if add.Len() > 0 {
			would = would.Union(add)
			objects = append(objects, m.ID().String())
		}
	}
	return sets.List(would), objects, nil
}

// boundedList joins the first n of items, and says how many more there are.
func boundedList(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:n], ", "), len(items)-n)
}

// statusCapabilities is the enabled capabilities the spec of cv does not
// ask for, as `status` shows them.
func statusCapabilities(cv *configv1.ClusterVersion) []string {
	caps, _ := clusterversion.Capabilities(cv)
	return capNames(caps.Implicit)
}

// summary is the capabilities in one line of text.
func (c planCapabilities) summary() string {
	s := fmt.Sprintf("%d enabled", len(c.Enabled))
	if len(c.Enabled) > 0 {
		s += " (" + strings.Join(c.Enabled, ", ") + ")"
	}
	if len(c.ImplicitlyEnabled) > 0 {
		s += ", implicitly: " + strings.Join(c.ImplicitlyEnabled, ", ")
	}
	return s + ", from " + c.Message
}

// writeCapabilitiesText is status's capabilities line.
func writeCapabilitiesText(w io.Writer, doc statusJSON) {
	enabled := capNames(doc.Status.Capabilities.EnabledCapabilities)
	if len(doc.Status.Capabilities.KnownCapabilities) == 0 {
		return // not written yet
	}
	fmt.Fprintf(w, "Capabilities: %d of %d enabled", len(enabled), len(doc.Status.Capabilities.KnownCapabilities))
	if len(enabled) > 0 {
		fmt.Fprintf(w, " (%s)", strings.Join(enabled, ", "))
	}
	fmt.Fprintln(w)
	if len(doc.ImplicitlyEnabledCapabilities) > 0 {
		fmt.Fprintf(w, "Implicitly enabled capabilities: %s (enabled, though the spec does not ask for them: capabilities are never disabled)\n",
			strings.Join(doc.ImplicitlyEnabledCapabilities, ", "))
	}
}
