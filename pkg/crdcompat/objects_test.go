package crdcompat

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
)

func widget(name string, spec map[string]any) map[string]any {
	return map[string]any{"apiVersion": "example.com/v1", "kind": "Widget", "spec": spec,
		"metadata": map[string]any{"namespace": "ns", "name": name}}
}

// cluster serves objs to every list; fail, when set, may fail a call
// (counted from 1).
type cluster struct {
	objs  []map[string]any
	calls int
	gvrs  []schema.GroupVersionResource
	fail  func(call int) error
}

func (c *cluster) list(_ context.Context, gvr schema.GroupVersionResource, each func(map[string]any)) error {
	c.calls++
	c.gvrs = append(c.gvrs, gvr)
	if c.fail != nil {
		if err := c.fail(c.calls); err != nil {
			return err
		}
	}
	for _, o := range c.objs {
		each(runtime.DeepCopyJSON(o))
	}
	return nil
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
		objects []map[string]any
		next    []func(*apiextensionsv1.CustomResourceDefinition)
		want    string
		wantMsg []string
	}{
		{name: "an unchanged schema is not even read", objects: []map[string]any{small}},
		{name: "a changed description passes", objects: []map[string]any{small}, next: []func(*apiextensionsv1.CustomResourceDefinition){
			func(c *apiextensionsv1.CustomResourceDefinition) {
				c.Spec.Versions[0].Schema.OpenAPIV3Schema.Description = "widgets"
			}}},
		{name: "an added enum value passes", objects: []map[string]any{small}, next: []func(*apiextensionsv1.CustomResourceDefinition){withSpec(sizeSchema("small", "large", "huge"))}},
		{name: "a new optional field passes", objects: []map[string]any{small, noSize}, next: []func(*apiextensionsv1.CustomResourceDefinition){func(c *apiextensionsv1.CustomResourceDefinition) {
			s := sizeSchema("small", "large")
			s.Properties["color"] = apiextensionsv1.JSONSchemaProps{Type: "string"}
			withSpec(s)(c)
		}}},
		{name: "a new required field with a default passes", objects: []map[string]any{small, noSize}, next: []func(*apiextensionsv1.CustomResourceDefinition){requiredColor("blue")}},
		{name: "a new required field without a default names each object and the field", objects: []map[string]any{small, noSize},
			next: []func(*apiextensionsv1.CustomResourceDefinition){requiredColor("")}, want: "ExistingObjectsInvalid/v1",
			wantMsg: []string{"rejects 2 existing object(s)", "ns/a: spec.color: Required value", "ns/b: spec.color: Required value"}},
		{name: "a removed enum value names the object", objects: []map[string]any{small, widget("c", map[string]any{"size": "large"})},
			next: []func(*apiextensionsv1.CustomResourceDefinition){withSpec(sizeSchema("large"))}, want: "ExistingObjectsInvalid/v1",
			wantMsg: []string{"rejects 1 existing object(s)", "ns/a: spec.size: Unsupported value"}},
		{name: "a conversion webhook makes it a warning", objects: []map[string]any{small},
			next: []func(*apiextensionsv1.CustomResourceDefinition){withSpec(sizeSchema("large")), func(c *apiextensionsv1.CustomResourceDefinition) {
				c.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter}
			}}, want: "ExistingObjectsInvalid/v1(warning)"},
		{name: "a version no longer served is not checked", objects: []map[string]any{small},
			next: []func(*apiextensionsv1.CustomResourceDefinition){withSpec(sizeSchema("large")), func(c *apiextensionsv1.CustomResourceDefinition) {
				c.Spec.Versions[0].Served = false
			}}},
		{name: "a version served only now is not checked", objects: []map[string]any{small},
			next: []func(*apiextensionsv1.CustomResourceDefinition){withSpec(sizeSchema("large")), func(c *apiextensionsv1.CustomResourceDefinition) {
				c.Spec.Versions[0].Name = "v2"
			}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := &cluster{objs: tc.objects}
			findings := Objects(context.Background(), c.list, widgets(t), widgets(t, tc.next...), Options{Backoff: fastBackoff()})
			if got := rules(findings); got != tc.want {
				t.Fatalf("findings %q, want %q: %s", got, tc.want, Summary(findings))
			}
			for _, want := range tc.wantMsg {
				if !strings.Contains(findings[0].Message, want) {
					t.Errorf("message %q lacks %q", findings[0].Message, want)
				}
			}
			if tc.want == "" && len(tc.next) == 0 && c.calls != 0 {
				t.Errorf("an unchanged schema made %d lists", c.calls)
			}
			for _, gvr := range c.gvrs {
				if gvr != (schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}) {
					t.Errorf("listed %v; only v1 changed", gvr)
				}
			}
		})
	}
}

func TestObjectsNamesTenAndCountsAll(t *testing.T) {
	var objs []map[string]any
	for i := range 25 {
		objs = append(objs, widget(fmt.Sprintf("w%02d", i), map[string]any{"size": "small"}))
	}
	findings := Objects(context.Background(), (&cluster{objs: objs}).list, widgets(t), widgets(t, withSpec(sizeSchema("large"))), Options{Backoff: fastBackoff()})
	if len(findings) != 1 || findings[0].Count != 25 || len(findings[0].Objects) != maxNamedObjects {
		t.Fatalf("findings %+v, want one counting 25 and naming 10", findings)
	}
	if !strings.Contains(findings[0].Message, "and 15 more") {
		t.Errorf("message %q does not say how many are not named", findings[0].Message)
	}
}

// TestObjectsQuoteExcerpts: a 300 KiB enum is stated once, as an excerpt,
// not once per named object, and a MiB value is quoted as an excerpt, so
// that the finding stays a few KiB.
func TestObjectsQuoteExcerpts(t *testing.T) {
	var enum []string
	for i := range 30000 {
		enum = append(enum, fmt.Sprintf("size-%05d", i))
	}
	objs := []map[string]any{widget("long", map[string]any{"size": strings.Repeat("x", 1<<20)})}
	for i := range 12 {
		objs = append(objs, widget(fmt.Sprintf("w%02d", i), map[string]any{"size": "huge"}))
	}
	findings := Objects(context.Background(), (&cluster{objs: objs}).list, widgets(t), widgets(t, withSpec(sizeSchema(enum...))), Options{Backoff: fastBackoff()})
	if len(findings) != 1 || findings[0].Count != 13 {
		t.Fatalf("findings %+v, want one counting 13 objects", findings)
	}
	msg := findings[0].Message
	if len(msg) > 4<<10 {
		t.Errorf("a finding of %d bytes, want at most 4 KiB: %.300q…", len(msg), msg)
	}
	for _, want := range []string{`ns/w00: spec.size: Unsupported value: "huge"`, `ns/long: spec.size: Unsupported value: "xxx`, "; and 3 more",
		`(new schema: spec.size: supported values: "size-00000", "size-00001"`} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q: %q", want, msg)
		}
	}
	if n := strings.Count(msg, "supported values"); n != 1 {
		t.Errorf("the enum is stated %d times, want once: %q", n, msg)
	}
	if n := strings.Count(msg, "…"); n != 1+1 {
		t.Errorf("%d excerpts marked, want the enum's and the long value's: %q", n, msg)
	}
}

func TestObjectsRetriesThenNamesTheError(t *testing.T) {
	down := &cluster{objs: []map[string]any{widget("a", map[string]any{"size": "small"})},
		fail: func(int) error { return errors.New("conversion webhook for example.com/v1 unavailable") }}
	findings := Objects(context.Background(), down.list, widgets(t), widgets(t, withSpec(sizeSchema("large"))), Options{Backoff: fastBackoff()})
	if got := rules(findings); got != "CompatibilityCheckError/v1" || down.calls != 3 {
		t.Fatalf("findings %q after %d attempts, want CompatibilityCheckError after 3", got, down.calls)
	}
	if !strings.Contains(findings[0].Message, "conversion webhook for example.com/v1 unavailable") {
		t.Errorf("message %q does not name the error", findings[0].Message)
	}

	recovering := &cluster{objs: down.objs, fail: func(call int) error {
		if call == 1 {
			return errors.New("etcdserver: request timed out")
		}
		return nil
	}}
	findings = Objects(context.Background(), recovering.list, widgets(t), widgets(t, withSpec(sizeSchema("large"))), Options{Backoff: fastBackoff()})
	if got := rules(findings); got != "ExistingObjectsInvalid/v1" || findings[0].Count != 1 {
		t.Fatalf("after one transient error: findings %+v, want the object judged once", findings)
	}
}

func TestCheckAddsStaticAndObjectFindings(t *testing.T) {
	next := widgets(t, withSpec(sizeSchema("large")), func(c *apiextensionsv1.CustomResourceDefinition) { c.Spec.Versions = c.Spec.Versions[:1] })
	findings := Check(context.Background(), (&cluster{objs: []map[string]any{widget("a", map[string]any{"size": "small"})}}).list, widgets(t), next, Options{Backoff: fastBackoff()})
	if got := rules(findings); got != "ServedVersionRemoved/v1alpha1,ExistingObjectsInvalid/v1" {
		t.Fatalf("findings %q", got)
	}
	if b := Blocking(findings); len(b) != 2 {
		t.Fatalf("blocking %d, want 2", len(b))
	}
}
