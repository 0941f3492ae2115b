package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	openshiftapi "github.com/openshift/api"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/payload-applier/payload-applier/pkg/payload"
)

// includeAnnotation keeps a manifest in the default (self-managed) profile.
const includeAnnotation = "include.release.openshift.io/self-managed-high-availability"

// benchComponents is how many components a generated payload spreads its
// manifests over. Install mode runs one worker per component, so 16 gives
// payload-applier the same concurrency as the raw limit's 16 workers.
const benchComponents = 16

// workload is one set of objects, written three ways: as a release payload
// for payload-applier, as the same payload with every manifest marked for
// deletion, and as plain YAML for kapp and kubectl.
type workload struct {
	name string
	// objects are the desired objects in payload order.
	objects []*unstructured.Unstructured
	// files maps a payload file name to its objects' indexes, in order.
	files []payloadFile
	// namespaces must exist before any tool runs and are not in objects.
	namespaces []string

	// typedCount is how many objects typedForKapp rewrote.
	typedCount int

	payloadDir string // release payload, version 1.0.0
	deleteDir  string // the same manifests marked for deletion, version 1.0.1
	flatDir    string // plain YAML, one file per payload file, same order
}

type payloadFile struct {
	name    string
	objects []int
}

// configMapWorkload is n ConfigMaps in namespace ns, spread evenly over
// benchComponents components.
func configMapWorkload(name, ns string, n int) *workload {
	w := &workload{name: name, namespaces: []string{ns}}
	per := (n + benchComponents - 1) / benchComponents
	for c := 0; c < benchComponents && len(w.objects) < n; c++ {
		f := payloadFile{name: fmt.Sprintf("0000_50_bench-%02d_00_configmaps.yaml", c)}
		for i := 0; i < per && len(w.objects) < n; i++ {
			f.objects = append(f.objects, len(w.objects))
			w.objects = append(w.objects, configMap(ns, fmt.Sprintf("bench-%02d-%04d", c, i), len(w.objects)))
		}
		w.files = append(w.files, f)
	}
	return w
}

// mixedKinds are the kinds of a mixed workload, in each component's file order.
var mixedKinds = []string{"ConfigMap", "Secret", "ServiceAccount", "Service", "Role", "RoleBinding"}

// mixedWorkload is n manifests of mixed kinds: benchComponents components,
// each creating a namespace of its own first, then ConfigMaps, Secrets,
// ServiceAccounts, headless Services, Roles and RoleBindings in equal
// shares. prefix keeps each tool's names apart.
func mixedWorkload(name, prefix string, n int) *workload {
	w := &workload{name: name}
	const nsPerComponent = 1
	perComponent := n / benchComponents
	for c := 0; c < benchComponents; c++ {
		count := perComponent
		if c < n%benchComponents {
			count++
		}
		var nss []string
		nsFile := payloadFile{name: fmt.Sprintf("0000_50_%s-%02d_00_namespaces.yaml", prefix, c)}
		for k := 0; k < nsPerComponent; k++ {
			ns := fmt.Sprintf("%s-%02d-%d", prefix, c, k)
			nss = append(nss, ns)
			nsFile.objects = append(nsFile.objects, len(w.objects))
			w.objects = append(w.objects, namespaceObject(ns))
		}
		w.files = append(w.files, nsFile)
		rest := count - nsPerComponent
		for ki, kind := range mixedKinds {
			share := rest / len(mixedKinds)
			if ki < rest%len(mixedKinds) {
				share++
			}
			f := payloadFile{name: fmt.Sprintf("0000_50_%s-%02d_%02d_%ss.yaml", prefix, c, ki+1, strings.ToLower(kind))}
			for i := 0; i < share; i++ {
				ns := nss[i%len(nss)]
				f.objects = append(f.objects, len(w.objects))
				w.objects = append(w.objects, mixedObject(kind, ns, fmt.Sprintf("%s-%04d", strings.ToLower(kind), i), len(w.objects)))
			}
			w.files = append(w.files, f)
		}
	}
	return w
}

// releaseWorkload is a loaded release's manifests, as payload-applier
// would send them, for the tools that read plain YAML. namespaces are the
// ones its manifests use but do not create.
func releaseWorkload(name string, rel *payload.Release) *workload {
	w := &workload{name: name, payloadDir: rel.Dir}
	created := map[string]bool{}
	for _, m := range rel.Manifests {
		if m.GVK.Group == "" && m.GVK.Kind == "Namespace" {
			created[m.Obj.GetName()] = true
		}
	}
	for _, m := range rel.Manifests {
		if m.Delete() {
			continue
		}
		if ns := m.Obj.GetNamespace(); ns != "" && !created[ns] {
			created[ns] = true
			w.namespaces = append(w.namespaces, ns)
		}
		w.files = append(w.files, payloadFile{name: fmt.Sprintf("%04d_%s", len(w.objects), filepath.Base(m.File)), objects: []int{len(w.objects)}})
		w.objects = append(w.objects, desired(m.Obj))
	}
	return w
}

// desired strips what a client never sends: status and server-set metadata.
func desired(obj *unstructured.Unstructured) *unstructured.Unstructured {
	out := obj.DeepCopy()
	delete(out.Object, "status")
	for _, f := range []string{"creationTimestamp", "resourceVersion", "uid", "generation", "managedFields"} {
		unstructured.RemoveNestedField(out.Object, "metadata", f)
	}
	return out
}

func object(apiVersion, kind, ns, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]interface{}{}}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetAnnotations(map[string]string{includeAnnotation: "true"})
	u.SetLabels(map[string]string{"app.kubernetes.io/part-of": "payload-applier-bench"})
	return u
}

func configMap(ns, name string, seq int) *unstructured.Unstructured {
	u := object("v1", "ConfigMap", ns, name)
	u.Object["data"] = map[string]interface{}{
		"index":  fmt.Sprint(seq),
		"config": fmt.Sprintf("log-level: info\nreplicas: %d\nendpoint: https://svc-%d.example.invalid:8443\n", seq%5+1, seq),
		"flag":   "true",
	}
	return u
}

func namespaceObject(name string) *unstructured.Unstructured {
	return object("v1", "Namespace", "", name)
}

func mixedObject(kind, ns, name string, seq int) *unstructured.Unstructured {
	switch kind {
	case "ConfigMap":
		return configMap(ns, name, seq)
	case "Secret":
		u := object("v1", "Secret", ns, name)
		u.Object["type"] = "Opaque"
		u.Object["stringData"] = map[string]interface{}{"token": fmt.Sprintf("bench-token-%08d", seq)}
		return u
	case "ServiceAccount":
		return object("v1", "ServiceAccount", ns, name)
	case "Service":
		u := object("v1", "Service", ns, name)
		// Headless: the bench's service CIDR holds 254 addresses.
		u.Object["spec"] = map[string]interface{}{
			"clusterIP": "None",
			"selector":  map[string]interface{}{"app": name},
			"ports":     []interface{}{map[string]interface{}{"name": "https", "port": int64(8443), "targetPort": int64(8443), "protocol": "TCP"}},
		}
		return u
	case "Role":
		u := object("rbac.authorization.k8s.io/v1", "Role", ns, name)
		u.Object["rules"] = []interface{}{map[string]interface{}{
			"apiGroups": []interface{}{""}, "resources": []interface{}{"configmaps"}, "verbs": []interface{}{"get", "list", "watch"},
		}}
		return u
	case "RoleBinding":
		u := object("rbac.authorization.k8s.io/v1", "RoleBinding", ns, name)
		u.Object["roleRef"] = map[string]interface{}{"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name}
		u.Object["subjects"] = []interface{}{map[string]interface{}{"kind": "ServiceAccount", "name": "default", "namespace": ns}}
		return u
	}
	panic("unknown kind " + kind)
}

// write renders the workload's directories under root.
func (w *workload) write(root string) error {
	base := filepath.Join(root, w.name)
	if w.payloadDir == "" {
		w.payloadDir = filepath.Join(base, "payload")
		w.deleteDir = filepath.Join(base, "delete")
		if err := w.writePayload(w.payloadDir, "1.0.0", false); err != nil {
			return err
		}
		if err := w.writePayload(w.deleteDir, "1.0.1", true); err != nil {
			return err
		}
	}
	w.flatDir = filepath.Join(base, "flat")
	return w.writeFiles(w.flatDir, false)
}

func (w *workload) writePayload(dir, version string, markDelete bool) error {
	if err := w.writeFiles(dir, markDelete); err != nil {
		return err
	}
	meta := fmt.Sprintf(`{"kind":"cincinnati-metadata-v0","version":%q,"previous":[],"metadata":{}}`, version)
	refs := fmt.Sprintf(`{"kind":"ImageStream","apiVersion":"image.openshift.io/v1","metadata":{"name":%q},"spec":{"tags":[]}}`, version)
	if err := os.WriteFile(filepath.Join(dir, "release-metadata"), []byte(meta), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "image-references"), []byte(refs), 0o644)
}

func (w *workload) writeFiles(dir string, markDelete bool) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, f := range w.files {
		var b strings.Builder
		for i, idx := range f.objects {
			obj := w.objects[idx]
			if markDelete {
				obj = obj.DeepCopy()
				ann := obj.GetAnnotations()
				ann[payload.DeleteAnnotation] = "true"
				obj.SetAnnotations(ann)
			}
			data, err := yaml.Marshal(obj.Object)
			if err != nil {
				return err
			}
			if i > 0 {
				b.WriteString("---\n")
			}
			b.Write(data)
		}
		if err := os.WriteFile(filepath.Join(dir, f.name), []byte(b.String()), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// typedForKapp makes the real payload deployable by kapp here, on the same
// objects. It rewrites through their Go types, the way payload-applier's own
// fallback does, the objects kapp cannot create as written:
// SecurityContextConstraints, whose schema requires nullable fields the
// manifests leave out, and ClusterOperators, whose schema requires a spec;
// the server stores the same either way. And it tells kapp not to wait for
// anything but CRDs and ClusterOperators, which is what payload-applier
// waits for in an install: no Deployment can become ready without nodes.
func (w *workload) typedForKapp() error {
	scheme := runtime.NewScheme()
	if err := openshiftapi.Install(scheme); err != nil {
		return err
	}
	for i, o := range w.objects {
		switch o.GetKind() {
		case "SecurityContextConstraints", "ClusterOperator":
		case "CustomResourceDefinition", "Namespace":
			continue
		default:
			ann := o.GetAnnotations()
			if ann == nil {
				ann = map[string]string{}
			}
			ann["kapp.k14s.io/disable-wait"] = ""
			o.SetAnnotations(ann)
			continue
		}
		typed, err := scheme.New(o.GroupVersionKind())
		if err != nil {
			return err
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, typed); err != nil {
			return err
		}
		content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
		if err != nil {
			return err
		}
		out := &unstructured.Unstructured{Object: content}
		out.SetGroupVersionKind(o.GroupVersionKind())
		w.objects[i] = desired(out)
		w.typedCount++
	}
	return nil
}
