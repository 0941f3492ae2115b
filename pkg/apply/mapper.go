package apply

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"
)

// minMapperReset spaces discovery refreshes: when many custom resources miss
// at once, one refresh serves them all.
const minMapperReset = time.Second

// mapper wraps a cached RESTMapper with throttled resets.
type mapper struct {
	m     meta.ResettableRESTMapper
	clock clock.Clock

	mu        sync.Mutex
	lastReset time.Time
	// stale is set when a CRD became Established: the next miss refreshes
	// discovery even inside the throttle window.
	stale bool
	// learned maps the kinds of CRDs this pass saw Established, read from
	// the CRDs themselves, so that their custom resources resolve without
	// a discovery round trip per CRD; a refresh or the next pass drops them.
	learned map[schema.GroupVersionKind]*meta.RESTMapping
	// arrivals are the kinds tasks wait for: each channel closes when a
	// CRD serving its kind becomes Established, or discovery goes stale.
	arrivals map[schema.GroupVersionKind]chan struct{}
}

func newMapper(m meta.ResettableRESTMapper, c clock.Clock) *mapper {
	return &mapper{m: m, clock: c}
}

// mapping resolves gvk, refreshing discovery once when the kind is unknown.
func (m *mapper) mapping(gvk schema.GroupVersionKind) (*meta.RESTMapping, error) {
	mapping, err := m.known(gvk.GroupKind(), gvk.Version)
	if err == nil || !meta.IsNoMatchError(err) {
		return mapping, err
	}
	m.reset()
	return m.m.RESTMapping(gvk.GroupKind(), gvk.Version)
}

// known resolves a kind as discovery last saw it, or as an Established
// CRD declared it since; version "" is the preferred one. It asks nothing
// of the server beyond what a cached discovery does.
func (m *mapper) known(gk schema.GroupKind, version string) (*meta.RESTMapping, error) {
	var mapping *meta.RESTMapping
	var err error
	if version == "" {
		mapping, err = m.m.RESTMapping(gk)
	} else {
		mapping, err = m.m.RESTMapping(gk, version)
	}
	if err == nil || !meta.IsNoMatchError(err) {
		return mapping, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if version != "" {
		if l, ok := m.learned[gk.WithVersion(version)]; ok {
			return l, nil
		}
		return nil, err
	}
	// Which version discovery would prefer is not guessed: only a CRD
	// serving one version answers.
	var only *meta.RESTMapping
	for gvk, l := range m.learned {
		if gvk.GroupKind() != gk {
			continue
		}
		if only != nil {
			return nil, err
		}
		only = l
	}
	if only == nil {
		return nil, err
	}
	return only, nil
}

// learn records the kinds an Established CRD serves. It reports false
// when the CRD does not say them, and discovery must.
func (m *mapper) learn(crd *unstructured.Unstructured) bool {
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	scope, _, _ := unstructured.NestedString(crd.Object, "spec", "scope")
	kind, _, _ := unstructured.NestedString(crd.Object, "status", "acceptedNames", "kind")
	plural, _, _ := unstructured.NestedString(crd.Object, "status", "acceptedNames", "plural")
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	var restScope meta.RESTScope
	switch scope {
	case "Namespaced":
		restScope = meta.RESTScopeNamespace
	case "Cluster":
		restScope = meta.RESTScopeRoot
	default:
		return false
	}
	if group == "" || kind == "" || plural == "" {
		return false
	}
	var served []*meta.RESTMapping
	for _, v := range versions {
		vm, _ := v.(map[string]any)
		name, _ := vm["name"].(string)
		if ok, _ := vm["served"].(bool); !ok || name == "" {
			continue
		}
		served = append(served, &meta.RESTMapping{
			Resource:         schema.GroupVersionResource{Group: group, Version: name, Resource: plural},
			GroupVersionKind: schema.GroupVersionKind{Group: group, Version: name, Kind: kind},
			Scope:            restScope,
		})
	}
	if len(served) == 0 {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.learned == nil {
		m.learned = map[schema.GroupVersionKind]*meta.RESTMapping{}
	}
	for _, l := range served {
		m.learned[l.GroupVersionKind] = l
		if ch, ok := m.arrivals[l.GroupVersionKind]; ok {
			close(ch)
			delete(m.arrivals, l.GroupVersionKind)
		}
	}
	return true
}

// arrival is a channel that closes when gvk may resolve: a CRD serving it
// became Established, or discovery went stale and a refresh may find it.
// It is closed already when gvk was learned meanwhile.
func (m *mapper) arrival(gvk schema.GroupVersionKind) <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.learned[gvk]; ok || m.stale {
		ch := make(chan struct{})
		close(ch)
		return ch
	}
	if m.arrivals == nil {
		m.arrivals = map[schema.GroupVersionKind]chan struct{}{}
	}
	ch, ok := m.arrivals[gvk]
	if !ok {
		ch = make(chan struct{})
		m.arrivals[gvk] = ch
	}
	return ch
}

func (m *mapper) reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock.Now()
	if !m.stale && now.Sub(m.lastReset) < minMapperReset {
		return
	}
	m.m.Reset()
	m.lastReset = now
	m.stale = false
	// Discovery now serves what the CRDs declared, and knows of any
	// deleted since.
	m.learned = nil
}

// forget drops the learned kinds, so that a new pass resolves only what
// discovery serves and what the pass's own CRDs declare.
func (m *mapper) forget() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.learned = nil
}

// invalidate makes the next miss refresh discovery, and wakes every task
// waiting for a kind to try it.
func (m *mapper) invalidate() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stale = true
	for gvk, ch := range m.arrivals {
		close(ch)
		delete(m.arrivals, gvk)
	}
}
