package chaos

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/payload-applier/payload-applier/pkg/apply/deletion"
	"github.com/payload-applier/payload-applier/pkg/payload"
)

// env is a scenario in the cluster: what the tests read as admin to decide
// whether the applier did exactly what the payloads ask.
type env struct {
	sc   *scenario
	dyn  dynamic.Interface
	kube kubernetes.Interface
	// installed holds the UID and resourceVersion of every object once v1
	// and the bystanders are in place.
	installed map[payload.ObjectID]objectState
	// bystanders are objects no payload names, next to the payload's own.
	bystanders []*object
}

type objectState struct {
	uid types.UID
	rv  string
}

func newEnv(t *testing.T, sc *scenario) *env {
	t.Helper()
	cfg := testCluster.RESTConfig()
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{sc: sc, dyn: dyn, kube: kube}
	t.Cleanup(func() { e.cleanup(t) })
	return e
}

func (e *env) resource(o *object) dynamic.ResourceInterface {
	if o.kind.namespaced {
		return e.dyn.Resource(o.kind.gvr()).Namespace(o.namespace)
	}
	return e.dyn.Resource(o.kind.gvr())
}

// get reads an object; nil when it does not exist.
func (e *env) get(ctx context.Context, o *object) (*unstructured.Unstructured, error) {
	obj, err := e.resource(o).Get(ctx, o.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return obj, err
}

// createBystanders adds objects that no payload names, of payload kinds
// and in payload namespaces: nothing may touch them.
func (e *env) createBystanders(t *testing.T, ctx context.Context) {
	t.Helper()
	for i, ns := range e.sc.namespaces {
		e.bystanders = append(e.bystanders, &object{kind: kindConfigMap, namespace: ns, name: fmt.Sprintf("bystander-%d", i)})
	}
	e.bystanders = append(e.bystanders, &object{kind: kindClusterRole, name: e.sc.tag + "-bystander"})
	for _, b := range e.bystanders {
		m := b.manifest(e.sc.tag, 1, false)
		if _, err := e.resource(b).Create(ctx, &unstructured.Unstructured{Object: m}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create bystander %s: %v", b, err)
		}
	}
}

// installProblems checks that v1 is in place.
func (e *env) installProblems(ctx context.Context) []string {
	var out []string
	for _, o := range e.sc.filter(func(o *object) bool { return o.inV1 }) {
		out = append(out, e.mustContain(ctx, o, 1)...)
	}
	return out
}

// recordInstalled remembers every object's UID and resourceVersion, to
// show later that the ones v2 leaves alone were not touched.
func (e *env) recordInstalled(t *testing.T, ctx context.Context) {
	t.Helper()
	if p := e.installProblems(ctx); len(p) > 0 {
		t.Fatalf("v1 is not installed:\n  %s", strings.Join(p, "\n  "))
	}
	e.installed = map[payload.ObjectID]objectState{}
	for _, o := range append(e.sc.filter(func(o *object) bool { return o.inV1 }), e.bystanders...) {
		live, err := e.get(ctx, o)
		if err != nil || live == nil {
			t.Fatalf("read %s after install: %v", o, err)
		}
		e.installed[o.id()] = objectState{uid: live.GetUID(), rv: live.GetResourceVersion()}
	}
}

// problems lists every way the cluster differs from what v2 asks: every
// manifest v2 applies exists with its fields, every object it marks is
// gone, and objects it does not name (v1's dropped ones, the bystanders)
// are exactly as they were after the install. Empty means converged.
func (e *env) problems(ctx context.Context) []string {
	var out []string
	for _, o := range e.sc.objects {
		switch {
		case o.inV2Apply():
			out = append(out, e.mustContain(ctx, o, o.v2Rev())...)
		case o.fate == fateDelete:
			live, err := e.get(ctx, o)
			switch {
			case err != nil:
				out = append(out, fmt.Sprintf("%s: %v", o, err))
			case live != nil:
				out = append(out, fmt.Sprintf("%s is marked for deletion but still exists (deletionTimestamp %v, finalizers %v)",
					o, live.GetDeletionTimestamp(), live.GetFinalizers()))
			}
		case o.fate == fateDrop && o.inV1:
			out = append(out, e.mustBeUntouched(ctx, o)...)
		}
	}
	for _, b := range e.bystanders {
		out = append(out, e.mustBeUntouched(ctx, b)...)
	}
	return out
}

func (e *env) mustContain(ctx context.Context, o *object, rev int) []string {
	live, err := e.get(ctx, o)
	switch {
	case err != nil:
		return []string{fmt.Sprintf("%s: %v", o, err)}
	case live == nil:
		return []string{fmt.Sprintf("%s (rev %d) does not exist", o, rev)}
	case live.GetDeletionTimestamp() != nil:
		return []string{fmt.Sprintf("%s (rev %d) is being deleted", o, rev)}
	}
	if path, ok := contains(live.Object, o.want(e.sc.tag, rev), ""); !ok {
		return []string{fmt.Sprintf("%s does not hold rev %d: %s differs", o, rev, path)}
	}
	return nil
}

func (e *env) mustBeUntouched(ctx context.Context, o *object) []string {
	want, ok := e.installed[o.id()]
	if !ok {
		return []string{fmt.Sprintf("%s: no state recorded after install", o)}
	}
	live, err := e.get(ctx, o)
	switch {
	case err != nil:
		return []string{fmt.Sprintf("%s: %v", o, err)}
	case live == nil:
		return []string{fmt.Sprintf("%s was deleted, but no payload marks it", o)}
	case live.GetUID() != want.uid || live.GetResourceVersion() != want.rv:
		return []string{fmt.Sprintf("%s was changed (uid %s→%s, resourceVersion %s→%s), but v2 does not name it",
			o, want.uid, live.GetUID(), want.rv, live.GetResourceVersion())}
	}
	return nil
}

// contains reports whether got holds every field of want: maps may have
// more keys, lists must match element by element. It returns the first
// path that differs.
func contains(got, want interface{}, path string) (string, bool) {
	switch w := want.(type) {
	case map[string]interface{}:
		g, ok := got.(map[string]interface{})
		if !ok {
			return path, false
		}
		keys := make([]string, 0, len(w))
		for k := range w {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if p, ok := contains(g[k], w[k], path+"."+k); !ok {
				return p, false
			}
		}
		return "", true
	case []interface{}:
		g, ok := got.([]interface{})
		if !ok || len(g) != len(w) {
			return path, false
		}
		for i := range w {
			if p, ok := contains(g[i], w[i], fmt.Sprintf("%s[%d]", path, i)); !ok {
				return p, false
			}
		}
		return "", true
	default:
		return path, reflect.DeepEqual(got, want)
	}
}

// presentMarked lists the objects v2 marks for deletion that still exist.
func (e *env) presentMarked(t *testing.T, ctx context.Context) map[payload.ObjectID]bool {
	t.Helper()
	out := map[payload.ObjectID]bool{}
	for _, o := range e.sc.marked() {
		live, err := e.get(ctx, o)
		if err != nil {
			t.Fatalf("read %s: %v", o, err)
		}
		if live != nil {
			out[o.id()] = true
		}
	}
	return out
}

// ledgerProblems checks the ledger as stored in the cluster: every object
// v2 marks has a record that says it is gone.
func (e *env) ledgerProblems(ctx context.Context, namespace, name string) []string {
	recs, err := deletion.NewConfigMapStore(e.kube, namespace, name).Load(ctx)
	if err != nil {
		return []string{fmt.Sprintf("load ledger %s/%s: %v", namespace, name, err)}
	}
	byID := map[payload.ObjectID]deletion.Record{}
	for _, r := range recs {
		byID[r.ID] = r
	}
	var out []string
	for _, o := range e.sc.marked() {
		r, ok := byID[o.id()]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("ledger %s/%s has no record of %s", namespace, name, o))
		case !r.Done():
			out = append(out, fmt.Sprintf("ledger %s/%s says %s is %s, but it is gone", namespace, name, o, r.State))
		}
	}
	return out
}

// cleanup releases held objects, so their namespaces can go, and deletes
// the scenario's cluster-scoped objects.
func (e *env) cleanup(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, o := range e.sc.objects {
		if o.hold {
			if err := e.release(ctx, o); err != nil && !apierrors.IsNotFound(err) {
				t.Logf("cleanup: release %s: %v", o, err)
			}
		}
		if !o.kind.namespaced {
			if err := e.resource(o).Delete(ctx, o.name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Logf("cleanup: delete %s: %v", o, err)
			}
		}
	}
	for _, b := range e.bystanders {
		if !b.kind.namespaced {
			_ = e.resource(b).Delete(ctx, b.name, metav1.DeleteOptions{})
		}
	}
}

// release removes the hold finalizer.
func (e *env) release(ctx context.Context, o *object) error {
	patch := []byte(`{"metadata":{"finalizers":null}}`)
	_, err := e.resource(o).Patch(ctx, o.name, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}
