package updategraph

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func conditionalGraph(groups string) string {
	return `{"nodes": [
  {"version": "1.0.0", "payload": "r:1.0.0", "metadata": {"io.openshift.upgrades.graph.release.channels": "a"}},
  {"version": "1.0.1", "payload": "r:1.0.1", "metadata": {"io.openshift.upgrades.graph.release.channels": "a"}},
  {"version": "1.0.2", "payload": "r:1.0.2", "metadata": {"io.openshift.upgrades.graph.release.channels": "a"}},
  {"version": "1.0.3", "payload": "r:1.0.3", "metadata": {"io.openshift.upgrades.graph.release.channels": "b", "io.openshift.upgrades.graph.release.deprecated": ""}},
  {"version": "1.1.0", "payload": "r:1.1.0", "metadata": {"io.openshift.upgrades.graph.release.channels": "b"}}
], "edges": [[0, 1]], "conditionalEdges": ` + groups + `}`
}

func risk(name string, rules string) string {
	return fmt.Sprintf(`{"name": %q, "url": "https://example.com/%s", "message": "m %s", "matchingRules": [%s]}`, name, name, name, rules)
}

func group(risks string, edges ...string) string {
	var es []string
	for _, e := range edges {
		from, to, _ := strings.Cut(e, ">")
		es = append(es, fmt.Sprintf(`{"from": %q, "to": %q}`, from, to))
	}
	return fmt.Sprintf(`{"edges": [%s], "risks": [%s]}`, strings.Join(es, ","), risks)
}

func TestConditionalUpdates(t *testing.T) {
	always := `{"type": "Always"}`
	for _, tc := range []struct {
		name, groups string
		version      string
		want         string // target:risk,risk;...
		wantErr      string
		channel      string
	}{
		{name: "none", groups: `null`, version: "1.0.0"},
		{name: "one edge from the version", groups: `[` + group(risk("A", always), "1.0.0>1.0.2", "1.0.1>1.0.2") + `]`, version: "1.0.0", want: "1.0.2:A"},
		{name: "newest first, each with its group's risks", groups: `[` + group(risk("A", always), "1.0.0>1.0.1") + `,` + group(risk("B", always)+`,`+risk("C", always), "1.0.0>1.1.0") + `]`,
			version: "1.0.0", want: "1.1.0:B,C;1.0.1:A"},
		{name: "edges from other versions ignored", groups: `[` + group(risk("A", always), "1.0.1>1.0.2") + `]`, version: "1.0.0"},
		{name: "a deprecated target is left out", groups: `[` + group(risk("A", always), "1.0.0>1.0.3") + `]`, version: "1.0.0"},
		{name: "a target listed by two groups is dropped", groups: `[` + group(risk("A", always), "1.0.0>1.0.2") + `,` + group(risk("B", always), "1.0.0>1.0.2", "1.0.0>1.0.1") + `]`,
			version: "1.0.0", want: "1.0.1:B"},
		{name: "a target missing from the nodes is an invalid response", groups: `[` + group(risk("A", always), "1.0.0>9.0.0") + `]`, version: "1.0.0", wantErr: "no node for conditional update 9.0.0"},
		{name: "in a channel: a target in another channel is dropped", groups: `[` + group(risk("A", always), "1.0.0>1.1.0", "1.0.0>1.0.2") + `]`, version: "1.0.0", channel: "a", want: "1.0.2:A"},
		{name: "in a channel: a target missing altogether still fails", groups: `[` + group(risk("A", always), "1.0.0>9.0.0") + `]`, version: "1.0.0", channel: "a", wantErr: "no node"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := Parse(strings.NewReader(conditionalGraph(tc.groups)))
			if err != nil {
				t.Fatal(err)
			}
			if tc.channel != "" {
				g = g.InChannel(tc.channel)
			}
			updates, err := g.ConditionalUpdates(tc.version)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || ReasonOf(err) != ReasonResponseInvalid {
					t.Fatalf("err = %v (%s), want ResponseInvalid %q", err, ReasonOf(err), tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, u := range updates {
				var names []string
				for _, r := range u.Risks {
					names = append(names, r.Name)
				}
				got = append(got, u.Release.Version+":"+strings.Join(names, ","))
			}
			if s := strings.Join(got, ";"); s != tc.want {
				t.Errorf("got %q, want %q", s, tc.want)
			}
		})
	}
}

func TestParseRefusesBadConditionalEdges(t *testing.T) {
	always := `{"type": "Always"}`
	ok := risk("A", always)
	for _, tc := range []struct {
		name, groups, want, cap string
	}{
		{"not a list", `{}`, "conditionalEdges", ""},
		{"no risks", `[` + group("", "1.0.0>1.0.1") + `]`, "has no risks", ""},
		{"no rules", `[` + group(risk("A", ""), "1.0.0>1.0.1") + `]`, "has no matchingRules", ""},
		{"no name", `[` + group(risk("", always), "1.0.0>1.0.1") + `]`, "has no name", ""},
		{"no from", `[{"edges": [{"to": "1.0.1"}], "risks": [` + ok + `]}]`, "lacks from or to", ""},
		{"a risk twice", `[` + group(ok+","+ok, "1.0.0>1.0.1") + `]`, "listed twice", ""},
		{"a key twice", `[{"edges": [], "edges": [], "risks": [` + ok + `]}]`, "duplicate field", ""},
		{"too many risks", `[` + group(strings.TrimSuffix(strings.Repeat(ok+",", MaxRisksPerEdge+1), ","), "1.0.0>1.0.1") + `]`, "", "MaxRisksPerEdge"},
		{"too many rules", `[` + group(risk("A", strings.TrimSuffix(strings.Repeat(always+",", MaxRulesPerRisk+1), ",")), "1.0.0>1.0.1") + `]`, "", "MaxRulesPerRisk"},
		{"a long name", `[` + group(risk(strings.Repeat("n", MaxRiskNameBytes+1), always), "1.0.0>1.0.1") + `]`, "", "MaxRiskNameBytes"},
		{"a long message", `[` + group(fmt.Sprintf(`{"name": "A", "url": "u", "message": %q, "matchingRules": [%s]}`, strings.Repeat("m", MaxRiskMessageBytes+1), always), "1.0.0>1.0.1") + `]`, "", "MaxRiskMessageBytes"},
		{"a long url", `[` + group(fmt.Sprintf(`{"name": "A", "url": %q, "message": "m", "matchingRules": [%s]}`, strings.Repeat("u", MaxRiskURLBytes+1), always), "1.0.0>1.0.1") + `]`, "", "MaxRiskURLBytes"},
		{"a long query", `[` + group(risk("A", fmt.Sprintf(`{"type": "PromQL", "promql": {"promql": %q}}`, strings.Repeat("q", MaxPromQLBytes+1))), "1.0.0>1.0.1") + `]`, "", "MaxPromQLBytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(conditionalGraph(tc.groups)))
			var capErr *CapError
			switch {
			case err == nil:
				t.Fatal("parsed")
			case tc.cap != "" && (!errors.As(err, &capErr) || capErr.Cap != tc.cap):
				t.Fatalf("err = %v, want cap %s", err, tc.cap)
			case tc.want != "" && !strings.Contains(err.Error(), tc.want):
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestParseKeepsUnknownConditionalFieldsAndRoundTrips(t *testing.T) {
	g, err := Parse(strings.NewReader(conditionalGraph(`[{"edges": [{"from": "1.0.0", "to": "1.0.1", "new": 1}], "risks": [` + risk("A", `{"type": "Always"}`) + `], "future": true}]`)))
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Conditional) != 1 || !strings.Contains(string(g.ConditionalEdges), `"future"`) {
		t.Fatalf("conditional %+v, raw %s", g.Conditional, g.ConditionalEdges)
	}
}

// Encode writes conditionalEdges back as read, & and < included, and so
// does it a metadata URL.
func TestEncodeWritesConditionalEdgesBackAsRead(t *testing.T) {
	g, err := Parse(strings.NewReader(`{"nodes": [{"version": "1.0.0", "payload": "p", "metadata": {"url": "https://e.com/?a=1&b=2"}}],
		"conditionalEdges": [{"edges": [], "risks": [` + risk("A&<B>", `{"type": "Always"}`) + `], "x&y": 1}]}`))
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := g.Encode(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"A&<B>"`, `"x&y"`, `?a=1&b=2`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("written back without %s:\n%s", want, out.String())
		}
	}
}
