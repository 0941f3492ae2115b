package payload

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const annotationsDoc = "../../docs/annotations.md"

func TestEveryRuleIsDocumented(t *testing.T) {
	sections := map[string]bool{SectionFiles: true, SectionManifest: true, SectionRelease: true, SectionUpdate: true}
	listed := map[Rule]bool{}
	for _, r := range AllRules {
		listed[r.ID] = true
		d, ok := RuleDocOf(r.ID)
		switch {
		case !ok:
			t.Errorf("rule %s has no RuleDoc", r.ID)
		case !sections[d.Section]:
			t.Errorf("rule %s: unknown section %q", r.ID, d.Section)
		case d.What == "" || d.Why == "" || d.Fix == "" || strings.TrimSpace(d.Example) == "":
			t.Errorf("rule %s: what, why, example and fix must all be written", r.ID)
		}
		for _, s := range []string{d.What, d.Why, d.Fix, d.SeverityText} {
			if strings.Contains(s, "|") || strings.Contains(s, "\n") {
				t.Errorf("rule %s: a table cell may hold neither | nor a newline: %q", r.ID, s)
			}
		}
	}
	for id := range ruleDocs {
		if !listed[id] {
			t.Errorf("RuleDoc %s documents no rule of AllRules", id)
		}
	}
}

// TestAnnotationsDocMatchesRuleDocs keeps docs/annotations.md's rule
// tables equal to ruleDocs. UPDATE_DOCS=1 rewrites them.
func TestAnnotationsDocMatchesRuleDocs(t *testing.T) {
	raw, err := os.ReadFile(annotationsDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	for _, s := range []string{SectionFiles, SectionManifest, SectionRelease, SectionUpdate} {
		re := regexp.MustCompile(`(?s)(<!-- lint-rules:` + s + ` begin[^\n]*-->\n)(.*?)(<!-- lint-rules:` + s + ` end -->)`)
		m := re.FindStringSubmatchIndex(doc)
		if m == nil {
			t.Fatalf("docs/annotations.md has no <!-- lint-rules:%s begin --> ... <!-- lint-rules:%s end --> block", s, s)
		}
		want := RuleDocsMarkdown(s)
		if got := doc[m[4]:m[5]]; got != want {
			if os.Getenv("UPDATE_DOCS") == "1" {
				doc = doc[:m[4]] + want + doc[m[5]:]
				continue
			}
			t.Errorf("docs/annotations.md's %s rules differ from pkg/payload/rules_docs.go; run UPDATE_DOCS=1 go test ./pkg/payload -run TestAnnotationsDocMatchesRuleDocs\n got:\n%s\nwant:\n%s", s, got, want)
		}
	}
	if os.Getenv("UPDATE_DOCS") == "1" && doc != string(raw) {
		if err := os.WriteFile(annotationsDoc, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRuleExamplesFail lints the example of every rule and expects the
// rule to report it, so that an example cannot rot. An example names each
// document's file in its first comment line, with "previous release" before
// the documents of the release an update starts from.
func TestRuleExamplesFail(t *testing.T) {
	fileHeader := regexp.MustCompile(`^# (previous release[^:]*: |this release[^:]*: )?([0-9A-Za-z_.-]+\.ya?ml)\b`)
	for _, r := range AllRules {
		d := ruleDocs[r.ID]
		if r.ID == RuleReleaseMetadata {
			continue // its example is a metadata file, not a manifest
		}
		t.Run(string(r.ID), func(t *testing.T) {
			releases := map[bool]map[string]string{false: {}, true: {}} // by "is the previous release"
			name, previous := "", false
			for _, doc := range strings.Split(strings.TrimSpace(d.Example), "\n---\n") {
				if m := fileHeader.FindStringSubmatch(doc); m != nil {
					name, previous = m[2], strings.HasPrefix(m[1], "previous")
				} else if name == "" {
					t.Fatalf("the example does not name its file in a first comment line: %q", doc)
				} else {
					doc = "---\n" + doc
				}
				releases[previous][name] += doc + "\n"
			}
			load := func(files map[string]string, version string) (*Release, []Finding) {
				dir := t.TempDir()
				files[ReleaseMetadataFile] = `{"kind":"cincinnati-metadata-v0","version":"` + version + `","metadata":{}}`
				files[ImageReferencesFile] = `{"kind":"ImageStream","apiVersion":"image.openshift.io/v1","metadata":{"name":"` + version + `"},"spec":{"tags":[]}}`
				for n, text := range files {
					if err := os.WriteFile(filepath.Join(dir, n), []byte(text), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				all, findings, err := LoadAll(dir)
				if err != nil {
					t.Fatal(err)
				}
				return all.Filter(DefaultLoadOptions()), findings
			}
			opts := LintOptions{}
			if d.Section == SectionUpdate {
				if len(releases[true]) == 0 {
					t.Fatal("an update rule's example needs documents of the previous release")
				}
				opts.Previous, _ = load(releases[true], "4.19.7")
			} else if len(releases[true]) > 0 {
				t.Fatal("only an update rule's example has a previous release")
			}
			next, findings := load(releases[false], "4.20.0")
			found := false
			for _, f := range append(findings, Lint(next, opts)...) {
				found = found || f.Rule == r.ID
			}
			if !found {
				t.Errorf("the example of %s is not reported by it", r.ID)
			}
		})
	}
}
