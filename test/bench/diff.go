package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"

	"github.com/payload-applier/payload-applier/pkg/payload"
)

// The differential check (-diff DIR): once an operator Completed, the
// objects the payload names are dumped, a fixed set of hand edits is made,
// and once its next reconcile pass undid them the objects are dumped
// again; after the runs the CVO's dumps and payload-applier's are compared.

const (
	phaseInstall   = "install"
	phaseReconcile = "reconcile"
	phaseUpdate    = "update"
	// reconcileWait bounds the wait for an operator to undo the hand
	// edits: the CVO resyncs every 2 to 4 minutes.
	reconcileWait = 8 * time.Minute
)

// normalise returns a copy of obj without what differs between any two
// clusters (identities, timestamps, managedFields, Service cluster IPs)
// and without the status the operators do not write: every status but the
// ClusterVersion's, and of that only what the operator decides.
func normalise(obj map[string]interface{}) map[string]interface{} {
	u := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(obj)}
	for _, f := range []string{"managedFields", "resourceVersion", "uid", "creationTimestamp", "generation", "selfLink", "deletionTimestamp"} {
		unstructured.RemoveNestedField(u.Object, "metadata", f)
	}
	if refs, ok, _ := unstructured.NestedSlice(u.Object, "metadata", "ownerReferences"); ok {
		for _, r := range refs {
			if m, ok := r.(map[string]interface{}); ok {
				delete(m, "uid")
			}
		}
		_ = unstructured.SetNestedSlice(u.Object, refs, "metadata", "ownerReferences")
	}
	// A Service's cluster IPs are the cluster's choice, unless headless.
	if u.GetKind() == "Service" {
		if ip, _, _ := unstructured.NestedString(u.Object, "spec", "clusterIP"); ip != "None" {
			unstructured.RemoveNestedField(u.Object, "spec", "clusterIP")
			unstructured.RemoveNestedField(u.Object, "spec", "clusterIPs")
		}
	}
	status, hasStatus := u.Object["status"].(map[string]interface{})
	delete(u.Object, "status")
	if u.GetKind() != "ClusterVersion" || !hasStatus {
		return u.Object
	}
	kept := map[string]interface{}{}
	if d, ok := status["desired"].(map[string]interface{}); ok {
		kept["desired"] = pick(d, "version", "image")
	}
	if conds, ok := status["conditions"].([]interface{}); ok {
		var out []interface{}
		for _, c := range conds {
			if m, ok := c.(map[string]interface{}); ok {
				out = append(out, pick(m, "type", "status", "reason"))
			}
		}
		sort.SliceStable(out, func(i, j int) bool {
			return fmt.Sprint(out[i].(map[string]interface{})["type"]) < fmt.Sprint(out[j].(map[string]interface{})["type"])
		})
		kept["conditions"] = out
	}
	if hist, ok := status["history"].([]interface{}); ok {
		var out []interface{}
		for _, h := range hist {
			if m, ok := h.(map[string]interface{}); ok {
				out = append(out, pick(m, "state", "version"))
			}
		}
		kept["history"] = out
	}
	for _, f := range []string{"capabilities", "conditionalUpdates", "availableUpdates"} {
		if v, ok := status[f]; ok {
			kept[f] = v
		}
	}
	u.Object["status"] = kept
	return u.Object
}

// pick is m with only the keys given.
func pick(m map[string]interface{}, keys ...string) map[string]interface{} {
	out := map[string]interface{}{}
	for _, k := range keys {
		if v, ok := m[k]; ok {
			out[k] = v
		}
	}
	return out
}

// dumpName is the file an object is dumped to.
func dumpName(id payload.ObjectID) string {
	group := id.Group
	if group == "" {
		group = "core"
	}
	return fmt.Sprintf("%s_%s_%s_%s.yaml", group, id.Kind, id.Namespace, id.Name)
}

// dumpObjects writes every object rel names, normalised, one file each
// under dir; for a delete manifest, whether the object exists. An object
// that is absent gets no file.
func dumpObjects(ctx context.Context, e *env, rel *payload.Release, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	cv := &payload.Manifest{}
	cv.Obj = &unstructured.Unstructured{}
	cv.Obj.SetAPIVersion("config.openshift.io/v1")
	cv.Obj.SetKind("ClusterVersion")
	cv.Obj.SetName("version")
	cv.GVK = cv.Obj.GroupVersionKind()
	var failed []string
	for _, m := range append(slices.Clone(rel.Manifests), cv) {
		client, err := e.resource(m.Obj)
		if err != nil {
			failed = append(failed, fmt.Sprintf("%s: %v", m.ID(), err))
			continue
		}
		live, err := client.Get(ctx, m.Obj.GetName(), metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			failed = append(failed, fmt.Sprintf("%s: %v", m.ID(), err))
			continue
		}
		var out map[string]interface{}
		switch {
		case m.Delete():
			out = map[string]interface{}{"deleteManifest": true, "exists": err == nil}
		case err != nil:
			continue
		default:
			out = normalise(live.Object)
		}
		data, err := yaml.Marshal(out)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, dumpName(m.ID())), data, 0o644); err != nil {
			return err
		}
	}
	if len(failed) > 0 {
		logf("dump %s: %d objects not read, first: %s", dir, len(failed), failed[0])
	}
	return nil
}

// handEdit is one change an administrator might make by hand to an object
// the payload applies.
type handEdit struct {
	what             string
	apiVersion, kind string
	namespace, name  string
	// field renders the edited field of an object.
	field func(u *unstructured.Unstructured) string
	// edit changes the field; nil deletes the object.
	edit func(u *unstructured.Unstructured)
	// kept is an edit the manifest does not contradict (an extra label):
	// the operators need not undo it, so the wait does not wait for it.
	kept bool
}

// editResult is what became of a hand edit.
type editResult struct {
	What     string
	Reverted bool
	// After is from the edit to the first poll that saw it undone.
	After time.Duration
	// Final is the field's value at the end of the wait.
	Final string
}

const extraLabel = "bench.payload-applier.io/extra"

// handEdits are made on objects of the real 4.20 payload.
var handEdits = []handEdit{
	{
		what: "Deployment openshift-dns-operator/dns-operator: spec.replicas 1 → 3", apiVersion: "apps/v1", kind: "Deployment",
		namespace: "openshift-dns-operator", name: "dns-operator",
		field: fieldAt("spec", "replicas"),
		edit: func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, int64(3), "spec", "replicas")
		},
	},
	{
		what: "Deployment openshift-etcd-operator/etcd-operator: first container's image → example.invalid/edited:1", apiVersion: "apps/v1", kind: "Deployment",
		namespace: "openshift-etcd-operator", name: "etcd-operator",
		field: firstImage,
		edit: func(u *unstructured.Unstructured) {
			cs, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
			cs[0].(map[string]interface{})["image"] = "example.invalid/edited:1"
			_ = unstructured.SetNestedSlice(u.Object, cs, "spec", "template", "spec", "containers")
		},
	},
	{
		what: "ConfigMap openshift-etcd-operator/etcd-operator-config: data[config.yaml] → edited", apiVersion: "v1", kind: "ConfigMap",
		namespace: "openshift-etcd-operator", name: "etcd-operator-config",
		field: fieldAt("data", "config.yaml"),
		edit: func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, "edited", "data", "config.yaml")
		},
	},
	{
		what: "ClusterRole system:openshift:cluster-config-operator:cluster-reader: label rbac.authorization.k8s.io/aggregate-to-cluster-reader removed", apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRole",
		name:  "system:openshift:cluster-config-operator:cluster-reader",
		field: fieldAt("metadata", "labels", "rbac.authorization.k8s.io/aggregate-to-cluster-reader"),
		edit: func(u *unstructured.Unstructured) {
			unstructured.RemoveNestedField(u.Object, "metadata", "labels", "rbac.authorization.k8s.io/aggregate-to-cluster-reader")
		},
	},
	{
		what: "ServiceAccount openshift-dns-operator/dns-operator deleted", apiVersion: "v1", kind: "ServiceAccount",
		namespace: "openshift-dns-operator", name: "dns-operator",
	},
	{
		what: "Service openshift-etcd-operator/metrics deleted", apiVersion: "v1", kind: "Service",
		namespace: "openshift-etcd-operator", name: "metrics",
	},
	{
		what: "Namespace openshift-dns-operator: annotation workload.openshift.io/allowed management → edited", apiVersion: "v1", kind: "Namespace",
		name:  "openshift-dns-operator",
		field: fieldAt("metadata", "annotations", "workload.openshift.io/allowed"),
		edit: func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, "edited", "metadata", "annotations", "workload.openshift.io/allowed")
		},
	},
	{
		what: "ClusterRole system:openshift:machine-config-operator:cluster-reader: extra label " + extraLabel + "=kept added", apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRole",
		name:  "system:openshift:machine-config-operator:cluster-reader",
		field: fieldAt("metadata", "labels", extraLabel),
		edit: func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, "kept", "metadata", "labels", extraLabel)
		},
		kept: true,
	},
}

func fieldAt(path ...string) func(u *unstructured.Unstructured) string {
	return func(u *unstructured.Unstructured) string {
		v, ok, _ := unstructured.NestedFieldNoCopy(u.Object, path...)
		if !ok {
			return "<absent>"
		}
		return fmt.Sprint(v)
	}
}

func firstImage(u *unstructured.Unstructured) string {
	cs, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
	if len(cs) == 0 {
		return "<absent>"
	}
	return fmt.Sprint(cs[0].(map[string]interface{})["image"])
}

func (h handEdit) object() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(h.apiVersion)
	u.SetKind(h.kind)
	u.SetNamespace(h.namespace)
	u.SetName(h.name)
	return u
}

// manifestValue is the edited field as the payload's manifest sets it.
func (h handEdit) manifestValue(rel *payload.Release) (string, error) {
	want := payload.ObjectID{Group: h.object().GroupVersionKind().Group, Kind: h.kind, Namespace: h.namespace, Name: h.name}
	for _, m := range rel.Manifests {
		if m.ID() == want && !m.Delete() {
			if h.field == nil {
				return "", nil
			}
			return h.field(m.Obj), nil
		}
	}
	return "", fmt.Errorf("the payload applies no %s", want)
}

// editAndWait makes the hand edits, then polls until every edit but the
// kept ones is undone, or reconcileWait passed, while the stub keeps
// playing the operators.
func editAndWait(ctx context.Context, e *env, rel *payload.Release, versions map[string][]interface{}) ([]editResult, error) {
	// The edits of objects this payload applies (all of them on ocp-real).
	var edits []handEdit
	var want []string
	for _, h := range handEdits {
		v, err := h.manifestValue(rel)
		if err != nil {
			continue
		}
		edits, want = append(edits, h), append(want, v)
	}
	if len(edits) == 0 {
		return nil, nil
	}
	for _, h := range edits {
		client, err := e.resource(h.object())
		if err != nil {
			return nil, err
		}
		if h.edit == nil {
			if err := client.Delete(ctx, h.name, metav1.DeleteOptions{}); err != nil {
				return nil, fmt.Errorf("%s: %w", h.what, err)
			}
			continue
		}
		live, err := client.Get(ctx, h.name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", h.what, err)
		}
		h.edit(live)
		if _, err := client.Update(ctx, live, metav1.UpdateOptions{}); err != nil {
			return nil, fmt.Errorf("%s: %w", h.what, err)
		}
	}
	edited := time.Now()
	results := make([]editResult, len(edits))
	for i, h := range edits {
		results[i].What = h.what
	}
	_ = wait.PollUntilContextTimeout(ctx, 5*time.Second, reconcileWait, false, func(ctx context.Context) (bool, error) {
		reportAvailable(ctx, e, versions)
		done := true
		for i, h := range edits {
			client, err := e.resource(h.object())
			if err != nil {
				return false, nil
			}
			live, err := client.Get(ctx, h.name, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
				results[i].Final = "<object absent>"
			case err != nil:
				return false, nil
			case h.field == nil:
				results[i].Final = "exists"
			default:
				results[i].Final = h.field(live)
			}
			undone := err == nil && (h.field == nil || results[i].Final == want[i])
			if undone && !results[i].Reverted {
				results[i].Reverted, results[i].After = true, time.Since(edited)
			}
			if !undone && h.kept {
				// An edit kept so far may still be undone later.
				results[i].Reverted = false
			}
			done = done && (h.kept || results[i].Reverted)
		}
		return done, nil
	})
	return results, nil
}

// diffInOperator dumps, edits, waits and dumps again into dir.
func diffInOperator(ctx context.Context, e *env, rel *payload.Release, versions map[string][]interface{}, dir string) ([]editResult, error) {
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	if err := dumpObjects(ctx, e, rel, filepath.Join(dir, phaseInstall)); err != nil {
		return nil, err
	}
	results, err := editAndWait(ctx, e, rel, versions)
	if err != nil {
		return nil, err
	}
	return results, dumpObjects(ctx, e, rel, filepath.Join(dir, phaseReconcile))
}

// pathDiff is one JSON path whose values differ between two objects.
type pathDiff struct {
	Path, A, B string
}

const absent = "<absent>"

// diffValues appends the paths under path where a and b differ. Lists of
// objects are matched by name or type where they have distinct ones.
func diffValues(path string, a, b interface{}, out *[]pathDiff) {
	if reflect.DeepEqual(a, b) {
		return
	}
	am, aok := a.(map[string]interface{})
	bm, bok := b.(map[string]interface{})
	if aok && bok {
		keys := slices.Sorted(maps.Keys(am))
		for k := range bm {
			if _, ok := am[k]; !ok {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			av, ain := am[k]
			bv, bin := bm[k]
			p := path + keyPath(k)
			switch {
			case !ain:
				*out = append(*out, pathDiff{p, absent, render(bv)})
			case !bin:
				*out = append(*out, pathDiff{p, render(av), absent})
			default:
				diffValues(p, av, bv, out)
			}
		}
		return
	}
	al, aok := a.([]interface{})
	bl, bok := b.([]interface{})
	if aok && bok {
		an, bn := byKey(al), byKey(bl)
		if an != nil && bn != nil {
			diffValues(path, an, bn, out)
			return
		}
		for i := 0; i < max(len(al), len(bl)); i++ {
			p := fmt.Sprintf("%s[%d]", path, i)
			switch {
			case i >= len(al):
				*out = append(*out, pathDiff{p, absent, render(bl[i])})
			case i >= len(bl):
				*out = append(*out, pathDiff{p, render(al[i]), absent})
			default:
				diffValues(p, al[i], bl[i], out)
			}
		}
		return
	}
	*out = append(*out, pathDiff{path, render(a), render(b)})
}

var plainKey = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

func keyPath(k string) string {
	if item, ok := strings.CutPrefix(k, listItem); ok {
		return "[" + item + "]"
	}
	if plainKey.MatchString(k) {
		return "." + k
	}
	return fmt.Sprintf("[%q]", k)
}

// itemKeys are the fields by which list items are matched, when every
// item has a distinct one: containers, ports, env by name; conditions by type.
var itemKeys = []string{"name", "type"}

// listItem marks a map key made by byKey, so that keyPath renders it as
// a list index.
const listItem = "\x00"

// byKey maps a list of objects by the first of itemKeys that every item
// has a distinct string value of, as "[key=value]" keys, or is nil when
// there is none.
func byKey(l []interface{}) map[string]interface{} {
	for _, key := range itemKeys {
		out := map[string]interface{}{}
		for _, v := range l {
			m, ok := v.(map[string]interface{})
			if !ok {
				return nil
			}
			n, ok := m[key].(string)
			if !ok {
				break
			}
			if _, dup := out[listItem+key+"="+n]; dup {
				break
			}
			out[listItem+key+"="+n] = m
		}
		if len(out) == len(l) {
			return out
		}
	}
	return nil
}

// render is v as compact JSON, truncated to about 200 characters.
func render(v interface{}) string {
	data, err := json.Marshal(v)
	s := string(data)
	if err != nil {
		s = fmt.Sprint(v)
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// dumpDiff is the comparison of two dump directories.
type dumpDiff struct {
	OnlyA, OnlyB []string
	// Paths holds, by file, the paths that differ.
	Paths map[string][]pathDiff
}

func readDump(dir string) (map[string]interface{}, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	out := map[string]interface{}{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var v interface{}
		if err := yaml.Unmarshal(data, &v); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		out[filepath.Base(f)] = v
	}
	return out, nil
}

func diffDumps(dirA, dirB string) (dumpDiff, error) {
	d := dumpDiff{Paths: map[string][]pathDiff{}}
	a, err := readDump(dirA)
	if err != nil {
		return d, err
	}
	b, err := readDump(dirB)
	if err != nil {
		return d, err
	}
	for _, name := range slices.Sorted(maps.Keys(a)) {
		bv, ok := b[name]
		if !ok {
			d.OnlyA = append(d.OnlyA, name)
			continue
		}
		var paths []pathDiff
		diffValues("", a[name], bv, &paths)
		if len(paths) > 0 {
			d.Paths[name] = paths
		}
	}
	for _, name := range slices.Sorted(maps.Keys(b)) {
		if _, ok := a[name]; !ok {
			d.OnlyB = append(d.OnlyB, name)
		}
	}
	return d, nil
}

// diffGroup is one path of one kind that differs, with every object it
// differs on.
type diffGroup struct {
	Kind, Path string
	Objects    []string
	Diffs      []pathDiff
}

// groups gathers d's paths by kind and path, so that one difference
// repeated over many objects reads as one.
func (d dumpDiff) groups() []diffGroup {
	byKey := map[string]*diffGroup{}
	for _, file := range slices.Sorted(maps.Keys(d.Paths)) {
		kind := fileKind(file)
		for _, p := range d.Paths[file] {
			key := kind + " " + p.Path
			g := byKey[key]
			if g == nil {
				g = &diffGroup{Kind: kind, Path: p.Path}
				byKey[key] = g
			}
			g.Objects = append(g.Objects, strings.TrimSuffix(file, ".yaml"))
			g.Diffs = append(g.Diffs, p)
		}
	}
	var out []diffGroup
	for _, k := range slices.Sorted(maps.Keys(byKey)) {
		out = append(out, *byKey[k])
	}
	return out
}

// fileKind is the group and kind of a dump file's name.
func fileKind(file string) string {
	parts := strings.SplitN(file, "_", 3)
	if len(parts) < 3 {
		return file
	}
	return parts[1] + "." + parts[0]
}

// diffReport compares the two operators' dumps under dir, phase by phase,
// and renders it with what became of the hand edits, as markdown.
func diffReport(dir, nameA, nameB string, edits map[string][]editResult) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "# Differential check: A = %s, B = %s\n", nameA, nameB)
	for _, phase := range []string{phaseInstall, phaseReconcile, phaseUpdate} {
		if _, err := os.Stat(filepath.Join(dir, nameA, phase)); phase == phaseUpdate && err != nil {
			continue
		}
		d, err := diffDumps(filepath.Join(dir, nameA, phase), filepath.Join(dir, nameB, phase))
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "\n## %s: %d objects only in A, %d only in B, %d differ\n", phase, len(d.OnlyA), len(d.OnlyB), len(d.Paths))
		for _, side := range []struct {
			name  string
			files []string
		}{{"A (" + nameA + ")", d.OnlyA}, {"B (" + nameB + ")", d.OnlyB}} {
			if len(side.files) == 0 {
				continue
			}
			fmt.Fprintf(&b, "\nOnly in %s:\n", side.name)
			for _, f := range side.files {
				fmt.Fprintf(&b, "- %s\n", strings.TrimSuffix(f, ".yaml"))
			}
		}
		for _, g := range d.groups() {
			fmt.Fprintf(&b, "\n### %s `%s` (%d objects)\n", g.Kind, g.Path, len(g.Objects))
			for i, obj := range g.Objects {
				fmt.Fprintf(&b, "- %s: A `%s` B `%s`\n", obj, g.Diffs[i].A, g.Diffs[i].B)
			}
		}
	}
	b.WriteString("\n## Hand edits\n\n| operator | edit | undone | after | final value |\n|---|---|---|---|---|\n")
	for _, name := range []string{nameA, nameB} {
		for _, r := range edits[name] {
			after := "-"
			if r.Reverted {
				after = r.After.Round(time.Second).String()
			}
			fmt.Fprintf(&b, "| %s | %s | %v | %s | %s |\n", name, r.What, r.Reverted, after, render(r.Final))
		}
	}
	return b.String(), nil
}
