package payload

import (
	"reflect"
	"slices"
	"sort"
	"sync"

	appsv1 "github.com/openshift/api/apps/v1"
	authorizationv1 "github.com/openshift/api/authorization/v1"
	buildv1 "github.com/openshift/api/build/v1"
	imagev1 "github.com/openshift/api/image/v1"
	oauthv1 "github.com/openshift/api/oauth/v1"
	projectv1 "github.com/openshift/api/project/v1"
	quotav1 "github.com/openshift/api/quota/v1"
	routev1 "github.com/openshift/api/route/v1"
	securityv1 "github.com/openshift/api/security/v1"
	templatev1 "github.com/openshift/api/template/v1"
	userv1 "github.com/openshift/api/user/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
)

// builtinAPIs are the types a cluster serves without any CRD from the
// payload:
//   - every group of client-go's Kubernetes scheme, plus
//     apiextensions.k8s.io and apiregistration.k8s.io;
//   - the OpenShift groups that aggregated API servers serve:
//     openshift-apiserver (apps, authorization, build, image, project,
//     quota, route, security, template), oauth-apiserver (oauth, user),
//     OLM's packageserver (packages.operators.coreos.com) and the metrics
//     API (metrics.k8s.io);
//   - ClusterVersion and ClusterOperator (config.openshift.io), whose CRDs
//     the applier creates itself when a cluster lacks them.
//
// A few kinds of those OpenShift groups are CRDs in a real cluster (for
// example SecurityContextConstraints); listing them here only means they
// are never reported as having no provider.
type builtinAPIs struct {
	kinds  map[schema.GroupKind]bool
	groups map[string]bool
}

var builtins = sync.OnceValue(newBuiltinAPIs)

func newBuiltinAPIs() builtinAPIs {
	s := runtime.NewScheme()
	installs := []func(*runtime.Scheme) error{
		scheme.AddToScheme,
		appsv1.Install, authorizationv1.Install, buildv1.Install, imagev1.Install,
		oauthv1.Install, projectv1.Install, quotav1.Install, routev1.Install,
		securityv1.Install, templatev1.Install, userv1.Install,
	}
	for _, install := range installs {
		// These install static type lists; an error would be a bug in a
		// dependency, and the table is only less complete without it.
		_ = install(s)
	}
	b := builtinAPIs{kinds: map[schema.GroupKind]bool{}, groups: map[string]bool{}}
	for gvk := range s.AllKnownTypes() {
		if gvk.Version == runtime.APIVersionInternal {
			continue
		}
		b.kinds[gvk.GroupKind()] = true
		b.groups[gvk.Group] = true
	}
	for _, gk := range slices.Concat(
		[]schema.GroupKind{CRDKind, APIServiceKind, ClusterVersionKind, ClusterOperatorKind},
		kindsOf("packages.operators.coreos.com", "PackageManifest"),
		kindsOf("metrics.k8s.io", "NodeMetrics", "PodMetrics"),
	) {
		b.kinds[gk] = true
		b.groups[gk.Group] = true
	}
	return b
}

// isBuiltin reports whether a cluster serves gk without a payload CRD.
func isBuiltin(gk schema.GroupKind) bool {
	return builtins().kinds[gk]
}

// isBuiltinGroup reports whether group is one of the built-in groups.
func isBuiltinGroup(group string) bool {
	return builtins().groups[group]
}

// builtinKinds lists the built-in kinds of group, for suggestions.
func builtinKinds(group string) []string {
	var kinds []string
	for gk := range builtins().kinds {
		if gk.Group == group {
			kinds = append(kinds, gk.Kind)
		}
	}
	sort.Strings(kinds)
	return kinds
}

// BuiltinResource reports whether group/resource is a resource of
// client-go's Kubernetes scheme, which the API server serves itself, and
// the kind it serves there. A CRD with that group and plural is never
// served, because the built-in wins: whatever lists or deletes the CRD's
// objects at that resource reaches the built-in objects instead.
//
// The set is read from the scheme, not written down: every kind whose
// type is an object (has ObjectMeta, so no List, option, Status or
// WatchEvent), at the plural the API server would guess for it. A few
// kinds served only as a subresource (Scale, Eviction, TokenRequest)
// count too, which errs on the side of calling a resource built-in.
func BuiltinResource(group, resource string) (kind string, ok bool) {
	kind, ok = builtinResources()[schema.GroupResource{Group: group, Resource: resource}]
	return kind, ok
}

var builtinResources = sync.OnceValue(func() map[schema.GroupResource]string {
	object := reflect.TypeFor[metav1.Object]()
	resources := map[schema.GroupResource]string{}
	for gvk, typ := range scheme.Scheme.AllKnownTypes() {
		// Every group version also registers WatchEvent and the option
		// kinds (ListOptions, DeleteOptions, ...), and each kind its List:
		// none of them implements metav1.Object.
		if gvk.Version == runtime.APIVersionInternal || !reflect.PointerTo(typ).Implements(object) {
			continue
		}
		plural, _ := meta.UnsafeGuessKindToResource(gvk)
		gr := plural.GroupResource()
		if seen, ok := resources[gr]; !ok || gvk.Kind < seen {
			resources[gr] = gvk.Kind // the same in every version; min keeps it stable if not
		}
	}
	return resources
})
