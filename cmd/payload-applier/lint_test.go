package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/payload-applier/payload-applier/pkg/payload"
)

const lintTestdata = "../../pkg/payload/testdata/lint"

// execute runs the CLI in process and returns its output and the exit
// code run would return.
func execute(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	root := newRootCommand()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(args)
	err := root.Execute()
	if err != nil {
		errOut.WriteString("error: " + err.Error() + "\n")
	}
	return out.String(), errOut.String(), exitCode(err)
}

func payloadDir(name string) string { return filepath.Join(lintTestdata, name) }

func TestLintExitCodes(t *testing.T) {
	tests := map[string]struct {
		args        []string
		code        int
		stderr      string
		stdoutLines int
	}{
		"a clean payload passes": {
			args: []string{"lint", payloadDir("clean")}, code: exitOK,
			stderr: "clean: 0 errors, 0 warnings, 0 info",
		},
		"errors fail with 1 and every finding is reported": {
			args: []string{"lint", payloadDir("errors")}, code: exitFailed,
			stderr: "errors: 2 errors, 1 warning, 0 info", stdoutLines: 3,
		},
		"warnings pass": {
			args: []string{"lint", payloadDir("warnings")}, code: exitOK,
			stderr: "warnings: 0 errors, 1 warning", stdoutLines: 1,
		},
		"warnings fail with --strict": {
			args: []string{"lint", "--strict", payloadDir("warnings")}, code: exitFailed,
			stderr: "--strict fails on warnings", stdoutLines: 1,
		},
		"a leftover delete across a minor update fails": {
			args: []string{"lint", "--previous", payloadDir("previous-4.19"), payloadDir("next-4.20")}, code: exitFailed,
			stderr: "1 error, 1 warning", stdoutLines: 2,
		},
		"a missing directory is an I/O error": {
			args: []string{"lint", payloadDir("missing")}, code: exitUsage, stderr: "cannot load",
		},
		"a directory without release-metadata is an I/O error": {
			args: []string{"lint", "../../pkg/payload/testdata/cvo-layout/manifests"}, code: exitUsage, stderr: "not a release payload",
		},
		"an unreadable previous release is an I/O error": {
			args: []string{"lint", "--previous", payloadDir("missing"), payloadDir("clean")}, code: exitUsage, stderr: "cannot load the previous release",
		},
		"an unknown output format is a usage error": {
			args: []string{"lint", "--output", "yaml", payloadDir("clean")}, code: exitUsage, stderr: "--output must be text, json, github or sarif",
		},
		"an unknown profile is a usage error": {
			args: []string{"lint", "--profile", "self-managed", payloadDir("clean")}, code: exitUsage, stderr: "unknown --profile",
		},
		"a missing DIR is a usage error": {
			args: []string{"lint"}, code: exitUsage, stderr: "accepts 1 arg",
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			stdout, stderr, code := execute(t, tt.args...)
			if code != tt.code {
				t.Errorf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, stdout, stderr)
			}
			if !strings.Contains(stderr, tt.stderr) {
				t.Errorf("stderr %q does not contain %q", stderr, tt.stderr)
			}
			if got := strings.Count(stdout, "\n"); got != tt.stdoutLines {
				t.Errorf("%d lines of findings, want %d:\n%s", got, tt.stdoutLines, stdout)
			}
		})
	}
}

func TestLintTextFormat(t *testing.T) {
	stdout, _, _ := execute(t, "lint", payloadDir("errors"))
	want := filepath.Join(payloadDir("errors"), "0000_50_example_00_config.yaml") +
		`:8:5: error: release.openshift.io/delete is "True", and only "true" is accepted; write release.openshift.io/delete: "true" (quoted) to delete ConfigMap/openshift-example/old-config, or remove the annotation to keep it (delete-value)`
	if first := strings.SplitN(stdout, "\n", 2)[0]; first != want {
		t.Errorf("first line\n got %s\nwant %s", first, want)
	}
	if !strings.Contains(stdout, ":17:5: error: unknown annotation release.openshift.io/delet") {
		t.Errorf("the misspelt annotation is not reported:\n%s", stdout)
	}
	if !strings.Contains(stdout, "06-deployment.yaml:1:1: warning: ") {
		t.Errorf("the file-name warning is not reported:\n%s", stdout)
	}
}

func TestLintJSONFormat(t *testing.T) {
	stdout, _, code := execute(t, "lint", "-o", "json", payloadDir("clean"))
	if code != exitOK || strings.TrimSpace(stdout) != "[]" {
		t.Errorf("a clean payload prints %q (exit %d), want []", stdout, code)
	}

	stdout, _, code = execute(t, "lint", "--output", "json", payloadDir("errors"))
	if code != exitFailed {
		t.Errorf("exit %d", code)
	}
	var findings []map[string]any
	if err := json.Unmarshal([]byte(stdout), &findings); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, stdout)
	}
	if len(findings) != 3 {
		t.Fatalf("%d findings, want 3", len(findings))
	}
	first := findings[0]
	for key, want := range map[string]any{
		"file":     filepath.Join(payloadDir("errors"), "0000_50_example_00_config.yaml"),
		"line":     float64(8),
		"column":   float64(5),
		"rule":     "delete-value",
		"severity": "error",
	} {
		if first[key] != want {
			t.Errorf("%s = %v, want %v", key, first[key], want)
		}
	}
	if msg, _ := first["message"].(string); !strings.Contains(msg, `only "true" is accepted`) {
		t.Errorf("message %q", msg)
	}
	if len(first) != 6 {
		t.Errorf("want exactly file, line, column, rule, severity and message: %v", first)
	}
}

func TestLintGitHubFormat(t *testing.T) {
	stdout, _, code := execute(t, "lint", "-o", "github", payloadDir("errors"))
	if code != exitFailed {
		t.Errorf("exit %d", code)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	wantPrefix := "::error file=" + filepath.Join(payloadDir("errors"), "0000_50_example_00_config.yaml") + ",line=8,col=5,title=delete-value::release.openshift.io/delete is "
	if !strings.HasPrefix(lines[0], wantPrefix) {
		t.Errorf("first line\n got %s\nwant prefix %s", lines[0], wantPrefix)
	}
	if !strings.HasPrefix(lines[2], "::warning file=") {
		t.Errorf("the warning is not a ::warning: %s", lines[2])
	}
}

func TestGitHubEscaping(t *testing.T) {
	if got := githubData("50%\nnext"); got != "50%25%0Anext" {
		t.Errorf("githubData = %q", got)
	}
	if got := githubProperty("a:b,c"); got != "a%3Ab%2Cc" {
		t.Errorf("githubProperty = %q", got)
	}
}

func TestLintListRules(t *testing.T) {
	stdout, _, code := execute(t, "lint", "--list-rules")
	if code != exitOK {
		t.Errorf("exit %d", code)
	}
	for _, r := range payload.AllRules {
		if !strings.Contains(stdout, string(r.ID)) {
			t.Errorf("rule %s is not listed", r.ID)
		}
	}
}

func TestRunMapsLintExitCodes(t *testing.T) {
	if code := run([]string{"lint", "--strict", payloadDir("clean")}); code != exitOK {
		t.Errorf("run exit %d, want %d", code, exitOK)
	}
	if code := run([]string{"lint"}); code != exitUsage {
		t.Errorf("run without DIR exit %d, want %d", code, exitUsage)
	}
}

func TestACrashExitsSeventyNotTwo(t *testing.T) {
	defer func(orig func() *cobra.Command) { newRoot = orig }(newRoot)
	newRoot = func() *cobra.Command {
		return &cobra.Command{Use: "crash", RunE: func(*cobra.Command, []string) error {
			var m map[string]int
			m["boom"]++ // a nil map write: a bug
			return nil
		}}
	}
	if code := run(nil); code != exitInternal {
		t.Errorf("a panic exited %d, want %d", code, exitInternal)
	}
}

func TestProbeHandlerAnswersWhy(t *testing.T) {
	for _, tc := range []struct {
		err  error
		code int
		body string
	}{{nil, 200, "ok"}, {errors.New("no pass has ended for 31m"), 503, "no pass has ended for 31m"}} {
		rec := httptest.NewRecorder()
		probeHandler(func() error { return tc.err })(rec, httptest.NewRequest("GET", "/healthz", nil))
		if rec.Code != tc.code || !strings.Contains(rec.Body.String(), tc.body) {
			t.Errorf("got %d %q, want %d %q", rec.Code, rec.Body.String(), tc.code, tc.body)
		}
	}
}

func TestPlainHTTPOnlyOnLoopback(t *testing.T) {
	for addr, want := range map[string]bool{"127.0.0.1:9099": true, "[::1]:9099": true, "localhost:9099": true,
		"0.0.0.0:9099": false, ":9099": false, "10.0.0.5:9099": false, "garbage": false} {
		if got := isLoopback(addr); got != want {
			t.Errorf("isLoopback(%q) = %v, want %v", addr, got, want)
		}
	}
	if _, err := servingCert("cert.pem", ""); err == nil {
		t.Error("a certificate without its key is an error")
	}
	if c, err := servingCert("", ""); err != nil || len(c.Certificate) == 0 {
		t.Errorf("without files, a self-signed certificate: %v", err)
	}
}
