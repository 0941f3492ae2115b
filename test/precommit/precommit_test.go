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

// The hook is built from a snapshot of this checkout's working tree, so it
// needs a go toolchain and the module cache of this machine (pre-commit
// points GOPATH into its own cache and deletes the modules it downloaded
// there).
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
	hookRepo, rev := snapshot(t, ctx, checkout, filepath.Join(tmp, "hook"), env)
	if err := os.MkdirAll(filepath.Join(repo, "payload"), 0o755); err != nil {
		t.Fatal(err)
	}
	run(t, ctx, repo, env, "git", "init", "-q", "-b", "main")
	write(t, repo, ".pre-commit-config.yaml", "repos:\n- repo: "+hookRepo+"\n  rev: "+rev+"\n  hooks:\n  - id: payload-applier-lint\n    args: [payload]\n")
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

// snapshot commits the checkout's files as they are on disk (tracked and
// untracked, not ignored) into a new git repository at dir, so that the
// hook pre-commit installs is the code under test, committed or not, and a
// checkout that is no git repository (a CI tarball) works too.
func snapshot(t *testing.T, ctx context.Context, checkout, dir string, env []string) (repo, rev string) {
	t.Helper()
	var files []string
	if out, err := command(ctx, checkout, nil, "git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"); err == nil {
		for _, f := range strings.Split(out, "\x00") {
			if f != "" {
				files = append(files, f)
			}
		}
	} else if err := filepath.WalkDir(checkout, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(checkout, path)
		if d.IsDir() && (d.Name() == ".git" || rel == "bin") {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			files = append(files, rel)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		src := filepath.Join(checkout, f)
		st, err := os.Lstat(src)
		if err != nil || !st.Mode().IsRegular() {
			continue // deleted in the working tree, or a symlink
		}
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, data, st.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ".pre-commit-hooks.yaml")); err != nil {
		t.Fatalf("the checkout has no .pre-commit-hooks.yaml: %v", err)
	}
	run(t, ctx, dir, env, "git", "init", "-q", "-b", "main")
	run(t, ctx, dir, env, "git", "add", "-A")
	run(t, ctx, dir, env, "git", "commit", "-q", "-m", "snapshot of the checkout under test")
	return dir, strings.TrimSpace(run(t, ctx, dir, env, "git", "rev-parse", "HEAD"))
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
