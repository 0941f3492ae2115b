package e2e

import (
	"archive/tar"
	"bytes"
	"io"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/payload-applier/payload-applier/pkg/releaseimage/releaseimagetest"
)

// TestApplyReadsAReleaseImage installs a release packed by `release pack`
// from the registry, reconciles it from the cache without a request, and
// refuses an image it cannot verify, and, forced, a missing image and an
// image with a path escape, before applying anything.
func TestApplyReadsAReleaseImage(t *testing.T) {
	bin, c, ns := newCLITest(t)
	reg := releaseimagetest.NewRegistry(t)
	cache := t.TempDir()

	dir := writePayload(t, "1.0.0", storyReleases(ns)["1.0.0"])
	// release pack talks to no cluster, so it runs without runCLI's kubeconfig.
	out, err := exec.Command(bin, "release", "pack", dir, "--to", reg.Host+"/e2e/release:1.0.0").Output()
	if err != nil {
		t.Fatalf("release pack: %v", err)
	}
	ref := strings.TrimSpace(string(out))

	reg.Take()
	code, stdout, stderr := runCLI(t, bin, "apply", "--payload", ref, "--release-cache", cache)
	if code != 0 || !strings.Contains(stdout, "(install)") {
		t.Fatalf("apply --payload %s: exit %d\n%s%s", ref, code, stdout, stderr)
	}
	if !strings.Contains(strings.Join(reg.Take(), "\n"), "GET /v2/e2e/release/blobs/") {
		t.Error("the install read no layer from the registry")
	}
	if c.get(t, configMapGVK, ns, "keep") == nil {
		t.Fatal("the release's ConfigMap keep was not applied")
	}
	// The status names the image by digest, not the cache directory.
	if cv := clusterVersion(t); !strings.Contains(ref, "@sha256:") || cv.Status.Desired.Image != ref ||
		len(cv.Status.History) == 0 || cv.Status.History[0].Image != ref {
		t.Errorf("desired image %q, history %+v: want %s", cv.Status.Desired.Image, cv.Status.History, ref)
	}

	code, stdout, stderr = runCLI(t, bin, "apply", "--payload", ref, "--release-cache", cache)
	if code != 0 || !strings.Contains(stdout, "(reconcile)") || !strings.Contains(stderr, "cached") {
		t.Fatalf("apply again: exit %d\n%s%s", code, stdout, stderr)
	}
	if served := reg.Take(); len(served) != 0 {
		t.Errorf("a cached digest was asked of the registry: %v", served)
	}

	// The running release carries no keys, so nothing can be verified: an
	// update is refused before the registry is asked, as in the CVO, and
	// only --force reaches the registry.
	missing := reg.Host + "/e2e/release@sha256:" + strings.Repeat("0", 64)
	code, stdout, stderr = runCLI(t, bin, "apply", "--payload", missing, "--release-cache", cache)
	if code != 3 || !strings.Contains(stderr, "cannot be verified") || !strings.Contains(stderr, "nothing of it was applied") {
		t.Errorf("apply of an unverifiable image: exit %d, want 3 saying it cannot be verified\n%s%s", code, stdout, stderr)
	}
	code, stdout, stderr = runCLI(t, bin, "apply", "--payload", missing, "--release-cache", cache, "--force")
	if code != 2 || !strings.Contains(stderr, "MANIFEST_UNKNOWN") || !strings.Contains(stderr, "nothing was applied") {
		t.Errorf("forced apply of a missing image: exit %d, want 2 with the registry's MANIFEST_UNKNOWN\n%s%s", code, stdout, stderr)
	}

	// A release whose layer also writes out of the extraction directory:
	// refused whole, even forced, so its valid ConfigMap is not applied either.
	escape := escapingRelease(t, reg.Host+"/e2e/release:1.0.1", ns)
	code, stdout, stderr = runCLI(t, bin, "apply", "--payload", escape, "--release-cache", cache, "--force")
	if code != 2 || !strings.Contains(stderr, `".."`) || !strings.Contains(stderr, "nothing was applied") {
		t.Errorf("apply of an image with a path escape: exit %d, want 2 naming the entry\n%s%s", code, stdout, stderr)
	}
	if c.get(t, configMapGVK, ns, "escaped") != nil {
		t.Error("a ConfigMap of the refused release was applied")
	}
}

// escapingRelease pushes a release 1.0.1 with a valid ConfigMap escaped and
// a tar entry ../../evil.yaml, which release pack would never write.
func escapingRelease(t *testing.T, tag, ns string) string {
	t.Helper()
	files := []struct{ name, body string }{
		{"release-manifests/release-metadata", `{"kind":"cincinnati-metadata-v0","version":"1.0.1","previous":["1.0.0"],"metadata":{}}`},
		{"release-manifests/image-references", `{"kind":"ImageStream","apiVersion":"image.openshift.io/v1","metadata":{"name":"1.0.1"},"spec":{"tags":[]}}`},
		{"release-manifests/0000_50_demo_00_escaped.yaml", strings.TrimLeft(configMap(ns, "escaped", "x"), "\n")},
		{"release-manifests/../../evil.yaml", "x"},
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(f.body))}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(f.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil })
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.NewTag(tag)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}
	digest, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return ref.Context().Name() + "@" + digest.String()
}
