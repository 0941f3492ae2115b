package apply

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/payload-applier/payload-applier/pkg/payload"
)

// createTyped creates obj through its Go type, as the CVO's typed builders
// do. Server-side apply drops explicit nulls, so a kind whose schema
// requires nullable fields (SecurityContextConstraints) or an empty spec
// (ClusterOperator) can only be created with every field the type
// serializes. It reports false when the kind has no Go type.
func (e *Engine) createTyped(ctx context.Context, rc resourceClient, obj *unstructured.Unstructured) (*unstructured.Unstructured, bool, error) {
	typed, err := payload.TypedScheme().New(obj.GroupVersionKind())
	if err != nil {
		return nil, false, nil
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, typed); err != nil {
		return nil, true, err
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
	if err != nil {
		return nil, true, err
	}
	body := &unstructured.Unstructured{Object: content}
	body.SetGroupVersionKind(obj.GroupVersionKind())
	delete(body.Object, "status")
	if md, ok := body.Object["metadata"].(map[string]interface{}); ok {
		delete(md, "creationTimestamp")
	}
	created, err := rc.ri.Create(ctx, body, metav1.CreateOptions{FieldManager: FieldManager})
	return created, true, err
}

// undeclaredPath matches one field that server-side apply rejects because
// the schema does not declare it, e.g. ".spec.jobTemplate.spec.backOffLimit".
var undeclaredPath = regexp.MustCompile(`(\.[A-Za-z0-9_\-]+(?:\[[^\]]*\])?)+: field not declared in schema`)

// dropUndeclared removes the fields an apply error names as undeclared, so
// the rest of the manifest applies, as the CVO's typed decoding would. It
// returns the removed paths, or none when the error is of another kind or
// a path cannot be followed.
func dropUndeclared(obj *unstructured.Unstructured, err error) []string {
	if err == nil || !strings.Contains(err.Error(), "field not declared in schema") {
		return nil
	}
	var removed []string
	for _, m := range undeclaredPath.FindAllString(err.Error(), -1) {
		path := strings.TrimSuffix(m, ": field not declared in schema")
		if !removePath(obj.Object, splitPath(path)) {
			return nil
		}
		removed = append(removed, path)
	}
	return removed
}

var pathSegment = regexp.MustCompile(`\.([A-Za-z0-9_\-]+)(\[[^\]]*\])?`)

type segment struct {
	field    string
	key, val string // list element selector [key="val"], when set
}

func splitPath(path string) []segment {
	var out []segment
	for _, m := range pathSegment.FindAllStringSubmatch(path, -1) {
		s := segment{field: m[1]}
		if sel := strings.Trim(m[2], "[]"); sel != "" {
			k, v, _ := strings.Cut(sel, "=")
			s.key, s.val = k, strings.Trim(v, `"`)
		}
		out = append(out, s)
	}
	return out
}

// removePath deletes the field at path; list selectors pick the element
// whose key field equals the value, or, as [N], the element at index N.
func removePath(obj map[string]interface{}, path []segment) bool {
	if len(path) == 0 {
		return false
	}
	s := path[0]
	if len(path) == 1 && s.key == "" {
		if _, ok := obj[s.field]; !ok {
			return false
		}
		delete(obj, s.field)
		return true
	}
	next := obj[s.field]
	if s.key == "" {
		m, ok := next.(map[string]interface{})
		return ok && removePath(m, path[1:])
	}
	list, ok := next.([]interface{})
	if !ok {
		return false
	}
	if i, err := strconv.Atoi(s.key); err == nil && s.val == "" {
		// [N]: the element at index N, as field validation names it.
		if i < 0 || i >= len(list) || len(path) == 1 {
			return false
		}
		m, ok := list[i].(map[string]interface{})
		return ok && removePath(m, path[1:])
	}
	for _, item := range list {
		m, ok := item.(map[string]interface{})
		if ok && fmt.Sprint(m[s.key]) == s.val {
			if len(path) == 1 {
				return false
			}
			return removePath(m, path[1:])
		}
	}
	return false
}
