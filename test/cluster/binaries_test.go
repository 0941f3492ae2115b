package cluster

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeToolsDir writes a tools module whose build fails at once: it
// requires none of the modules the real one builds from.
func fakeToolsDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"go.mod":       "module example.com/broken\n\ngo 1.24.0\n",
		"go.sum":       "",
		"etcd/main.go": "package main\n\nfunc main() { undefined() }\n",
	}
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestEnsureBinariesWithoutGoFailsAtOnce(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := EnsureBinaries(t.Context())
	if err == nil || !strings.Contains(err.Error(), "not on PATH") {
		t.Fatalf("EnsureBinaries without go on PATH: got %v, want an error saying go is not on PATH", err)
	}
}

func TestEnsureBinariesReportsFailedBuildWithItsLog(t *testing.T) {
	t.Setenv(EnvToolsDir, fakeToolsDir(t))
	cache := t.TempDir()
	t.Setenv(EnvCacheDir, cache)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	_, err := EnsureBinaries(ctx)
	if err == nil {
		t.Fatal("a broken tools module built")
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") {
		t.Errorf("error spans several lines: %q", msg)
	}
	i := strings.Index(msg, "(log ")
	if i < 0 {
		t.Fatalf("error does not name the build log: %q", msg)
	}
	logPath := strings.TrimSuffix(msg[i+len("(log "):], ")")
	log, readErr := os.ReadFile(logPath)
	if readErr != nil {
		t.Fatalf("build log named in the error: %v", readErr)
	}
	// The fake module lacks k8s.io/kubernetes, so go build fails on loading.
	if !strings.Contains(string(log), "no required module provides package k8s.io/kubernetes/cmd/kube-apiserver") {
		t.Errorf("build log lacks go build's error:\n%s", log)
	}
	entries, _ := filepath.Glob(filepath.Join(cache, "bin", "*"))
	for _, e := range entries {
		if isComplete(e) {
			t.Errorf("failed build left a directory marked complete: %s", e)
		}
	}
}

func TestCacheKeyFollowsTheToolsModule(t *testing.T) {
	dir := fakeToolsDir(t)
	ctx := t.Context()
	key := func() string {
		t.Helper()
		k, err := cacheKey(ctx, "go", dir)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	first := key()
	if again := key(); again != first {
		t.Fatalf("cache key is not stable: %s then %s", first, again)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.sum"), []byte("example.com/x v1.0.0 h1:abc=\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if changed := key(); changed == first {
		t.Fatal("cache key ignored a go.sum change")
	}
}

func TestBuildLockAdmitsOneHolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".lock")
	unlock, err := lockFile(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 700*time.Millisecond)
	defer cancel()
	if _, err := lockFile(ctx, path); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second lock while held: got %v, want the wait to end with the context", err)
	}
	unlock()
	unlock2, err := lockFile(t.Context(), path)
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	unlock2()
}
