package main

import (
	"archive/tar"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// staticBinary builds a small static program, as `make image` builds
// payload-applier.
func staticBinary(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module hello\n\ngo 1.24\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "hello")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func testCA(t *testing.T) string {
	t.Helper()
	ca := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(ca, []byte("-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return ca
}

func TestTheImageRunsTheStaticBinaryAsNonRoot(t *testing.T) {
	o := options{binary: staticBinary(t), ca: testCA(t), version: "0.1.0", arch: "amd64"}
	img, err := build(o)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Config.User != "65532:65532" || !reflect.DeepEqual(cf.Config.Entrypoint, []string{"/usr/local/bin/payload-applier", "start"}) || cf.OS != "linux" || cf.Architecture != "amd64" {
		t.Errorf("config user %q, entrypoint %v, platform %s/%s; want 65532, payload-applier start, linux/amd64", cf.Config.User, cf.Config.Entrypoint, cf.OS, cf.Architecture)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("%d layers (%v), want one on an empty base", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	modes := map[string]int64{}
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if hdr.Uid != 0 || hdr.Gid != 0 {
			t.Errorf("%s is owned by %d:%d, want root", hdr.Name, hdr.Uid, hdr.Gid)
		}
		modes[hdr.Name] = hdr.Mode
	}
	for name, mode := range map[string]int64{
		"usr/local/bin/payload-applier":     0o755,
		"etc/ssl/certs/ca-certificates.crt": 0o644,
		"etc/passwd":                        0o644,
		"tmp/":                              0o1777,
	} {
		if got, ok := modes[name]; !ok || got != mode {
			t.Errorf("%s: mode %o (present %v), want %o", name, got, ok, mode)
		}
	}

	again, err := build(o)
	if err != nil {
		t.Fatal(err)
	}
	d1, _ := img.Digest()
	d2, _ := again.Digest()
	if d1 != d2 {
		t.Errorf("two builds of one binary: %s and %s", d1, d2)
	}
}

func TestTheImageRefusesADynamicBinary(t *testing.T) {
	dynamic := "/bin/ls"
	if _, err := os.Stat(dynamic); err != nil {
		t.Fatalf("no dynamic binary to try: %v", err)
	}
	if _, err := build(options{binary: dynamic, ca: testCA(t), version: "0.1.0", arch: "amd64"}); err == nil {
		t.Error("a dynamically linked binary was put in an image without a loader")
	}
}

func TestTheImageIsAStandardOCILayout(t *testing.T) {
	skopeo, err := exec.LookPath("skopeo")
	if err != nil {
		t.Fatal("skopeo is not installed: `make tools` installs it (Debian package skopeo)")
	}
	layout := filepath.Join(t.TempDir(), "layout")
	o := options{binary: staticBinary(t), ca: testCA(t), version: "0.1.0", arch: "amd64", to: "oci:" + layout}
	if err := run(t.Context(), o); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(skopeo, "inspect", "--config", "oci:"+layout+":0.1.0").CombinedOutput()
	if err != nil {
		t.Fatalf("skopeo inspect: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), `"User": "65532:65532"`) {
		t.Errorf("skopeo reads a config without the non-root user:\n%s", out)
	}
}
