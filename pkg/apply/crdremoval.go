package apply

import (
	"context"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"github.com/payload-applier/payload-applier/pkg/crdcompat"
	"github.com/payload-applier/payload-applier/pkg/payload"
)

// PendingCRDRemovals judges the CRDs of current, the release the cluster
// runs, by crdcompat.DueRemovals: the versions current marks deprecated
// whose removed-in release is due with the next minor or major update and
// that the live CRD still lists in status.storedVersions, each with the
// count of the CRD's objects. Only CRDs carrying a due removal are read,
// one GET and one LIST of a single item each, so a release without any
// costs no request.
func (e *Engine) PendingCRDRemovals(ctx context.Context, current *payload.Release) []crdcompat.PendingRemoval {
	if current == nil {
		return nil
	}
	var out []crdcompat.PendingRemoval
	for _, m := range current.Manifests {
		if !m.IsCRD() || m.Delete() {
			continue
		}
		group, _, _ := unstructured.NestedString(m.Obj.Object, "spec", "group")
		if _, ok := m.Obj.GetAnnotations()[crdcompat.RemovedInAnnotation(group)]; !ok {
			continue
		}
		marked, err := crdcompat.Decode(m.Obj.Object)
		if err != nil {
			continue
		}
		out = append(out, e.pendingRemovals(ctx, current.Version, marked, nil)...)
	}
	return out
}

// LivePendingCRDRemovals is PendingCRDRemovals for a caller without the
// current release, such as plan: the live CRDs named by names stand for
// the current release's, which applied them, and current is its version.
func (e *Engine) LivePendingCRDRemovals(ctx context.Context, current string, names []string) []crdcompat.PendingRemoval {
	rc := e.clientFor(payload.CRDGVR, "")
	var out []crdcompat.PendingRemoval
	for _, name := range names {
		// A CRD that cannot be read schedules nothing plan knows of; plan's
		// own read of it reports the error.
		live, err := rc.read(ctx, name)
		if err != nil || live == nil {
			continue
		}
		marked, err := crdcompat.Decode(live.Object)
		if err != nil {
			continue
		}
		out = append(out, e.pendingRemovals(ctx, current, marked, marked)...)
	}
	return out
}

// pendingRemovals reads the live CRD of marked, unless given, only when
// marked schedules a removal due from current.
func (e *Engine) pendingRemovals(ctx context.Context, current string, marked, live *apiextensionsv1.CustomResourceDefinition) []crdcompat.PendingRemoval {
	logger := klog.FromContext(ctx)
	// Everything marked schedules counts as stored until the live CRD says.
	due, err := crdcompat.DueRemovals(current, marked, versionNames(marked))
	if err != nil {
		// lint rejects a bad removed-in; a release that carries one
		// anyway schedules nothing.
		logger.V(2).Info("Ignoring a CRD's removal schedule", "crd", marked.Name, "err", err)
		return nil
	}
	if len(due) == 0 {
		return nil
	}
	if live == nil {
		liveObj, err := e.clientFor(payload.CRDGVR, "").read(ctx, marked.Name)
		if err != nil {
			return pendingWithError(due, fmt.Sprintf("could not read the CustomResourceDefinition: %v", err))
		}
		if liveObj == nil {
			return nil
		}
		if live, err = crdcompat.Decode(liveObj.Object); err != nil {
			return pendingWithError(due, fmt.Sprintf("the live object does not read as a CRD: %v", err))
		}
	}
	if due, err = crdcompat.DueRemovals(current, marked, live.Status.StoredVersions); err != nil || len(due) == 0 {
		return nil
	}
	count, err := e.countObjects(ctx, live)
	out := make([]crdcompat.PendingRemoval, len(due))
	for i, r := range due {
		out[i] = crdcompat.PendingRemoval{Removal: r, Objects: count}
		if err != nil {
			out[i].Objects, out[i].Err = -1, fmt.Sprintf("could not count its objects: %v", err)
		}
	}
	return out
}

func pendingWithError(due []crdcompat.Removal, why string) []crdcompat.PendingRemoval {
	out := make([]crdcompat.PendingRemoval, len(due))
	for i, r := range due {
		out[i] = crdcompat.PendingRemoval{Removal: r, Objects: -1, Err: why}
	}
	return out
}

func versionNames(crd *apiextensionsv1.CustomResourceDefinition) []string {
	names := make([]string, len(crd.Spec.Versions))
	for i, v := range crd.Spec.Versions {
		names[i] = v.Name
	}
	return names
}

// countObjects counts the objects of crd in every namespace with a LIST of
// one item, whose remainingItemCount the apiserver fills in for a list
// without selectors; it pages through them only when it does not.
func (e *Engine) countObjects(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) (int, error) {
	version := ""
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			version = v.Name
		}
	}
	if version == "" {
		return 0, fmt.Errorf("CustomResourceDefinition %s has no storage version", crd.Name)
	}
	rc := e.clientFor(schema.GroupVersionResource{Group: crd.Spec.Group, Version: version, Resource: crd.Spec.Names.Plural}, "")
	page, err := rc.ri.List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return 0, err
	}
	switch {
	case page.GetContinue() == "":
		return len(page.Items), nil
	case page.GetRemainingItemCount() != nil:
		return len(page.Items) + int(*page.GetRemainingItemCount()), nil
	}
	count := 0
	err = rc.list(ctx, func(*unstructured.Unstructured) { count++ })
	return count, err
}
