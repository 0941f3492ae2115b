// Package precommit tests the payload-applier-lint hook of
// .pre-commit-hooks.yaml with the real pre-commit tool: a commit that
// breaks the payload is refused, the fixed one goes in.
package precommit

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The hook is built from this checkout's HEAD, so it needs a go toolchain
// and the module cache of this machine (pre-commit points GOPATH into its
// own cache and deletes the modules it downloaded there).
func TestPreCommitHookRefusesABadDelete(t *testing.T) {
	for _, tool := range []string{"pre-commit", "git", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not on PATH: run `make tools` (the Debian package pre-commit provides pre-commit)", tool)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	checkout, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	rev := strings.TrimSpace(run(t, ctx, checkout, nil, "git", "rev-parse", "HEAD"))
	if _, err := exec.Command("git", "-C", checkout, "cat-file", "-e", rev+":.pre-commit-hooks.yaml").CombinedOutput(); err != nil {
		t.Fatalf("HEAD (%s) has no .pre-commit-hooks.yaml: the hook is installed from a commit, so commit it first", rev)
	}
	if dirty := run(t, ctx, checkout, nil, "git", "status", "--porcelain", "--untracked-files=no"); dirty != "" {
		t.Logf("the hook is built from HEAD %s; uncommitted changes are not part of it:\n%s", rev, dirty)
	}

	tmp := t.TempDir()
	repo := filepath.Join(tmp, "repo")
	env := []string{
		"PRE_COMMIT_HOME=" + filepath.Join(tmp, "pre-commit-cache"),
		"PRE_COMMIT_COLOR=never",
		"GIT_AUTHOR_NAME=test", "GIT_AUTHOR_EMAIL=test@example.com",
		"GIT_COMMITTER_NAME=test", "GIT_COMMITTER_EMAIL=test@example.com",
		// Reuse this machine's module and build caches: offline with
		// GOPROXY=off, and far faster than a cold build.
		"GOMODCACHE=" + goEnv(t, "GOMODCACHE"),
		"GOCACHE=" + goEnv(t, "GOCACHE"),
	}
	if err := os.MkdirAll(filepath.Join(repo, "payload"), 0o755); err != nil {
		t.Fatal(err)
	}
	run(t, ctx, repo, env, "git", "init", "-q", "-b", "main")
	write(t, repo, ".pre-commit-config.yaml", "repos:\n- repo: "+checkout+"\n  rev: "+rev+"\n  hooks:\n  - id: payload-applier-lint\n    args: [payload]\n")
	write(t, repo, "payload/release-metadata", `{"kind":"cincinnati-metadata-v0","version":"4.20.0","metadata":{}}`+"\n")
	write(t, repo, "payload/image-references", `{"kind":"ImageStream","apiVersion":"image.openshift.io/v1","metadata":{"name":"4.20.0"},"spec":{"tags":[]}}`+"\n")
	const deleteManifest = `apiVersion: v1
kind: ConfigMap
metadata:
  name: old-config
  namespace: openshift-example
  annotations:
    include.release.openshift.io/self-managed-high-availability: "true"
    release.openshift.io/delete: %s
`
	write(t, repo, "payload/0000_50_example_01_old-config.yaml", strings.Replace(deleteManifest, "%s", `"True"`, 1))
	run(t, ctx, repo, env, "pre-commit", "install")
	run(t, ctx, repo, env, "git", "add", "-A")

	start := time.Now()
	out, err := command(ctx, repo, env, "git", "commit", "-q", "-m", "delete old-config")
	t.Logf("first commit, with the hook's build: %s", time.Since(start).Round(time.Second))
	if err == nil {
		t.Fatalf("the commit with release.openshift.io/delete: \"True\" went in:\n%s", out)
	}
	for _, want := range []string{"payload-applier lint", "Failed", "0000_50_example_01_old-config.yaml:8:5: error", "(delete-value)"} {
		if !strings.Contains(out, want) {
			t.Errorf("the refused commit's output lacks %q:\n%s", want, out)
		}
	}
	if log, err := command(ctx, repo, env, "git", "rev-parse", "-q", "--verify", "HEAD"); err == nil {
		t.Fatalf("a commit was made: %s", log)
	}

	write(t, repo, "payload/0000_50_example_01_old-config.yaml", strings.Replace(deleteManifest, "%s", `"true"`, 1))
	run(t, ctx, repo, env, "git", "add", "-A")
	start = time.Now()
	out = run(t, ctx, repo, env, "git", "commit", "-m", "delete old-config")
	t.Logf("second commit: %s", time.Since(start).Round(time.Second))
	if !strings.Contains(out, "payload-applier lint") || !strings.Contains(out, "Passed") {
		t.Errorf("the hook did not run and pass on the fixed commit:\n%s", out)
	}
	if n := strings.TrimSpace(run(t, ctx, repo, env, "git", "rev-list", "--count", "HEAD")); n != "1" {
		t.Errorf("%s commits, want the fixed one", n)
	}
}

func goEnv(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.Command("go", "env", name).Output()
	if err != nil {
		t.Fatalf("go env %s: %v", name, err)
	}
	return strings.TrimSpace(string(out))
}

func write(t *testing.T, dir, name, text string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func command(ctx context.Context, dir string, env []string, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func run(t *testing.T, ctx context.Context, dir string, env []string, name string, args ...string) string {
	t.Helper()
	out, err := command(ctx, dir, env, name, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return out
}
