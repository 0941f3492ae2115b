package cluster

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// Environment variables that override where binaries come from.
const (
	// EnvToolsDir points at the tools module (test/cluster/tools). It is only
	// needed when the package's source location is unknown, e.g. in a binary
	// built with -trimpath.
	EnvToolsDir = "PAYLOAD_APPLIER_TOOLS_DIR"
	// EnvCacheDir replaces $XDG_CACHE_HOME/payload-applier as the cache root.
	EnvCacheDir = "PAYLOAD_APPLIER_CACHE_DIR"
)

// Binary names, as built from the tools module.
const (
	etcdBinary   = "etcd"
	apiServerBin = "kube-apiserver"
	kcmBinary    = "kube-controller-manager"
)

// binaries lists every program the control plane needs, with the package
// that builds it inside the tools module.
var binaries = []struct{ name, pkg string }{
	{etcdBinary, "./etcd"},
	{apiServerBin, "k8s.io/kubernetes/cmd/kube-apiserver"},
	{kcmBinary, "k8s.io/kubernetes/cmd/kube-controller-manager"},
}

// buildRecipe names how build invokes go build. Change it whenever the
// flags or the package list change, so that caches built the old way are
// not reused.
const buildRecipe = "go build -buildvcs=false -ldflags=<k8s version stamps>; recipe 1"

// completeMarker is written last into a cache directory; a directory
// without it is a build that never finished.
const completeMarker = ".complete"

// EnsureBinaries returns a directory holding etcd, kube-apiserver and
// kube-controller-manager built from the pinned tools module, building them
// first when the cache lacks a build for the current key.
//
// The cache lives in $XDG_CACHE_HOME/payload-applier/bin/<key> (falling back
// to ~/.cache), where key hashes the tools module's go.mod, go.sum and
// etcd/main.go together with the Go version and the build recipe, so
// editing a pin, upgrading Go or changing the build flags rebuilds and
// nothing else does. Concurrent callers, including separate test
// binaries, serialize on a file lock so that only one of them builds. Build
// progress goes to stderr; cancelling ctx stops the build and the wait for
// the lock.
func EnsureBinaries(ctx context.Context) (string, error) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		return "", errors.New("cannot build the local control plane: the Go toolchain (go) is not on PATH")
	}
	toolsDir, err := ToolsDir()
	if err != nil {
		return "", err
	}
	key, err := cacheKey(ctx, goTool, toolsDir)
	if err != nil {
		return "", err
	}
	root, err := binCacheRoot()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, key)
	if isComplete(dir) {
		return dir, nil
	}

	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", fmt.Errorf("create binary cache %s: %w", root, err)
	}
	unlock, err := lockFile(ctx, filepath.Join(root, ".lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	// Another process may have finished the build while we waited.
	if isComplete(dir) {
		return dir, nil
	}
	if err := build(ctx, goTool, toolsDir, dir); err != nil {
		return "", err
	}
	return dir, nil
}

// ToolsDir returns the directory of the tools module: $PAYLOAD_APPLIER_TOOLS_DIR
// when set, otherwise test/cluster/tools next to this source file.
func ToolsDir() (string, error) {
	if dir := os.Getenv(EnvToolsDir); dir != "" {
		return checkToolsDir(dir)
	}
	_, file, _, ok := runtime.Caller(0)
	if !ok || !filepath.IsAbs(file) {
		return "", fmt.Errorf("cannot locate test/cluster/tools from the package source (built with -trimpath?); set %s", EnvToolsDir)
	}
	return checkToolsDir(filepath.Join(filepath.Dir(file), "tools"))
}

func checkToolsDir(dir string) (string, error) {
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		return "", fmt.Errorf("tools module not found at %s (set %s): %w", dir, EnvToolsDir, err)
	}
	return dir, nil
}

func binCacheRoot() (string, error) {
	if dir := os.Getenv(EnvCacheDir); dir != "" {
		return filepath.Join(dir, "bin"), nil
	}
	// os.UserCacheDir is $XDG_CACHE_HOME, else ~/.cache, on Linux.
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory for control plane binaries (set %s): %w", EnvCacheDir, err)
	}
	return filepath.Join(base, "payload-applier", "bin"), nil
}

// cacheKey hashes everything that decides what the build produces.
func cacheKey(ctx context.Context, goTool, toolsDir string) (string, error) {
	h := sha256.New()
	fmt.Fprintln(h, buildRecipe)
	for _, b := range binaries {
		fmt.Fprintln(h, b.name, b.pkg)
	}
	for _, name := range []string{"go.mod", "go.sum", filepath.Join("etcd", "main.go")} {
		data, err := os.ReadFile(filepath.Join(toolsDir, name))
		if err != nil {
			return "", fmt.Errorf("read tools module file for the cache key: %w", err)
		}
		fmt.Fprintf(h, "%s %d\n", name, len(data))
		h.Write(data)
	}
	out, err := goCommand(ctx, goTool, toolsDir, "env", "GOVERSION", "GOOS", "GOARCH").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOVERSION in %s: %w", toolsDir, commandError(err))
	}
	h.Write(out)
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

func isComplete(dir string) bool {
	if _, err := os.Stat(filepath.Join(dir, completeMarker)); err != nil {
		return false
	}
	for _, b := range binaries {
		if _, err := os.Stat(filepath.Join(dir, b.name)); err != nil {
			return false
		}
	}
	return true
}

// lockFile takes an exclusive flock on path, polling so that ctx can cancel
// the wait. The returned function releases it.
func lockFile(ctx context.Context, path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open build lock %s: %w", path, err)
	}
	announced := false
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() {
				_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
				f.Close()
			}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if !announced {
			fmt.Fprintf(os.Stderr, "cluster: another process is building the control plane binaries; waiting for %s\n", path)
			announced = true
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for build lock %s: %w", path, ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// build runs go build for every binary into a scratch directory, then
// renames it to dir so that a half-written build is never used.
func build(ctx context.Context, goTool, toolsDir, dir string) error {
	logPath := dir + ".build.log"
	logFile, err := os.Create(logPath)
	if err != nil {
		return fmt.Errorf("create build log: %w", err)
	}
	defer logFile.Close()

	tmp, err := os.MkdirTemp(filepath.Dir(dir), filepath.Base(dir)+".tmp-")
	if err != nil {
		return fmt.Errorf("create build directory: %w", err)
	}
	defer os.RemoveAll(tmp)

	ldflags, err := versionLDFlags(ctx, goTool, toolsDir)
	if err != nil {
		fmt.Fprintf(logFile, "cannot determine the Kubernetes version, binaries will report v0.0.0: %v\n", err)
	}
	args := []string{"build", "-buildvcs=false", "-ldflags", ldflags, "-o", tmp + string(filepath.Separator)}
	for _, b := range binaries {
		args = append(args, b.pkg)
	}
	cmd := goCommand(ctx, goTool, toolsDir, args...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	fmt.Fprintf(logFile, "$ (cd %s && go %s)\n", toolsDir, strings.Join(args, " "))

	start := time.Now()
	fmt.Fprintf(os.Stderr, "cluster: building etcd, kube-apiserver and kube-controller-manager from %s into %s (first build takes several minutes; log: %s)\n", toolsDir, dir, logPath)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start go build (log %s): %w", logPath, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	ticker := time.NewTicker(30 * time.Second)
	defer ticker.Stop()
	for {
		select {
		case err := <-done:
			if err != nil {
				return fmt.Errorf("building the control plane binaries failed after %s: %v (log %s)", time.Since(start).Round(time.Second), err, logPath)
			}
			if err := os.WriteFile(filepath.Join(tmp, completeMarker), []byte(time.Now().UTC().Format(time.RFC3339)+"\n"), 0o644); err != nil {
				return fmt.Errorf("mark build complete: %w", err)
			}
			// A stale incomplete directory from an interrupted run blocks the rename.
			if err := os.RemoveAll(dir); err != nil {
				return fmt.Errorf("remove stale build %s: %w", dir, err)
			}
			if err := os.Rename(tmp, dir); err != nil {
				return fmt.Errorf("install build into %s: %w", dir, err)
			}
			fmt.Fprintf(os.Stderr, "cluster: built control plane binaries in %s\n", time.Since(start).Round(time.Second))
			return nil
		case <-ticker.C:
			fmt.Fprintf(os.Stderr, "cluster: still building control plane binaries (%s elapsed, log %s)\n", time.Since(start).Round(time.Second), logPath)
		}
	}
}

// versionLDFlags stamps the Kubernetes version that the tools module pins
// into the binaries, so /version reports it instead of v0.0.0-master.
func versionLDFlags(ctx context.Context, goTool, toolsDir string) (string, error) {
	out, err := goCommand(ctx, goTool, toolsDir, "list", "-m", "-f", "{{.Version}}", "k8s.io/kubernetes").Output()
	if err != nil {
		return "", commandError(err)
	}
	version := strings.TrimSpace(string(out))
	var major, minor string
	if parts := strings.SplitN(strings.TrimPrefix(version, "v"), ".", 3); len(parts) >= 2 {
		major, minor = parts[0], parts[1]
	}
	var flags []string
	for _, pkg := range []string{"k8s.io/component-base/version", "k8s.io/client-go/pkg/version"} {
		flags = append(flags,
			"-X", pkg+".gitVersion="+version,
			"-X", pkg+".gitMajor="+major,
			"-X", pkg+".gitMinor="+minor,
			"-X", pkg+".gitTreeState=clean",
		)
	}
	return strings.Join(flags, " "), nil
}

// goCommand runs go inside the tools module, ignoring any go.work that
// would pull the main module in.
func goCommand(ctx context.Context, goTool, dir string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, goTool, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	cmd.WaitDelay = 10 * time.Second
	return cmd
}

// commandError adds a failed command's stderr to its error.
func commandError(err error) error {
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) && len(exitErr.Stderr) > 0 {
		return fmt.Errorf("%w: %s", err, bytes.TrimSpace(exitErr.Stderr))
	}
	return err
}

// lastLines returns up to n final lines of the file at path, for error
// messages about a process that failed.
func lastLines(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	defer f.Close()
	const maxTail = 64 << 10
	if st, err := f.Stat(); err == nil && st.Size() > maxTail {
		_, _ = f.Seek(st.Size()-maxTail, io.SeekStart)
	}
	data, _ := io.ReadAll(f)
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
