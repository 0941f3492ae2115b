package updategraph

import (
	"bytes"
	"errors"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// repeatTo writes head, then item (comma-separated) until the body is
// about size bytes, then tail.
func repeatTo(size int, head, item, tail string) []byte {
	return repeatN((size-len(head)-len(tail))/(len(item)+1), head, item, tail)
}

// repeatN writes head, n items and tail.
func repeatN(n int, head, item, tail string) []byte {
	size := len(head) + n*(len(item)+1) + len(tail)
	var b bytes.Buffer
	b.Grow(size)
	b.WriteString(head)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(item)
	}
	b.WriteString(tail)
	return b.Bytes()
}

// metadataFlood is one release whose metadata has as many distinct keys
// as fit in size bytes.
func metadataFlood(size int) []byte {
	var b bytes.Buffer
	b.Grow(size)
	b.WriteString(`{"nodes": [{"version": "1.0.0", "payload": "p", "metadata": {"k0": "v"`)
	for i := 1; b.Len() < size-32; i++ {
		b.WriteString(`, "k` + strconv.Itoa(i) + `": "v"`)
	}
	b.WriteString("}}]}")
	return b.Bytes()
}

func allocatedBy(parse func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	parse()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// Floods: each passes a cap and goes on for megabytes. The parser must
// refuse each as it passes the cap, so that what it allocates follows the
// caps, not the body (read whole, each would take 30 to 700 MiB). A flood refused within its first kilobytes may
// cost 1 MiB; one that passes a count cap, no more than the graph at that
// cap, which is accepted, costs (a quarter more, for noise).
func TestParseRefusesFloodsWithoutReadingThemWhole(t *testing.T) {
	if testing.Short() {
		t.Skip("reads up to 31 MiB per case")
	}
	two := `{"nodes": [{"version": "1.0.0", "payload": "a"}, {"version": "1.0.1", "payload": "b"}], `
	rule := `{"type": "Always"}`
	riskJSON := `{"name": "R", "url": "u", "message": "m", "matchingRules": [` + rule + `]}`
	edge := `{"from": "1.0.0", "to": "1.0.1"}`
	groupJSON := `{"edges": [` + edge + `], "risks": [` + riskJSON + `]}`
	for _, tc := range []struct {
		name  string
		body  []byte
		cap   string // "" for any error
		want  string
		atCap []byte // the graph cut at the cap, if not refused early
	}{
		{"1.4 M empty conditionalEdges in 4 MiB", repeatTo(4<<20, two+`"conditionalEdges": [`, `{}`, `]}`), "", "conditionalEdges", nil},
		{"conditionalEdges past MaxConditionalEdges", repeatTo(31<<20, two+`"conditionalEdges": [`, groupJSON, `]}`), "MaxConditionalEdges", "",
			repeatN(MaxConditionalEdges, two+`"conditionalEdges": [`, groupJSON, `]}`)},
		{"conditional edges past MaxConditionalEdgeEdges", repeatTo(31<<20, two+`"conditionalEdges": [{"risks": [`+riskJSON+`], "edges": [`, edge, `]}]}`), "MaxConditionalEdgeEdges", "",
			repeatN(MaxConditionalEdgeEdges, two+`"conditionalEdges": [{"risks": [`+riskJSON+`], "edges": [`, edge, `]}]}`)},
		{"risks past MaxRisksPerEdge", repeatTo(4<<20, two+`"conditionalEdges": [{"edges": [`+edge+`], "risks": [`, riskJSON, `]}]}`), "MaxRisksPerEdge", "", nil},
		{"matchingRules past MaxRulesPerRisk", repeatTo(4<<20, two+`"conditionalEdges": [{"edges": [`+edge+`], "risks": [{"name": "R", "url": "u", "message": "m", "matchingRules": [`, rule, `]}]}]}`), "MaxRulesPerRisk", "", nil},
		{"metadata keys past MaxMetadataKeys in 31 MiB", metadataFlood(31 << 20), "MaxMetadataKeys", "", nil},
		{"a metadata value of 31 MiB", []byte(`{"nodes": [{"version": "1.0.0", "payload": "p", "metadata": {"url": "` + strings.Repeat("u", 31<<20) + `"}}]}`), "MaxTokenBytes", "", nil},
		{"an unknown conditional field of 31 MiB", []byte(two + `"conditionalEdges": [{"future": "` + strings.Repeat("f", 31<<20) + `"}]}`), "MaxTokenBytes", "", nil},
		{"a number of 31 MiB", []byte(two + `"edges": [[0, 1` + strings.Repeat("0", 31<<20) + `]]}`), "MaxTokenBytes", "", nil},
		{"an edge of 31 MiB", repeatTo(31<<20, two+`"edges": [[0, `, `1`, `]]}`), "MaxTokenBytes", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bound := uint64(1 << 20)
			if tc.atCap != nil {
				var err error
				bound = allocatedBy(func() { _, err = Parse(bytes.NewReader(tc.atCap)) })
				if err != nil {
					t.Fatalf("the graph at the cap: %v", err)
				}
				bound += bound / 4
			}
			var err error
			allocated := allocatedBy(func() { _, err = Parse(bytes.NewReader(tc.body)) })
			var capErr *CapError
			switch {
			case err == nil:
				t.Fatal("parsed")
			case tc.cap != "" && (!errors.As(err, &capErr) || capErr.Cap != tc.cap):
				t.Errorf("err = %s, want cap %s", excerpt(err.Error()), tc.cap)
			case tc.want != "" && !strings.Contains(err.Error(), tc.want):
				t.Errorf("err = %s, want %q", excerpt(err.Error()), tc.want)
			}
			if allocated > bound {
				t.Errorf("refusing a %.1f MiB body allocated %.1f MiB, want under %.1f MiB", mib(len(tc.body)), mib(int(allocated)), mib(int(bound)))
			} else {
				t.Logf("%.1f MiB body: %.2f MiB allocated", mib(len(tc.body)), mib(int(allocated)))
			}
		})
	}
}

func mib(n int) float64 { return float64(n) / (1 << 20) }
