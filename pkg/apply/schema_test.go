package apply

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestDropUndeclared(t *testing.T) {
	newObj := func() *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]interface{}{
			"spec": map[string]interface{}{
				"jobTemplate": map[string]interface{}{"spec": map[string]interface{}{"backOffLimit": int64(3), "parallelism": int64(1)}},
				"containers": []interface{}{
					map[string]interface{}{"name": "a", "typo": true},
					map[string]interface{}{"name": "b", "typo": true},
				},
			},
		}}
	}
	t.Run("a nested field named by the error is removed", func(t *testing.T) {
		obj := newObj()
		got := dropUndeclared(obj, errors.New(`failed to create typed patch object (ns/x; batch/v1, Kind=CronJob): .spec.jobTemplate.spec.backOffLimit: field not declared in schema`))
		if !reflect.DeepEqual(got, []string{".spec.jobTemplate.spec.backOffLimit"}) {
			t.Fatalf("removed %v", got)
		}
		spec, _, _ := unstructured.NestedMap(obj.Object, "spec", "jobTemplate", "spec")
		if _, ok := spec["backOffLimit"]; ok || spec["parallelism"] != int64(1) {
			t.Errorf("spec = %v: only the named field may go", spec)
		}
	})
	t.Run("a list element is found by its key", func(t *testing.T) {
		obj := newObj()
		got := dropUndeclared(obj, errors.New(`x: .spec.containers[name="b"].typo: field not declared in schema`))
		if len(got) != 1 {
			t.Fatalf("removed %v", got)
		}
		list, _, _ := unstructured.NestedSlice(obj.Object, "spec", "containers")
		if _, ok := list[0].(map[string]interface{})["typo"]; !ok {
			t.Error("container a must keep its field")
		}
		if _, ok := list[1].(map[string]interface{})["typo"]; ok {
			t.Error("container b's field must be removed")
		}
	})
	t.Run("other errors remove nothing", func(t *testing.T) {
		obj := newObj()
		if got := dropUndeclared(obj, errors.New("forbidden")); got != nil {
			t.Fatalf("removed %v", got)
		}
		if !reflect.DeepEqual(obj, newObj()) {
			t.Error("the object changed")
		}
	})
	t.Run("a path that does not exist removes nothing", func(t *testing.T) {
		if got := dropUndeclared(newObj(), errors.New(`.spec.nothing.here: field not declared in schema`)); got != nil {
			t.Fatalf("removed %v", got)
		}
	})
}

func TestRemovePathByIndex(t *testing.T) {
	obj := map[string]interface{}{"spec": map[string]interface{}{"containers": []interface{}{
		map[string]interface{}{"name": "a", "bogus": true},
		map[string]interface{}{"name": "b", "bogus": true},
	}}}
	if !removePath(obj, splitPath(".spec.containers[1].bogus")) {
		t.Fatal("the field of element 1 was not removed")
	}
	list := obj["spec"].(map[string]interface{})["containers"].([]interface{})
	if _, ok := list[1].(map[string]interface{})["bogus"]; ok {
		t.Error("element 1 keeps the field")
	}
	if _, ok := list[0].(map[string]interface{})["bogus"]; !ok {
		t.Error("element 0 lost its field")
	}
	for _, p := range []string{".spec.containers[2].bogus", ".spec.containers[-1].bogus", ".spec.containers[0]"} {
		if removePath(obj, splitPath(p)) {
			t.Errorf("%s removed something", p)
		}
	}
}

func TestUnknownFieldWarnings(t *testing.T) {
	_, w := collectWarnings(context.Background())
	w.add(`unknown field "spec.jobTemplate.spec.backOffLimit"`)
	w.add(`duplicate field "metadata.name"`)
	w.add(`unknown field "spec.template.spec.containers[0].bogus"`)
	got := w.unknownFields()
	want := []string{".spec.jobTemplate.spec.backOffLimit", ".spec.template.spec.containers[0].bogus"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("unknown fields %v, want %v", got, want)
	}
}
