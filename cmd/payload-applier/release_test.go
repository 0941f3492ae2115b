package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/payload-applier/payload-applier/pkg/releaseimage/releaseimagetest"
)

// startRegistry serves go-containerregistry's in-process registry on
// loopback and keeps pulled releases out of the user's cache.
func startRegistry(t *testing.T) string {
	t.Helper()
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	return releaseimagetest.NewRegistry(t).Host
}

// packTo packs dir to ref and returns the image by digest it prints.
func packTo(t *testing.T, dir, to string) string {
	t.Helper()
	stdout, stderr, code := execute(t, "release", "pack", dir, "--to", to)
	if code != exitOK {
		t.Fatalf("release pack %s --to %s: exit %d\n%s", dir, to, code, stderr)
	}
	return strings.TrimSpace(stdout)
}

func TestReleasePackPrintsTheImageByDigest(t *testing.T) {
	host := startRegistry(t)
	byDigest := packTo(t, planPayload, host+"/demo/release:1.0.0")
	if !strings.HasPrefix(byDigest, host+"/demo/release@sha256:") || len(byDigest) != len(host+"/demo/release@sha256:")+64 {
		t.Fatalf("release pack printed %q, want the repository by digest", byDigest)
	}
	// The same payload packs to the same digest, into a layout too.
	layout := filepath.Join(t.TempDir(), "layout")
	if got := packTo(t, planPayload, "oci:"+layout); got != byDigest[strings.Index(byDigest, "@")+1:] {
		t.Errorf("packed into a layout as %s, into the registry as %s", got, byDigest)
	}
	if _, err := os.Stat(filepath.Join(layout, "index.json")); err != nil {
		t.Errorf("no OCI layout written: %v", err)
	}
}

func TestReleasePackRefusesAnInvalidPayload(t *testing.T) {
	host := startRegistry(t)
	_, stderr, code := execute(t, "release", "pack", payloadDir("errors"), "--to", host+"/demo/release:bad")
	if code != exitUsage || !strings.Contains(stderr, "not packed") || !strings.Contains(stderr, "0000_50_example_00_config.yaml") {
		t.Fatalf("release pack of an invalid payload: exit %d, %s; want exit 2 naming the file", code, stderr)
	}
	_, stderr, code = execute(t, "release", "pack", planPayload, "--to", "demo/release")
	if code != exitUsage || !strings.Contains(stderr, "--to") {
		t.Fatalf("release pack to a reference without registry or tag: exit %d, %s; want exit 2", code, stderr)
	}
}

func TestLintReadsReleaseImages(t *testing.T) {
	host := startRegistry(t)
	prev := packTo(t, payloadDir("previous-4.19"), host+"/demo/release:4.19")
	next := packTo(t, payloadDir("next-4.20"), host+"/demo/release:4.20")

	// The same findings as from the directories: a leftover delete
	// across the minor update.
	stdout, stderr, code := execute(t, "lint", "-o", "json", "--previous", prev, host+"/demo/release:4.20")
	if code != exitFailed || !strings.Contains(stderr, "demo/release:4.20: 1 error, 1 warning") {
		t.Errorf("lint of images: exit %d, stderr %s\nstdout %s; want the directory's 1 error and 1 warning", code, stderr, stdout)
	}
	dirOut, _, _ := execute(t, "lint", "-o", "json", "--previous", payloadDir("previous-4.19"), payloadDir("next-4.20"))
	if got, want := findingKeys(t, stdout), findingKeys(t, dirOut); got != want {
		t.Errorf("findings from images:\n%s\nfrom directories:\n%s", got, want)
	}
	if _, _, code := execute(t, "lint", next); code != exitOK {
		t.Errorf("lint of %s alone: exit %d, want 0", next, code)
	}

	_, stderr, code = execute(t, "lint", host+"/demo/release@sha256:"+strings.Repeat("0", 64))
	if code != exitUsage || !strings.Contains(stderr, "MANIFEST_UNKNOWN") {
		t.Errorf("lint of a missing image: exit %d, %s; want exit 2 with the registry's MANIFEST_UNKNOWN", code, stderr)
	}
	_, stderr, code = execute(t, "lint", "no/such/dir")
	if code != exitUsage || !strings.Contains(stderr, "no such directory, and") || !strings.Contains(stderr, "not a release image reference") {
		t.Errorf("lint of neither a directory nor a reference: exit %d, %s", code, stderr)
	}
}

// findingKeys are the rule, severity, file name and position of each
// finding lint prints as JSON, sorted: where the payload was read from
// aside.
func findingKeys(t *testing.T, out string) string {
	t.Helper()
	var findings []struct {
		File, Rule, Severity string
		Line, Column         int
	}
	if err := json.Unmarshal([]byte(out), &findings); err != nil {
		t.Fatalf("lint printed no JSON: %v\n%s", err, out)
	}
	var keys []string
	for _, f := range findings {
		keys = append(keys, fmt.Sprintf("%s %s %s:%d:%d", f.Rule, f.Severity, filepath.Base(f.File), f.Line, f.Column))
	}
	sort.Strings(keys)
	return strings.Join(keys, "\n")
}

func TestPlanReadsAReleaseImage(t *testing.T) {
	host := startRegistry(t)
	ref := packTo(t, planPayload, host+"/demo/release:1.0.0")
	fromImage, stderr, code := planCLI(t, "plan", "--payload", ref, "-o", "json")
	if code != exitOK {
		t.Fatalf("plan --payload %s: exit %d\n%s", ref, code, stderr)
	}
	fromDir, _, _ := planCLI(t, "plan", "--payload", planPayload, "-o", "json")
	var a map[string]any
	var b any
	if err := json.Unmarshal([]byte(strings.ReplaceAll(fromImage, "release-manifests/", "")), &a); err != nil {
		t.Fatal(err)
	}
	// Only the image's plan says which image, and that it is not verified.
	if a["image"] != ref || a["verified"] != false {
		t.Errorf("plan of %s: image %v, verified %v", ref, a["image"], a["verified"])
	}
	delete(a, "image")
	delete(a, "verified")
	if err := json.Unmarshal([]byte(fromDir), &b); err != nil {
		t.Fatal(err)
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if string(ja) != string(jb) {
		t.Errorf("the plan of the image differs from the directory's (files aside):\n%s\n%s", fromImage, fromDir)
	}
}

// TestSkopeoReadsAPackedRelease proves that release pack writes a
// standard image: another implementation of the distribution API reads it.
func TestSkopeoReadsAPackedRelease(t *testing.T) {
	skopeo, err := exec.LookPath("skopeo")
	if err != nil {
		t.Fatal("skopeo is not installed: `make tools` installs it (Debian package skopeo)")
	}
	host := startRegistry(t)
	ref := packTo(t, payloadDir("next-4.20"), host+"/demo/release:4.20")
	out, err := exec.Command(skopeo, "inspect", "--tls-verify=false", "docker://"+ref).CombinedOutput()
	if err != nil {
		t.Fatalf("skopeo inspect %s: %v\n%s", ref, err, out)
	}
	var got struct {
		Digest string
		Labels map[string]string
		Os     string
		Layers []string
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("skopeo inspect printed no JSON: %v\n%s", err, out)
	}
	if "docker://"+host+"/demo/release@"+got.Digest != "docker://"+ref || got.Labels["io.openshift.release"] != "4.20.0" || got.Os != "linux" || len(got.Layers) != 1 {
		t.Errorf("skopeo reads %+v from %s; want its digest, the io.openshift.release label 4.20.0 and one layer", got, ref)
	}
}

func TestReleaseHasItsSubcommands(t *testing.T) {
	for _, sub := range []string{"pack", "sign"} {
		stdout, stderr, code := execute(t, "release", sub, "--help")
		if code != exitOK || !strings.Contains(stdout, "Usage:") || !strings.Contains(stdout, "release "+sub) {
			t.Errorf("release %s --help: exit %d\n%s%s", sub, code, stdout, stderr)
		}
	}
	// Listed once each: a subcommand registered twice shows twice in help.
	var names []string
	for _, c := range newReleaseCmd().Commands() {
		names = append(names, c.Name())
	}
	if !slices.Equal(names, []string{"pack", "sign"}) {
		t.Errorf("release has subcommands %v, want pack and sign once each", names)
	}
}

// TestReleasePackLeavesOutWhatTheLoaderDoesNotRead: a kubeconfig and an
// .env beside the manifests are neither pushed nor silently dropped.
func TestReleasePackLeavesOutWhatTheLoaderDoesNotRead(t *testing.T) {
	host := startRegistry(t)
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(planPayload)); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"kubeconfig", ".env"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("secret\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	stdout, stderr, code := execute(t, "release", "pack", dir, "--to", host+"/demo/release:1.0.0")
	if code != exitOK {
		t.Fatalf("release pack: exit %d\n%s", code, stderr)
	}
	for _, name := range []string{"kubeconfig", ".env"} {
		if !strings.Contains(stderr, "  "+name+"\n") {
			t.Errorf("release pack did not say it left out %s:\n%s", name, stderr)
		}
	}
	// What was pushed is exactly the payload without them.
	if want := packTo(t, planPayload, host+"/demo/release:1.0.0"); strings.TrimSpace(stdout) != want {
		t.Errorf("packed with the extra files as %s, without them as %s", strings.TrimSpace(stdout), want)
	}
}
