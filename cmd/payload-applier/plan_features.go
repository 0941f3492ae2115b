package main

import (
	"context"
	"fmt"

	configv1 "github.com/openshift/api/config/v1"
	configclient "github.com/openshift/client-go/config/clientset/versioned"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/payload-applier/payload-applier/pkg/operator"
	"github.com/payload-applier/payload-applier/pkg/payload"
)

// liveInclusion filters rel, loaded with base, as the operator would on the
// cluster: with the feature set of its FeatureGate "cluster" and the gates
// it enables for the cluster's version. --profile stays the profile. A
// cluster without a FeatureGate keeps rel as loaded.
func liveInclusion(ctx context.Context, cc configclient.Interface, rel *payload.Release, base payload.LoadOptions) (*payload.Release, error) {
	fg, err := operator.ReadFeatureGate(ctx, cc, operator.DefaultFeatureGateName)
	if err != nil || fg == nil {
		return rel, err
	}
	cv, err := readClusterVersion(ctx, cc)
	if err != nil {
		return nil, err
	}
	return rel.Filter(operator.FeatureGateLoadOptions(base, fg, operator.FeatureGateVersion(cv, rel.Version))), nil
}

// readClusterVersion reads the cluster's ClusterVersion "version", nil
// when it has none or no ClusterVersion API.
func readClusterVersion(ctx context.Context, cc configclient.Interface) (*configv1.ClusterVersion, error) {
	cv, err := cc.ConfigV1().ClusterVersions().Get(ctx, "version", metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("read ClusterVersion version: %w", err)
	}
	return cv, nil
}
