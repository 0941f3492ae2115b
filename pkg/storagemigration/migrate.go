// Package storagemigration moves every object of a CustomResourceDefinition
// to its current storage version, then tells the apiserver so by leaving
// only that version in status.storedVersions. It is what an administrator
// runs before a release may drop an older version (crdcompat's
// StoredVersionRemoved); nothing runs it on its own.
//
// Each object is read at the storage version and written back unchanged;
// the apiserver then encodes it in the storage version, as
// kube-storage-version-migrator does. A write that conflicts means someone
// else wrote the object since it was read, which stored it in the storage
// version too.
package storagemigration

import (
	"context"
	"fmt"
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/payload-applier/payload-applier/pkg/payload"
)

// Options tune a migration.
type Options struct {
	// DryRun reads and counts, and writes nothing.
	DryRun bool
	// PageSize is the limit of each LIST; default 500.
	PageSize int64
}

// Result is what a migration did.
type Result struct {
	CRD            string
	StorageVersion string
	// StoredBefore is status.storedVersions as found; StoredAfter as left.
	StoredBefore, StoredAfter []string
	// Rewritten objects were written back; Changed ones were written by
	// someone else meanwhile; Gone ones were deleted meanwhile.
	Rewritten, Changed, Gone int
}

// Migrate rewrites every object of the CRD name in its storage version and
// then sets status.storedVersions to that version alone. It stops at the
// first error, leaving status.storedVersions as it was, so that a version
// is never dropped from it while an object may still be stored in it.
func Migrate(ctx context.Context, client dynamic.Interface, name string, opts Options) (Result, error) {
	if opts.PageSize <= 0 {
		opts.PageSize = 500
	}
	res := Result{CRD: name}
	u, err := client.Resource(payload.CRDGVR).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return res, fmt.Errorf("get CustomResourceDefinition %s: %w", name, err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, crd); err != nil {
		return res, fmt.Errorf("read CustomResourceDefinition %s: %w", name, err)
	}
	res.StoredBefore = crd.Status.StoredVersions
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			res.StorageVersion = v.Name
		}
	}
	if res.StorageVersion == "" {
		return res, fmt.Errorf("CustomResourceDefinition %s has no storage version", name)
	}
	gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: res.StorageVersion, Resource: crd.Spec.Names.Plural}
	list := metav1.ListOptions{Limit: opts.PageSize}
	for {
		page, err := client.Resource(gvr).List(ctx, list)
		if err != nil {
			return res, fmt.Errorf("list %s: %w", gvr.GroupResource(), err)
		}
		for i := range page.Items {
			if err := rewrite(ctx, client, gvr, &page.Items[i], opts.DryRun, &res); err != nil {
				return res, err
			}
		}
		if list.Continue = page.GetContinue(); list.Continue == "" {
			break
		}
	}
	res.StoredAfter = res.StoredBefore
	migrated := []string{res.StorageVersion}
	if opts.DryRun || slices.Equal(res.StoredBefore, migrated) {
		return res, nil
	}
	if err := unstructured.SetNestedStringSlice(u.Object, migrated, "status", "storedVersions"); err != nil {
		return res, err
	}
	if _, err := client.Resource(payload.CRDGVR).UpdateStatus(ctx, u, metav1.UpdateOptions{}); err != nil {
		return res, fmt.Errorf("set status.storedVersions of %s (every object is migrated; run again): %w", name, err)
	}
	res.StoredAfter = migrated
	return res, nil
}

func rewrite(ctx context.Context, client dynamic.Interface, gvr schema.GroupVersionResource, obj *unstructured.Unstructured, dryRun bool, res *Result) error {
	ri := client.Resource(gvr).Namespace(obj.GetNamespace())
	update := metav1.UpdateOptions{}
	if dryRun {
		update.DryRun = []string{metav1.DryRunAll}
	}
	_, err := ri.Update(ctx, obj, update)
	switch {
	case err == nil:
		res.Rewritten++
	case apierrors.IsConflict(err):
		res.Changed++
	case apierrors.IsNotFound(err):
		res.Gone++
	default:
		return fmt.Errorf("rewrite %s %s: %w", gvr.GroupResource(), objectName(obj), err)
	}
	return nil
}

func objectName(obj *unstructured.Unstructured) string {
	if ns := obj.GetNamespace(); ns != "" {
		return ns + "/" + obj.GetName()
	}
	return obj.GetName()
}
