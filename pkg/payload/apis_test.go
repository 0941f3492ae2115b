package payload

import (
	"strings"
	"testing"
)

func TestBuiltinResource(t *testing.T) {
	for _, tc := range []struct {
		group, resource string
		kind            string // "" when not built in
	}{
		{"coordination.k8s.io", "leases", "Lease"},
		{"apps", "deployments", "Deployment"},
		{"", "configmaps", "ConfigMap"},
		{"batch", "jobs", "Job"},
		{"networking.k8s.io", "ingresses", "Ingress"},
		{"policy", "poddisruptionbudgets", "PodDisruptionBudget"},
		{"example.com", "widgets", ""},
		{"config.openshift.io", "clusterversions", ""},
		// The singular or the kind is not the resource.
		{"coordination.k8s.io", "lease", ""},
		{"apps", "Deployment", ""},
		// A resource of another group.
		{"apps", "configmaps", ""},
		// Not in client-go's scheme: the applier's own CRD check reads it.
		{"apiextensions.k8s.io", "customresourcedefinitions", ""},
	} {
		kind, ok := BuiltinResource(tc.group, tc.resource)
		if ok != (tc.kind != "") || kind != tc.kind {
			t.Errorf("BuiltinResource(%q, %q) = %q, %t; want %q, %t", tc.group, tc.resource, kind, ok, tc.kind, tc.kind != "")
		}
	}
}

// TestBuiltinResourceHasNoOptionKinds: the scheme registers WatchEvent, the
// option kinds and Status in every group version, and a List for every
// kind; none of them is a resource.
func TestBuiltinResourceHasNoOptionKinds(t *testing.T) {
	resources := builtinResources()
	if len(resources) < 50 {
		t.Fatalf("only %d built-in resources; the scheme was not read", len(resources))
	}
	for gr, kind := range resources {
		if strings.HasSuffix(kind, "List") || strings.HasSuffix(kind, "Options") ||
			kind == "WatchEvent" || kind == "Status" || kind == "APIVersions" || kind == "APIGroup" {
			t.Errorf("%s (kind %s) is listed as a built-in resource", gr, kind)
		}
	}
	for _, group := range []string{"", "apps", "coordination.k8s.io"} {
		for _, resource := range []string{"watchevents", "listoptions", "deleteoptions", "getoptions", "createoptions", "updateoptions", "patchoptions", "statuses", "leaselists"} {
			if kind, ok := BuiltinResource(group, resource); ok {
				t.Errorf("BuiltinResource(%q, %q) = %q, true; want false", group, resource, kind)
			}
		}
	}
}
