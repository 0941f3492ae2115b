package payload

import (
	"container/list"
	"crypto/sha256"
	"sync"
)

// A payload file's parse depends only on its path in the payload and its
// bytes, and z-stream releases rarely change their CRDs, which are most of
// the bytes: the operator's passes over one release and a plan of two
// releases parse mostly the same files. parseCache keeps parsed files by
// path and content hash, bounded by the bytes of the files it holds.
//
// The cached objects (Obj and Raw) are shared by every load that gets
// them, so a loaded manifest's object is read-only (apply works on a deep
// copy); the Manifest structs and findings are fresh for each load.

// DefaultParseCacheBytes bounds the parse cache: the bytes of the files
// whose parses it keeps, about one real payload (ocp-real is 10.4 MB); the
// parsed objects take several times that in memory.
const DefaultParseCacheBytes = 16 << 20

type parseCacheKey [sha256.Size]byte

type parseCacheEntry struct {
	key       parseCacheKey
	size      int
	manifests []*Manifest
	findings  []Finding
}

type parseCache struct {
	mu      sync.Mutex
	limit   int
	used    int
	order   *list.List // front: most recently used
	entries map[parseCacheKey]*list.Element
}

var fileCache = newParseCache(DefaultParseCacheBytes)

func newParseCache(limit int) *parseCache {
	return &parseCache{limit: limit, order: list.New(), entries: map[parseCacheKey]*list.Element{}}
}

// SetParseCacheLimit bounds the parse cache to the given bytes of files
// (0 turns it off and empties it) and returns the previous bound.
func SetParseCacheLimit(bytes int) int {
	c := fileCache
	c.mu.Lock()
	defer c.mu.Unlock()
	prev := c.limit
	c.limit = max(bytes, 0)
	c.evict()
	return prev
}

func cacheKey(rel string, data []byte) parseCacheKey {
	h := sha256.New()
	h.Write([]byte(rel))
	h.Write([]byte{0})
	h.Write(data)
	var k parseCacheKey
	h.Sum(k[:0])
	return k
}

// parseFileCached is parseFile through the cache.
func parseFileCached(rel string, data []byte) ([]*Manifest, []Finding) {
	c := fileCache
	c.mu.Lock()
	limit := c.limit
	c.mu.Unlock()
	if len(data) > limit {
		return parseFile(rel, data)
	}
	key := cacheKey(rel, data)
	c.mu.Lock()
	if el, ok := c.entries[key]; ok {
		c.order.MoveToFront(el)
		e := el.Value.(*parseCacheEntry)
		c.mu.Unlock()
		return copyParsed(e.manifests, e.findings)
	}
	c.mu.Unlock()
	ms, findings := parseFile(rel, data)
	c.mu.Lock()
	if _, ok := c.entries[key]; !ok && len(data) <= c.limit {
		e := &parseCacheEntry{key: key, size: len(data), manifests: ms, findings: findings}
		c.entries[key] = c.order.PushFront(e)
		c.used += e.size
		c.evict()
	}
	c.mu.Unlock()
	return copyParsed(ms, findings)
}

// evict drops the least recently used files until the cache fits its
// bound; c.mu is held.
func (c *parseCache) evict() {
	for c.used > c.limit {
		el := c.order.Back()
		e := el.Value.(*parseCacheEntry)
		c.order.Remove(el)
		delete(c.entries, e.key)
		c.used -= e.size
	}
}

// copyParsed returns fresh Manifest structs and findings, so that what a
// load sets on them (positions, file paths) stays its own.
func copyParsed(ms []*Manifest, findings []Finding) ([]*Manifest, []Finding) {
	out := make([]*Manifest, len(ms))
	structs := make([]Manifest, len(ms))
	for i, m := range ms {
		structs[i] = *m
		out[i] = &structs[i]
	}
	return out, append([]Finding(nil), findings...)
}
