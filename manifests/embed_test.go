package manifests

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// openshiftAPIDir returns the module cache directory of the pinned
// github.com/openshift/api, as resolved by the main module's go.mod.
func openshiftAPIDir(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/openshift/api").Output()
	if err != nil {
		t.Fatalf("locate github.com/openshift/api with go list: %v", err)
	}
	dir := strings.TrimSpace(string(out))
	if dir == "" {
		t.Fatal("go list returned no directory for github.com/openshift/api; run go mod download")
	}
	return dir
}

func TestCRDFilesMatchPinnedOpenShiftAPI(t *testing.T) {
	want := []string{
		"0000_00_cluster-version-operator_01_clusteroperators.crd.yaml",
		"0000_00_cluster-version-operator_01_clusterversions-Default.crd.yaml",
	}
	got := CRDFileNames()
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("embedded CRD files = %v, want %v", got, want)
	}
	srcDir := filepath.Join(openshiftAPIDir(t), "config", "v1", "zz_generated.crd-manifests")
	for _, name := range want {
		t.Run(name, func(t *testing.T) {
			upstream, err := os.ReadFile(filepath.Join(srcDir, name))
			if err != nil {
				t.Fatalf("read upstream copy: %v", err)
			}
			embedded, err := CRDFile(name)
			if err != nil {
				t.Fatalf("read embedded copy: %v", err)
			}
			embedded = withoutNewerFields(t, name, embedded)
			if !bytes.Equal(upstream, embedded) {
				t.Fatalf("manifests/crds/%s differs from %s; copy it again from the pinned module", name, filepath.Join(srcDir, name))
			}
		})
	}
}

// newerFields are the fields our ClusterVersion CRD adds to the pinned
// module's, as newer openshift/api defines them (docs/design.md,
// "Conditional updates"): each from its first line to its next sibling's,
// in the order they are cut.
var newerFields = []struct{ from, to string }{
	{"                  acceptRisks:\n", "                  architecture:\n"},
	{"              conditionalUpdateRisks:\n", "              conditionalUpdates:\n"},
	{"                    riskNames:\n", "                    risks:\n"},
	// The Applies condition of each risk of a conditional update.
	{"                          conditions:\n", "                          matchingRules:\n"},
	// The bounds of conditional updates and their risks, without which
	// the apiserver finds the Applies rule too costly.
	{"                      maxItems: 200\n                      minItems: 1\n", "                      minItems: 1\n"},
	{"                maxItems: 500\n                type: array\n                x-kubernetes-list-type: atomic\n              conditions:\n", "                type: array\n"},
}

// withoutNewerFields removes newerFields from crd.
func withoutNewerFields(t *testing.T, name string, crd []byte) []byte {
	if !strings.Contains(name, "clusterversions") {
		return crd
	}
	for _, f := range newerFields {
		start := bytes.Index(crd, []byte(f.from))
		end := start + bytes.Index(crd[max(start, 0):], []byte(f.to))
		if start < 0 || end <= start {
			t.Fatalf("manifests/crds/%s lacks %q before %q", name, strings.TrimSpace(f.from), strings.TrimSpace(f.to))
		}
		crd = append(append([]byte{}, crd[:start]...), crd[end:]...)
	}
	return crd
}

func TestClusterVersionCRDKeepsTheNewerFields(t *testing.T) {
	crds, err := CRDs()
	if err != nil {
		t.Fatal(err)
	}
	for _, crd := range crds {
		if crd.GetName() != "clusterversions.config.openshift.io" {
			continue
		}
		versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		schema := versions[0].(map[string]any)["schema"].(map[string]any)["openAPIV3Schema"].(map[string]any)
		for _, tc := range []struct {
			path     []string
			maxItems float64
		}{
			{[]string{"spec", "desiredUpdate", "acceptRisks"}, 1000},
			{[]string{"status", "conditionalUpdateRisks"}, 500},
			{[]string{"status", "conditionalUpdateRisks", "[]", "conditions"}, 8},
			{[]string{"status", "conditionalUpdates", "[]", "riskNames"}, 500},
			{[]string{"status", "conditionalUpdates", "[]", "risks", "[]", "conditions"}, 8},
			{[]string{"status", "conditionalUpdates"}, 500},
			{[]string{"status", "conditionalUpdates", "[]", "risks"}, 200},
		} {
			field := schema
			for _, p := range tc.path {
				if p == "[]" {
					field, _ = field["items"].(map[string]any)
					continue
				}
				props, _ := field["properties"].(map[string]any)
				field, _ = props[p].(map[string]any)
			}
			if field == nil {
				t.Errorf("no %s", strings.Join(tc.path, "."))
				continue
			}
			if got := fmt.Sprint(field["maxItems"]); got != fmt.Sprint(tc.maxItems) && got != fmt.Sprint(int64(tc.maxItems)) {
				t.Errorf("%s maxItems = %v, want %v", strings.Join(tc.path, "."), field["maxItems"], tc.maxItems)
			}
		}
		return
	}
	t.Fatal("no ClusterVersion CRD")
}

func TestCRDsParse(t *testing.T) {
	crds, err := CRDs()
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]string{}
	for _, crd := range crds {
		kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
		kinds[crd.GetName()] = kind
	}
	want := map[string]string{
		"clusterversions.config.openshift.io":  "ClusterVersion",
		"clusteroperators.config.openshift.io": "ClusterOperator",
	}
	for name, kind := range want {
		if kinds[name] != kind {
			t.Errorf("CRD %s has kind %q, want %q (got %v)", name, kinds[name], kind, kinds)
		}
	}
	if len(kinds) != len(want) {
		t.Errorf("got %d CRDs, want %d: %v", len(kinds), len(want), kinds)
	}
}

func TestCRDsReturnsFreshObjects(t *testing.T) {
	first, err := CRDs()
	if err != nil {
		t.Fatal(err)
	}
	first[0].SetName("changed")
	second, err := CRDs()
	if err != nil {
		t.Fatal(err)
	}
	if second[0].GetName() == "changed" {
		t.Fatal("CRDs returned a shared object; callers could corrupt later results")
	}
}
