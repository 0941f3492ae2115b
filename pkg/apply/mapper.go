package apply

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
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
}

func newMapper(m meta.ResettableRESTMapper, c clock.Clock) *mapper {
	return &mapper{m: m, clock: c}
}

// mapping resolves gvk, refreshing discovery once when the kind is unknown.
func (m *mapper) mapping(gvk schema.GroupVersionKind) (*meta.RESTMapping, error) {
	mapping, err := m.m.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err == nil || !meta.IsNoMatchError(err) {
		return mapping, err
	}
	m.reset()
	return m.m.RESTMapping(gvk.GroupKind(), gvk.Version)
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
}

// invalidate makes the next miss refresh discovery.
func (m *mapper) invalidate() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stale = true
}
