package apply

import (
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
)

// TEMPORARY until pkg/payload's predicate lands.
var builtinOnce sync.Once
var builtins map[schema.GroupResource]string

func builtinResource(group, resource string) (string, bool) {
	builtinOnce.Do(func() {
		builtins = map[schema.GroupResource]string{}
		for gvk := range scheme.Scheme.AllKnownTypes() {
			if gvk.Version == "__internal" {
				continue
			}
			plural, _ := meta.UnsafeGuessKindToResource(gvk)
			builtins[plural.GroupResource()] = gvk.Kind
		}
	})
	k, ok := builtins[schema.GroupResource{Group: group, Resource: resource}]
	return k, ok
}
