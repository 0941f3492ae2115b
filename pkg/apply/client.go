package apply

import (
	"context"
	"errors"
	"path"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	"github.com/payload-applier/payload-applier/pkg/payload"
)

// errNoNamespace: a namespaced kind without a namespace has no client.
var errNoNamespace = errors.New("namespaced kind without a namespace")

// resourceClient is a resolved dynamic client for the objects of one
// resource in one namespace (none for a cluster-scoped resource).
type resourceClient struct {
	gvr       schema.GroupVersionResource
	namespace string
	ri        dynamic.ResourceInterface
}

// resolve is the one way from a kind to a client. An empty gvk.Version
// takes the preferred version. With refresh, a kind discovery does not
// know yet refreshes it once (throttled), as a CRD applied earlier in the
// pass may serve it; without, an unknown kind is a NoMatch error at once.
// A cluster-scoped kind ignores namespace.
func (e *Engine) resolve(gvk schema.GroupVersionKind, namespace string, refresh bool) (resourceClient, error) {
	var mapping *meta.RESTMapping
	var err error
	switch {
	case refresh:
		mapping, err = e.mapper.mapping(gvk)
	default:
		mapping, err = e.mapper.known(gvk.GroupKind(), gvk.Version)
	}
	if err != nil {
		return resourceClient{}, err
	}
	rc := resourceClient{gvr: mapping.Resource}
	if mapping.Scope.Name() != meta.RESTScopeNameNamespace {
		rc.ri = e.dynamic.Resource(mapping.Resource)
		return rc, nil
	}
	if namespace == "" {
		return resourceClient{}, errNoNamespace
	}
	rc.namespace = namespace
	rc.ri = e.dynamic.Resource(mapping.Resource).Namespace(namespace)
	return rc, nil
}

// Exists says whether m's object is on the cluster. A kind the cluster
// does not serve, or a namespaced one without a namespace, has none.
func (e *Engine) Exists(ctx context.Context, m *payload.Manifest) (bool, error) {
	rc, err := e.resolve(m.GVK, m.Obj.GetNamespace(), false)
	switch {
	case meta.IsNoMatchError(err) || errors.Is(err, errNoNamespace):
		return false, nil
	case err != nil:
		return false, err
	}
	obj, err := rc.read(ctx, m.Obj.GetName())
	return obj != nil, err
}

// read returns the named object, or nil when it is not found.
func (rc resourceClient) read(ctx context.Context, name string) (*unstructured.Unstructured, error) {
	obj, err := rc.ri.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return obj, err
}

// list pages through every object of the client's resource and namespace,
// handing each to each. An item shares its page's memory: each copies what
// it keeps, so that the page can be freed.
func (rc resourceClient) list(ctx context.Context, each func(*unstructured.Unstructured)) error {
	opts := metav1.ListOptions{Limit: 500}
	for {
		page, err := rc.ri.List(ctx, opts)
		if err != nil {
			return err
		}
		for i := range page.Items {
			each(&page.Items[i])
		}
		if page.GetContinue() == "" {
			return nil
		}
		opts.Continue = page.GetContinue()
	}
}

// apply is the one server-side apply: it forces ownership of the fields
// obj sets, as the payload is the source of truth for them. A dry run
// persists nothing; the server still admits and defaults the object.
func (rc resourceClient) apply(ctx context.Context, obj *unstructured.Unstructured, dryRun bool) (*unstructured.Unstructured, error) {
	data, err := obj.MarshalJSON()
	if err != nil {
		return nil, err
	}
	opts := metav1.PatchOptions{FieldManager: FieldManager, Force: ptr.To(true)}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	return rc.ri.Patch(ctx, obj.GetName(), types.ApplyPatchType, data, opts)
}

// path is the API path of the named object.
func (rc resourceClient) path(name string) string {
	segs := []string{"/apis", rc.gvr.Group, rc.gvr.Version}
	if rc.gvr.Group == "" {
		segs = []string{"/api", rc.gvr.Version}
	}
	if rc.namespace != "" {
		segs = append(segs, "namespaces", rc.namespace)
	}
	return path.Join(append(segs, rc.gvr.Resource, name)...)
}

// serverFields are the metadata fields the server owns: a manifest never
// sets them, and they never count as a change.
var serverFields = []string{"creationTimestamp", "resourceVersion", "uid", "generation", "managedFields",
	"selfLink", "deletionTimestamp", "deletionGracePeriodSeconds"}

// withoutServerFields is obj without status, which belongs to controllers,
// and without the metadata the server owns. It copies only the top level
// and metadata; the rest is shared with obj.
func withoutServerFields(obj map[string]interface{}) map[string]interface{} {
	out := make(map[string]interface{}, len(obj))
	for k, v := range obj {
		if k != "status" {
			out[k] = v
		}
	}
	if md, ok := obj["metadata"].(map[string]interface{}); ok {
		kept := make(map[string]interface{}, len(md))
		for k, v := range md {
			kept[k] = v
		}
		for _, f := range serverFields {
			delete(kept, f)
		}
		out["metadata"] = kept
	}
	return out
}
