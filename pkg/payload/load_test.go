package payload

import (
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

type manifestSummary struct {
	File      string
	Line      int
	ID        string
	RunLevel  int
	Component string
	Index     int
}

func summarize(ms []*Manifest) []manifestSummary {
	var out []manifestSummary
	for _, m := range ms {
		out = append(out, manifestSummary{m.File, m.Line, m.ID().String(), m.RunLevel, m.Component, m.Index})
	}
	return out
}

func TestLoadAllLayouts(t *testing.T) {
	tests := map[string]struct {
		dir  string
		want []manifestSummary
	}{
		"the CVO layout reads manifests/ before release-manifests/": {
			dir: "testdata/cvo-layout",
			want: []manifestSummary{
				{"manifests/0000_00_cluster-version-operator_03_service.yaml", 1, "Service/openshift-cluster-version/cluster-version-operator", 0, "cluster-version-operator", 0},
				{"release-manifests/0000_00_cluster-version-operator_00_namespace.yaml", 1, "Namespace/openshift-cluster-version", 0, "cluster-version-operator", 1},
				{"release-manifests/0000_50_example_01_config.yaml", 3, "ConfigMap/openshift-cluster-version/first", 50, "example", 2},
				{"release-manifests/0000_50_example_01_config.yaml", 16, "ConfigMap/openshift-cluster-version/hypershift-only", 50, "example", 3},
				{"release-manifests/0000_50_example_02_config.json", 1, "ConfigMap/openshift-cluster-version/from-json", 50, "example", 4},
			},
		},
		"a release-manifests directory on its own is the flat layout": {
			dir: "testdata/cvo-layout/release-manifests",
			want: []manifestSummary{
				{"0000_00_cluster-version-operator_00_namespace.yaml", 1, "Namespace/openshift-cluster-version", 0, "cluster-version-operator", 0},
				{"0000_50_example_01_config.yaml", 3, "ConfigMap/openshift-cluster-version/first", 50, "example", 1},
				{"0000_50_example_01_config.yaml", 16, "ConfigMap/openshift-cluster-version/hypershift-only", 50, "example", 2},
				{"0000_50_example_02_config.json", 1, "ConfigMap/openshift-cluster-version/from-json", 50, "example", 3},
			},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			r, findings, err := LoadAll(tt.dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(findings) != 0 {
				t.Errorf("unexpected findings:\n%s", formatFindings(findings))
			}
			if got := summarize(r.Manifests); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("manifests:\n got %+v\nwant %+v", got, tt.want)
			}
			if r.Version != "4.20.1" || r.URL != "https://access.redhat.com/errata/RHSA-2025:0001" {
				t.Errorf("version %q url %q", r.Version, r.URL)
			}
			if want := []string{"candidate-4.20", "eus-4.20", "fast-4.20", "stable-4.20"}; !reflect.DeepEqual(r.Channels, want) {
				t.Errorf("channels %v, want %v", r.Channels, want)
			}
			if got := r.Images["cluster-version-operator"]; got != "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:0123" {
				t.Errorf("image of cluster-version-operator is %q", got)
			}
			if m := r.Manifests[0]; m.OriginalFilename != filepath.Base(m.File) {
				t.Errorf("OriginalFilename %q, want the base name of %q", m.OriginalFilename, m.File)
			}
		})
	}
}

func TestLoadAllMissingMetadata(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "0000_50_x_00_cm.yaml"), annotated("v1", "ConfigMap", "ns", "a"))
	_, _, err := LoadAll(dir)
	if !errors.Is(err, ErrMissingMetadata) {
		t.Fatalf("want ErrMissingMetadata, got %v", err)
	}
	if !strings.Contains(err.Error(), filepath.Join(dir, ReleaseMetadataFile)) {
		t.Errorf("the message should name where release-metadata was expected: %v", err)
	}

	writeFile(t, filepath.Join(dir, ReleaseMetadataFile), `{"kind":"cincinnati-metadata-v0","version":"4.20.0"}`)
	if _, _, err := LoadAll(dir); !errors.Is(err, ErrMissingMetadata) || !strings.Contains(err.Error(), ImageReferencesFile) {
		t.Errorf("a payload without image-references: got %v", err)
	}
	if _, _, err := LoadAll(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing directory loads")
	}
}

func TestLoadAllMetadataFindings(t *testing.T) {
	tests := map[string]struct {
		metadata, references string
		want                 string
	}{
		"a wrong kind": {
			metadata: `{"kind":"cincinnati-metadata-v1","version":"4.20.0"}`,
			want:     `kind is "cincinnati-metadata-v1"`,
		},
		"a version that is not semver": {
			metadata: `{"kind":"cincinnati-metadata-v0","version":"4.20"}`,
			want:     `version "4.20" is not a semantic version`,
		},
		"no version": {
			metadata: `{"kind":"cincinnati-metadata-v0"}`,
			want:     "version is missing",
		},
		"invalid JSON": {
			metadata: "{\"kind\":\n\"cincinnati-metadata-v0\",,}",
			want:     "invalid JSON",
		},
		"an ImageStream named after another version": {
			metadata:   `{"kind":"cincinnati-metadata-v0","version":"4.20.0"}`,
			references: `{"kind":"ImageStream","apiVersion":"image.openshift.io/v1","metadata":{"name":"4.20.1"}}`,
			want:       `the ImageStream is named "4.20.1" but release-metadata has version "4.20.0"`,
		},
		"image-references that is no ImageStream": {
			metadata:   `{"kind":"cincinnati-metadata-v0","version":"4.20.0"}`,
			references: `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"4.20.0"}}`,
			want:       "must be an image.openshift.io/v1 ImageStream",
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			references := tt.references
			if references == "" {
				references = `{"kind":"ImageStream","apiVersion":"image.openshift.io/v1","metadata":{"name":"4.20.0"}}`
			}
			writeFile(t, filepath.Join(dir, ReleaseMetadataFile), tt.metadata)
			writeFile(t, filepath.Join(dir, ImageReferencesFile), references)
			_, findings, err := LoadAll(dir)
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, f := range findings {
				if strings.Contains(f.Message, tt.want) && f.Severity == SeverityError && f.Rule == RuleReleaseMetadata {
					found = true
				}
			}
			if !found {
				t.Fatalf("want a release-metadata error containing %q, got\n%s", tt.want, formatFindings(findings))
			}
			if _, err := Load(dir, DefaultLoadOptions()); err == nil {
				t.Error("Load accepted the payload")
			}
		})
	}
}

func TestLoadAllParseFindings(t *testing.T) {
	tests := map[string]struct {
		content  string
		wantLine int
		want     string
		rule     Rule
		kept     int
	}{
		"a YAML error reports its line in the file": {
			content:  annotated("v1", "ConfigMap", "ns", "a") + "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n   bad: indent\n",
			wantLine: 13, want: "invalid YAML", rule: RuleParseError, kept: 1,
		},
		"a document without kind": {
			content:  "apiVersion: v1\nmetadata:\n  name: a\n",
			wantLine: 1, want: "document has no kind", rule: RuleParseError,
		},
		"a document without name": {
			content:  "# header\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  namespace: x\n",
			wantLine: 2, want: "metadata.name is missing or empty", rule: RuleParseError,
		},
		"text after a document separator": {
			content:  annotated("v1", "ConfigMap", "ns", "a") + "--- apiVersion: v1\n",
			wantLine: 8, want: "invalid YAML document separator", rule: RuleParseError,
		},
		"a scalar document": {
			content:  "just a string\n",
			wantLine: 1, want: "cannot parse document", rule: RuleParseError,
		},
		"one object twice in a file": {
			content:  annotated("v1", "ConfigMap", "ns", "a") + "---\n" + annotated("v1", "ConfigMap", "ns", "a"),
			wantLine: 9, want: "defined twice in this file, first at line 1", rule: RuleDuplicateInFile, kept: 1,
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			dir := writePayload(t, "4.20.0", map[string]string{"0000_50_x_00_a.yaml": tt.content})
			r, f := loadOneFinding(t, dir)
			if f.Rule != tt.rule || f.Line != tt.wantLine || !strings.Contains(f.Message, tt.want) || f.Severity != SeverityError {
				t.Errorf("got %s; want rule %s at line %d containing %q", f, tt.rule, tt.wantLine, tt.want)
			}
			if f.File != filepath.Join(dir, "0000_50_x_00_a.yaml") {
				t.Errorf("file %q", f.File)
			}
			if len(r.Manifests) != tt.kept {
				t.Errorf("kept %d manifests, want %d", len(r.Manifests), tt.kept)
			}
		})
	}
}

func TestLoadRejectsInvalidPayloads(t *testing.T) {
	dir := writePayload(t, "4.20.0", map[string]string{
		"0000_50_x_00_a.yaml": annotated("v1", "ConfigMap", "ns", "a", `release.openshift.io/delete: "True"`),
		"0000_50_x_01_b.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n",
		"0000_50_x_02_c.yaml": annotated("v1", "ConfigMap", "ns", "c"),
	})
	r, err := Load(dir, DefaultLoadOptions())
	if r != nil {
		t.Error("Load returned a release with an error")
	}
	var verr *ValidationError
	if !errors.As(err, &verr) {
		t.Fatalf("want a *ValidationError, got %T: %v", err, err)
	}
	if got := len(verr.Errors()); got != 2 {
		t.Errorf("want 2 errors, got %d:\n%s", got, formatFindings(verr.Findings))
	}
	for _, want := range []string{
		filepath.Join(dir, "0000_50_x_00_a.yaml") + ":8:5: error:",
		filepath.Join(dir, "0000_50_x_01_b.yaml") + ":1:1: error:",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not name %q:\n%v", want, err)
		}
	}
}

func TestLoadKeepsWarnings(t *testing.T) {
	dir := writePayload(t, "4.20.0", map[string]string{
		"50-unprefixed.yaml": annotated("v1", "ConfigMap", "ns", "a"),
	})
	r, err := Load(dir, DefaultLoadOptions())
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Warnings) != 1 || r.Warnings[0].Rule != RuleFileName {
		t.Errorf("want one file-name warning, got\n%s", formatFindings(r.Warnings))
	}
}

func TestParseFileName(t *testing.T) {
	tests := map[string]struct {
		file      string
		level     int
		component string
	}{
		"a plain name parses":                       {"0000_50_olm_07-collect-profiles.cronjob.yaml", 50, "olm"},
		"a dashed component is kept whole":          {"0000_00_cluster-version-operator_00_namespace.yaml", 0, "cluster-version-operator"},
		"a leading zero run level parses":           {"0000_05_config-operator_02_apiserver.cr.yaml", 5, "config-operator"},
		"the component ends at the first _":         {"0000_10_a-b-c_d-e_f.yaml", 10, "a-b-c"},
		"only the base name counts":                 {"release-manifests/0000_90_machine-config_90_deletion.y", 90, "machine-config"},
		"a directory name is not the file name":     {"0000_90_machine-config_x/deletion.yaml", -1, ""},
		"a name without the 0000 prefix":            {"00_namespace.yaml", -1, ""},
		"a name without any prefix":                 {"release-metadata", -1, ""},
		"a name without a component":                {"0000_50_.yaml", -1, ""},
		"a component must be followed by _":         {"0000_50_olm.yaml", -1, ""},
		"a component cannot start with a dash":      {"0000_50_-olm_x.yaml", -1, ""},
		"a component stops before a dash after _":   {"0000_10_bad_-name_.yaml", 10, "bad"},
		"a run level must be digits":                {"0000_x_olm_00.yaml", -1, ""},
		"a negative run level is unparsed":          {"0000_-1_olm_00.yaml", -1, ""},
		"a huge run level is unparsed, not wrapped": {"0000_99999999999999999999_a_x", -1, ""},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			level, component := ParseFileName(tt.file)
			if level != tt.level || component != tt.component {
				t.Errorf("ParseFileName(%q) = %d, %q; want %d, %q", tt.file, level, component, tt.level, tt.component)
			}
		})
	}
}
