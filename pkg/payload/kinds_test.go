package payload

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestIsCRD(t *testing.T) {
	for _, tc := range []struct {
		apiVersion, kind string
		want             bool
	}{
		{"apiextensions.k8s.io/v1", "CustomResourceDefinition", true},
		{"apiextensions.k8s.io/v1beta1", "CustomResourceDefinition", true},
		{"example.com/v1", "CustomResourceDefinition", false},
		{"apiextensions.k8s.io/v1", "CustomResourceDefinitionList", false},
		{"v1", "Namespace", false},
	} {
		ms, _ := parseFile("0000_50_x_00_a.yaml", []byte(annotated(tc.apiVersion, tc.kind, "", "widgets.example.com")))
		if len(ms) != 1 {
			t.Fatalf("%s %s: parsed %d manifests", tc.apiVersion, tc.kind, len(ms))
		}
		if got := ms[0].IsCRD(); got != tc.want {
			t.Errorf("%s %s: IsCRD() = %t, want %t", tc.apiVersion, tc.kind, got, tc.want)
		}
		if got := ms[0].ID().GroupKind() == CRDKind; got != tc.want {
			t.Errorf("%s %s: ID().GroupKind() == CRDKind is %t, want %t", tc.apiVersion, tc.kind, got, tc.want)
		}
	}
}

func TestCRDResource(t *testing.T) {
	want := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	if CRDGVR != want {
		t.Errorf("CRDGVR = %v, want %v", CRDGVR, want)
	}
	if CRDGVK.GroupKind() != CRDKind || CRDGVK.Version != "v1" {
		t.Errorf("CRDGVK = %v", CRDGVK)
	}
}
