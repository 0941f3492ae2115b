package cleanup

import (
	"fmt"
	"testing"

	"github.com/openshift/library-go/pkg/manifest"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/payload-applier/payload-applier/pkg/payload"
)

// storedRecord is a record as a stored ConfigMap may hold it, beyond what
// Count.Add would name: kinds counted, and named operands spread over the
// first of them.
func storedRecord(kinds, named int) *Record {
	rec := &Record{Component: "widgets", Release: "2.0.0", State: Running, Remaining: make(map[string]int, kinds)}
	for i := range kinds {
		rec.Remaining[fmt.Sprintf("Kind%06d", i)] = 3
	}
	for i := range named {
		rec.Named = append(rec.Named, Operand{Kind: fmt.Sprintf("Kind%06d", i%kinds), Namespace: "ns", Name: fmt.Sprintf("o%06d", i)})
	}
	return rec
}

// BenchmarkDescribeAtDecodeLimits describes a stored record at the
// store's decode limits: 130,000 kinds and 32,000 named operands.
func BenchmarkDescribeAtDecodeLimits(b *testing.B) {
	rec := storedRecord(130_000, 32_000)
	b.ReportAllocs()
	for b.Loop() {
		_ = rec.Describe()
	}
}

// crdManifest is a CRD manifest of component, deleted or kept.
func crdManifest(i int, name, component string, deleted bool) *payload.Manifest {
	ann := map[string]interface{}{payload.OperandCleanupAnnotation: payload.OperandCleanupSupported}
	if deleted {
		ann[payload.DeleteAnnotation] = "true"
	}
	obj := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]interface{}{"name": name, "annotations": ann},
	}}
	return &payload.Manifest{
		Manifest:  manifest.Manifest{GVK: obj.GroupVersionKind(), Obj: obj},
		File:      fmt.Sprintf("0000_50_%s_%05d_crd.yaml", component, i),
		Line:      1,
		Component: component,
		Index:     i,
	}
}

// bigCleanupRelease is a release of crds deleted CRDs marked Supported,
// spread over components of 10, and as many ConfigMaps.
func bigCleanupRelease(crds int) *payload.Release {
	rel := &payload.Release{Version: "2.0.0"}
	for i := range crds {
		rel.Manifests = append(rel.Manifests, crdManifest(len(rel.Manifests), fmt.Sprintf("widgets%05d.example.com", i), fmt.Sprintf("c%04d", i/10), true))
	}
	for i := range crds {
		obj := &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]interface{}{"name": fmt.Sprintf("cm%05d", i), "namespace": "ns"},
		}}
		rel.Manifests = append(rel.Manifests, &payload.Manifest{Manifest: manifest.Manifest{GVK: obj.GroupVersionKind(), Obj: obj},
			File: fmt.Sprintf("0000_60_keep_%05d_cm.yaml", i), Line: 1, Component: "keep", Index: len(rel.Manifests)})
	}
	return rel
}

// BenchmarkCandidates6000CRDs judges a release of 6,000 Supported CRD
// deletes among 12,000 manifests.
func BenchmarkCandidates6000CRDs(b *testing.B) {
	rel := bigCleanupRelease(6000)
	b.ReportAllocs()
	for b.Loop() {
		if got := Candidates(rel); len(got) != 600 {
			b.Fatalf("%d candidates, want 600", len(got))
		}
	}
}
