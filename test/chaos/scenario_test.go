package chaos

import (
	"encoding/base64"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/payload-applier/payload-applier/pkg/payload"
	"github.com/payload-applier/payload-applier/pkg/payload/payloadtest"
)

const (
	// holdFinalizer keeps an object terminating until a test removes it,
	// so that its delete stays pending across passes, crashes and restarts.
	holdFinalizer = "chaos.payload-applier.io/hold"
	// scenarioLabel marks every object a scenario creates, payload or not.
	scenarioLabel = "chaos.payload-applier.io/scenario"
	revLabel      = "chaos.payload-applier.io/rev"
	include       = "include.release.openshift.io/self-managed-high-availability"
)

// kind is an object kind scenarios use, with how to write its body.
type kind struct {
	gvk        schema.GroupVersionKind
	resource   string
	namespaced bool
	body       func(name string, rev int) map[string]interface{}
}

func (k *kind) gvr() schema.GroupVersionResource {
	return k.gvk.GroupVersion().WithResource(k.resource)
}

var (
	kindConfigMap = &kind{gvk: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, resource: "configmaps", namespaced: true,
		body: func(name string, rev int) map[string]interface{} {
			return map[string]interface{}{"data": map[string]interface{}{"rev": fmt.Sprint(rev), "name": name}}
		}}
	kindSecret = &kind{gvk: schema.GroupVersionKind{Version: "v1", Kind: "Secret"}, resource: "secrets", namespaced: true,
		body: func(name string, rev int) map[string]interface{} {
			return map[string]interface{}{"type": "Opaque", "stringData": map[string]interface{}{"rev": fmt.Sprint(rev)}}
		}}
	kindClusterRole = &kind{gvk: schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}, resource: "clusterroles",
		body: func(name string, rev int) map[string]interface{} {
			verbs := []interface{}{"get"}
			if rev > 1 {
				verbs = append(verbs, "list", "watch")
			}
			return map[string]interface{}{"rules": []interface{}{map[string]interface{}{
				"apiGroups": []interface{}{""}, "resources": []interface{}{"configmaps"}, "verbs": verbs}}}
		}}
	// ImageStream is a custom resource here: test/cluster installs a
	// fixture CRD for it.
	kindImageStream = &kind{gvk: schema.GroupVersionKind{Group: "image.openshift.io", Version: "v1", Kind: "ImageStream"}, resource: "imagestreams", namespaced: true,
		body: func(name string, rev int) map[string]interface{} {
			return map[string]interface{}{"spec": map[string]interface{}{"lookupPolicy": map[string]interface{}{"local": rev > 1}}}
		}}
	// Namespaces go slowly: the namespace controller waits five seconds
	// before it empties one. Payload namespaces hold no payload objects.
	kindNamespace = &kind{gvk: schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, resource: "namespaces",
		body: func(string, int) map[string]interface{} { return map[string]interface{}{} }}
)

// fate is what the second release does with an object.
type fate string

const (
	fateKeep   fate = "keep"   // v2 carries the same manifest
	fateChange fate = "change" // v2 carries a changed manifest
	fateDelete fate = "delete" // v2 marks it for deletion
	fateDrop   fate = "drop"   // v2 does not mention it: it must be left alone
)

// object is one object of a scenario and its story across the two releases.
type object struct {
	kind      *kind
	namespace string
	name      string
	file      string
	hold      bool // carries holdFinalizer
	inV1      bool
	fate      fate
}

func (o *object) id() payload.ObjectID {
	return payload.ObjectID{Group: o.kind.gvk.Group, Kind: o.kind.gvk.Kind, Namespace: o.namespace, Name: o.name}
}

func (o *object) String() string { return o.id().String() }

// inV2Apply reports whether v2 creates or updates the object.
func (o *object) inV2Apply() bool { return o.fate == fateKeep || o.fate == fateChange }

// v2Rev is the revision v2 applies.
func (o *object) v2Rev() int {
	if o.fate == fateChange {
		return 2
	}
	return 1
}

// manifest is the object as a payload writes it.
func (o *object) manifest(tag string, rev int, del bool) map[string]interface{} {
	annotations := map[string]interface{}{include: "true"}
	if del {
		annotations[payload.DeleteAnnotation] = "true"
	}
	md := map[string]interface{}{
		"name":        o.name,
		"annotations": annotations,
		"labels":      map[string]interface{}{scenarioLabel: tag, revLabel: fmt.Sprintf("r%d", rev)},
	}
	if o.namespace != "" {
		md["namespace"] = o.namespace
	}
	if o.hold {
		md["finalizers"] = []interface{}{holdFinalizer}
	}
	m := o.kind.body(o.name, rev)
	m["apiVersion"] = o.kind.gvk.GroupVersion().String()
	m["kind"] = o.kind.gvk.Kind
	m["metadata"] = md
	return m
}

// want is what the live object must contain once rev is applied.
func (o *object) want(tag string, rev int) map[string]interface{} {
	m := o.manifest(tag, rev, false)
	if sd, ok := m["stringData"].(map[string]interface{}); ok {
		data := map[string]interface{}{}
		for k, v := range sd {
			data[k] = base64.StdEncoding.EncodeToString([]byte(v.(string)))
		}
		delete(m, "stringData")
		m["data"] = data
	}
	return m
}

// scenario is a release pair: v1 installs objects, v2 keeps, changes,
// deletes, drops and adds them.
type scenario struct {
	tag        string // labels every object; names cluster-scoped ones
	namespaces []string
	objects    []*object
}

// scenarioOptions shape a random scenario.
type scenarioOptions struct {
	// Objects is how many objects to draw, beyond the forced ones.
	Objects int
	// Kinds are drawn from with equal weight; Namespaces hold the
	// namespaced ones.
	Kinds      []*kind
	Namespaces []string
	// HoldShare is the share of objects that carry holdFinalizer.
	HoldShare float64
	// Forced objects come first, in order, before the random ones.
	Forced []forcedObject
}

type forcedObject struct {
	kind *kind
	hold bool
	inV1 bool
	fate fate
	// component and runLevel place the object in the delete walk.
	component string
	runLevel  int
}

var components = []string{"alpha", "beta", "gamma"}

// newScenario draws a scenario. Every fate and kind is possible; objects
// that v1 lacks are either added by v2 or deleted without ever existing.
func newScenario(rng *rand.Rand, tag string, opts scenarioOptions) *scenario {
	s := &scenario{tag: tag, namespaces: opts.Namespaces}
	add := func(k *kind, hold, inV1 bool, f fate, component string, runLevel int) {
		i := len(s.objects)
		o := &object{kind: k, hold: hold && k != kindNamespace, inV1: inV1, fate: f}
		switch {
		case k.namespaced:
			o.namespace = opts.Namespaces[rng.Intn(len(opts.Namespaces))]
			o.name = fmt.Sprintf("obj-%03d", i)
		default:
			o.name = fmt.Sprintf("%s-%03d", tag, i)
		}
		o.file = fmt.Sprintf("0000_%02d_%s_%03d_%s-%s.yaml", runLevel, component, i, strings.ToLower(k.gvk.Kind), o.name)
		s.objects = append(s.objects, o)
	}
	for _, f := range opts.Forced {
		add(f.kind, f.hold, f.inV1, f.fate, f.component, f.runLevel)
	}
	fates := []fate{fateKeep, fateChange, fateDelete, fateDelete, fateDrop}
	for range opts.Objects {
		k := opts.Kinds[rng.Intn(len(opts.Kinds))]
		inV1 := rng.Intn(5) > 0
		f := fates[rng.Intn(len(fates))]
		if !inV1 && f == fateDrop {
			f = fateChange // new in v2
		}
		add(k, rng.Float64() < opts.HoldShare, inV1, f, components[rng.Intn(len(components))], 10*(1+rng.Intn(3)))
	}
	return s
}

// release renders the files of v1 (rev 1) or v2.
func (s *scenario) release(v2 bool) map[string]string {
	files := map[string]string{}
	for _, o := range s.objects {
		var m map[string]interface{}
		switch {
		case !v2 && o.inV1:
			m = o.manifest(s.tag, 1, false)
		case v2 && o.inV2Apply():
			m = o.manifest(s.tag, o.v2Rev(), false)
		case v2 && o.fate == fateDelete:
			m = o.manifest(s.tag, 1, true)
		default:
			continue
		}
		data, err := yaml.Marshal(m)
		if err != nil {
			panic(err)
		}
		files[o.file] = string(data)
	}
	return files
}

// filter returns the objects for which keep holds.
func (s *scenario) filter(keep func(*object) bool) []*object {
	var out []*object
	for _, o := range s.objects {
		if keep(o) {
			out = append(out, o)
		}
	}
	return out
}

func (s *scenario) marked() []*object {
	return s.filter(func(o *object) bool { return o.fate == fateDelete })
}

// describe lists the scenario for test logs.
func (s *scenario) describe() string {
	var lines []string
	for _, o := range s.objects {
		hold := ""
		if o.hold {
			hold = " (held by a finalizer)"
		}
		lines = append(lines, fmt.Sprintf("  %s %s v1=%v v2=%s%s", o.file, o, o.inV1, o.fate, hold))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// writeStore writes a release store with 1.0.0 (v1) and 1.0.1 (v2).
func (s *scenario) writeStore(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	payloadtest.WriteRelease(t, root, "1.0.0", nil, s.release(false))
	payloadtest.WriteRelease(t, root, "1.0.1", nil, s.release(true))
	return root
}
