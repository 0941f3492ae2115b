package main

import (
	"strings"
	"testing"
	"time"

	"github.com/payload-applier/payload-applier/pkg/clusterversion"
)

func TestAPatienceThatIsNotPositiveIsRefused(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		flag string
	}{
		{[]string{"start", "--payloads", dir, "--clusteroperator-degraded-grace", "0s"}, "--clusteroperator-degraded-grace"},
		{[]string{"apply", "--payload", dir, "--clusteroperator-slow-after", "-1m"}, "--clusteroperator-slow-after"},
	} {
		_, stderr, code := execute(t, tc.args...)
		if code != exitUsage || !strings.Contains(stderr, tc.flag) {
			t.Errorf("%v: exit %d, want %d naming %s\n%s", tc.args, code, exitUsage, tc.flag, stderr)
		}
	}
}

// The defaults are the CVO's; machine-config waits three times as long.
func TestPatienceDefaultsAreTheCVOs(t *testing.T) {
	for _, name := range []string{"start", "apply"} {
		cmd, _, err := newRootCommand().Find([]string{name})
		if err != nil {
			t.Fatal(err)
		}
		for flag, want := range map[string]string{"clusteroperator-degraded-grace": "40m0s", "clusteroperator-slow-after": "30m0s"} {
			if f := cmd.Flags().Lookup(flag); f == nil || f.DefValue != want {
				t.Errorf("%s --%s: default %v, want %s", name, flag, f, want)
			}
		}
	}
	f := patienceFlags{degraded: time.Minute, slow: 2 * time.Minute}
	if p, err := f.patience(); err != nil || p != (clusterversion.Patience{Degraded: time.Minute, Slow: 2 * time.Minute, SlowMachineConfig: 6 * time.Minute}) {
		t.Errorf("patience %+v, %v", p, err)
	}
}
