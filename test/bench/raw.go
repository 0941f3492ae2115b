package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
)

// rawWorkers is the raw limit's concurrency.
const rawWorkers = 16

// rawTool is the raw limit: a minimal client-go program that issues one
// request per object from 16 workers, with no client-side rate limit, no
// comparison, no bookkeeping. Namespaces a workload creates go first.
type rawTool struct {
	e     *env
	user  string
	apply bool // server-side apply instead of create
}

func (t *rawTool) name() string {
	if t.apply {
		return toolRawApply
	}
	return toolRaw
}

func (t *rawTool) userName() string { return t.user }

func (t *rawTool) clients() (dynamic.Interface, meta.RESTMapper, error) {
	cfg := unthrottled(t.e.userConfig(t.user))
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	return dyn, restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc)), nil
}

func rawResource(dyn dynamic.Interface, mapper meta.RESTMapper, obj *unstructured.Unstructured) (dynamic.ResourceInterface, error) {
	gvk := obj.GroupVersionKind()
	m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, err
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		return dyn.Resource(m.Resource).Namespace(obj.GetNamespace()), nil
	}
	return dyn.Resource(m.Resource), nil
}

// splitNamespaces separates the Namespaces, which must exist before the
// objects in them and go after them.
func splitNamespaces(objs []*unstructured.Unstructured) (nss, rest []*unstructured.Unstructured) {
	for _, o := range objs {
		if o.GetKind() == "Namespace" && o.GroupVersionKind().Group == "" {
			nss = append(nss, o)
		} else {
			rest = append(rest, o)
		}
	}
	return nss, rest
}

// install creates every object: namespaces first, then the rest.
func (t *rawTool) install(ctx context.Context, w *workload) error {
	dyn, mapper, err := t.clients()
	if err != nil {
		return err
	}
	return rawInstall(ctx, dyn, mapper, w.objects, t.apply)
}

// rawInstall creates objs, or applies them with apply, from rawWorkers
// workers: namespaces first, then the rest.
func rawInstall(ctx context.Context, dyn dynamic.Interface, mapper meta.RESTMapper, objs []*unstructured.Unstructured, apply bool) error {
	nss, rest := splitNamespaces(objs)
	for _, set := range [][]*unstructured.Unstructured{nss, rest} {
		errs := parallel(ctx, len(set), rawWorkers, func(ctx context.Context, i int) error {
			ri, err := rawResource(dyn, mapper, set[i])
			if err != nil {
				return err
			}
			if apply {
				data, err := set[i].MarshalJSON()
				if err != nil {
					return err
				}
				_, err = ri.Patch(ctx, set[i].GetName(), types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: "bench-raw", Force: ptrTo(true)})
				return err
			}
			_, err = ri.Create(ctx, set[i], metav1.CreateOptions{})
			return err
		})
		if n, msgs := countErrors(errs); n > 0 {
			return fmt.Errorf("%d of %d creates failed: %s", n, len(set), strings.Join(msgs, "; "))
		}
	}
	return nil
}

// resync reads what a resync must read at least: one LIST per resource and
// namespace, from 16 workers.
func (t *rawTool) resync(ctx context.Context, w *workload) error {
	dyn, _, err := t.clients()
	if err != nil {
		return err
	}
	groups, err := t.e.groups(w.objects)
	if err != nil {
		return err
	}
	keys := make([]groupKey, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	errs := parallel(ctx, len(keys), rawWorkers, func(ctx context.Context, i int) error {
		k := keys[i]
		var ri dynamic.ResourceInterface = dyn.Resource(k.gvr)
		if k.namespace != "" {
			ri = dyn.Resource(k.gvr).Namespace(k.namespace)
		}
		opts := metav1.ListOptions{Limit: 500}
		for {
			list, err := ri.List(ctx, opts)
			if err != nil {
				return err
			}
			if list.GetContinue() == "" {
				return nil
			}
			opts.Continue = list.GetContinue()
		}
	})
	if n, msgs := countErrors(errs); n > 0 {
		return fmt.Errorf("%d of %d lists failed: %s", n, len(keys), strings.Join(msgs, "; "))
	}
	return nil
}

// remove deletes every object from 16 workers, each waiting for its object
// to be NotFound; namespaces go last.
func (t *rawTool) remove(ctx context.Context, w *workload) error {
	dyn, mapper, err := t.clients()
	if err != nil {
		return err
	}
	nss, rest := splitNamespaces(w.objects)
	for _, set := range [][]*unstructured.Unstructured{rest, nss} {
		errs := parallel(ctx, len(set), rawWorkers, func(ctx context.Context, i int) error {
			ri, err := rawResource(dyn, mapper, set[i])
			if err != nil {
				return err
			}
			name := set[i].GetName()
			if err := ri.Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: ptrTo(metav1.DeletePropagationBackground)}); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
			return wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
				_, err := ri.Get(ctx, name, metav1.GetOptions{})
				return apierrors.IsNotFound(err), nil
			})
		})
		if n, msgs := countErrors(errs); n > 0 {
			return fmt.Errorf("%d of %d deletes failed: %s", n, len(set), strings.Join(msgs, "; "))
		}
	}
	return nil
}
