package releaseimage

import (
	"archive/tar"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// layerNames lists the entries of an image's only layer.
func layerNames(t *testing.T, p *Packed) []string {
	t.Helper()
	layers, err := p.Image.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("%d layers (%v), want 1", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var names []string
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, hdr.Name)
	}
	sort.Strings(names)
	return names
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, data := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPackHoldsOnlyWhatTheLoaderReads: a kubeconfig, an .env or any file
// the loader does not read is left out of the image and listed, in the
// flat and the CVO layout.
func TestPackHoldsOnlyWhatTheLoaderReads(t *testing.T) {
	secrets := map[string]string{"kubeconfig": "token: s3cret", ".env": "PASSWORD=s3cret", "notes.txt": "n", "sub/0000_50_x_00_y.yaml": "y", ".wh.old": "w"}
	manifests := map[string]string{"0000_50_demo_10_b.yml": strings.Replace(demoManifest, "%s", "b", 1), "0000_50_demo_11_c.json": `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"demo","annotations":{"include.release.openshift.io/self-managed-high-availability":"true"}}}`}

	t.Run("flat", func(t *testing.T) {
		dir := writeDemo(t, "1.0.0", "a")
		writeFiles(t, dir, secrets)
		writeFiles(t, dir, manifests)
		p, err := PackRelease(dir, PackOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want := []string{
			"release-manifests/",
			"release-manifests/0000_50_demo_00_a.yaml",
			"release-manifests/0000_50_demo_10_b.yml",
			"release-manifests/0000_50_demo_11_c.json",
			"release-manifests/image-references",
			"release-manifests/release-metadata",
		}
		if got := layerNames(t, p); !reflect.DeepEqual(got, want) {
			t.Errorf("the image holds %v, want %v", got, want)
		}
		if want := []string{".env", ".wh.old", "kubeconfig", "notes.txt", "sub/"}; !reflect.DeepEqual(p.Skipped, want) {
			t.Errorf("Skipped = %v, want %v", p.Skipped, want)
		}
	})
	t.Run("CVO layout", func(t *testing.T) {
		flat := writeDemo(t, "1.0.0", "a")
		dir := t.TempDir()
		if err := os.Rename(flat, filepath.Join(dir, "release-manifests")); err != nil {
			t.Fatal(err)
		}
		writeFiles(t, dir, map[string]string{
			"kubeconfig":                        "token: s3cret",
			"release-manifests/.env":            "PASSWORD=s3cret",
			"manifests/0000_00_cvo_00_x.yaml":   strings.Replace(demoManifest, "%s", "cvo-x", 1),
			"manifests/release-metadata":        "not read here",
			"manifests/image-references.backup": "b",
		})
		p, err := PackRelease(dir, PackOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want := []string{
			"manifests/",
			"manifests/0000_00_cvo_00_x.yaml",
			"release-manifests/",
			"release-manifests/0000_50_demo_00_a.yaml",
			"release-manifests/image-references",
			"release-manifests/release-metadata",
		}
		if got := layerNames(t, p); !reflect.DeepEqual(got, want) {
			t.Errorf("the image holds %v, want %v", got, want)
		}
		wantSkipped := []string{"kubeconfig", "manifests/image-references.backup", "manifests/release-metadata", "release-manifests/.env"}
		if !reflect.DeepEqual(p.Skipped, wantSkipped) {
			t.Errorf("Skipped = %v, want %v", p.Skipped, wantSkipped)
		}
		// What is left out changes nothing the payload loads to.
		r := newTestRegistry(t)
		ref := r.push(t, "ocp/release:1.0.0", p.Image)
		e, err := fetch(t, newTestPuller(t, Config{}), ref, "")
		if err != nil {
			t.Fatal(err)
		}
		if got, want := summary(t, e.Dir), summary(t, dir); got != want {
			t.Errorf("the packed release loads as\n%s\nwant, as from the directory,\n%s", got, want)
		}
	})
}
