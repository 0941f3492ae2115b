package payload

import (
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// crdVersion is one entry of a CRD's spec.versions.
type crdVersion struct {
	Name   string
	Served bool
}

// crdInfo is what the rules need from a CustomResourceDefinition manifest.
type crdInfo struct {
	Manifest *Manifest
	// Name is metadata.name, <plural>.<group>.
	Name   string
	Group  string
	Kind   string
	Plural string
	// Versions is empty when the manifest has no spec, as delete
	// manifests often do.
	Versions []crdVersion
	// BootstrapRequired CRDs are created by the installer before the CVO
	// runs, so a custom resource may come before them.
	BootstrapRequired bool
}

const bootstrapRequiredAnnotation = "release.openshift.io/bootstrap-required"

// crdInfoOf reads a CRD manifest without copying its (often large) schema.
// Missing or mistyped fields read as empty; a delete manifest may carry
// only metadata.name, so the group and plural fall back to the name.
func crdInfoOf(m *Manifest) crdInfo {
	info := crdInfo{Manifest: m, Name: m.Obj.GetName()}
	info.BootstrapRequired = m.Obj.GetAnnotations()[bootstrapRequiredAnnotation] == "true"
	spec := mapAt(m.Obj.Object, "spec")
	info.Group = stringAt(spec, "group")
	names := mapAt(spec, "names")
	info.Kind = stringAt(names, "kind")
	info.Plural = stringAt(names, "plural")
	if plural, group, ok := strings.Cut(info.Name, "."); ok {
		if info.Group == "" {
			info.Group = group
		}
		if info.Plural == "" {
			info.Plural = plural
		}
	}
	if versions, ok := spec["versions"].([]any); ok {
		for _, v := range versions {
			entry, _ := v.(map[string]any)
			name := stringAt(entry, "name")
			if name == "" {
				continue
			}
			served, _ := entry["served"].(bool)
			info.Versions = append(info.Versions, crdVersion{Name: name, Served: served})
		}
	} else if v := stringAt(spec, "version"); v != "" {
		// apiextensions.k8s.io/v1beta1 CRDs could name one version.
		info.Versions = []crdVersion{{Name: v, Served: true}}
	}
	return info
}

// serves reports whether the CRD serves kind. Without spec.names.kind (a
// bare delete manifest) the kind is matched against the plural.
func (c crdInfo) serves(gk schema.GroupKind) bool {
	if gk.Group != c.Group {
		return false
	}
	if c.Kind != "" {
		return gk.Kind == c.Kind
	}
	return c.Plural != "" && pluralMatches(gk.Kind, c.Plural)
}

// pluralMatches guesses whether plural is kind's plural, the way CRD
// authors write them: lower case plus s, es, or y to ies.
func pluralMatches(kind, plural string) bool {
	k := strings.ToLower(kind)
	if plural == k+"s" || plural == k+"es" {
		return true
	}
	return strings.HasSuffix(k, "y") && plural == k[:len(k)-1]+"ies"
}

func (c crdInfo) version(name string) (crdVersion, bool) {
	for _, v := range c.Versions {
		if v.Name == name {
			return v, true
		}
	}
	return crdVersion{}, false
}

func (c crdInfo) servedVersions() []string {
	var names []string
	for _, v := range c.Versions {
		if v.Served {
			names = append(names, v.Name)
		}
	}
	sort.Strings(names)
	return names
}

func mapAt(obj map[string]any, key string) map[string]any {
	v, _ := obj[key].(map[string]any)
	return v
}

func stringAt(obj map[string]any, key string) string {
	v, _ := obj[key].(string)
	return v
}

// rawAnnotations returns metadata.annotations as written, so that rules
// can see values that are not strings. unstructured's GetAnnotations
// returns nil for such a map, and library-go then treats the manifest as
// having no annotations at all.
func rawAnnotations(m *Manifest) map[string]any {
	return mapAt(mapAt(m.Obj.Object, "metadata"), "annotations")
}
