package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/payload-applier/payload-applier/test/cluster/cmd/localcluster/story"
)

// buildCLI builds payload-applier for the demo to run.
func buildCLI(t *testing.T) string {
	t.Helper()
	root, err := story.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	cli := filepath.Join(t.TempDir(), "payload-applier")
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	if err := story.BuildCLI(ctx, root, cli); err != nil {
		t.Fatal(err)
	}
	return cli
}

// started is what the demo printed about the processes it started.
type started struct {
	kubeconfig string
	apiserver  string // host:port
	operator   int    // pid
}

func parseStarted(t *testing.T, out string) started {
	t.Helper()
	var s started
	if m := regexp.MustCompile(`KUBECONFIG=(\S+)`).FindStringSubmatch(out); m != nil {
		s.kubeconfig = m[1]
	}
	if m := regexp.MustCompile(`kube-apiserver v\S+ at https://(\S+)`).FindStringSubmatch(out); m != nil {
		s.apiserver = m[1]
	}
	if m := regexp.MustCompile(`\(pid (\d+)\)`).FindStringSubmatch(out); m != nil {
		s.operator, _ = strconv.Atoi(m[1])
	}
	if s.kubeconfig == "" || s.apiserver == "" || s.operator == 0 {
		t.Fatalf("the demo did not print its kubeconfig, apiserver and operator pid:\n%s", out)
	}
	return s
}

// requireStopped fails unless the operator process and the apiserver are gone.
func requireStopped(t *testing.T, s started) {
	t.Helper()
	if err := syscall.Kill(s.operator, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("operator pid %d is still running after the demo returned (kill -0: %v)", s.operator, err)
	}
	if conn, err := net.DialTimeout("tcp", s.apiserver, time.Second); err == nil {
		conn.Close()
		t.Errorf("the apiserver at %s still accepts connections after the demo returned", s.apiserver)
	}
}

func TestRunWalksTheDemoAndStopsEverything(t *testing.T) {
	cli := buildCLI(t)
	var stdout, stderr bytes.Buffer
	if code := run([]string{"run", "--cli", cli}, &stdout, &stderr); code != 0 {
		t.Fatalf("run exited %d; stdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	out := stdout.String()
	// Status tables align their columns to the longest cell: compare with
	// whitespace runs collapsed.
	squeezed := strings.Join(strings.Fields(out), " ")
	for _, want := range []string{
		"real control plane started",
		"$ payload-applier release sign --key release.key --emit-verifier",
		"$ payload-applier release pack payloads/1.0.0 --to 127.0.0.1:",
		"$ payload-applier release pack payloads/1.0.1-unsigned --to 127.0.0.1:",
		"created ConfigMap openshift-config-managed/sha256-",
		"start --release-cache ",
		"==> Step 1 of 5: install release 1.0.0",
		"==> Step 2 of 5: request an unsigned 1.0.1",
		"ReleaseAccepted  False   ImageVerificationFailed  The update cannot be verified: ",
		"==> Step 3 of 5: update to the signed 1.0.1",
		"==> Step 4 of 5: request the minor update 1.1.0",
		"==> Step 5 of 5: the gadget controller finishes its cleanup",
		"ResourceDeletionInProgress",
		"PreconditionChecks",
		"Cluster version: 1.1.0",
		"The demo is complete",
	} {
		if !strings.Contains(squeezed, strings.Join(strings.Fields(want), " ")) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// The releases were requested by digest, and the updates verified: the
	// last status shows 1.1.0's image and history rows ending in
	// VERIFIED (the install is not verified, as in OpenShift).
	last := out[strings.LastIndex(out, "$ payload-applier status"):]
	image := regexp.MustCompile(`Desired image: (127\.0\.0\.1:\d+/demo/release@sha256:[0-9a-f]{64})\n`).FindStringSubmatch(last)
	if image == nil {
		t.Errorf("the last status shows no desired image by digest:\n%s", last)
	} else if !strings.Contains(out, "\n  "+image[1]+"\n") {
		t.Errorf("the desired image %s is not the one release pack printed for 1.1.0:\n%s", image[1], out)
	}
	for version, verified := range map[string]string{"1.1.0": "true", "1.0.1": "true", "1.0.0": "false"} {
		row := regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(version) + `\s+Completed\s+\S+\s+\S+\s+` + verified + `\s*$`)
		if !row.MatchString(last) {
			t.Errorf("the last status's history does not show %s verified %s:\n%s", version, verified, last)
		}
	}
	s := parseStarted(t, out)
	requireStopped(t, s)
	if _, err := os.Stat(s.kubeconfig); !os.IsNotExist(err) {
		t.Errorf("kubeconfig %s still exists after a successful demo (stat error %v); the data directory was not removed", s.kubeconfig, err)
	}
}

func TestRunStopsEverythingWhenItTimesOut(t *testing.T) {
	cli := buildCLI(t)
	var stdout, stderr bytes.Buffer
	// The finalizer is held far longer than the demo may take, so the
	// timeout ends it in step 5, with the cluster and the operator running.
	code := run([]string{"run", "--cli", cli, "--timeout", "45s", "--finalizer-hold", "10m"}, &stdout, &stderr)
	if code != 1 {
		t.Fatalf("run exited %d, want 1; stdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	if !strings.Contains(stderr.String(), "the demo did not finish within 45s (--timeout)") {
		t.Errorf("stderr does not say the demo timed out:\n%s", stderr.String())
	}
	if !strings.Contains(stdout.String(), "==> Step 5 of 5") {
		t.Errorf("the demo did not reach step 5 within 45s:\n%s", stdout.String())
	}
	s := parseStarted(t, stdout.String())
	requireStopped(t, s)
	// A failure keeps the data directory, whose logs explain it.
	dataDir := filepath.Dir(s.kubeconfig)
	if _, err := os.Stat(filepath.Join(dataDir, "logs", "payload-applier.log")); err != nil {
		t.Errorf("the operator log was not kept after a failure: %v", err)
	}
	if !strings.Contains(stderr.String(), "kept "+dataDir) {
		t.Errorf("stderr does not name the kept data directory %s:\n%s", dataDir, stderr.String())
	}
	if err := os.RemoveAll(dataDir); err != nil {
		t.Error(err)
	}
}

func TestCommandLine(t *testing.T) {
	empty := t.TempDir()
	tests := map[string]struct {
		args     []string
		wantCode int
		wantText string
	}{
		"no command prints usage":        {nil, 2, "Usage: localcluster"},
		"--help prints usage":            {[]string{"--help"}, 0, "Commands:"},
		"an unknown command is rejected": {[]string{"destroy"}, 2, `unknown command "destroy"`},
		"run --help tells the story":     {[]string{"run", "--help"}, 0, "request the minor update 1.1.0"},
		"run --help lists its flags":     {[]string{"run", "--help"}, 0, "-keep"},
		"up has no --finalizer-hold":     {[]string{"up", "--finalizer-hold", "1s"}, 2, "flag provided but not defined"},
		"build rejects stray arguments":  {[]string{"build", "extra"}, 2, "unexpected arguments"},
		"run needs the three releases":   {[]string{"run", "--payloads", empty}, 2, "has no release directory 1.0.0"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(tc.args, &stdout, &stderr)
			if code != tc.wantCode {
				t.Errorf("exit code = %d, want %d", code, tc.wantCode)
			}
			if all := stdout.String() + stderr.String(); !strings.Contains(all, tc.wantText) {
				t.Errorf("output lacks %q:\n%s", tc.wantText, all)
			}
		})
	}
}
