package apply

import (
	"sync"
	"time"
)

// operatorWaits remembers when each ClusterOperator of the release being
// applied was first found short of healthy, as the CVO's update start
// times: a grace period or a slow-operator warning counts from there. A
// healthy check forgets the operator; another release or mode starts over.
type operatorWaits struct {
	mu    sync.Mutex
	key   string
	since map[string]time.Time
}

// begin starts a pass over the release and mode key names.
func (w *operatorWaits) begin(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if key != w.key || w.since == nil {
		w.key, w.since = key, map[string]time.Time{}
	}
}

// observe records a check of the named operator at now and returns since
// when it has been short of healthy, zero when it is healthy.
func (w *operatorWaits) observe(name string, healthy bool, now time.Time) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	if healthy {
		delete(w.since, name)
		return time.Time{}
	}
	since, ok := w.since[name]
	if !ok {
		since = now
		w.since[name] = since
	}
	return since
}
