package payload

import (
	"os"
	"runtime"
	"testing"
)

func TestZZMem(t *testing.T) {
	dir := "../../../shared/payloads/ocp-real"
	if os.Getenv("NOCACHE") != "" {
		SetParseCacheLimit(0)
	}
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	all, _, err := LoadAll(dir)
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv("DROP") != "" {
		all.DropSource()
	}
	runtime.GC()
	runtime.ReadMemStats(&ms)
	t.Logf("live after LoadAll: %.1f MiB", float64(ms.HeapAlloc-base)/(1<<20))
	runtime.KeepAlive(all)
}
