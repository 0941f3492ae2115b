package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/payload-applier/payload-applier/test/cluster"
)

// env is the control plane and the admin clients the bench uses to prepare,
// verify and clean up. Tools never use these clients: each acts as its own
// token user so that the audit log tells their requests apart.
type env struct {
	c       *cluster.Cluster
	work    string
	kube    kubernetes.Interface
	dynamic dynamic.Interface
	mapper  meta.ResettableRESTMapper
}

// benchUsers are the token users, one per tool, all in system:masters so
// that API Priority and Fairness treats them alike (exempt).
var benchUsers = []string{"bench-raw", "bench-payload-applier", "bench-kapp", "bench-kubectl", cvoUser}

func startEnv(ctx context.Context, work string, keep bool, disabledControllers ...string) (*env, error) {
	var users []cluster.User
	for _, u := range benchUsers {
		users = append(users, cluster.User{Name: u, Groups: []string{"system:masters"}})
	}
	bin, err := cluster.EnsureBinaries(ctx)
	if err != nil {
		return nil, err
	}
	c, err := cluster.Start(ctx, cluster.Options{BinDir: bin, Users: users, TempDir: work, KeepDataDir: keep, DisabledControllers: disabledControllers})
	if err != nil {
		return nil, err
	}
	e := &env{c: c, work: work}
	cfg := unthrottled(c.RESTConfig())
	if e.kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if e.dynamic, err = dynamic.NewForConfig(cfg); err != nil {
		return nil, err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	e.mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
	return e, nil
}

// unthrottled removes client-side rate limiting.
func unthrottled(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = -1, 0
	return cfg
}

// userConfig is the user's REST config without any QPS setting, as a
// kubeconfig file gives it; each tool then applies its own default.
func (e *env) userConfig(user string) *rest.Config {
	cfg, err := e.c.UserRESTConfig(user)
	if err != nil {
		panic(err) // every bench user is registered in startEnv
	}
	cfg.QPS, cfg.Burst, cfg.UserAgent = 0, 0, ""
	return cfg
}

// kubeconfig writes a kubeconfig file for user and returns its path.
func (e *env) kubeconfig(user string) (string, error) {
	cfg := e.userConfig(user)
	path := filepath.Join(e.work, user+".kubeconfig")
	kc := clientcmdapi.NewConfig()
	kc.Clusters["bench"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken}
	kc.Contexts["bench"] = &clientcmdapi.Context{Cluster: "bench", AuthInfo: user, Namespace: "default"}
	kc.CurrentContext = "bench"
	return path, clientcmd.WriteToFile(*kc, path)
}

// resource resolves an object's resource client.
func (e *env) resource(obj *unstructured.Unstructured) (dynamic.ResourceInterface, error) {
	gvk := obj.GroupVersionKind()
	m, err := e.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		e.mapper.Reset()
		m, err = e.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if err != nil {
		return nil, err
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		return e.dynamic.Resource(m.Resource).Namespace(obj.GetNamespace()), nil
	}
	return e.dynamic.Resource(m.Resource), nil
}

func (e *env) createNamespaces(ctx context.Context, names []string) error {
	for _, ns := range names {
		_, err := e.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create namespace %s: %w", ns, err)
		}
	}
	return nil
}

// groupKey is a resource in a namespace: the unit a LIST reads.
type groupKey struct {
	gvr       schema.GroupVersionResource
	namespace string
}

// groups maps each object to its LIST group and returns the groups.
func (e *env) groups(objs []*unstructured.Unstructured) (map[groupKey][]string, error) {
	out := map[groupKey][]string{}
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		m, err := e.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if meta.IsNoMatchError(err) {
			e.mapper.Reset()
			m, err = e.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		}
		if meta.IsNoMatchError(err) {
			continue // its CRD is gone, and every object of it
		}
		if err != nil {
			return nil, err
		}
		k := groupKey{gvr: m.Resource}
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			k.namespace = o.GetNamespace()
		}
		out[k] = append(out[k], o.GetName())
	}
	return out, nil
}

// countPresent counts how many of objs exist, with one LIST per group.
func (e *env) countPresent(ctx context.Context, objs []*unstructured.Unstructured) (int, error) {
	groups, err := e.groups(objs)
	if err != nil {
		return 0, err
	}
	n := 0
	for k, names := range groups {
		var ri dynamic.ResourceInterface = e.dynamic.Resource(k.gvr)
		if k.namespace != "" {
			ri = e.dynamic.Resource(k.gvr).Namespace(k.namespace)
		}
		list, err := ri.List(ctx, metav1.ListOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return 0, err
		}
		live := map[string]bool{}
		for _, it := range list.Items {
			live[it.GetName()] = true
		}
		for _, name := range names {
			if live[name] {
				n++
			}
		}
	}
	return n, nil
}

// waitGone polls until none of objs exists.
func (e *env) waitGone(ctx context.Context, objs []*unstructured.Unstructured, timeout time.Duration) error {
	var left int
	start, said := time.Now(), time.Now()
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		n, err := e.countPresent(ctx, objs)
		if err != nil {
			return false, nil
		}
		left = n
		if n > 0 && time.Since(said) > 30*time.Second {
			said = time.Now()
			logf("still waiting for %d objects to go (%s)", n, time.Since(start).Round(time.Second))
		}
		return n == 0, nil
	})
	if err != nil {
		return fmt.Errorf("%d objects still present: %w", left, err)
	}
	return nil
}

// cleanup deletes objs (namespaces last) and namespaces, and waits until
// all are gone, so that the next measurement starts from an empty cluster.
func (e *env) cleanup(ctx context.Context, objs []*unstructured.Unstructured, namespaces []string) error {
	nss, others := splitNamespaces(objs)
	var rest []*unstructured.Unstructured
	for _, o := range others {
		if !keepOnCleanup(o) {
			rest = append(rest, o)
		}
	}
	for _, ns := range namespaces {
		nss = append(nss, namespaceObject(ns))
	}
	for _, set := range [][]*unstructured.Unstructured{rest, nss} {
		errs := parallel(ctx, len(set), 16, func(ctx context.Context, i int) error {
			ri, err := e.resource(set[i])
			if meta.IsNoMatchError(err) {
				return nil
			}
			if err != nil {
				return err
			}
			err = ri.Delete(ctx, set[i].GetName(), metav1.DeleteOptions{PropagationPolicy: ptrTo(metav1.DeletePropagationBackground)})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return err
		})
		if err := firstError(errs); err != nil {
			return fmt.Errorf("cleanup: %w", err)
		}
	}
	all := append(append([]*unstructured.Unstructured{}, rest...), nss...)
	return e.waitGone(ctx, all, 5*time.Minute)
}

// deleteNamespaces deletes a workload's namespaces, which hold all its
// objects, and waits until they are gone: the namespace controller empties
// them faster than one DELETE per object would.
func (e *env) deleteNamespaces(ctx context.Context, w *workload) error {
	nss, _ := splitNamespaces(w.objects)
	for _, ns := range w.namespaces {
		nss = append(nss, namespaceObject(ns))
	}
	for _, ns := range nss {
		err := e.kube.CoreV1().Namespaces().Delete(ctx, ns.GetName(), metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return e.waitGone(ctx, nss, 5*time.Minute)
}

// keepOnCleanup spares the CRDs the control plane installed before any tool
// ran; the real payload carries them too.
func keepOnCleanup(o *unstructured.Unstructured) bool {
	if o.GetKind() != "CustomResourceDefinition" {
		return false
	}
	switch o.GetName() {
	case "clusterversions.config.openshift.io", "clusteroperators.config.openshift.io":
		return true
	}
	return false
}

func ptrTo[T any](v T) *T { return &v }

// parallel runs fn for 0..n-1 on workers goroutines and returns the errors
// by index. It starts no new item once ctx is done.
func parallel(ctx context.Context, n, workers int, fn func(ctx context.Context, i int) error) []error {
	errs := make([]error, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				errs[i] = fn(ctx, i)
			}
		}()
	}
	for i := 0; i < n; i++ {
		if ctx.Err() != nil {
			errs[i] = ctx.Err()
			continue
		}
		next <- i
	}
	close(next)
	wg.Wait()
	return errs
}

func firstError(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// countErrors returns how many errors are set and up to three distinct messages.
func countErrors(errs []error) (int, []string) {
	n := 0
	seen := map[string]bool{}
	var msgs []string
	for _, err := range errs {
		if err == nil {
			continue
		}
		n++
		if !seen[err.Error()] && len(msgs) < 3 {
			seen[err.Error()] = true
			msgs = append(msgs, err.Error())
		}
	}
	sort.Strings(msgs)
	return n, msgs
}

func mustGetwd() string {
	wd, err := os.Getwd()
	if err != nil {
		panic(err)
	}
	return wd
}
