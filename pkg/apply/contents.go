package apply

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"

	"github.com/payload-applier/payload-applier/pkg/payload"
)

// ReasonDeleteTakesObjects is the Event that names, before the DELETE, what
// a Namespace or CRD delete takes with it.
const ReasonDeleteTakesObjects = "DeleteTakesObjects"

const (
	// contentsNamed bounds the objects a report names; it counts them all.
	contentsNamed = 10
)

// Contents is what deleting a Namespace or a CustomResourceDefinition takes
// with it that no manifest of the payload names (creates or deletes): the
// objects in the namespace, or the custom resources the CRD serves.
type Contents struct {
	// ByKind counts the objects of each kind.
	ByKind map[string]int
	// Named lists the first objects found, at most contentsNamed.
	Named []string
	// Partial is set when some resources could not be listed; the counts
	// are then a lower bound.
	Partial bool
}

// Total counts every object.
func (c Contents) Total() int {
	n := 0
	for _, k := range c.ByKind {
		n += k
	}
	return n
}

// String is "12 objects the payload does not manage: 7 ConfigMap, 5
// Secret (ConfigMap/ns/a, ...)", kinds by count, most first.
func (c Contents) String() string {
	kinds := make([]string, 0, len(c.ByKind))
	for k := range c.ByKind {
		kinds = append(kinds, k)
	}
	slices.SortFunc(kinds, func(a, b string) int { return cmp.Or(c.ByKind[b]-c.ByKind[a], strings.Compare(a, b)) })
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%d %s", c.ByKind[k], k)
	}
	total := c.Total()
	noun := "objects"
	if total == 1 {
		noun = "object"
	}
	s := fmt.Sprintf("%d %s the payload does not manage: %s", total, noun, strings.Join(parts, ", "))
	if c.Partial {
		s = "at least " + s
	}
	if len(c.Named) > 0 {
		s += " (" + strings.Join(c.Named, ", ")
		if total > len(c.Named) {
			s += ", …"
		}
		s += ")"
	}
	return s
}

// destructive reports whether deleting m's object deletes other objects
// with it: a Namespace its contents, a CRD its custom resources.
func destructive(m *payload.Manifest) bool {
	gk := m.GVK.GroupKind()
	return gk == payload.NamespaceKind || gk == payload.CRDKind
}

// contents lists, page by page, what deleting live (the object m names)
// would take with it, leaving out the objects rel names. It knows nothing
// of a kind that is not destructive, and of a namespace's contents without
// discovery.
func (e *Engine) contents(ctx context.Context, rel *payload.Release, m *payload.Manifest, live *unstructured.Unstructured) (Contents, error) {
	c := Contents{ByKind: map[string]int{}}
	named := map[payload.ObjectID]bool{}
	for _, other := range rel.Manifests {
		named[other.ID()] = true
	}
	count := func(group, kind string, obj *unstructured.Unstructured) {
		id := payload.ObjectID{Group: group, Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName()}
		if named[id] {
			return
		}
		c.ByKind[kind]++
		if len(c.Named) < contentsNamed {
			c.Named = append(c.Named, id.String())
		}
	}
	id := m.ID()
	switch {
	case id.GroupKind() == payload.NamespaceKind:
		if e.discovery == nil {
			return c, nil
		}
		lists, err := discovery.ServerPreferredNamespacedResources(e.discovery)
		if err != nil {
			if !discovery.IsGroupDiscoveryFailedError(err) {
				return c, fmt.Errorf("discover namespaced resources: %w", err)
			}
			c.Partial = true
		}
		for _, list := range lists {
			gv, err := schema.ParseGroupVersion(list.GroupVersion)
			if err != nil {
				continue
			}
			for _, r := range list.APIResources {
				if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") || r.Name == "events" {
					continue
				}
				err := e.clientFor(gv.WithResource(r.Name), id.Name).list(ctx, func(obj *unstructured.Unstructured) {
					count(gv.Group, r.Kind, obj)
				})
				if err != nil {
					c.Partial = true
				}
			}
		}
	case destructive(m) && live != nil:
		// A CRD whose resource another API serves takes none of its objects.
		served, why, err := e.ownAPI(ctx, live)
		if err != nil || why != "" {
			return c, nil
		}
		err = e.clientFor(served.gvr, "").list(ctx, func(obj *unstructured.Unstructured) {
			count(served.gvr.Group, served.kind, obj)
		})
		if err != nil {
			return c, fmt.Errorf("list %s: %w", served.gvr.GroupResource(), err)
		}
	}
	return c, nil
}

// crdAPI is what a live CRD serves: its resource at the storage version
// (or the first served one) and its kind.
type crdAPI struct {
	gvr        schema.GroupVersionResource
	kind       string
	namespaced bool
}

// servedBy reads the API a live CRD serves; ok is false when its spec
// lacks what a LIST needs.
func servedBy(crd *unstructured.Unstructured) (api crdAPI, ok bool) {
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	plural, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "plural")
	kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
	scope, _, _ := unstructured.NestedString(crd.Object, "spec", "scope")
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	version := ""
	for _, v := range versions {
		vm, _ := v.(map[string]any)
		name, _ := vm["name"].(string)
		if storage, _ := vm["storage"].(bool); storage {
			version = name
			break
		}
		if served, _ := vm["served"].(bool); served && version == "" {
			version = name
		}
	}
	api = crdAPI{gvr: schema.GroupVersionResource{Group: group, Version: version, Resource: plural}, kind: kind, namespaced: scope != "Cluster"}
	return api, group != "" && plural != "" && kind != "" && version != ""
}

// clientFor is a client of gvr in namespace ("" for every namespace, or a
// cluster-scoped resource), for resources found by discovery or a live
// CRD rather than from a manifest's kind.
func (e *Engine) clientFor(gvr schema.GroupVersionResource, namespace string) resourceClient {
	var ri dynamic.ResourceInterface = e.dynamic.Resource(gvr)
	if namespace != "" {
		ri = e.dynamic.Resource(gvr).Namespace(namespace)
	}
	return resourceClient{gvr: gvr, namespace: namespace, ri: ri}
}

var apiServicesGVR = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// ownAPI reads the API a live CRD serves itself. why says, when it does
// not, what does: a built-in API of the same group and resource (the
// apiserver serves those before any CRD), an APIService backed by a
// service (an aggregated API) for a version it serves, or another CRD
// that holds its names. Only when why is "" does a LIST of the resource
// return the CRD's own objects. err is a read that failed, or a CRD not
// yet Established: both may pass.
func (e *Engine) ownAPI(ctx context.Context, crd *unstructured.Unstructured) (api crdAPI, why string, err error) {
	api, ok := servedBy(crd)
	if !ok {
		return api, "its spec names no group, plural, kind and served version", nil
	}
	gr := api.gvr.GroupResource()
	if kind, ok := payload.BuiltinResource(gr.Group, gr.Resource); ok {
		return api, fmt.Sprintf("%s is a built-in Kubernetes API (kind %s), which the apiserver serves instead of the CRD", gr, kind), nil
	}
	plural, _, _ := unstructured.NestedString(crd.Object, "status", "acceptedNames", "plural")
	kind, _, _ := unstructured.NestedString(crd.Object, "status", "acceptedNames", "kind")
	if plural != api.gvr.Resource || kind != api.kind {
		return api, fmt.Sprintf("the apiserver did not accept its names (status.acceptedNames plural %q, kind %q): another API holds %s", plural, kind, gr), nil
	}
	if status, reason, msg := condition(crd, "NamesAccepted"); status != "True" {
		return api, fmt.Sprintf("its condition NamesAccepted is not True (%s: %s)", reason, msg), nil
	}
	if status, _, _ := condition(crd, "Established"); status != "True" {
		return api, "", fmt.Errorf("CustomResourceDefinition %s is not Established", crd.GetName())
	}
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range versions {
		vm, _ := v.(map[string]any)
		name, _ := vm["name"].(string)
		if served, _ := vm["served"].(bool); !served || name == "" {
			continue
		}
		// A cluster without the aggregation layer answers NotFound: nil.
		svc, err := e.clientFor(apiServicesGVR, "").read(ctx, name+"."+gr.Group)
		if err != nil {
			return api, "", fmt.Errorf("read APIService %s.%s: %w", name, gr.Group, err)
		}
		if svc == nil {
			continue
		}
		if ns, _, _ := unstructured.NestedString(svc.Object, "spec", "service", "namespace"); ns != "" {
			svcName, _, _ := unstructured.NestedString(svc.Object, "spec", "service", "name")
			return api, fmt.Sprintf("APIService %s, backed by service %s/%s, serves %s/%s: an aggregated API, not the CRD", svc.GetName(), ns, svcName, gr.Group, name), nil
		}
	}
	return api, "", nil
}
