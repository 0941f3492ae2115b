package main

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/payload-applier/payload-applier/pkg/payload"
)

const sarifSchemaFile = "testdata/sarif/sarif-schema-2.1.0.json"

// sarifValidator compiles the vendored SARIF 2.1.0 schema.
func sarifValidator(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open(sarifSchemaFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	const id = "https://raw.githubusercontent.com/oasis-tcs/sarif-spec/master/Schemata/sarif-schema-2.1.0.json"
	if err := c.AddResource(id, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(id)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func validateSARIF(t *testing.T, s *jsonschema.Schema, out string) error {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(out))
	if err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	return s.Validate(inst)
}

func TestLintSARIF(t *testing.T) {
	schema := sarifValidator(t)
	tests := map[string][]string{
		"clean":            {payloadDir("clean")},
		"errors":           {payloadDir("errors")},
		"warnings":         {payloadDir("warnings")},
		"across an update": {"--previous", payloadDir("previous-4.19"), payloadDir("next-4.20")},
	}
	for name, args := range tests {
		t.Run(name, func(t *testing.T) {
			jsonOut, _, jsonCode := execute(t, append([]string{"lint", "-o", "json"}, args...)...)
			var findings []payload.Finding
			if err := json.Unmarshal([]byte(jsonOut), &findings); err != nil {
				t.Fatal(err)
			}
			out, stderr, code := execute(t, append([]string{"lint", "-o", "sarif", "--path-prefix", "payloads/release/"}, args...)...)
			if code != jsonCode {
				t.Errorf("exit %d with sarif, %d with json: %s", code, jsonCode, stderr)
			}
			if err := validateSARIF(t, schema, out); err != nil {
				t.Fatalf("the SARIF log does not validate: %v\n%s", err, out)
			}
			var log sarifLog
			if err := json.Unmarshal([]byte(out), &log); err != nil {
				t.Fatal(err)
			}
			if log.Version != "2.1.0" || len(log.Runs) != 1 {
				t.Fatalf("version %q, %d runs; want 2.1.0 and one run", log.Version, len(log.Runs))
			}
			run := log.Runs[0]
			rules := run.Tool.Driver.Rules
			if len(rules) != len(payload.AllRules) {
				t.Errorf("%d rules, want one per lint rule (%d)", len(rules), len(payload.AllRules))
			}
			for i, r := range payload.AllRules {
				got := rules[i]
				if got.ID != string(r.ID) || got.ShortDescription.Text == "" || got.FullDescription.Text == "" ||
					got.HelpURI != payload.RuleDocsURL+"#rule-"+string(r.ID) || got.DefaultConfiguration.Level != sarifLevel(r.Severity) {
					t.Errorf("rule %d: %+v", i, got)
				}
			}
			if len(run.Results) != len(findings) {
				t.Fatalf("%d results, want one per finding (%d)", len(run.Results), len(findings))
			}
			for i, f := range findings {
				r := run.Results[i]
				loc := r.Locations[0].PhysicalLocation
				wantURI := f.File // outside the payload: the orphan's previous manifest
				if rel, ok := strings.CutPrefix(f.File, args[len(args)-1]+"/"); ok {
					wantURI = "payloads/release/" + rel
				}
				if r.RuleID != string(f.Rule) || rules[r.RuleIndex].ID != r.RuleID || r.Level != sarifLevel(f.Severity) ||
					r.Message.Text != f.Message || loc.ArtifactLocation.URI != wantURI ||
					loc.ArtifactLocation.URIBaseID != "%SRCROOT%" || loc.Region == nil ||
					loc.Region.StartLine != f.Line || loc.Region.StartColumn != f.Column {
					t.Errorf("result %d is %+v at %+v, the finding %+v", i, r, loc, f)
				}
			}
		})
	}
}

func TestSARIFPaths(t *testing.T) {
	tests := []struct{ file, dir, prefix, want string }{
		{"release/0000_50_a.yaml", "release", "", "0000_50_a.yaml"},
		{"release/release-manifests/0000_50_a.yaml", "release", "payload", "payload/release-manifests/0000_50_a.yaml"},
		{"release/0000_50_a.yaml", "release/", "./deploy/payload/", "deploy/payload/0000_50_a.yaml"},
		{"release/a b%.yaml", "release", "", "a%20b%25.yaml"},
		{"elsewhere/x.yaml", "release", "p", "elsewhere/x.yaml"},
		{"../prev/x.yaml", "release", "p", "../prev/x.yaml"},
	}
	for _, tt := range tests {
		if got := sarifURI(tt.file, tt.dir, tt.prefix); got != tt.want {
			t.Errorf("sarifURI(%q, %q, %q) = %q, want %q", tt.file, tt.dir, tt.prefix, got, tt.want)
		}
	}
}

// TestSARIFSchemaRejects shows that the validation can fail: a region
// without a line, and a result without a message, are no SARIF.
func TestSARIFSchemaRejects(t *testing.T) {
	schema := sarifValidator(t)
	var b bytes.Buffer
	if err := printSARIF(&b, []payload.Finding{{File: "d/a.yaml", Line: 3, Column: 2, Rule: payload.RuleDeleteValue, Severity: payload.SeverityError, Message: "m"}}, "d", ""); err != nil {
		t.Fatal(err)
	}
	good := b.String()
	if err := validateSARIF(t, schema, good); err != nil {
		t.Fatalf("valid log rejected: %v", err)
	}
	for _, bad := range []string{
		strings.Replace(good, `"startLine": 3`, `"startLine": 0`, 1),
		strings.Replace(good, `"message": {`, `"messages": {`, 1),
		strings.Replace(good, `"version": "2.1.0"`, `"version": "2.0.0"`, 1),
	} {
		if bad == good {
			t.Fatal("the mutation changed nothing")
		}
		if err := validateSARIF(t, schema, bad); err == nil {
			t.Errorf("the schema accepts an invalid log:\n%s", bad)
		}
	}
}

// TestSARIFHelpURIsResolve checks that every helpUri's anchor is in
// docs/annotations.md.
func TestSARIFHelpURIsResolve(t *testing.T) {
	doc, err := os.ReadFile("../../docs/annotations.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range payload.AllRules {
		if !bytes.Contains(doc, []byte(`<a id="rule-`+string(r.ID)+`"></a>`)) {
			t.Errorf("docs/annotations.md has no anchor rule-%s", r.ID)
		}
	}
}
