package operator

import (
	"fmt"
	"strings"
)

// demoNamespace holds the ConfigMaps of the test releases.
const demoNamespace = "demo"

// configMapManifest is a ConfigMap in demoNamespace that the default
// profile includes, with extra annotations.
func configMapManifest(name string, annotations ...string) string {
	ann := `    include.release.openshift.io/self-managed-high-availability: "true"`
	for _, a := range annotations {
		ann += "\n    " + a
	}
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\n  annotations:\n%s\ndata:\n  key: value\n",
		name, demoNamespace, ann)
}

const deleteAnnotation = `release.openshift.io/delete: "true"`

// heldConfigMapManifest is a ConfigMap that a finalizer keeps once deleted.
func heldConfigMapManifest(name string, annotations ...string) string {
	return strings.Replace(configMapManifest(name, annotations...), "  annotations:", "  finalizers: [example.com/hold]\n  annotations:", 1)
}
