package precondition

import (
	"strings"
	"testing"
)

func TestClassify(t *testing.T) {
	tests := map[string]struct {
		from, to string
		want     UpdateKind
	}{
		"a patch bump is a z-stream update":                                {"4.19.3", "4.19.5", UpdateZStream},
		"a release candidate to its release is a z-stream update":          {"4.20.0-rc.1", "4.20.0", UpdateZStream},
		"a CI build to a release candidate of its minor is a z-stream":     {"4.10.0-0.ci.test-2022-02-21-141220-ci-ln-5x3lmkb-latest", "4.10.0-rc.1", UpdateZStream},
		"a minor bump is a minor update":                                   {"4.19.3", "4.20.0", UpdateMinor},
		"a minor bump to a release candidate is a minor update":            {"4.19.3", "4.20.0-rc.1", UpdateMinor},
		"a two-minor bump is still a minor update":                         {"4.18.3", "4.20.0", UpdateMinor},
		"a major bump is a major update":                                   {"4.22.1", "5.0.0", UpdateMajor},
		"a lower patch is a rollback":                                      {"4.19.5", "4.19.3", UpdateRollback},
		"a release to its release candidate is a rollback":                 {"4.20.0", "4.20.0-rc.1", UpdateRollback},
		"a lower minor is a rollback":                                      {"4.20.0", "4.19.9", UpdateRollback},
		"a lower major is a rollback":                                      {"5.0.0", "4.22.9", UpdateRollback},
		"the same version is no change":                                    {"4.19.3", "4.19.3", UpdateSame},
		"the same version with other build metadata is no change":          {"1.0.0-abc+build.1", "1.0.0-abc+build.2", UpdateSame},
		"an alphanumeric pre-release sorts after a numeric one (z-stream)": {"1.0.0-1", "1.0.0-abc", UpdateZStream},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := Classify(tt.from, tt.to)
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if got != tt.want {
				t.Errorf("Classify(%q, %q): want %s, got %s", tt.from, tt.to, tt.want, got)
			}
		})
	}
}

func TestClassifyRejectsVersionsThatAreNotSemantic(t *testing.T) {
	tests := map[string]struct {
		from, to string
		wantText string
	}{
		"a two-part from version is rejected": {"4.19", "4.20.0", `from version "4.19"`},
		"an empty to version is rejected":     {"4.19.0", "", `to version ""`},
		"a v prefix is rejected, as the CVO":  {"v4.19.0", "4.20.0", `from version "v4.19.0"`},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := Classify(tt.from, tt.to)
			if err == nil {
				t.Fatalf("want an error, got %s", got)
			}
			if !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("want the error to mention %s, got %q", tt.wantText, err)
			}
		})
	}
}
