package e2e

import (
	"testing"
)

// inputsPayload is a release whose manifests the profile and exclude
// filters tell apart: one for both profiles, one only for the default
// profile, one excluded by EXCLUDE_MANIFESTS=x.
func inputsPayload(t *testing.T, ns string) string {
	const singleNode = `include.release.openshift.io/single-node-developer: "true"`
	return writePayload(t, "1.0.0", map[string]string{
		"0000_50_demo_00_kept.yaml":          configMap(ns, "kept", "x", singleNode),
		"0000_50_demo_01_other-profile.yaml": configMap(ns, "other-profile", "x"),
		"0000_50_demo_02_excluded.yaml":      configMap(ns, "excluded", "x", singleNode, `exclude.release.openshift.io/x: "true"`),
	})
}

func TestApplyHonoursTheProfileAndExcludedManifests(t *testing.T) {
	bin, c, _ := newCLITest(t)
	steps := []struct {
		name    string
		env     map[string]string
		args    []string
		created map[string]bool
	}{
		{name: "without inputs, the default profile and no exclusion",
			created: map[string]bool{"kept": true, "other-profile": true, "excluded": true}},
		{name: "from the CVO environment", env: map[string]string{"CLUSTER_PROFILE": "single-node-developer", "EXCLUDE_MANIFESTS": "x"},
			created: map[string]bool{"kept": true}},
		{name: "from the flags", args: []string{"--profile", "single-node-developer", "--exclude-manifests", "x"},
			created: map[string]bool{"kept": true}},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			t.Setenv("CLUSTER_PROFILE", "")
			t.Setenv("EXCLUDE_MANIFESTS", "")
			for k, v := range s.env {
				t.Setenv(k, v)
			}
			// Each step installs afresh into a namespace of its own.
			resetClusterVersion(t)
			ns := testCluster.CreateNamespace(t)
			args := append([]string{"apply", "--payload", inputsPayload(t, ns)}, s.args...)
			if code, stdout, stderr := runCLI(t, bin, args...); code != 0 {
				t.Fatalf("apply exit %d:\n%s\n%s", code, stdout, stderr)
			}
			for _, name := range []string{"kept", "other-profile", "excluded"} {
				if got := c.get(t, configMapGVK, ns, name) != nil; got != s.created[name] {
					t.Errorf("ConfigMap %s created: %v, want %v", name, got, s.created[name])
				}
			}
		})
	}
}
