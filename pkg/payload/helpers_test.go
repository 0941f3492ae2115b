package payload

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	ocpRealDir     = "../../../shared/payloads/ocp-real"
	realDeletesDir = "../../../shared/payloads/real-deletes"
)

// writePayload writes a flat payload of version with the given files into
// a temporary directory and returns it.
func writePayload(t testing.TB, version string, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	writeMetadata(t, dir, version)
	for name, content := range files {
		writeFile(t, filepath.Join(dir, name), content)
	}
	return dir
}

func writeMetadata(t testing.TB, dir, version string) {
	t.Helper()
	writeFile(t, filepath.Join(dir, ReleaseMetadataFile),
		fmt.Sprintf(`{"kind":"cincinnati-metadata-v0","version":%q,"metadata":{"url":"https://example.com/errata","io.openshift.upgrades.graph.release.channels":"stable-4.20,candidate-4.20,fast-4.20"}}`, version))
	writeFile(t, filepath.Join(dir, ImageReferencesFile),
		fmt.Sprintf(`{"kind":"ImageStream","apiVersion":"image.openshift.io/v1","metadata":{"name":%q},"spec":{"tags":[{"name":"cli","from":{"kind":"DockerImage","name":"quay.io/example/cli@sha256:1"}}]}}`, version))
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// copyWithMetadata copies the manifest files of src (not its
// subdirectories) into a new payload of version: the real-deletes
// payloads ship no release-metadata.
func copyWithMetadata(t testing.TB, src, version string) string {
	t.Helper()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Skipf("%s is not available: %v", src, err)
	}
	files := map[string]string{}
	for _, e := range entries {
		if e.IsDir() || !hasManifestExtension(e.Name()) {
			continue
		}
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = string(data)
	}
	return writePayload(t, version, files)
}

// loadFiltered loads dir with the default options, failing on I/O errors
// but not on findings, and returns the filtered release and the findings
// LoadAll reported.
func loadFiltered(t testing.TB, dir string) (*Release, []Finding) {
	t.Helper()
	all, findings, err := LoadAll(dir)
	if err != nil {
		t.Fatalf("LoadAll(%s): %v", dir, err)
	}
	return all.Filter(DefaultLoadOptions()), findings
}

// loadOneFinding loads dir with LoadAll and returns the release and the
// one finding it reports, failing the test unless there is exactly one.
func loadOneFinding(t *testing.T, dir string) (*Release, Finding) {
	t.Helper()
	r, findings, err := LoadAll(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(findings) != 1 {
		t.Fatalf("want one finding, got\n%s", formatFindings(findings))
	}
	return r, findings[0]
}

// lintDirs loads next (and previous, when not empty) and returns every
// finding, as the lint command does.
func lintDirs(t testing.TB, next, previous string) []Finding {
	t.Helper()
	r, findings := loadFiltered(t, next)
	opts := LintOptions{}
	if previous != "" {
		opts.Previous, _ = loadFiltered(t, previous)
	}
	findings = append(findings, Lint(r, opts)...)
	SortFindings(findings)
	return findings
}

func byRule(findings []Finding, rule Rule) []Finding {
	var out []Finding
	for _, f := range findings {
		if f.Rule == rule {
			out = append(out, f)
		}
	}
	return out
}

func formatFindings(findings []Finding) string {
	var lines []string
	for _, f := range findings {
		lines = append(lines, "  "+f.String())
	}
	return strings.Join(lines, "\n")
}

// annotated builds a manifest document with the default profile's include
// annotation plus extra annotation lines (already indented YAML).
func annotated(apiVersion, kind, namespace, name string, extra ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: %s\nkind: %s\nmetadata:\n  name: %s\n", apiVersion, kind, name)
	if namespace != "" {
		fmt.Fprintf(&b, "  namespace: %s\n", namespace)
	}
	b.WriteString("  annotations:\n    include.release.openshift.io/self-managed-high-availability: \"true\"\n")
	for _, e := range extra {
		fmt.Fprintf(&b, "    %s\n", e)
	}
	return b.String()
}

// crdDoc builds a CRD for kind in group serving versions; the first
// version is the storage version. A version written "v1-" is not served.
func crdDoc(group, kind, plural string, versions ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: %s.%s\n  annotations:\n    include.release.openshift.io/self-managed-high-availability: \"true\"\n", plural, group)
	fmt.Fprintf(&b, "spec:\n  group: %s\n  scope: Namespaced\n  names:\n    kind: %s\n    plural: %s\n  versions:\n", group, kind, plural)
	for i, v := range versions {
		served := !strings.HasSuffix(v, "-")
		fmt.Fprintf(&b, "  - name: %s\n    served: %t\n    storage: %t\n", strings.TrimSuffix(v, "-"), served, i == 0)
	}
	return b.String()
}
