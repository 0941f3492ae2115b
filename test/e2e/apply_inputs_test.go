package e2e

import (
	"context"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	configclient "github.com/openshift/client-go/config/clientset/versioned"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/payload-applier/payload-applier/pkg/releaseimage/releaseimagetest"
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

// installWithoutCapabilities installs release (a directory or an image) by
// apply on a cluster whose spec.capabilities enables none; extra are more
// apply flags.
func installWithoutCapabilities(t *testing.T, bin, release string, extra ...string) configclient.Interface {
	t.Helper()
	// An apply makes the ClusterVersion CRD; the cluster is then installed
	// afresh.
	if code, stdout, stderr := runCLI(t, bin, append([]string{"apply", "--payload", release}, extra...)...); code != 0 {
		t.Fatalf("apply exit %d:\n%s\n%s", code, stdout, stderr)
	}
	resetClusterVersion(t)
	cc, err := configclient.NewForConfig(testCluster.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	cv := &configv1.ClusterVersion{ObjectMeta: metav1.ObjectMeta{Name: "version"},
		Spec: configv1.ClusterVersionSpec{ClusterID: "00000000-0000-4000-8000-000000000034", Capabilities: noCapabilitiesBut()}}
	if _, err := cc.ConfigV1().ClusterVersions().Create(context.Background(), cv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if code, stdout, stderr := runCLI(t, bin, append([]string{"apply", "--payload", release}, extra...)...); code != 0 || !strings.Contains(stdout, "(install)") {
		t.Fatalf("install: exit %d:\n%s\n%s", code, stdout, stderr)
	}
	return cc
}

// requireBuildEnabled fails unless the ClusterVersion enables Build.
func requireBuildEnabled(t *testing.T, cc configclient.Interface) {
	t.Helper()
	got, err := cc.ConfigV1().ClusterVersions().Get(context.Background(), "version", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(got.Status.Capabilities.EnabledCapabilities, "Build") {
		t.Errorf("enabled capabilities %v lack Build", got.Status.Capabilities.EnabledCapabilities)
	}
}

// An update that puts an object the cluster runs behind a disabled
// capability must keep managing it: apply enables the capability when it
// can read the current release, as start does, and refuses the update
// when it cannot.
func TestApplyEnablesImplicitCapabilitiesOrRefusesTheUpdate(t *testing.T) {
	bin, c, ns := newCLITest(t)
	store := writeStore(t, map[string]map[string]string{
		"1.0.0": {"0000_50_demo_00_moved.yaml": configMap(ns, "moved", "1.0.0")},
		"1.0.1": {"0000_50_demo_00_moved.yaml": configMap(ns, "moved", "1.0.1", buildCapability)},
	})
	cc := installWithoutCapabilities(t, bin, filepath.Join(store, "1.0.0"))

	t.Log("without the release store, the current release cannot be read: the update is refused")
	code, stdout, stderr := runCLI(t, bin, "apply", "--payload", filepath.Join(store, "1.0.1"))
	if code != 3 || !strings.Contains(stderr, "the current release cannot be read") || !strings.Contains(stderr, "--payloads") {
		t.Fatalf("update without the current release: exit %d (want 3, saying why):\n%s\n%s", code, stdout, stderr)
	}
	if data, _ := configMapData(t, c, ns, "moved"); data != "1.0.0" {
		t.Errorf("moved holds %q after a refused update, want 1.0.0's", data)
	}

	t.Log("with it, Build is enabled implicitly and moved stays managed")
	if code, stdout, stderr := runCLI(t, bin, "apply", "--payload", filepath.Join(store, "1.0.1"), "--payloads", store); code != 0 || !strings.Contains(stdout, "(update)") {
		t.Fatalf("update with the release store: exit %d:\n%s\n%s", code, stdout, stderr)
	}
	if data, _ := configMapData(t, c, ns, "moved"); data != "1.0.1" {
		t.Errorf("moved holds %q, want 1.0.1's manifest applied", data)
	}
	requireBuildEnabled(t, cc)
}

// A cluster installed from a release image: a directory update reads the
// current release from that image through the release cache.
func TestApplyReadsTheCurrentReleaseFromItsImage(t *testing.T) {
	bin, c, ns := newCLITest(t)
	reg := releaseimagetest.NewRegistry(t)
	cache := t.TempDir()
	current := writePayload(t, "1.0.0", map[string]string{"0000_50_demo_00_moved.yaml": configMap(ns, "moved", "1.0.0")})
	target := writePayload(t, "1.0.1", map[string]string{"0000_50_demo_00_moved.yaml": configMap(ns, "moved", "1.0.1", buildCapability)})
	// release pack talks to no cluster, so it runs without runCLI's kubeconfig.
	out, err := exec.Command(bin, "release", "pack", current, "--to", reg.Host+"/e2e/release:1.0.0").Output()
	if err != nil {
		t.Fatalf("release pack: %v", err)
	}
	cc := installWithoutCapabilities(t, bin, strings.TrimSpace(string(out)), "--release-cache", cache)

	if code, stdout, stderr := runCLI(t, bin, "apply", "--payload", target, "--release-cache", cache); code != 0 || !strings.Contains(stdout, "(update)") {
		t.Fatalf("update from the image-installed release: exit %d:\n%s\n%s", code, stdout, stderr)
	}
	if data, _ := configMapData(t, c, ns, "moved"); data != "1.0.1" {
		t.Errorf("moved holds %q, want 1.0.1's manifest applied", data)
	}
	requireBuildEnabled(t, cc)
}
