package main

import (
	"strings"
	"testing"

	"github.com/payload-applier/payload-applier/pkg/payload"
)

func TestLintExplain(t *testing.T) {
	for _, r := range payload.AllRules {
		doc, _ := payload.RuleDocOf(r.ID)
		stdout, stderr, code := execute(t, "lint", "--explain", string(r.ID))
		if code != exitOK {
			t.Fatalf("--explain %s: exit %d: %s", r.ID, code, stderr)
		}
		flat := strings.Join(strings.Fields(stdout), " ")
		for _, want := range []string{
			string(r.ID) + ": ", "What it catches:", doc.What, "Why it matters:", doc.Why,
			"An example that fails:", "The fix:", doc.Fix, payload.RuleHelpURL(r.ID),
		} {
			if !strings.Contains(flat, strings.Join(strings.Fields(want), " ")) {
				t.Errorf("--explain %s lacks %q:\n%s", r.ID, want, stdout)
			}
		}
		for _, line := range strings.Split(strings.TrimSpace(doc.Example), "\n") {
			if !strings.Contains(stdout, "    "+line) {
				t.Errorf("--explain %s lacks the example line %q", r.ID, line)
			}
		}
	}
}

func TestLintExplainUnknownRule(t *testing.T) {
	tests := map[string]struct{ id, want string }{
		"a typo names the rule":         {"delet-value", `unknown rule "delet-value"; did you mean delete-value?`},
		"a part names every rule of it": {"crd", "crd-removed-in, crd-shadows-builtin"},
		"other case":                    {"Orphan", "did you mean orphan?"},
		"nothing close":                 {"zzzzzz", `unknown rule "zzzzzz" ('payload-applier lint --list-rules'`},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			stdout, stderr, code := execute(t, "lint", "--explain", tt.id)
			if code != exitUsage || stdout != "" || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 2 and %q", code, stdout, stderr, tt.want)
			}
		})
	}
	if _, stderr, code := execute(t, "lint", "--explain", "orphan", payloadDir("clean")); code != exitUsage {
		t.Errorf("--explain with a DIR: exit %d, %s", code, stderr)
	}
}

func TestLintListRulesOneLineEach(t *testing.T) {
	stdout, _, _ := execute(t, "lint", "--list-rules")
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	if len(lines) != len(payload.AllRules) {
		t.Fatalf("%d lines, want one per rule (%d)", len(lines), len(payload.AllRules))
	}
	for i, r := range payload.AllRules {
		if f := strings.Fields(lines[i]); len(f) < 3 || f[0] != string(r.ID) || f[1] != string(r.Severity) {
			t.Errorf("line %q, want %s %s and a summary", lines[i], r.ID, r.Severity)
		}
	}
}

func TestLintHelpNamesTheNewFlags(t *testing.T) {
	stdout, _, _ := execute(t, "lint", "--help")
	for _, want := range []string{"--explain", "--list-rules", "--path-prefix", "sarif", "an example that fails"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("lint --help lacks %q", want)
		}
	}
}
