// Package payloadtest writes release payload directories for tests.
package payloadtest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// WriteRelease writes the payload directory root/version and returns it:
// release-metadata declaring version and the versions it updates from, an
// image-references without images, and files, each a file name and its
// content.
func WriteRelease(t testing.TB, root, version string, previous []string, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(root, version)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if previous == nil {
		previous = []string{}
	}
	prev, err := json.Marshal(previous)
	if err != nil {
		t.Fatal(err)
	}
	all := map[string]string{
		"release-metadata": fmt.Sprintf(`{"kind":"cincinnati-metadata-v0","version":%q,"previous":%s,"metadata":{}}`, version, prev),
		"image-references": fmt.Sprintf(`{"kind":"ImageStream","apiVersion":"image.openshift.io/v1","metadata":{"name":%q},"spec":{"tags":[]}}`, version),
	}
	for name, body := range files {
		all[name] = body
	}
	for name, body := range all {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
