package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// copyPayload copies the plan test payload to dir.
func copyPayload(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-r", planPayload, dir).CombinedOutput(); err != nil {
		t.Fatalf("copy %s: %v\n%s", planPayload, err, out)
	}
}

// TestAPayloadNamedBothWaysIsRefused: a directory in the working directory
// named like the image reference is not read in the image's place; the
// argument is refused as ambiguous, and dir: and docker:// say which.
func TestAPayloadNamedBothWaysIsRefused(t *testing.T) {
	host := startRegistry(t)
	ref := host + "/demo/release:1.0.0"
	byDigest := packTo(t, planPayload, ref)
	work := t.TempDir()
	copyPayload(t, filepath.Join(work, ref))
	t.Chdir(work)

	for _, args := range [][]string{
		{"plan", "--payload", ref},
		{"apply", "--payload", ref},
		{"lint", ref},
		{"lint", "--previous", ref, "dir:" + ref},
	} {
		_, stderr, code := planCLI(t, args...)
		if code != exitUsage || !strings.Contains(stderr, "ambiguous") || !strings.Contains(stderr, "docker://"+ref) || !strings.Contains(stderr, "dir:"+ref) {
			t.Errorf("%v: exit %d, %s; want 2, refused as ambiguous with both spellings", args, code, stderr)
		}
	}

	stdout, stderr, code := planCLI(t, "plan", "--payload", "dir:"+ref, "-o", "json")
	if code != exitOK || strings.Contains(stderr, "release image") {
		t.Errorf("plan --payload dir:%s: exit %d, %s%s; want the directory planned, no image read", ref, code, stdout, stderr)
	}
	stdout, stderr, code = planCLI(t, "plan", "--payload", "docker://"+ref, "-o", "json")
	if code != exitOK || !strings.Contains(stderr, "release image "+ref+": "+byDigest[strings.Index(byDigest, "@")+1:]) {
		t.Errorf("plan --payload docker://%s: exit %d, %s%s; want the image %s planned", ref, code, stdout, stderr, byDigest)
	}
	if _, stderr, code := planCLI(t, "plan", "--payload", "dir:"); code != exitUsage || !strings.Contains(stderr, "dir: names no directory") {
		t.Errorf("plan --payload dir:: exit %d, %s", code, stderr)
	}
}

// TestPlanAndLintSayAnImageWasNotVerified: they read release images
// without checking signatures, and say so in every output.
func TestPlanAndLintSayAnImageWasNotVerified(t *testing.T) {
	host := startRegistry(t)
	image := packTo(t, planPayload, host+"/demo/release:1.0.0")
	notice := "release image " + image + " was not verified"

	stdout, stderr, code := planCLI(t, "plan", "--payload", image, "-o", "json")
	var doc struct {
		Image    string `json:"image"`
		Verified *bool  `json:"verified"`
	}
	if err := json.Unmarshal([]byte(stdout), &doc); code != exitOK || err != nil || doc.Image != image || doc.Verified == nil || *doc.Verified {
		t.Errorf("plan -o json of %s: exit %d, %v, image %q verified %v; want verified false\n%s", image, code, err, doc.Image, doc.Verified, stderr)
	}
	if stdout, _, _ := planCLI(t, "plan", "--payload", image); !strings.Contains(stdout, notice) {
		t.Errorf("plan text output lacks %q:\n%s", notice, stdout)
	}
	if stdout, _, _ := planCLI(t, "plan", "--payload", planPayload, "-o", "json"); strings.Contains(stdout, `"verified"`) {
		t.Errorf("plan -o json of a directory says verified:\n%s", stdout)
	}

	for output, where := range map[string]string{"text": "stdout", "github": "stdout", "json": "stderr", "sarif": "stderr"} {
		stdout, stderr, _ := execute(t, "lint", "-o", output, "--previous", image, planPayload)
		got := map[string]string{"stdout": stdout, "stderr": stderr}[where]
		if !strings.Contains(got, notice) {
			t.Errorf("lint -o %s --previous %s: %s lacks %q:\n%s", output, image, where, notice, got)
		}
	}
	if stdout, _, _ := execute(t, "lint", "-o", "github", image); !strings.Contains(stdout, "::warning title=unverified release image::"+notice) {
		t.Errorf("lint -o github of %s: no warning annotation:\n%s", image, stdout)
	}
}

// TestTheDefaultReleaseCacheIsThisUsersAlone: no shared fallback under
// $TMPDIR; the default directory is created 0700, and one that is a link
// or writable by others is refused.
func TestTheDefaultReleaseCacheIsThisUsersAlone(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	t.Setenv("XDG_CACHE_HOME", "")
	t.Setenv("HOME", "")
	var f registryFlags
	if _, err := f.puller(); err == nil || !strings.Contains(err.Error(), "--release-cache") {
		t.Errorf("without a user cache directory: %v; want a refusal naming --release-cache", err)
	}
	if entries, _ := os.ReadDir(tmp); len(entries) != 0 {
		t.Errorf("$TMPDIR was written: %v", entries)
	}

	base := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", base)
	if _, err := f.puller(); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{filepath.Join(base, "payload-applier"), filepath.Join(base, "payload-applier", "releases")} {
		if info, err := os.Lstat(dir); err != nil || info.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v, %v; want mode 0700", dir, info.Mode(), err)
		}
	}
	// An older cache, created 0755, is ours: it is made private.
	releases := filepath.Join(base, "payload-applier", "releases")
	if err := os.Chmod(releases, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := f.puller(); err != nil {
		t.Fatal(err)
	}
	if info, _ := os.Lstat(releases); info.Mode().Perm() != 0o700 {
		t.Errorf("%s is %v after use; want 0700", releases, info.Mode())
	}

	if err := os.Chmod(releases, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := f.puller(); err == nil || !strings.Contains(err.Error(), "writable by other users") || !strings.Contains(err.Error(), "--release-cache") {
		t.Errorf("a cache directory others can write: %v; want refused", err)
	}

	planted := t.TempDir()
	if err := os.RemoveAll(releases); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(planted, releases); err != nil {
		t.Fatal(err)
	}
	if _, err := f.puller(); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("a cache directory that is a link: %v; want refused", err)
	}
}
