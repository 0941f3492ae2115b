package crdcompat

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
)

var widgetsV1 = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}

func widget(name string, spec map[string]any) runtime.Object {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget", "spec": spec}}
	u.SetNamespace("ns")
	u.SetName(name)
	return u
}

func cluster(objs ...runtime.Object) *dynamicfake.FakeDynamicClient {
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{widgetsV1: "WidgetList", {Group: "example.com", Version: "v1alpha1", Resource: "widgets"}: "WidgetList"}, objs...)
}

// withSpec replaces v1's spec schema.
func withSpec(props apiextensionsv1.JSONSchemaProps) func(*apiextensionsv1.CustomResourceDefinition) {
	return func(c *apiextensionsv1.CustomResourceDefinition) {
		c.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = props
	}
}

func sizeSchema(enum ...string) apiextensionsv1.JSONSchemaProps {
	size := apiextensionsv1.JSONSchemaProps{Type: "string"}
	for _, e := range enum {
		size.Enum = append(size.Enum, apiextensionsv1.JSON{Raw: []byte(`"` + e + `"`)})
	}
	return apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"size": size}}
}

func fastBackoff() *wait.Backoff {
	return &wait.Backoff{Duration: time.Millisecond, Factor: 1, Steps: 3}
}

func TestObjects(t *testing.T) {
	small := widget("a", map[string]any{"size": "small"})
	noSize := widget("b", map[string]any{})
	requiredColor := func(def string) func(*apiextensionsv1.CustomResourceDefinition) {
		s := sizeSchema("small", "large")
		s.Properties["color"] = apiextensionsv1.JSONSchemaProps{Type: "string"}
		if def != "" {
			p := s.Properties["color"]
			p.Default = &apiextensionsv1.JSON{Raw: []byte(`"` + def + `"`)}
			s.Properties["color"] = p
		}
		s.Required = []string{"color"}
		return withSpec(s)
	}
	cases := []struct {
		name    string
		objects []runtime.Object
		next    []func(*apiextensionsv1.CustomResourceDefinition)
		want    string
		wantMsg []string
	}{
		{name: "an unchanged schema is not even read", objects: []runtime.Object{small}},
		{name: "a changed description passes", objects: []runtime.Object{small}, next: []func(*apiextensionsv1.CustomResourceDefinition){
			func(c *apiextensionsv1.CustomResourceDefinition) {
				c.Spec.Versions[0].Schema.OpenAPIV3Schema.Description = "widgets"
			}}},
		{name: "an added enum value passes", objects: []runtime.Object{small}, next: []func(*apiextensionsv1.CustomResourceDefinition){withSpec(sizeSchema("small", "large", "huge"))}},
		{name: "a new optional field passes", objects: []runtime.Object{small, noSize}, next: []func(*apiextensionsv1.CustomResourceDefinition){func(c *apiextensionsv1.CustomResourceDefinition) {
			s := sizeSchema("small", "large")
			s.Properties["color"] = apiextensionsv1.JSONSchemaProps{Type: "string"}
			withSpec(s)(c)
		}}},
		{name: "a new required field with a default passes", objects: []runtime.Object{small, noSize}, next: []func(*apiextensionsv1.CustomResourceDefinition){requiredColor("blue")}},
		{name: "a new required field without a default names each object and the field", objects: []runtime.Object{small, noSize},
			next: []func(*apiextensionsv1.CustomResourceDefinition){requiredColor("")}, want: "ExistingObjectsInvalid/v1",
			wantMsg: []string{"rejects 2 existing object(s)", "ns/a: spec.color: Required value", "ns/b: spec.color: Required value"}},
		{name: "a removed enum value names the object", objects: []runtime.Object{small, widget("c", map[string]any{"size": "large"})},
			next: []func(*apiextensionsv1.CustomResourceDefinition){withSpec(sizeSchema("large"))}, want: "ExistingObjectsInvalid/v1",
			wantMsg: []string{"rejects 1 existing object(s)", "ns/a: spec.size: Unsupported value"}},
		{name: "a conversion webhook makes it a warning", objects: []runtime.Object{small},
			next: []func(*apiextensionsv1.CustomResourceDefinition){withSpec(sizeSchema("large")), func(c *apiextensionsv1.CustomResourceDefinition) {
				c.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter}
			}}, want: "ExistingObjectsInvalid/v1(warning)"},
		{name: "a version no longer served is not checked", objects: []runtime.Object{small},
			next: []func(*apiextensionsv1.CustomResourceDefinition){withSpec(sizeSchema("large")), func(c *apiextensionsv1.CustomResourceDefinition) {
				c.Spec.Versions[0].Served = false
			}}},
		{name: "a version served only now is not checked", objects: []runtime.Object{small},
			next: []func(*apiextensionsv1.CustomResourceDefinition){withSpec(sizeSchema("large")), func(c *apiextensionsv1.CustomResourceDefinition) {
				c.Spec.Versions[0].Name = "v2"
			}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			client := cluster(tc.objects...)
			findings := Objects(context.Background(), client, widgets(t), widgets(t, tc.next...), Options{Backoff: fastBackoff()})
			if got := rules(findings); got != tc.want {
				t.Fatalf("findings %q, want %q: %s", got, tc.want, Summary(findings))
			}
			for _, want := range tc.wantMsg {
				if !strings.Contains(findings[0].Message, want) {
					t.Errorf("message %q lacks %q", findings[0].Message, want)
				}
			}
			if tc.want == "" && len(tc.next) == 0 && len(client.Actions()) != 0 {
				t.Errorf("an unchanged schema made %d requests", len(client.Actions()))
			}
		})
	}
}

func TestObjectsNamesTenAndCountsAll(t *testing.T) {
	var objs []runtime.Object
	for i := range 25 {
		objs = append(objs, widget(fmt.Sprintf("w%02d", i), map[string]any{"size": "small"}))
	}
	findings := Objects(context.Background(), cluster(objs...), widgets(t), widgets(t, withSpec(sizeSchema("large"))), Options{Backoff: fastBackoff()})
	if len(findings) != 1 || findings[0].Count != 25 || len(findings[0].Objects) != maxNamedObjects {
		t.Fatalf("findings %+v, want one counting 25 and naming 10", findings)
	}
	if !strings.Contains(findings[0].Message, "and 15 more") {
		t.Errorf("message %q does not say how many are not named", findings[0].Message)
	}
}

func TestObjectsReadsPageByPage(t *testing.T) {
	client := cluster()
	pages := 0
	// The fake drops limit and continue from its actions; the e2e test
	// reads them from the apiserver's audit log.
	client.PrependReactor("list", "widgets", func(clienttesting.Action) (bool, runtime.Object, error) {
		pages++
		list := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "WidgetList"}}
		for i := range 2 {
			list.Items = append(list.Items, *widget(fmt.Sprintf("p%d-%d", pages, i), map[string]any{"size": "small"}).(*unstructured.Unstructured))
		}
		if pages < 3 {
			list.SetContinue(fmt.Sprintf("page-%d", pages+1))
		}
		return true, list, nil
	})
	findings := Objects(context.Background(), client, widgets(t), widgets(t, withSpec(sizeSchema("large"))), Options{PageSize: 2, Backoff: fastBackoff()})
	if pages != 3 || len(findings) != 1 || findings[0].Count != 6 {
		t.Fatalf("read %d pages, findings %+v; want 3 pages and 6 invalid objects", pages, findings)
	}
}

func TestObjectsRetriesThenNamesTheError(t *testing.T) {
	client := cluster(widget("a", map[string]any{"size": "small"}))
	fails := 0
	client.PrependReactor("list", "widgets", func(clienttesting.Action) (bool, runtime.Object, error) {
		fails++
		return true, nil, errors.New("conversion webhook for example.com/v1 unavailable")
	})
	findings := Objects(context.Background(), client, widgets(t), widgets(t, withSpec(sizeSchema("large"))), Options{Backoff: fastBackoff()})
	if got := rules(findings); got != "CompatibilityCheckError/v1" || fails != 3 {
		t.Fatalf("findings %q after %d attempts, want CompatibilityCheckError after 3", got, fails)
	}
	if !strings.Contains(findings[0].Message, "conversion webhook for example.com/v1 unavailable") {
		t.Errorf("message %q does not name the error", findings[0].Message)
	}

	recovering := cluster(widget("a", map[string]any{"size": "small"}))
	calls := 0
	recovering.PrependReactor("list", "widgets", func(clienttesting.Action) (bool, runtime.Object, error) {
		calls++
		return calls == 1, nil, errors.New("etcdserver: request timed out")
	})
	findings = Objects(context.Background(), recovering, widgets(t), widgets(t, withSpec(sizeSchema("large"))), Options{Backoff: fastBackoff()})
	if got := rules(findings); got != "ExistingObjectsInvalid/v1" {
		t.Fatalf("after one transient error: findings %q, want the objects judged", got)
	}
}

func TestCheckAddsStaticAndObjectFindings(t *testing.T) {
	next := widgets(t, withSpec(sizeSchema("large")), func(c *apiextensionsv1.CustomResourceDefinition) { c.Spec.Versions = c.Spec.Versions[:1] })
	findings := Check(context.Background(), cluster(widget("a", map[string]any{"size": "small"})), widgets(t), next, Options{Backoff: fastBackoff()})
	if got := rules(findings); got != "ServedVersionRemoved/v1alpha1,ExistingObjectsInvalid/v1" {
		t.Fatalf("findings %q", got)
	}
	if b := Blocking(findings); len(b) != 2 {
		t.Fatalf("blocking %d, want 2", len(b))
	}
}
