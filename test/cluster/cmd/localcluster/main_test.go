package main

import (
	"bytes"
	"os"
	"regexp"
	"strings"
	"testing"
)

func TestRunOnceStartsPrintsAndStops(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"run", "--once"}, &stdout, &stderr); code != 0 {
		t.Fatalf("run --once exited %d; stderr:\n%s", code, stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{"real control plane started", "kube-apiserver v", "export KUBECONFIG=", "go run ./cmd/payload-applier", "will become the payload-applier demo"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	m := regexp.MustCompile(`export KUBECONFIG=(\S+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no kubeconfig path in output:\n%s", out)
	}
	if _, err := os.Stat(m[1]); !os.IsNotExist(err) {
		t.Fatalf("kubeconfig %s still exists after run --once stopped (stat error %v); the data directory was not removed", m[1], err)
	}
}

func TestCommandLine(t *testing.T) {
	tests := map[string]struct {
		args     []string
		wantCode int
		wantText string
	}{
		"no command prints usage":        {nil, 2, "Usage: localcluster"},
		"--help prints usage":            {[]string{"--help"}, 0, "Commands:"},
		"an unknown command is rejected": {[]string{"destroy"}, 2, `unknown command "destroy"`},
		"a command's --help lists flags": {[]string{"run", "--help"}, 0, "-once"},
		"up has no --once":               {[]string{"up", "--once"}, 2, "flag provided but not defined"},
		"build rejects stray arguments":  {[]string{"build", "extra"}, 2, "unexpected arguments"},
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
