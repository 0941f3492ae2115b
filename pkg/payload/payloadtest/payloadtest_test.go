package payloadtest_test

import (
	"path/filepath"
	"testing"

	"github.com/payload-applier/payload-applier/pkg/payload"
	"github.com/payload-applier/payload-applier/pkg/payload/payloadtest"
)

func TestWriteReleaseWritesAPayloadThatLoads(t *testing.T) {
	root := t.TempDir()
	dir := payloadtest.WriteRelease(t, root, "1.0.1", []string{"1.0.0"}, map[string]string{
		"0000_50_demo_00_a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: demo\n  annotations:\n    include.release.openshift.io/self-managed-high-availability: \"true\"\n",
	})
	if dir != filepath.Join(root, "1.0.1") {
		t.Errorf("dir = %s, want root/1.0.1", dir)
	}
	rel, err := payload.Load(dir, payload.DefaultLoadOptions())
	if err != nil {
		t.Fatal(err)
	}
	if rel.Version != "1.0.1" || len(rel.Manifests) != 1 || rel.Manifests[0].Obj.GetName() != "a" {
		t.Errorf("loaded version %s with %d manifests, want 1.0.1 with a", rel.Version, len(rel.Manifests))
	}
}
