// Package manifests holds the objects payload-applier installs for itself.
//
// The ClusterVersion and ClusterOperator CRDs under crds/ are byte-for-byte
// copies of the files shipped by the pinned github.com/openshift/api module
// (config/v1/zz_generated.crd-manifests), but for one field the
// ClusterVersion's adds, spec.desiredUpdate.acceptRisks, as newer
// openshift/api defines it, so that the apiserver keeps the risks admins
// accept. The operator creates them when a
// cluster lacks them, and the local test control plane installs them at
// start; a unit test fails when the copies drift from the module.
package manifests

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

//go:embed crds/*.yaml
var crdFiles embed.FS

// CRDFileNames returns the names of the embedded CRD files, sorted.
func CRDFileNames() []string {
	entries, err := fs.ReadDir(crdFiles, "crds")
	if err != nil {
		// The directory is part of the binary; failing to read it is a build defect.
		panic(fmt.Sprintf("manifests: embedded crds directory unreadable: %v", err))
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names
}

// CRDFile returns the raw bytes of one embedded CRD file, as named by
// CRDFileNames.
func CRDFile(name string) ([]byte, error) {
	return crdFiles.ReadFile(path.Join("crds", name))
}

// CRDs returns the ClusterVersion and ClusterOperator CustomResourceDefinitions,
// one object per file, in file-name order. Each call returns fresh objects
// that the caller may modify.
func CRDs() ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, name := range CRDFileNames() {
		raw, err := CRDFile(name)
		if err != nil {
			return nil, fmt.Errorf("read embedded CRD %s: %w", name, err)
		}
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(raw, &obj.Object); err != nil {
			return nil, fmt.Errorf("parse embedded CRD %s: %w", name, err)
		}
		if obj.GetKind() != "CustomResourceDefinition" || obj.GetName() == "" {
			return nil, fmt.Errorf("embedded file %s is not a named CustomResourceDefinition", name)
		}
		out = append(out, obj)
	}
	return out, nil
}
