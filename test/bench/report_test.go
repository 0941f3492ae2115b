package main

import "testing"

// TestOneComponentGoals: the one-component installs are judged against raw
// and kapp like the sixteen-component ones; a missing tool is "not
// measured", never met.
func TestOneComponentGoals(t *testing.T) {
	r := newResults(options{reps: 1, cmCount: 1000})
	r.add(mOneCM, toolRaw, sample{Seconds: 1})
	r.add(mOneCM, toolEngine, sample{Seconds: 1.2})
	r.add(mOneMixed, toolRaw, sample{Seconds: 1})
	r.add(mOneMixed, toolEngine, sample{Seconds: 1.5})
	want := map[string]struct {
		known, met bool
		got        string
	}{
		"one component: ConfigMaps vs raw":  {true, true, "1.20× raw"},
		"one component: mixed kinds vs raw": {true, false, "1.50× raw"},
		"one component: ConfigMaps vs kapp": {false, false, ""},
		"create vs raw":                     {false, false, ""},
	}
	seen := 0
	for _, g := range r.goals() {
		w, ok := want[g.name]
		if !ok {
			continue
		}
		seen++
		if g.known != w.known || g.met != w.met || g.got != w.got {
			t.Errorf("%s: known %v met %v got %q, want %+v", g.name, g.known, g.met, g.got, w)
		}
	}
	if seen != len(want) {
		t.Errorf("%d of the %d goals listed", seen, len(want))
	}
}
