package apply

import (
	"encoding/base64"
	"reflect"

	"k8s.io/apimachinery/pkg/api/resource"
)

// contains reports whether every field that want sets has the same value in
// live. The server adds defaults and status, so extra fields in live are
// fine; a field the manifest sets with another value is drift. Values the
// server normalizes (numbers, quantities) compare by meaning, not text.
func contains(live, want interface{}) bool {
	switch w := want.(type) {
	case map[string]interface{}:
		l, ok := live.(map[string]interface{})
		if !ok {
			return len(w) == 0 && live == nil
		}
		for k, wv := range w {
			lv, ok := l[k]
			if !ok {
				if isEmpty(wv) {
					continue
				}
				return false
			}
			if !contains(lv, wv) {
				return false
			}
		}
		return true
	case []interface{}:
		l, ok := live.([]interface{})
		if !ok {
			return len(w) == 0 && live == nil
		}
		if len(l) != len(w) {
			return false
		}
		for i := range w {
			if !contains(l[i], w[i]) {
				return false
			}
		}
		return true
	case string:
		l, ok := live.(string)
		if !ok {
			return false
		}
		return l == w || sameQuantity(l, w)
	case nil:
		// A null in a manifest sets nothing the server keeps.
		return true
	default:
		if n, ok := number(want); ok {
			m, ok := number(live)
			return ok && n == m
		}
		return reflect.DeepEqual(live, want)
	}
}

// isEmpty reports values the server drops when stored: an empty map, list or
// string, and null.
func isEmpty(v interface{}) bool {
	switch t := v.(type) {
	case nil:
		return true
	case map[string]interface{}:
		return len(t) == 0
	case []interface{}:
		return len(t) == 0
	case string:
		return t == ""
	case bool:
		return !t
	}
	return false
}

func number(v interface{}) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	case float64:
		return n, true
	case float32:
		return float64(n), true
	}
	return 0, false
}

func sameQuantity(a, b string) bool {
	qa, err := resource.ParseQuantity(a)
	if err != nil {
		return false
	}
	qb, err := resource.ParseQuantity(b)
	if err != nil {
		return false
	}
	return qa.Cmp(qb) == 0
}

// secretStringData folds a Secret manifest's write-only stringData into data,
// the way the server stores it, so that comparing against live works.
func secretStringData(obj map[string]interface{}) map[string]interface{} {
	sd, ok := obj["stringData"].(map[string]interface{})
	if !ok {
		return obj
	}
	out := make(map[string]interface{}, len(obj))
	for k, v := range obj {
		out[k] = v
	}
	data := map[string]interface{}{}
	if d, ok := obj["data"].(map[string]interface{}); ok {
		for k, v := range d {
			data[k] = v
		}
	}
	for k, v := range sd {
		if s, ok := v.(string); ok {
			data[k] = base64.StdEncoding.EncodeToString([]byte(s))
		}
	}
	delete(out, "stringData")
	out["data"] = data
	return out
}
