package main

import (
	"testing"

	"k8s.io/klog/v2"
)

// TestVerbosityFlag: --v, as the CVO's Deployment passes it, sets the
// log's verbosity for every command.
func TestVerbosityFlag(t *testing.T) {
	defer run([]string{"--v=0", "version"})
	if code := run([]string{"--v=3", "version"}); code != exitOK {
		t.Fatalf("exit %d", code)
	}
	if !klog.V(3).Enabled() || klog.V(4).Enabled() {
		t.Error("--v=3 did not set the verbosity to 3")
	}
	if code := run([]string{"version", "--v=0"}); code != exitOK || klog.V(1).Enabled() {
		t.Errorf("exit %d; --v=0 after the command name did not set it back", code)
	}
}
