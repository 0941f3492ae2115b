package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestMain lets the test binary stand in for payload-applier, so that
// TestActionRunsLint runs action.yml's script against the real CLI.
func TestMain(m *testing.M) {
	if os.Getenv("PAYLOAD_APPLIER_TEST_AS_CLI") == "1" {
		os.Exit(run(os.Args[1:]))
	}
	os.Exit(m.Run())
}

type action struct {
	Inputs map[string]struct {
		Required bool   `yaml:"required"`
		Default  string `yaml:"default"`
	} `yaml:"inputs"`
	Runs struct {
		Using string `yaml:"using"`
		Steps []struct {
			ID   string            `yaml:"id"`
			Uses string            `yaml:"uses"`
			Run  string            `yaml:"run"`
			Env  map[string]string `yaml:"env"`
		} `yaml:"steps"`
	} `yaml:"runs"`
}

func readAction(t *testing.T) action {
	t.Helper()
	raw, err := os.ReadFile("../../action.yml")
	if err != nil {
		t.Fatal(err)
	}
	var a action
	if err := yaml.Unmarshal(raw, &a); err != nil {
		t.Fatalf("action.yml: %v", err)
	}
	return a
}

// actionOnlyInputs are the action's own; every other input but path (the
// DIR argument) is a lint flag of the same name.
var actionOnlyInputs = map[string]bool{"upload-sarif": true, "sarif-file": true}

func TestActionInputsAreLintFlags(t *testing.T) {
	a := readAction(t)
	if a.Runs.Using != "composite" {
		t.Errorf("runs.using is %q, want composite", a.Runs.Using)
	}
	for _, want := range []string{"path", "previous", "profile", "strict", "output"} {
		if _, ok := a.Inputs[want]; !ok {
			t.Errorf("action.yml has no input %s", want)
		}
	}
	if !a.Inputs["path"].Required {
		t.Error("input path must be required")
	}
	flags := newLintCommand().Flags()
	lintStep := ""
	for _, s := range a.Runs.Steps {
		if s.ID == "lint" {
			lintStep = s.Run
		}
	}
	for name, in := range a.Inputs {
		if name == "path" || actionOnlyInputs[name] {
			continue
		}
		f := flags.Lookup(name)
		if f == nil {
			t.Errorf("input %s is no lint flag", name)
			continue
		}
		// The action annotates the pull request by default; lint prints text.
		if name != "output" && in.Default != f.DefValue {
			t.Errorf("input %s defaults to %q, lint's --%s to %q", name, in.Default, name, f.DefValue)
		}
		if !strings.Contains(lintStep, "--"+name) {
			t.Errorf("the lint step never passes --%s", name)
		}
	}
	if !strings.Contains(lintStep, "--path-prefix") {
		t.Error("the lint step does not pass --path-prefix, so SARIF paths would not start at the repository root")
	}
	uploads := false
	for _, s := range a.Runs.Steps {
		uploads = uploads || strings.HasPrefix(s.Uses, "github/codeql-action/upload-sarif@")
	}
	if !uploads {
		t.Error("no step uploads SARIF")
	}
}

// TestActionRunsLint runs the lint step's script with bash, the test binary
// standing in for payload-applier, and checks what it runs and records.
func TestActionRunsLint(t *testing.T) {
	a := readAction(t)
	var script string
	var env map[string]string
	for _, s := range a.Runs.Steps {
		if s.ID == "lint" {
			script, env = s.Run, s.Env
		}
	}
	if script == "" {
		t.Fatal("action.yml has no step with id lint")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	if err := os.Symlink(self, filepath.Join(bin, "payload-applier")); err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		inputs    map[string]string
		exit      string
		stdout    string
		sarifFile bool
	}{
		"annotations by default": {
			inputs: map[string]string{"path": payloadDir("errors")},
			exit:   "1", stdout: "::error file=",
		},
		"strict fails on warnings": {
			inputs: map[string]string{"path": payloadDir("warnings"), "strict": "true", "output": "text"},
			exit:   "1", stdout: "warning:",
		},
		"a clean payload with a previous release passes": {
			inputs: map[string]string{"path": payloadDir("clean"), "previous": payloadDir("clean"), "profile": "single-node-developer"},
			exit:   "0",
		},
		"sarif output is written to the file": {
			inputs: map[string]string{"path": payloadDir("errors"), "output": "sarif"},
			exit:   "1", sarifFile: true,
		},
		"upload-sarif writes SARIF as well": {
			inputs: map[string]string{"path": payloadDir("errors"), "upload-sarif": "true"},
			exit:   "1", stdout: "::error file=", sarifFile: true,
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			sarif := filepath.Join(dir, "out.sarif")
			ghOutput := filepath.Join(dir, "github-output")
			cmd := exec.Command("bash", "-e", "-c", script)
			cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
				"PAYLOAD_APPLIER_TEST_AS_CLI=1", "GITHUB_OUTPUT="+ghOutput)
			for k, v := range env {
				// ${{ inputs.x }} as GitHub would expand it.
				input := strings.TrimSuffix(strings.TrimPrefix(v, "${{ inputs."), " }}")
				val, ok := tt.inputs[input]
				if !ok {
					val = a.Inputs[input].Default
				}
				if input == "sarif-file" {
					val = sarif
				}
				cmd.Env = append(cmd.Env, k+"="+val)
			}
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("the lint step failed itself: %v\n%s", err, stderr.String())
			}
			out, _ := os.ReadFile(ghOutput)
			if got := strings.TrimSpace(string(out)); got != "exit-code="+tt.exit {
				t.Errorf("GITHUB_OUTPUT %q, want exit-code=%s; stderr:\n%s", got, tt.exit, stderr.String())
			}
			if !strings.Contains(stdout.String(), tt.stdout) {
				t.Errorf("stdout lacks %q:\n%s", tt.stdout, stdout.String())
			}
			log, err := os.ReadFile(sarif)
			if tt.sarifFile != (err == nil) {
				t.Fatalf("SARIF file written: %v, want %v", err == nil, tt.sarifFile)
			}
			if tt.sarifFile {
				if err := validateSARIF(t, sarifValidator(t), string(log)); err != nil {
					t.Errorf("the SARIF file does not validate: %v", err)
				}
				// --path-prefix is the input path, so the URI starts with it.
				if want := `"uri": "` + strings.TrimPrefix(filepath.ToSlash(filepath.Clean(tt.inputs["path"])), "./"); !strings.Contains(string(log), want) {
					t.Errorf("SARIF paths do not start with the input path (%s):\n%s", want, log)
				}
			}
		})
	}
}
