package cluster

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/openshift/library-go/pkg/manifest"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/restmapper"
)

// EnvOCPReal overrides where the real OpenShift payload is read from.
const envOCPReal = "PAYLOAD_APPLIER_OCP_REAL"

// ocpRealManifests returns the release-manifests directory of the real
// payload kept beside the checkout (../shared/payloads/ocp-real).
func ocpRealManifests(t *testing.T) string {
	t.Helper()
	dir := os.Getenv(envOCPReal)
	if dir == "" {
		_, file, _, _ := runtime.Caller(0)
		dir = filepath.Join(filepath.Dir(file), "..", "..", "..", "shared", "payloads", "ocp-real")
	}
	dir = filepath.Join(dir, "release-manifests")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("real payload not available (%v); set %s to the ocp-real directory", err, envOCPReal)
	}
	return dir
}

// loadPayload parses every manifest file the way the CVO does, one file at
// a time: feature-set variants of a CRD share a name across files.
func loadPayload(t *testing.T, dir string) []manifest.Manifest {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var all []manifest.Manifest
	for _, e := range entries {
		ext := filepath.Ext(e.Name())
		if e.IsDir() || (ext != ".yaml" && ext != ".yml" && ext != ".json") {
			continue
		}
		ms, err := manifest.ManifestsFromFiles([]string{filepath.Join(dir, e.Name())})
		if err != nil {
			t.Fatalf("parse %s: %v", e.Name(), err)
		}
		all = append(all, ms...)
	}
	if len(all) == 0 {
		t.Fatalf("no manifests in %s", dir)
	}
	return all
}

// payloadCRDs picks one document per CRD name, preferring the Default
// feature set, so that variants do not overwrite each other's versions.
func payloadCRDs(ms []manifest.Manifest) []*unstructured.Unstructured {
	byName := map[string]*unstructured.Unstructured{}
	for _, m := range ms {
		if m.GVK.Group != "apiextensions.k8s.io" || m.GVK.Kind != "CustomResourceDefinition" {
			continue
		}
		name := m.Obj.GetName()
		featureSet := m.Obj.GetAnnotations()["release.openshift.io/feature-set"]
		isDefault := featureSet == "" || strings.Contains(featureSet, "Default")
		if _, seen := byName[name]; !seen || isDefault {
			byName[name] = m.Obj.DeepCopy()
		}
	}
	names := make([]string, 0, len(byName))
	for name := range byName {
		names = append(names, name)
	}
	sort.Strings(names)
	out := make([]*unstructured.Unstructured, 0, len(names))
	for _, name := range names {
		out = append(out, byName[name])
	}
	return out
}

// TestFixturesCoverEveryKindInTheRealPayload installs the payload's own CRDs
// next to the harness fixtures and checks that every kind any payload
// document uses, including the ones marked for deletion, resolves through
// discovery. A failure lists each kind that needs a fixture.
func TestFixturesCoverEveryKindInTheRealPayload(t *testing.T) {
	ms := loadPayload(t, ocpRealManifests(t))
	crds := payloadCRDs(ms)
	t.Logf("applying %d CRDs from %d payload documents", len(crds), len(ms))

	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	if err := ApplyCRDs(ctx, testCluster.RESTConfig(), crds); err != nil {
		t.Fatal(err)
	}

	dc, err := discovery.NewDiscoveryClientForConfig(testCluster.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	groups, err := restmapper.GetAPIGroupResources(dc)
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDiscoveryRESTMapper(groups)

	users := map[schema.GroupVersionKind][]string{}
	for _, m := range ms {
		users[m.GVK] = append(users[m.GVK], m.OriginalFilename)
	}
	var missing []string
	for gvk, files := range users {
		if _, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
			missing = append(missing, gvk.String()+" (used by "+files[0]+")")
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Fatalf("%d kinds used by the payload do not resolve; add fixtures for:\n%s", len(missing), strings.Join(missing, "\n"))
	}
	t.Logf("all %d kinds used by the payload resolve", len(users))
}

// TestFixturesAreNeeded keeps the fixture list honest: no fixture may
// duplicate a CRD the real payload ships, since the applier must create
// those itself.
func TestFixturesAreNeeded(t *testing.T) {
	ms := loadPayload(t, ocpRealManifests(t))
	shipped := map[string]bool{}
	for _, crd := range payloadCRDs(ms) {
		shipped[crd.GetName()] = true
	}
	fixtures, err := FixtureCRDs()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fixtures {
		if shipped[f.GetName()] {
			t.Errorf("fixture %s duplicates a CRD the payload ships", f.GetName())
		}
		if f.GetAnnotations()["payload-applier.io/test-fixture"] != "true" {
			t.Errorf("fixture %s lacks the payload-applier.io/test-fixture annotation", f.GetName())
		}
	}
}
