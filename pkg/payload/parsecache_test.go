package payload

import (
	"reflect"
	"testing"
)

// TestParseCache: a repeat parse of the same file gives equal manifests in
// fresh structs (what one load sets on them stays its own), sharing the
// parsed object; other content or another path is parsed anew; the bound
// evicts the least recently used file, and 0 turns the cache off.
func TestParseCache(t *testing.T) {
	defer func(c *parseCache) { fileCache = c }(fileCache)
	fileCache = newParseCache(1 << 20)

	a := []byte(annotated("v1", "ConfigMap", "ns", "a") + "---\n" + "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  name: b\n")
	first, firstFindings := parseFileCached("0000_50_x_00_a.yaml", a)
	second, secondFindings := parseFileCached("0000_50_x_00_a.yaml", a)
	want, wantFindings := parseFile("0000_50_x_00_a.yaml", a)
	if len(first) != 1 || len(firstFindings) != 1 {
		t.Fatalf("got %d manifests and %d findings, want 1 and 1", len(first), len(firstFindings))
	}
	if !reflect.DeepEqual(firstFindings, wantFindings) || !reflect.DeepEqual(secondFindings, wantFindings) {
		t.Fatalf("findings differ from an uncached parse: %v, %v, %v", firstFindings, secondFindings, wantFindings)
	}
	if first[0] == second[0] {
		t.Fatal("a repeat parse returned the same Manifest struct")
	}
	if first[0].Obj != second[0].Obj {
		t.Fatal("a repeat parse did not come from the cache")
	}
	if diff := sameManifest(second[0].Manifest, want[0].Manifest); diff != "" {
		t.Fatal(diff)
	}
	first[0].Index = 7
	firstFindings[0].File = "elsewhere"
	again, againFindings := parseFileCached("0000_50_x_00_a.yaml", a)
	if again[0].Index != 0 || againFindings[0].File != "0000_50_x_00_a.yaml" {
		t.Fatal("what one load set on its manifests or findings reached the cache")
	}

	if other, _ := parseFileCached("0000_50_y_00_a.yaml", a); other[0].Obj == first[0].Obj || other[0].Component != "y" {
		t.Fatal("another path was served from the cache")
	}
	b := []byte(annotated("v1", "ConfigMap", "ns", "b"))
	if got, _ := parseFileCached("0000_50_x_00_a.yaml", b); got[0].Obj.GetName() != "b" {
		t.Fatal("changed content was served from the cache")
	}

	// Bound: room for a and b only; a is the least recently used.
	fileCache = newParseCache(len(a) + len(b))
	parseFileCached("a.yaml", a)
	parseFileCached("b.yaml", b)
	parseFileCached("c.yaml", b)
	if _, ok := fileCache.entries[cacheKey("a.yaml", a)]; ok || fileCache.used > fileCache.limit {
		t.Fatalf("the bound did not evict the least recently used file (used %d of %d)", fileCache.used, fileCache.limit)
	}
	if prev := SetParseCacheLimit(0); prev != len(a)+len(b) || len(fileCache.entries) != 0 || fileCache.used != 0 {
		t.Fatalf("SetParseCacheLimit(0) returned %d and left %d files", prev, len(fileCache.entries))
	}
	x, _ := parseFileCached("a.yaml", a)
	y, _ := parseFileCached("a.yaml", a)
	if x[0].Obj == y[0].Obj {
		t.Fatal("the cache served a file while off")
	}
}
