package e2e

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	stdsync "sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"k8s.io/utils/ptr"

	"github.com/payload-applier/payload-applier/pkg/apply"
	"github.com/payload-applier/payload-applier/pkg/graph"
	"github.com/payload-applier/payload-applier/pkg/payload"
)

// manifestsDir is the operator's own deployment, relative to this package.
var manifestsDir = filepath.Join("..", "..", "manifests")

// operatorArgs is how the Deployment runs the operator; docs/operations.md
// documents these flags.
var operatorArgs = []string{"start", "--release-cache", "/var/cache/payload-applier", "--listen", "0.0.0.0:9099", "--namespace", "openshift-cluster-version"}

// TestManifestsPlan runs `payload-applier plan` on manifests/ against the
// test cluster: the directory must load and validate as a release payload,
// and every object must be one plan would create, update or leave as is,
// namespace first.
func TestManifestsPlan(t *testing.T) {
	p := runPlan(t, buildCLI(t), "--payload", manifestsDir)
	if p.Release != "0.1.0" || p.Mode != string(graph.ModeUpdate) {
		t.Errorf("plan of release %q in mode %q, want 0.1.0 in update mode", p.Release, p.Mode)
	}
	var names []string
	for _, n := range p.Nodes {
		for _, task := range n.Tasks {
			names = append(names, task.Kind+"/"+task.Name)
			if !slices.Contains([]string{"create", "update", "unchanged"}, task.Action) {
				t.Errorf("plan would %s %s/%s (%s)", task.Action, task.Kind, task.Name, task.Reason)
			}
		}
	}
	if len(names) != 7 || names[0] != "Namespace/openshift-cluster-version" {
		t.Errorf("planned %v: want 7 objects, the namespace first", names)
	}
}

// TestManifestsAgree checks that manifests/ validates without findings for
// the default profile and that its objects agree with each other and with
// the names the engine protects as its own.
func TestManifestsAgree(t *testing.T) {
	rel, err := payload.Load(manifestsDir, payload.DefaultLoadOptions())
	if err != nil {
		t.Fatalf("manifests/ is not a valid payload: %v", err)
	}
	if rel.Version != "0.1.0" {
		t.Errorf("version = %q, want 0.1.0", rel.Version)
	}
	for _, w := range rel.Warnings {
		t.Errorf("lint finding: %s", w)
	}
	for _, s := range rel.Skipped {
		t.Errorf("%s is left out for the default profile: %s", s.Manifest.Position(), s.Reason)
	}

	self := apply.DefaultSelf()
	want := []string{
		"Namespace/" + self.Namespace,
		"ServiceAccount/" + self.Namespace + "/cluster-version-operator",
		"ClusterRoleBinding.rbac.authorization.k8s.io/cluster-version-operator",
		"Role.rbac.authorization.k8s.io/" + self.Namespace + "/cluster-version-operator",
		"RoleBinding.rbac.authorization.k8s.io/" + self.Namespace + "/cluster-version-operator",
		"Deployment.apps/" + self.Namespace + "/" + self.Deployment,
		"Service/" + self.Namespace + "/cluster-version-operator",
	}
	var got []string
	for _, m := range rel.Manifests {
		got = append(got, m.ID().String())
		if ann := m.Obj.GetAnnotations()["include.release.openshift.io/self-managed-high-availability"]; ann != "true" {
			t.Errorf("%s lacks the self-managed-high-availability profile annotation", m.Position())
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("objects in payload order:\n got %v\nwant %v", got, want)
	}

	objects := map[string]*unstructured.Unstructured{}
	for _, m := range rel.Manifests {
		objects[m.GVK.Kind] = m.Obj
	}
	var deploy appsv1.Deployment
	var svc corev1.Service
	var crb rbacv1.ClusterRoleBinding
	var role rbacv1.Role
	for kind, into := range map[string]any{"Deployment": &deploy, "Service": &svc, "ClusterRoleBinding": &crb, "Role": &role} {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(objects[kind].Object, into); err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
	}
	pod := deploy.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("the Deployment has %d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	if !slices.Equal(c.Args, operatorArgs) {
		t.Errorf("container args = %v, want %v", c.Args, operatorArgs)
	}
	if !strings.HasPrefix(c.Image, "quay.io/payload-applier/payload-applier:") {
		t.Errorf("image = %s, want the one make image pushes (docs/operations.md)", c.Image)
	}
	// The root filesystem is read-only: the release cache needs a
	// writable volume of its own.
	cache := slices.IndexFunc(c.VolumeMounts, func(v corev1.VolumeMount) bool { return v.MountPath == "/var/cache/payload-applier" && !v.ReadOnly })
	if cache < 0 {
		t.Fatalf("no writable volume at the --release-cache /var/cache/payload-applier: %+v", c.VolumeMounts)
	}
	if !slices.ContainsFunc(pod.Volumes, func(v corev1.Volume) bool {
		return v.Name == c.VolumeMounts[cache].Name && v.EmptyDir != nil && v.EmptyDir.SizeLimit != nil
	}) {
		t.Errorf("the release cache is not a bounded emptyDir: %+v", pod.Volumes)
	}
	if sa := objects["ServiceAccount"].GetName(); pod.ServiceAccountName != sa {
		t.Errorf("serviceAccountName = %q, want the manifests' ServiceAccount %q", pod.ServiceAccountName, sa)
	}
	for k, v := range svc.Spec.Selector {
		if deploy.Spec.Template.Labels[k] != v {
			t.Errorf("the Service selects %s=%s, which the Deployment's pods do not carry", k, v)
		}
	}
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 9099 || svc.Spec.Ports[0].TargetPort.StrVal != "metrics" ||
		len(c.Ports) != 1 || c.Ports[0].Name != "metrics" || c.Ports[0].ContainerPort != 9099 {
		t.Errorf("metrics must be served on 9099 and exposed by the Service: service ports %+v, container ports %+v", svc.Spec.Ports, c.Ports)
	}
	if crb.RoleRef.Name != "cluster-admin" || len(crb.Subjects) != 1 || crb.Subjects[0].Name != pod.ServiceAccountName || crb.Subjects[0].Namespace != self.Namespace {
		t.Errorf("the ClusterRoleBinding must give the operator's ServiceAccount cluster-admin: %+v %+v", crb.RoleRef, crb.Subjects)
	}
	for _, res := range []string{"leases", "configmaps", "events"} {
		if !slices.ContainsFunc(role.Rules, func(r rbacv1.PolicyRule) bool {
			return slices.Contains(r.Resources, res) && slices.Contains(r.Verbs, "create")
		}) {
			t.Errorf("the Role does not let the operator create %s in its namespace", res)
		}
	}
}

// TestManifestsDryRunApply server-side applies every manifest in
// manifests/, crds/ included, with dryRun=All: the apiserver validates,
// defaults and admits each object as it would for a real deployment, and
// stores nothing. The CRDs already exist in the test cluster.
func TestManifestsDryRunApply(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	warnings := &warningRecorder{}
	cfg := testCluster.RESTConfig()
	cfg.WarningHandler = warnings
	c := newClientsFor(t, cfg)
	dyn, mapper, kube := c.dynamic, c.mapper, c.kube

	var objs []*unstructured.Unstructured
	for _, dir := range []string{manifestsDir, filepath.Join(manifestsDir, "crds")} {
		objs = append(objs, readObjects(t, dir)...)
	}
	// 7 of the operator's own, 2 CRDs.
	if len(objs) < 9 {
		t.Fatalf("read only %d objects from manifests/ and manifests/crds/", len(objs))
	}

	// Namespaced objects are admitted only into an existing namespace, and a
	// dry run of the Namespace does not create it. The operator's Bootstrap
	// creates this namespace too, so other tests may share it; it is left
	// in place.
	ns := apply.DefaultSelf().Namespace
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}

	for _, obj := range objs {
		name := obj.GetKind() + "/" + obj.GetName()
		t.Run(name, func(t *testing.T) {
			out := dryRunApply(ctx, t, dyn, mapper, obj, "")
			if out.GetUID() == "" {
				t.Errorf("the dry run returned no uid; the apiserver did not process %s", name)
			}
			if obj.GetKind() == "Deployment" {
				policy, _, _ := unstructured.NestedString(out.Object, "spec", "template", "spec", "restartPolicy")
				if policy != "Always" {
					t.Errorf("restartPolicy = %q after the dry run, want the apiserver's default Always", policy)
				}
			}
		})
	}

	for _, w := range warnings.all() {
		t.Errorf("apiserver warning: %s", w)
	}
	crbs := kube.RbacV1().ClusterRoleBindings()
	if _, err := crbs.Get(ctx, "cluster-version-operator", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the dry run stored ClusterRoleBinding cluster-version-operator (get error %v)", err)
	}

	t.Run("the Deployment meets the restricted pod security standard its namespace enforces", func(t *testing.T) {
		// The operator's namespace may already exist without the labels, so
		// the check runs in a namespace that warns on restricted.
		probe := testCluster.CreateNamespace(t)
		patch := []byte(`{"metadata":{"labels":{"pod-security.kubernetes.io/warn":"restricted"}}}`)
		if _, err := kube.CoreV1().Namespaces().Patch(ctx, probe, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		warnings.reset()
		for _, obj := range objs {
			if obj.GetKind() == "Deployment" {
				dryRunApply(ctx, t, dyn, mapper, obj, probe)
			}
		}
		if ws := warnings.all(); len(ws) > 0 {
			t.Errorf("pod security warnings for the Deployment:\n%s", strings.Join(ws, "\n"))
		}
	})
}

// dryRunApply server-side applies obj with dryRun=All, in namespace when
// it is set, and fails the test on error.
func dryRunApply(ctx context.Context, t *testing.T, dyn dynamic.Interface, mapper *restmapper.DeferredDiscoveryRESTMapper, obj *unstructured.Unstructured, namespace string) *unstructured.Unstructured {
	t.Helper()
	obj = obj.DeepCopy()
	if namespace != "" {
		obj.SetNamespace(namespace)
	}
	gvk := obj.GroupVersionKind()
	mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		t.Fatalf("map %s: %v", gvk, err)
	}
	var ri dynamic.ResourceInterface = dyn.Resource(mapping.Resource)
	if obj.GetNamespace() != "" {
		ri = dyn.Resource(mapping.Resource).Namespace(obj.GetNamespace())
	}
	data, err := obj.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	out, err := ri.Patch(ctx, obj.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{
		DryRun:       []string{metav1.DryRunAll},
		FieldManager: "payload-applier-manifests-test",
		Force:        ptr.To(true),
	})
	if err != nil {
		t.Fatalf("dry-run apply of %s %s/%s: %v", gvk.Kind, obj.GetNamespace(), obj.GetName(), err)
	}
	return out
}

// readObjects parses every YAML document of the .yaml files in dir, not
// below it, as kubectl apply -f dir would.
func readObjects(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			obj := &unstructured.Unstructured{}
			err := dec.Decode(&obj.Object)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if len(obj.Object) == 0 {
				continue
			}
			out = append(out, obj)
		}
	}
	return out
}

// warningRecorder collects the apiserver's warning headers.
type warningRecorder struct {
	mu       stdsync.Mutex
	warnings []string
}

func (w *warningRecorder) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.warnings = append(w.warnings, text)
}

func (w *warningRecorder) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.warnings...)
}

func (w *warningRecorder) reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.warnings = nil
}
