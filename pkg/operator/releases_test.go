package operator

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"

	"github.com/payload-applier/payload-applier/pkg/payload"
	"github.com/payload-applier/payload-applier/pkg/payload/payloadtest"
)

// sourceOperator is an Operator with only what loadRelease uses.
func sourceOperator(releases ReleaseSource) *Operator {
	cfg := Config{Releases: releases}
	cfg.setDefaults()
	o := &Operator{cfg: cfg}
	o.reader = &releaseReader{cfg: &o.cfg, releases: map[string]*payload.Release{}}
	return o
}

func TestALoadedReleaseIsNotReadAgainAndIsFilteredPerClusterVersion(t *testing.T) {
	dir := payloadtest.WriteRelease(t, t.TempDir(), "1.0.0", nil, map[string]string{
		"0000_50_demo_00_a.yaml": configMapManifest("a"),
		"0000_50_demo_01_b.yaml": configMapManifest("b"),
	})
	rel, err := payload.Load(dir, payload.DefaultLoadOptions())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	o := sourceOperator(LoadedRelease{Release: rel})
	cv := &configv1.ClusterVersion{Spec: configv1.ClusterVersionSpec{Overrides: []configv1.ComponentOverride{
		{Kind: "ConfigMap", Namespace: demoNamespace, Name: "b", Unmanaged: true}}}}

	got, err := o.reader.loadRelease("1.0.0", cv)
	if err != nil {
		t.Fatalf("the release given must serve without its directory: %v", err)
	}
	if len(got.Manifests) != 1 || got.Manifests[0].Obj.GetName() != "a" || len(got.Skipped) != 1 {
		t.Errorf("the ClusterVersion's overrides must drop b: kept %d, skipped %d", len(got.Manifests), len(got.Skipped))
	}
	if !filepath.IsAbs(got.Dir) {
		t.Errorf("Dir %q is not absolute", got.Dir)
	}
	if _, err := o.reader.loadRelease("1.0.1", cv); err == nil || !strings.Contains(err.Error(), "release 1.0.1 is not available: only 1.0.0") {
		t.Errorf("another version must be unavailable: %v", err)
	}
}

// storeWithMisnamedRelease is an Operator on a DirStore whose release 1.0.5
// is in a directory named dirName.
func storeWithMisnamedRelease(t *testing.T, dirName string) *Operator {
	root := t.TempDir()
	dir := payloadtest.WriteRelease(t, root, "1.0.5", nil, map[string]string{"0000_50_demo_00_a.yaml": configMapManifest("a")})
	if err := os.Rename(dir, filepath.Join(root, dirName)); err != nil {
		t.Fatal(err)
	}
	return sourceOperator(&DirStore{Root: root})
}

func TestDirStoreFindsAReleaseByTheVersionItDeclares(t *testing.T) {
	o := storeWithMisnamedRelease(t, "candidate")
	if rel, err := o.reader.loadRelease("1.0.5", &configv1.ClusterVersion{}); err != nil || len(rel.Manifests) != 1 {
		t.Fatalf("load 1.0.5 from candidate/: %v", err)
	}
	if _, err := o.reader.loadRelease("2.0.0", &configv1.ClusterVersion{}); err == nil || !strings.Contains(err.Error(), "it holds: [1.0.5]") {
		t.Errorf("a missing release must list what the store holds: %v", err)
	}
}

func TestLoadReleaseRejectsAPayloadThatDeclaresAnotherVersion(t *testing.T) {
	o := storeWithMisnamedRelease(t, "1.0.0")
	if _, err := o.reader.loadRelease("1.0.0", &configv1.ClusterVersion{}); err == nil || !strings.Contains(err.Error(), "declares version 1.0.5, not the requested 1.0.0") {
		t.Errorf("a payload named 1.0.0 that declares 1.0.5 must be rejected: %v", err)
	}
}

func TestTheReleaseCacheKeepsOnlyReleasesInUse(t *testing.T) {
	root := t.TempDir()
	for _, v := range []string{"1.0.0", "1.0.1", "1.0.2", "1.0.3"} {
		payloadtest.WriteRelease(t, root, v, nil, map[string]string{"0000_50_demo_00_keep.yaml": configMapManifest("keep")})
	}
	c := newFakeCluster(t, &DirStore{Root: root}, "1.0.0")
	c.sync(t)
	for _, v := range []string{"1.0.1", "1.0.2", "1.0.3"} {
		c.request(t, v)
		c.sync(t)
	}
	var cached []string
	for v := range c.op.reader.releases {
		cached = append(cached, v)
	}
	sort.Strings(cached)
	// Loading 1.0.3 dropped every release but the one it updated from.
	if strings.Join(cached, " ") != "1.0.2 1.0.3" {
		t.Errorf("cached releases %v, want only those in use when 1.0.3 loaded", cached)
	}
}
