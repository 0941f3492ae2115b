package apply

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// createHold is how long after a CRD became Established the apiserver
// holds each POST of its custom resources: 2 s (apiextensions-apiserver,
// customresource_handler.go), so that on a control plane of several
// apiservers all have seen the CRD before a client's next request. The
// condition's time has whole seconds, hence one more.
const createHold = 3 * time.Second

// CreateHeld reports whether the apiserver would hold, at now, a POST of a
// custom resource of the Established crd. Such a create is better sent as
// a server-side apply, which the apiserver does not hold: on ocp-real
// about fifteen creates of an install would each wait 2 s, several on the
// critical path, and the ClusterVersion of a first install another 2 s.
// The hold protects a client that reads the resource back at once from
// another apiserver; client-go sends its requests over one HTTP/2
// connection, so to the one apiserver that took the create, and a custom
// resource the engine creates is read again only in a later pass.
// Clock skew errs either way into a held POST or an apply, both correct.
func CreateHeld(crd *unstructured.Unstructured, now time.Time) bool {
	t, ok := establishedAt(crd)
	return ok && heldAt(t, now)
}

func heldAt(established, now time.Time) bool { return now.Before(established.Add(createHold)) }

// establishedAt is when crd became Established, by its condition.
func establishedAt(crd *unstructured.Unstructured) (time.Time, bool) {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]interface{})
		if !ok || m["type"] != "Established" || m["status"] != "True" {
			continue
		}
		s, _ := m["lastTransitionTime"].(string)
		var t metav1.Time
		if err := t.UnmarshalQueryParameter(s); err != nil || t.IsZero() {
			return time.Time{}, false
		}
		return t.Time, true
	}
	return time.Time{}, false
}

// crdGroupKind is the kind a CRD serves.
func crdGroupKind(crd *unstructured.Unstructured) schema.GroupKind {
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
	return schema.GroupKind{Group: group, Kind: kind}
}

// noteEstablished remembers when crd became Established, for createHeld;
// only the time, as a CRD's schema can be large.
func (e *Engine) noteEstablished(crd *unstructured.Unstructured) {
	t, ok := establishedAt(crd)
	if !ok {
		return
	}
	e.appliedMu.Lock()
	defer e.appliedMu.Unlock()
	e.established[crdGroupKind(crd)] = t
}

// createHeld reports whether a POST of gk now would be held (CreateHeld).
func (e *Engine) createHeld(gk schema.GroupKind) bool {
	e.appliedMu.Lock()
	t, ok := e.established[gk]
	e.appliedMu.Unlock()
	return ok && heldAt(t, e.clock.Now())
}
