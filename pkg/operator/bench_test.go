package operator

import (
	"fmt"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
)

// unknownCapabilities is a spec that enables n capabilities no release
// knows, as far as the CRD lets an admin write them.
func unknownCapabilities(n int) *configv1.ClusterVersionCapabilitiesSpec {
	spec := noneWith("Console")
	for i := range n {
		spec.AdditionalEnabledCapabilities = append(spec.AdditionalEnabledCapabilities, configv1.ClusterVersionCapability(fmt.Sprintf("Unknown%06d", i)))
	}
	return spec
}

// BenchmarkSyncWith100kUnknownCapabilities is one pass of a cluster whose
// spec.capabilities.additionalEnabledCapabilities names 100,000
// capabilities no release knows.
func BenchmarkSyncWith100kUnknownCapabilities(b *testing.B) {
	files := map[string]string{"0000_50_demo_00_plain.yaml": configMapManifest("plain")}
	c, _ := capabilityCluster(b, unknownCapabilities(100_000), files, files)
	c.sync(b)
	b.ReportAllocs()
	for b.Loop() {
		c.sync(b)
	}
}
