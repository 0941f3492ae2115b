package manifests

import (
	"bytes"
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
			embedded = withoutAcceptRisks(t, name, embedded)
			if !bytes.Equal(upstream, embedded) {
				t.Fatalf("manifests/crds/%s differs from %s; copy it again from the pinned module", name, filepath.Join(srcDir, name))
			}
		})
	}
}

// withoutAcceptRisks removes the one field our ClusterVersion CRD adds
// to the pinned module's: spec.desiredUpdate.acceptRisks, as newer
// openshift/api defines it (docs/design.md, "Conditional updates").
func withoutAcceptRisks(t *testing.T, name string, crd []byte) []byte {
	if !strings.Contains(name, "clusterversions") {
		return crd
	}
	start := bytes.Index(crd, []byte("                  acceptRisks:\n"))
	end := bytes.Index(crd, []byte("                  architecture:\n"))
	if start < 0 || end < start {
		t.Fatalf("manifests/crds/%s lacks spec.desiredUpdate.acceptRisks before architecture", name)
	}
	return append(append([]byte{}, crd[:start]...), crd[end:]...)
}

func TestClusterVersionCRDKeepsAcceptRisks(t *testing.T) {
	crds, err := CRDs()
	if err != nil {
		t.Fatal(err)
	}
	for _, crd := range crds {
		if crd.GetName() != "clusterversions.config.openshift.io" {
			continue
		}
		versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		v := versions[0].(map[string]any)
		field, found, err := unstructured.NestedMap(v, "schema", "openAPIV3Schema", "properties", "spec", "properties", "desiredUpdate", "properties", "acceptRisks")
		if err != nil || !found {
			t.Fatalf("no acceptRisks: %v", err)
		}
		if field["maxItems"] != int64(1000) && field["maxItems"] != float64(1000) {
			t.Errorf("acceptRisks maxItems = %v, want 1000", field["maxItems"])
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
