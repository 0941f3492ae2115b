package main

import (
	"strings"
	"testing"
)

func TestTheUpdateGraphTimeoutMustBePositive(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"start", "--payloads", dir, "--update-graph-timeout", "0s"},
		{"apply", "--payload", dir, "--update-graph-timeout", "-1s"},
	} {
		_, stderr, code := execute(t, args...)
		if code != exitUsage || !strings.Contains(stderr, "--update-graph-timeout must be positive") {
			t.Errorf("%s: exit %d, want %d naming the flag\n%s", args[0], code, exitUsage, stderr)
		}
	}
}
