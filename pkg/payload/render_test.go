package payload

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeCVOLayout writes a release in the CVO layout: cvo in manifests/,
// the rest in release-manifests/ with the metadata.
func writeCVOLayout(t *testing.T, cvo map[string]string) string {
	t.Helper()
	root := t.TempDir()
	files := map[string]string{
		"release-manifests/release-metadata": `{"kind":"cincinnati-metadata-v0","version":"1.0.0","previous":[],"metadata":{}}`,
		"release-manifests/image-references": `{"kind":"ImageStream","apiVersion":"image.openshift.io/v1","metadata":{"name":"1.0.0"},
  "spec":{"tags":[{"name":"cli","from":{"kind":"DockerImage","name":"example.com/cli@sha256:` + strings.Repeat("c", 64) + `"}}]}}`,
		"release-manifests/0000_50_demo_00_cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: '{{.ReleaseImage}}'\n  namespace: demo\n  annotations:\n    include.release.openshift.io/self-managed-high-availability: \"true\"\n",
	}
	for name, body := range cvo {
		files["manifests/"+name] = body
	}
	for name, body := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

const cvoDeploymentTemplate = `apiVersion: v1
kind: ConfigMap
metadata:
  name: cluster-version-operator
  namespace: openshift-cluster-version
  annotations:
    include.release.openshift.io/self-managed-high-availability: "true"
data:
  image: '{{.ReleaseImage}}'
  profile: '{{ .ClusterProfile }}'
  cli: '{{index .Images "cli"}}'
`

// TestTheCVOsManifestsAreRendered: manifests/ is rendered with the release
// image, the profile and the image references, as the CVO renders its
// own manifests; release-manifests/ is read as it is.
func TestTheCVOsManifestsAreRendered(t *testing.T) {
	dir := writeCVOLayout(t, map[string]string{"0000_00_cluster-version-operator_30_deployment.yaml": cvoDeploymentTemplate})
	image := "example.com/release@sha256:" + strings.Repeat("a", 64)
	rel, err := LoadAndRender(dir, DefaultLoadOptions(), RenderConfig{ReleaseImage: image, ClusterProfile: "self-managed-high-availability"})
	if err != nil {
		t.Fatal(err)
	}
	var cvo, cm *Manifest
	for _, m := range rel.Manifests {
		switch m.Obj.GetName() {
		case "cluster-version-operator":
			cvo = m
		default:
			cm = m
		}
	}
	if cvo == nil || cm == nil {
		t.Fatalf("manifests %v, want the CVO's and the ConfigMap", rel.Manifests)
	}
	data := cvo.Obj.Object["data"].(map[string]any)
	if data["image"] != image || data["profile"] != "self-managed-high-availability" || data["cli"] != "example.com/cli@sha256:"+strings.Repeat("c", 64) {
		t.Errorf("rendered %v", data)
	}
	if cm.Obj.GetName() != "{{.ReleaseImage}}" {
		t.Errorf("release-manifests/ rendered too: %q", cm.Obj.GetName())
	}

	t.Log("unrendered, the template stays as written")
	plain, err := Load(dir, DefaultLoadOptions())
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range plain.Manifests {
		if m.Obj.GetName() == "cluster-version-operator" && m.Obj.Object["data"].(map[string]any)["image"] != "{{.ReleaseImage}}" {
			t.Errorf("Load rendered the template")
		}
	}
}

// TestATemplateThatDoesNotRenderRejectsTheRelease: the file is named, and
// nothing of the release is returned.
func TestATemplateThatDoesNotRenderRejectsTheRelease(t *testing.T) {
	dir := writeCVOLayout(t, map[string]string{"0000_00_cluster-version-operator_30_deployment.yaml": "image: '{{.NotAField}}'\n"})
	rel, err := LoadAndRender(dir, DefaultLoadOptions(), RenderConfig{ReleaseImage: "x"})
	var verr *ValidationError
	if rel != nil || !errors.As(err, &verr) || !strings.Contains(err.Error(), filepath.Join("manifests", "0000_00_cluster-version-operator_30_deployment.yaml")) ||
		!strings.Contains(err.Error(), "template does not render") {
		t.Fatalf("release %v, error %v: want it refused naming the file", rel, err)
	}
}
