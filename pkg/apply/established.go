package apply

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	watchtools "k8s.io/client-go/tools/watch"
)

// WaitEstablished waits until the CRD name, read through crds, is
// Established, and returns it; ctx bounds the wait. It watches the one
// CRD from resourceVersion ("" for its current state first): one request
// where reading it every 100 ms took five or six on a busy apiserver. A
// watch the server refuses or ends falls back to reading.
func WaitEstablished(ctx context.Context, crds dynamic.ResourceInterface, name, resourceVersion string) (*unstructured.Unstructured, error) {
	var established *unstructured.Unstructured
	done := func(obj *unstructured.Unstructured) bool {
		if crdHealth(obj).Healthy() {
			established = obj
		}
		return established != nil
	}
	w, err := crds.Watch(ctx, metav1.ListOptions{
		FieldSelector:   fields.OneTermEqualSelector("metadata.name", name).String(),
		ResourceVersion: resourceVersion,
	})
	if err == nil {
		_, err = watchtools.UntilWithoutRetry(ctx, w, func(ev watch.Event) (bool, error) {
			switch ev.Type {
			case watch.Error:
				return false, apierrors.FromObject(ev.Object)
			case watch.Deleted:
				return false, fmt.Errorf("CustomResourceDefinition %s was deleted", name)
			}
			obj, ok := ev.Object.(*unstructured.Unstructured)
			return ok && done(obj), nil
		})
	}
	if established == nil && ctx.Err() == nil {
		err = wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			obj, err := crds.Get(ctx, name, metav1.GetOptions{})
			return err == nil && done(obj), nil
		})
	}
	if established == nil {
		return nil, fmt.Errorf("CustomResourceDefinition %s is not Established: %w", name, err)
	}
	return established, nil
}
