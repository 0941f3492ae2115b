package payload

import (
	"strings"
	"testing"

	"github.com/payload-applier/payload-applier/pkg/payload/payloadtest"
)

// releaseFromBytes parses data as one payload file, in memory.
func releaseFromBytes(version, name string, data []byte) (*Release, []Finding) {
	ms, findings := parseFile(name, data)
	for i, m := range ms {
		m.seq, m.Index = i, i
	}
	return &Release{Version: version, Manifests: ms}, findings
}

// FuzzLint feeds arbitrary bytes through parsing, filtering and every rule,
// with a second input as the previous release. Nothing may panic, and
// every finding must name a position and a known rule.
func FuzzLint(f *testing.F) {
	f.Add([]byte(annotated("v1", "ConfigMap", "ns", "a", `release.openshift.io/delete: "True"`)), []byte(annotated("v1", "ConfigMap", "ns", "a")), false)
	f.Add([]byte(crdDoc("example.com", "Widget", "widgets", "v1")+"---\n"+annotated("example.com/v1", "Widget", "ns", "w")), []byte(crdDoc("example.com", "Widget", "widgets", "v1beta1", "v1")), false)
	f.Add([]byte(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"x","annotations":{"release.openshift.io/delete":"true"}}}`), []byte("--- # c\nnull\n"), true)
	for _, tc := range payloadtest.HiddenDeletes {
		f.Add([]byte(tc.Content), []byte(annotated("v1", "ConfigMap", "ns", "a")), strings.HasSuffix(tc.File, ".json"))
	}
	known := map[Rule]bool{}
	for _, r := range AllRules {
		known[r.ID] = true
	}
	f.Fuzz(func(t *testing.T, next, previous []byte, asJSON bool) {
		name := "0000_50_fuzz_00_next.yaml"
		if asJSON {
			name = strings.TrimSuffix(name, ".yaml") + ".json"
		}
		all, findings := releaseFromBytes("4.20.0", name, next)
		prevAll, _ := releaseFromBytes("4.19.0", "0000_50_fuzz_00_previous.yaml", previous)
		opts := DefaultLoadOptions()
		r := all.Filter(opts)
		findings = append(findings, Lint(r, LintOptions{Previous: prevAll.Filter(opts)})...)
		findings = append(findings, Lint(all, LintOptions{Previous: prevAll})...)
		for _, finding := range findings {
			if finding.Line < 1 || finding.Column < 1 || !known[finding.Rule] || finding.Message == "" {
				t.Fatalf("malformed finding %+v", finding)
			}
		}
	})
}

// FuzzMetadata feeds arbitrary release-metadata and image-references.
func FuzzMetadata(f *testing.F) {
	f.Add([]byte(`{"kind":"cincinnati-metadata-v0","version":"4.20.0","metadata":{"url":"u","io.openshift.upgrades.graph.release.channels":"b,a"}}`),
		[]byte(`{"kind":"ImageStream","apiVersion":"image.openshift.io/v1","metadata":{"name":"4.20.0"},"spec":{"tags":[{"name":"x","from":{"kind":"DockerImage","name":"y"}}]}}`))
	f.Add([]byte(`{"kind":1,"version":[],"metadata":{"url":3}}`), []byte("spec:\n  tags: 3\n"))
	f.Fuzz(func(t *testing.T, metadata, references []byte) {
		r := &Release{}
		findings := parseReleaseMetadata(r, ReleaseMetadataFile, metadata)
		findings = append(findings, parseImageReferences(r, ImageReferencesFile, references)...)
		for _, finding := range findings {
			if finding.Line < 1 || finding.Column < 1 || finding.Rule != RuleReleaseMetadata {
				t.Fatalf("malformed finding %+v", finding)
			}
		}
		_ = r.Filter(DefaultLoadOptions())
	})
}

// FuzzMergeKeyGate checks the quick test that spares most documents the
// merge-key parse: whenever that parse finds a key that reads <<, the quick
// test must have asked for it.
func FuzzMergeKeyGate(f *testing.F) {
	for _, doc := range mergeKeySpellings {
		f.Add([]byte(doc))
	}
	for _, tc := range payloadtest.HiddenDeletes {
		f.Add([]byte(tc.Content))
	}
	f.Fuzz(func(t *testing.T, text []byte) {
		if _, _, found, err := mergeKeyPosition(text); err == nil && found && !mayHoldMergeKey(text) {
			t.Fatalf("the quick test misses a merge key in %q", text)
		}
	})
}
