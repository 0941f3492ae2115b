package operator

import (
	"github.com/payload-applier/payload-applier/pkg/payload"
)

// crdNames names the CRDs rel creates or updates.
func crdNames(rel *payload.Release) []string {
	var names []string
	for _, m := range rel.Manifests {
		if m.IsCRD() && !m.Delete() {
			names = append(names, m.Obj.GetName())
		}
	}
	return names
}
