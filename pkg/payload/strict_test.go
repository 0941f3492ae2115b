package payload

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const (
	includeAnnotation       = `include.release.openshift.io/self-managed-high-availability`
	oneLineNumericNamespace = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":7,"annotations":{"` + includeAnnotation + `":"true"}}}`
)

// hiddenDeleteCases are documents whose text hides or injects a delete
// annotation, or drops the namespace, unless the parse refuses them. Each
// names the file, the rule, and where the finding must point.
var hiddenDeleteCases = map[string]struct {
	file, content string
	rule          Rule
	line, col     int
	contains      string
}{
	"a .json file whose second delete key hides the first": {
		file: "0000_50_a_00_x.json",
		content: `{
  "apiVersion": "v1",
  "kind": "ConfigMap",
  "metadata": {
    "name": "a",
    "namespace": "ns",
    "annotations": {
      "` + includeAnnotation + `": "true",
      "release.openshift.io/delete": "true",
      "release.openshift.io/delete": "false"
    }
  }
}
`,
		rule: RuleParseError, line: 10, contains: `key "release.openshift.io/delete" is set twice`,
	},
	"a flow-style YAML document whose second delete key injects a delete": {
		file: "0000_50_a_00_x.yaml",
		content: annotated("v1", "ConfigMap", "ns", "first") + "---\n" +
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"ns","annotations":{"` + includeAnnotation + `":"true","release.openshift.io/delete":"false","release.openshift.io/delete":"true"}}}` + "\n",
		rule: RuleParseError, line: 9, contains: `key "release.openshift.io/delete" is set twice`,
	},
	"a merge key that copies a delete annotation from labels": {
		file: "0000_50_a_00_x.yaml",
		content: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: ns\n  labels: &marks\n    release.openshift.io/delete: \"true\"\n" +
			"  annotations:\n    <<: *marks\n    " + includeAnnotation + ": \"true\"\n",
		rule: RuleYAMLMergeKey, line: 9, col: 5, contains: "YAML merge key",
	},
	"a merge key of an inline mapping": {
		file: "0000_50_a_00_x.yaml",
		content: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: ns\n  annotations:\n    " + includeAnnotation + ": \"true\"\n" +
			"    <<: {release.openshift.io/delete: \"true\"}\n",
		rule: RuleYAMLMergeKey, line: 8, col: 5, contains: "YAML merge key",
	},
	"a merge key written with escapes, which the parser still merges at": {
		file: "0000_50_a_00_x.yaml",
		content: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: ns\n  annotations:\n    " + includeAnnotation + ": \"true\"\n" +
			"    ! \"\\x3c\\x3c\": {release.openshift.io/delete: \"true\"}\n",
		rule: RuleYAMLMergeKey, line: 8, contains: "YAML merge key",
	},
	"a merge key in a JSON document": {
		file:    "0000_50_a_00_x.json",
		content: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"ns","annotations":{"<<":{"release.openshift.io/delete":"true"}}}}`,
		rule:    RuleYAMLMergeKey, line: 1, contains: "YAML merge key",
	},
	"namespace: no, which YAML reads as false": {
		file:    "0000_50_a_00_x.yaml",
		content: annotated("v1", "ConfigMap", "no", "a", `release.openshift.io/delete: "true"`),
		rule:    RuleParseError, line: 5, col: 3, contains: "metadata.namespace is the YAML boolean false, not a string; quote it",
	},
	"a numeric name": {
		file:    "0000_50_a_00_x.yaml",
		content: annotated("v1", "ConfigMap", "ns", "123"),
		rule:    RuleParseError, line: 4, col: 3, contains: "metadata.name is the YAML number 123, not a string",
	},
	"a numeric namespace in a one-line JSON document": {
		file:    "0000_50_a_00_x.json",
		content: oneLineNumericNamespace,
		rule:    RuleParseError, line: 1, col: strings.Index(oneLineNumericNamespace, `"namespace"`) + 1, contains: "metadata.namespace is the YAML number 7",
	},
	"a null namespace": {
		file:    "0000_50_a_00_x.yaml",
		content: annotated("v1", "ConfigMap", "~", "a"),
		rule:    RuleParseError, line: 5, col: 3, contains: "metadata.namespace is empty, not a string",
	},
	"a kind that is a mapping": {
		file:    "0000_50_a_00_x.yaml",
		content: annotated("v1", "{name: ConfigMap}", "ns", "a"),
		rule:    RuleParseError, line: 2, col: 1, contains: "kind is a mapping, not a string",
	},
}

// TestHiddenDeletesAreRejected: each shape is one finding at its file and
// line, the document yields no manifest, and Load rejects the payload.
func TestHiddenDeletesAreRejected(t *testing.T) {
	for name, tc := range hiddenDeleteCases {
		t.Run(name, func(t *testing.T) {
			dir := writePayload(t, "4.20.0", map[string]string{
				"0000_40_a_00_ok.yaml": annotated("v1", "ConfigMap", "ns", "ok"),
				tc.file:                tc.content,
			})
			file := filepath.Join(dir, tc.file)
			all, findings, err := LoadAll(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(findings) != 1 {
				t.Fatalf("want one finding, got\n%s", formatFindings(findings))
			}
			f := findings[0]
			if f.File != file || f.Rule != tc.rule || f.Line != tc.line || (tc.col != 0 && f.Column != tc.col) || f.Severity != SeverityError || !strings.Contains(f.Message, tc.contains) {
				t.Errorf("got %s\nwant an error %s at %s:%d:%d containing %q", f, tc.rule, file, tc.line, tc.col, tc.contains)
			}
			for _, m := range all.Manifests {
				if m.File == tc.file && m.Obj.GetName() != "first" {
					t.Errorf("the refused document still yields %s", m.ID())
				}
			}
			if got := lintDirs(t, dir, ""); !HasErrors(got) {
				t.Errorf("lint reports no error:\n%s", formatFindings(got))
			}

			r, err := Load(dir, DefaultLoadOptions())
			var verr *ValidationError
			if r != nil || !errors.As(err, &verr) {
				t.Fatalf("Load returned %v, %v; want no release and a *ValidationError", r, err)
			}
			if want := fmt.Sprintf("%s:%d:", file, tc.line); !strings.Contains(err.Error(), want) {
				t.Errorf("the error does not name %s:\n%v", want, err)
			}
		})
	}
}

func TestAnchorsAndQuotedValuesStillLoad(t *testing.T) {
	dir := writePayload(t, "4.20.0", map[string]string{
		"0000_50_a_00_x.yaml": annotated("v1", "ConfigMap", `"no"`, "a") + "data:\n  first: &greeting hello\n  second: *greeting\n",
		"0000_50_a_01_y.json": `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b","namespace":"ns","annotations":{"` + includeAnnotation + `":"true"}},"data":{"x":"a\u00e9b"}}`,
	})
	r, err := Load(dir, DefaultLoadOptions())
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Manifests) != 2 {
		t.Fatalf("loaded %d manifests, want 2", len(r.Manifests))
	}
	a, b := r.Manifests[0], r.Manifests[1]
	if a.Obj.GetNamespace() != "no" {
		t.Errorf("a quoted namespace \"no\" reads %q", a.Obj.GetNamespace())
	}
	if data, _, _ := unstructured.NestedStringMap(a.Obj.Object, "data"); data["second"] != "hello" {
		t.Errorf("an alias reads %q, want the anchored value", data["second"])
	}
	if data, _, _ := unstructured.NestedStringMap(b.Obj.Object, "data"); data["x"] != "aéb" {
		t.Errorf("a JSON \\u escape reads %q", data["x"])
	}
}

func TestJSONEscapesTheYAMLParserLacksAreExplained(t *testing.T) {
	for _, escape := range []string{`\/`, `\ud83d\ude00`} {
		doc := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"ns"},"data":{"x":"` + escape + `"}}`
		_, findings := parseFile("0000_50_a_00_x.json", []byte(doc))
		if len(findings) != 1 || findings[0].Rule != RuleParseError || !strings.Contains(findings[0].Message, "surrogate pairs") {
			t.Errorf("%s: got\n%s\nwant one parse-error that says how to write it", escape, formatFindings(findings))
		}
	}
}

// TestMergeKeyGate: every way to write a key that reads << passes the
// quick test, so that mergeKeyPosition gets to see it.
func TestMergeKeyGate(t *testing.T) {
	for _, doc := range []string{
		"a:\n  <<: {b: c}\n",
		"a:\n  \"<<\": {b: c}\n",
		"a:\n  ! \"\\x3c\\x3c\": {b: c}\n",
		"a:\n  !!merge \"\\u003c<\": {b: c}\n",
		"a:\n  ! \"\\U0000003c<\": {b: c}\n",
		"a:\n  ? ! \"<\\\n    <\"\n  : {b: c}\n",
		"a:\n  ? |-\n    <<\n  : {b: c}\n",
	} {
		line, _, found, err := mergeKeyPosition([]byte(doc))
		if err != nil || !found {
			t.Errorf("%q: mergeKeyPosition found no merge key (%v)", doc, err)
			continue
		}
		if !mayHoldMergeKey([]byte(doc)) {
			t.Errorf("%q: the quick test misses the merge key at line %d", doc, line)
		}
	}
	for _, doc := range []string{
		"a: b\n",
		"a: \"x < y, \\\" \\t\"\n",
		"rule: '!has(self.x) || self.x <= 3'\n",
	} {
		if mayHoldMergeKey([]byte(doc)) {
			t.Errorf("%q: the quick test asks for a second parse of a document that cannot merge", doc)
		}
	}
}
