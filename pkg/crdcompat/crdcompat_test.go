package crdcompat

import (
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// widgets is a CRD with two versions, v1 stored and served, v1alpha1
// served; edits change it for a case.
func widgets(t *testing.T, edits ...func(*apiextensionsv1.CustomResourceDefinition)) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	crd := mustDecode(t, `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: string, enum: [small, large]}
  - name: v1alpha1
    served: true
    storage: false
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
status:
  storedVersions: [v1]
`)
	for _, edit := range edits {
		edit(crd)
	}
	return crd
}

func mustDecode(t *testing.T, text string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(text), &obj); err != nil {
		t.Fatal(err)
	}
	crd, err := Decode(obj)
	if err != nil {
		t.Fatal(err)
	}
	return crd
}

func rules(findings []Finding) string {
	var out []string
	for _, f := range findings {
		s := string(f.Rule)
		if f.Version != "" {
			s += "/" + f.Version
		}
		if f.Warning {
			s += "(warning)"
		}
		out = append(out, s)
	}
	return strings.Join(out, ",")
}

func TestStatic(t *testing.T) {
	dropVersion := func(name string) func(*apiextensionsv1.CustomResourceDefinition) {
		return func(c *apiextensionsv1.CustomResourceDefinition) {
			var kept []apiextensionsv1.CustomResourceDefinitionVersion
			for _, v := range c.Spec.Versions {
				if v.Name != name {
					kept = append(kept, v)
				}
			}
			c.Spec.Versions = kept
		}
	}
	unserve := func(name string) func(*apiextensionsv1.CustomResourceDefinition) {
		return func(c *apiextensionsv1.CustomResourceDefinition) {
			for i := range c.Spec.Versions {
				if c.Spec.Versions[i].Name == name {
					c.Spec.Versions[i].Served = false
				}
			}
		}
	}
	storeAlpha := func(c *apiextensionsv1.CustomResourceDefinition) {
		c.Status.StoredVersions = append(c.Status.StoredVersions, "v1alpha1")
	}
	cases := []struct {
		name      string
		old, next []func(*apiextensionsv1.CustomResourceDefinition)
		want      string
	}{
		{name: "an identical CRD passes"},
		{name: "a changed description passes", next: []func(*apiextensionsv1.CustomResourceDefinition){func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Spec.Versions[0].Schema.OpenAPIV3Schema.Description = "new words"
		}}},
		{name: "a new version passes", next: []func(*apiextensionsv1.CustomResourceDefinition){func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Spec.Versions = append(c.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{Name: "v2", Served: true})
		}}},
		{name: "a changed scope is refused", next: []func(*apiextensionsv1.CustomResourceDefinition){func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Spec.Scope = apiextensionsv1.ClusterScoped
		}}, want: "ImmutableFieldChanged"},
		{name: "a changed kind, plural and group are each refused", next: []func(*apiextensionsv1.CustomResourceDefinition){func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Spec.Names.Kind, c.Spec.Names.Plural, c.Spec.Group = "Gadget", "gadgets", "example.org"
		}}, want: "ImmutableFieldChanged,ImmutableFieldChanged,ImmutableFieldChanged"},
		{name: "a served version dropped in one step is refused", next: []func(*apiextensionsv1.CustomResourceDefinition){dropVersion("v1alpha1")},
			want: "ServedVersionRemoved/v1alpha1"},
		{name: "a served version set served: false passes", next: []func(*apiextensionsv1.CustomResourceDefinition){unserve("v1alpha1")}},
		{name: "a version no longer served is dropped in the second step", old: []func(*apiextensionsv1.CustomResourceDefinition){unserve("v1alpha1")},
			next: []func(*apiextensionsv1.CustomResourceDefinition){dropVersion("v1alpha1")}},
		{name: "a stored version dropped is refused once, as stored", old: []func(*apiextensionsv1.CustomResourceDefinition){storeAlpha},
			next: []func(*apiextensionsv1.CustomResourceDefinition){dropVersion("v1alpha1")}, want: "StoredVersionRemoved/v1alpha1"},
		{name: "a stored version no longer served is still refused", old: []func(*apiextensionsv1.CustomResourceDefinition){storeAlpha, unserve("v1alpha1")},
			next: []func(*apiextensionsv1.CustomResourceDefinition){dropVersion("v1alpha1")}, want: "StoredVersionRemoved/v1alpha1"},
		{name: "findings add up", next: []func(*apiextensionsv1.CustomResourceDefinition){dropVersion("v1"), dropVersion("v1alpha1"), func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Spec.Scope = apiextensionsv1.ClusterScoped
		}}, want: "ImmutableFieldChanged,StoredVersionRemoved/v1,ServedVersionRemoved/v1alpha1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := rules(Static(widgets(t, tc.old...), widgets(t, tc.next...)))
			if got != tc.want {
				t.Fatalf("findings %q, want %q", got, tc.want)
			}
		})
	}
}

func TestOnlyAStoredVersionResistsForce(t *testing.T) {
	for _, r := range []Rule{ImmutableFieldChanged, StoredVersionRemoved, ServedVersionRemoved, ExistingObjectsInvalid, CompatibilityCheckError} {
		if got, want := (Finding{Rule: r}).Forceable(), r != StoredVersionRemoved; got != want {
			t.Errorf("%s forceable %v, want %v", r, got, want)
		}
	}
}

func TestMessagesSayWhatToDo(t *testing.T) {
	old := widgets(t, func(c *apiextensionsv1.CustomResourceDefinition) {
		c.Status.StoredVersions = []string{"v1", "v1alpha1"}
	})
	next := widgets(t, func(c *apiextensionsv1.CustomResourceDefinition) { c.Spec.Versions = c.Spec.Versions[:1] })
	msg := Summary(Static(old, next))
	for _, want := range []string{"widgets.example.com", "v1alpha1", "status.storedVersions", "crd migrate-storage widgets.example.com", "force does not override"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
}

func TestDecodeV1beta1(t *testing.T) {
	crd := mustDecode(t, `
apiVersion: apiextensions.k8s.io/v1beta1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  version: v1
  versions:
  - {name: v1, served: true, storage: true}
  - {name: v1alpha1, served: false, storage: false}
  names: {kind: Widget, plural: widgets}
  validation:
    openAPIV3Schema:
      type: object
      properties:
        spec: {type: object, required: [size], properties: {size: {type: string}}}
`)
	if len(crd.Spec.Versions) != 2 || crd.Spec.Versions[0].Name != "v1" || crd.Spec.Versions[1].Served {
		t.Fatalf("versions %+v", crd.Spec.Versions)
	}
	for _, v := range crd.Spec.Versions {
		if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			t.Fatalf("version %s has no schema: the top-level validation must apply to each", v.Name)
		}
	}
	if crd.Spec.Scope != apiextensionsv1.NamespaceScoped {
		t.Fatalf("scope %q, want the v1beta1 default Namespaced", crd.Spec.Scope)
	}
}

func TestDecodeRefusesOtherAPIs(t *testing.T) {
	_, err := Decode(map[string]any{"apiVersion": "v1", "kind": "ConfigMap"})
	if err == nil || !strings.Contains(err.Error(), `"v1"`) {
		t.Fatalf("err %v, want one naming the apiVersion", err)
	}
}

func TestDecodeListsTheStorageVersionAsStored(t *testing.T) {
	crd := widgets(t)
	crd.Status.StoredVersions = nil
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(crd)
	if err != nil {
		t.Fatal(err)
	}
	obj["apiVersion"] = "apiextensions.k8s.io/v1"
	decoded, err := Decode(obj)
	if err != nil {
		t.Fatal(err)
	}
	if got := decoded.Status.StoredVersions; len(got) != 1 || got[0] != "v1" {
		t.Fatalf("stored %v, want [v1] as the apiserver defaults it", got)
	}
}
