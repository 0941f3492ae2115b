package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// kappPackage is built from the pinned tools module in test/bench/tools.
const kappPackage = "carvel.dev/kapp/cmd/kapp"

// ensureKapp returns the path of a kapp binary built from the tools module,
// building it into $XDG_CACHE_HOME/payload-applier/bin/kapp-<key> first when
// the cache lacks it. key hashes the module's go.mod and go.sum and the Go
// version, so a new pin or toolchain rebuilds and nothing else does.
func ensureKapp(ctx context.Context) (string, error) {
	toolsDir, err := benchToolsDir()
	if err != nil {
		return "", err
	}
	h := sha256.New()
	for _, name := range []string{"go.mod", "go.sum"} {
		data, err := os.ReadFile(filepath.Join(toolsDir, name))
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d\n", name, len(data))
		h.Write(data)
	}
	goVersion, err := goCmd(ctx, toolsDir, "env", "GOVERSION", "GOOS", "GOARCH").Output()
	if err != nil {
		return "", fmt.Errorf("go env in %s: %w", toolsDir, err)
	}
	h.Write(goVersion)
	root, err := cacheRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(root, "kapp-"+hex.EncodeToString(h.Sum(nil))[:16])
	if st, err := os.Stat(bin); err == nil && st.Mode().IsRegular() {
		return bin, nil
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", err
	}
	tmp := fmt.Sprintf("%s.tmp-%d", bin, os.Getpid())
	start := time.Now()
	fmt.Fprintf(os.Stderr, "bench: building kapp from %s into %s (the first build takes a few minutes)\n", toolsDir, bin)
	cmd := goCmd(ctx, toolsDir, "build", "-o", tmp, kappPackage)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("build kapp: %w\n%s", err, out.String())
	}
	if err := os.Rename(tmp, bin); err != nil {
		return "", err
	}
	fmt.Fprintf(os.Stderr, "bench: built kapp in %s\n", time.Since(start).Round(time.Second))
	return bin, nil
}

// benchToolsDir is test/bench/tools beside this source file.
func benchToolsDir() (string, error) {
	if dir := os.Getenv("PAYLOAD_APPLIER_BENCH_TOOLS_DIR"); dir != "" {
		return dir, nil
	}
	_, file, _, ok := runtime.Caller(0)
	if !ok || !filepath.IsAbs(file) {
		return "", fmt.Errorf("cannot locate test/bench/tools; set PAYLOAD_APPLIER_BENCH_TOOLS_DIR")
	}
	return filepath.Join(filepath.Dir(file), "tools"), nil
}

// cacheRoot follows test/cluster's binary cache: $PAYLOAD_APPLIER_CACHE_DIR/bin,
// else $XDG_CACHE_HOME/payload-applier/bin.
func cacheRoot() (string, error) {
	if dir := os.Getenv("PAYLOAD_APPLIER_CACHE_DIR"); dir != "" {
		return filepath.Join(dir, "bin"), nil
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(base, "payload-applier", "bin"), nil
}

// goCmd runs go in a module of its own, ignoring any go.work.
func goCmd(ctx context.Context, dir string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
	return cmd
}

// kappTool runs kapp as its own user. Each workload is one kapp app whose
// record lives in the workload's first namespace (or default).
type kappTool struct {
	e          *env
	bin        string
	kubeconfig string
	// extra flags for the real payload, where kapp must not wait for
	// controllers that do not run here.
	realPayload bool
	// typed marks the run on the real payload's documents rewritten
	// through their Go types (see workload.typedForKapp).
	typed bool
}

func (t *kappTool) name() string {
	if t.typed {
		return toolKappTyped
	}
	return toolKapp
}
func (t *kappTool) userName() string { return "bench-kapp" }

func (t *kappTool) appArgs(w *workload) []string {
	return []string{"-a", "bench-" + w.name, "-n", "default", "--kubeconfig", t.kubeconfig, "-y", "--tty=false"}
}

func (t *kappTool) install(ctx context.Context, w *workload) error {
	args := append([]string{"deploy", "-f", w.flatDir}, t.appArgs(w)...)
	if t.realPayload {
		args = append(args, kappRealPayloadFlags...)
	}
	return t.run(ctx, args)
}

// kappRealPayloadFlags let kapp deploy the real payload on a control plane
// without nodes or operators: no Deployment or DaemonSet can become ready,
// so kapp waits only for what the payload itself needs (CRDs before their
// custom resources), and it may take over the two CRDs the control plane
// installed before any tool ran.
var kappRealPayloadFlags = []string{
	"--wait-resource-timeout=20s",
	"--dangerous-override-ownership-of-existing-resources",
}

func (t *kappTool) resync(ctx context.Context, w *workload) error { return t.install(ctx, w) }

func (t *kappTool) remove(ctx context.Context, w *workload) error {
	return t.run(ctx, append([]string{"delete"}, t.appArgs(w)...))
}

func (t *kappTool) run(ctx context.Context, args []string) error {
	cmd := exec.CommandContext(ctx, t.bin, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+t.kubeconfig)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		if os.Getenv("BENCH_DEBUG") != "" {
			fmt.Fprintln(os.Stderr, out.String())
		}
		return fmt.Errorf("kapp %s: %w: %s", args[0], err, kappError(out.String()))
	}
	return nil
}

// kappError picks kapp's own error lines out of its output, which ends
// with the change table when a wait fails.
func kappError(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for i, line := range lines {
		if strings.HasPrefix(strings.TrimSpace(line), "kapp: Error:") {
			end := i + 8
			if end > len(lines) {
				end = len(lines)
			}
			return strings.Join(lines[i:end], " | ")
		}
	}
	return tail(out, 6)
}

// tail returns the last n lines of s, joined by " | ".
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
