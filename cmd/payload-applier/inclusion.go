package main

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	configv1 "github.com/openshift/api/config/v1"
	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	"github.com/payload-applier/payload-applier/pkg/payload"
)

// inclusionFlags are the inclusion inputs that the CVO takes from its
// environment, shared by apply, start and plan so that the three include
// the same manifests: CLUSTER_PROFILE and EXCLUDE_MANIFESTS give the
// defaults, a flag given on the command line wins. The feature set and
// gates come from the cluster's FeatureGate on top of these.
type inclusionFlags struct {
	profile, exclude string
	alwaysEnable     []string
}

func (f *inclusionFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.profile, "profile", cmp.Or(os.Getenv("CLUSTER_PROFILE"), payload.DefaultClusterProfile),
		"cluster profile to include manifests for (default $CLUSTER_PROFILE, else "+payload.DefaultClusterProfile+"): "+strings.Join(payload.KnownProfiles, ", "))
	cmd.Flags().StringVar(&f.exclude, "exclude-manifests", os.Getenv("EXCLUDE_MANIFESTS"),
		"leave out manifests annotated exclude.release.openshift.io/<this>: \"true\" (default $EXCLUDE_MANIFESTS)")
	cmd.Flags().StringSliceVar(&f.alwaysEnable, "always-enable-capabilities", nil,
		"capabilities enabled whatever the ClusterVersion asks, as the CVO's flag (its Deployment passes Ingress); comma-separated")
}

// loadOptions are the base filters of every command; the operator and a
// live plan add the FeatureGate's feature set and gates, and the
// ClusterVersion's capabilities and overrides.
func (f *inclusionFlags) loadOptions(ctx context.Context) (*payload.LoadOptions, error) {
	if !slices.Contains(payload.KnownProfiles, f.profile) {
		return nil, fmt.Errorf("unknown --profile (or CLUSTER_PROFILE) %q; known profiles are %s", f.profile, strings.Join(payload.KnownProfiles, ", "))
	}
	opts := payload.ProfileLoadOptions(f.profile)
	for _, c := range f.alwaysEnable {
		if !slices.Contains(configv1.KnownClusterVersionCapabilities, configv1.ClusterVersionCapability(c)) {
			return nil, fmt.Errorf("--always-enable-capabilities: unknown capability %q; known capabilities are %s", c, strings.Join(capNames(configv1.KnownClusterVersionCapabilities), ", "))
		}
		opts.AlwaysEnabled = append(opts.AlwaysEnabled, configv1.ClusterVersionCapability(c))
	}
	if f.exclude != "" {
		exclude := f.exclude
		opts.ExcludeIdentifier = &exclude
		klog.FromContext(ctx).Info("Excluding manifests", "identifier", exclude)
	}
	return &opts, nil
}
