package main

import (
	"strings"
	"testing"
)

func TestABudgetABucketCannotHaveIsRefused(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		flag string
	}{
		{[]string{"start", "--payloads", dir, "--kube-api-qps", "-1"}, "--kube-api-qps"},
		{[]string{"start", "--payloads", dir, "--install-kube-api-burst", "0"}, "--install-kube-api-qps"},
		{[]string{"apply", "--payload", dir, "--kube-api-qps", "5"}, "--kube-api-qps"},
	} {
		_, stderr, code := execute(t, tc.args...)
		if code != exitUsage || !strings.Contains(stderr, tc.flag) {
			t.Errorf("%v: exit %d, want %d naming %s\n%s", tc.args, code, exitUsage, tc.flag, stderr)
		}
	}
}

// start runs as the CVO and takes its limits; apply, a one-shot run an
// admin waits for, takes none unless asked.
func TestStartTakesTheCVOsBudgetAndApplyNone(t *testing.T) {
	for _, tc := range []struct {
		cmd  string
		want map[string]string
	}{
		{"start", map[string]string{"kube-api-qps": "20", "kube-api-burst": "40", "install-kube-api-qps": "40", "install-kube-api-burst": "80"}},
		{"apply", map[string]string{"kube-api-qps": "0", "install-kube-api-qps": "0"}},
	} {
		cmd, _, err := newRootCommand().Find([]string{tc.cmd})
		if err != nil {
			t.Fatal(err)
		}
		for name, want := range tc.want {
			f := cmd.Flags().Lookup(name)
			if f == nil || f.DefValue != want {
				t.Errorf("%s --%s: default %v, want %s", tc.cmd, name, f, want)
			}
		}
	}
}
