package operator

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// demoNamespace holds the ConfigMaps of the test releases.
const demoNamespace = "demo"

// configMapManifest is a ConfigMap in demoNamespace that the default
// profile includes, with extra annotations.
func configMapManifest(name string, annotations ...string) string {
	ann := `    include.release.openshift.io/self-managed-high-availability: "true"`
	for _, a := range annotations {
		ann += "\n    " + a
	}
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\n  annotations:\n%s\ndata:\n  key: value\n",
		name, demoNamespace, ann)
}

const deleteAnnotation = `release.openshift.io/delete: "true"`

// heldConfigMapManifest is a ConfigMap that a finalizer keeps once deleted.
func heldConfigMapManifest(name string, annotations ...string) string {
	return strings.Replace(configMapManifest(name, annotations...), "  annotations:", "  finalizers: [example.com/hold]\n  annotations:", 1)
}

// writeRelease writes the payload directory of version under root: its
// release-metadata, image-references and the manifests in files.
func writeRelease(t *testing.T, root, version string, previous []string, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(root, version)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	prev := "[]"
	if len(previous) > 0 {
		prev = `["` + strings.Join(previous, `","`) + `"]`
	}
	all := map[string]string{
		"release-metadata": fmt.Sprintf(`{"kind":"cincinnati-metadata-v0","version":%q,"previous":%s,"metadata":{}}`, version, prev),
		"image-references": fmt.Sprintf(`{"kind":"ImageStream","apiVersion":"image.openshift.io/v1","metadata":{"name":%q},"spec":{"tags":[]}}`, version),
	}
	for name, body := range files {
		all[name] = body
	}
	for name, body := range all {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
