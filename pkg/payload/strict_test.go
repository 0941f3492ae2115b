package payload

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/payload-applier/payload-applier/pkg/payload/payloadtest"
)

// TestHiddenDeletesAreRejected: each shape is one finding at its file and
// line, the document yields no manifest, and Load rejects the payload.
func TestHiddenDeletesAreRejected(t *testing.T) {
	for _, tc := range payloadtest.HiddenDeletes {
		t.Run(tc.Name, func(t *testing.T) {
			dir := writePayload(t, "4.20.0", map[string]string{
				"0000_40_a_00_ok.yaml": annotated("v1", "ConfigMap", "ns", "ok"),
				tc.File:                tc.Content,
			})
			file := filepath.Join(dir, tc.File)
			all, f := loadOneFinding(t, dir)
			if f.File != file || string(f.Rule) != tc.Rule || f.Line != tc.Line || (tc.Column != 0 && f.Column != tc.Column) || f.Severity != SeverityError || !strings.Contains(f.Message, tc.Contains) {
				t.Errorf("got %s\nwant an error %s at %s:%d:%d containing %q", f, tc.Rule, file, tc.Line, tc.Column, tc.Contains)
			}
			for _, m := range all.Manifests {
				if m.File == tc.File && m.Obj.GetName() != "first" {
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
			if want := fmt.Sprintf("%s:%d:", file, tc.Line); !strings.Contains(err.Error(), want) {
				t.Errorf("the error does not name %s:\n%v", want, err)
			}
		})
	}
}

func TestAnchorsAndQuotedValuesStillLoad(t *testing.T) {
	dir := writePayload(t, "4.20.0", map[string]string{
		"0000_50_a_00_x.yaml": annotated("v1", "ConfigMap", `"no"`, "a") + "data:\n  first: &greeting hello\n  second: *greeting\n",
		"0000_50_a_01_y.json": `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b","namespace":"ns","annotations":{"include.release.openshift.io/self-managed-high-availability":"true"}},"data":{"x":"a\u00e9b"}}`,
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

// mergeKeySpellings write a key that reads << in every way YAML allows:
// plain, quoted, escaped, tagged, joined across lines, as a block scalar.
var mergeKeySpellings = []string{
	"a:\n  <<: {b: c}\n",
	"a:\n  \"<<\": {b: c}\n",
	"a:\n  ! \"\\x3c\\x3c\": {b: c}\n",
	"a:\n  !!merge \"\\u003c<\": {b: c}\n",
	"a:\n  ! \"\\U0000003c<\": {b: c}\n",
	"a:\n  ? ! \"<\\\n    <\"\n  : {b: c}\n",
	"a:\n  ? |-\n    <<\n  : {b: c}\n",
}

// TestMergeKeyGate: every spelling of a key that reads << passes the quick
// test, so that mergeKeyPosition gets to see it.
func TestMergeKeyGate(t *testing.T) {
	for _, doc := range mergeKeySpellings {
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
