package cleanup

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/payload-applier/payload-applier/pkg/payload"
	"github.com/payload-applier/payload-applier/pkg/payload/payloadtest"
)

func crdDelete(name string, annotations ...string) string {
	ann := `release.openshift.io/delete: "true"`
	for _, a := range annotations {
		ann += "\n    " + a
	}
	return fmt.Sprintf("apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: %s\n  annotations:\n    %s\n", name, ann)
}

func deploymentDelete(name string) string {
	return fmt.Sprintf("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: %s\n  namespace: ns\n  annotations:\n    release.openshift.io/delete: \"true\"\n", name)
}

const supported = `release.openshift.io/operand-cleanup: "Supported"`

func load(t *testing.T, files map[string]string) *payload.Release {
	t.Helper()
	rel, _, err := payload.LoadAll(payloadtest.WriteRelease(t, t.TempDir(), "2.0.0", nil, files))
	if err != nil {
		t.Fatal(err)
	}
	return rel
}

func TestCandidates(t *testing.T) {
	rel := load(t, map[string]string{
		"0000_50_widgets_00_crd.yaml":    crdDelete("widgets.example.com", supported, `release.openshift.io/operand-namespaces: "a, b,a"`),
		"0000_50_widgets_01_gadget.yaml": crdDelete("gadgets.example.com", supported),
		"0000_50_widgets_02_plain.yaml":  crdDelete("plain.example.com"),
		"0000_50_widgets_10_op.yaml":     deploymentDelete("widget-operator"),
		"0000_60_other_00_gadget.yaml":   strings.Replace(crdDelete("gadgets.example.com"), `release.openshift.io/delete: "true"`, `note: "kept"`, 1),
		"0000_50_reborn_00_crd.yaml":     crdDelete("reborn.example.com", supported),
		"0000_50_reborn_01_crd.yaml":     strings.Replace(crdDelete("reborn.example.com"), `release.openshift.io/delete: "true"`, `note: "kept"`, 1),
		"0000_50_used_00_crd.yaml":       crdDelete("useds.example.com", supported),
		"0000_70_user_00_cr.yaml":        "apiVersion: example.com/v1\nkind: Used\nmetadata:\n  name: x\n  namespace: ns\n",
	})
	got := map[string]Candidate{}
	for _, c := range Candidates(rel) {
		got[c.Component] = c
	}
	if len(got) != 3 {
		t.Fatalf("candidates %v, want widgets, reborn and used", got)
	}
	w := got["widgets"]
	if len(w.CRDs) != 2 || len(w.Operators) != 1 || w.Operators[0].Name != "widget-operator" {
		t.Fatalf("widgets = %+v, want its two Supported CRDs and its Deployment", w)
	}
	if crd := w.CRDs[0]; crd.Name != "widgets.example.com" || crd.Skip != nil || fmt.Sprint(crd.Namespaces) != "[a b]" || !crd.InScope("a") || crd.InScope("c") || !crd.InScope("") {
		t.Errorf("widgets CRD = %+v, want scope a, b with cluster-scoped operands in scope", crd)
	}
	if skip := w.CRDs[1].Skip; skip == nil || skip.Rule != RuleSingleOwner || !strings.Contains(skip.Message, "component other") {
		t.Errorf("gadgets, shipped by another component, must fail rule 2: %+v", skip)
	}
	if skip := got["reborn"].CRDs[0].Skip; skip == nil || skip.Rule != RuleNotReplaced {
		t.Errorf("a CRD the release ships again must fail rule 4: %+v", skip)
	}
	if got["used"].CRDs[0].Namespaces != nil {
		t.Error("no scope annotation means every namespace")
	}
	if m := APIUser(rel, "example.com", "Used"); m == nil || m.Component != "user" {
		t.Errorf("rule 3 must find the custom resource the release keeps: %v", m)
	}
	if m := APIUser(rel, "example.com", "Widget"); m != nil {
		t.Errorf("nothing uses Widget: %v", m)
	}
}

func TestPolicyOf(t *testing.T) {
	for value, want := range map[string]Policy{"Delete": PolicyDelete, "Orphan": PolicyOrphan, "": PolicyOrphan, "delete": PolicyOrphan} {
		if got := PolicyOf(map[string]string{PolicyAnnotation: value}); got != want {
			t.Errorf("%q: %s, want %s", value, got, want)
		}
	}
}

func count(n int, kind string) Count {
	var c Count
	for i := range n {
		c.Add(Operand{Kind: kind, Namespace: "ns", Name: fmt.Sprintf("o%03d", i)})
	}
	return c
}

func TestProgressStallAndWait(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rec := progressed(nil, "widgets", "2.0.0", count(3, "Widget"), t0)
	if rec.State != Running || rec.Total() != 3 || !rec.StartedAt.Time.Equal(t0) {
		t.Fatalf("start: %+v", rec)
	}
	same := progressed(&rec, "widgets", "2.0.1", count(3, "Widget"), t0.Add(5*time.Minute))
	if !same.ProgressAt.Time.Equal(t0) || same.Release != "2.0.0" || same.Stalled(t0.Add(9*time.Minute), 10*time.Minute) || !same.Stalled(t0.Add(10*time.Minute), 10*time.Minute) {
		t.Errorf("no progress keeps the stall timer and the starting release: %+v", same)
	}
	fewer := progressed(&same, "widgets", "2.0.0", count(1, "Widget"), t0.Add(11*time.Minute))
	if !fewer.ProgressAt.Time.Equal(t0.Add(11*time.Minute)) || fewer.Stalled(t0.Add(12*time.Minute), 10*time.Minute) {
		t.Errorf("progress restarts the stall timer: %+v", fewer)
	}
	paused := waiting(&fewer, "widgets", "2.0.0", "operator not Available", t0.Add(12*time.Minute))
	if paused.State != Running || paused.Total() != 1 || paused.Message != "operator not Available" {
		t.Errorf("a running cleanup that must wait keeps its counts: %+v", paused)
	}
	if done := progressed(&paused, "widgets", "2.0.0", Count{}, t0.Add(13*time.Minute)); done.State != Completed || !done.State.Open() {
		t.Errorf("no operand left completes the cleanup: %+v", done)
	}
	blocked := waiting(nil, "widgets", "2.0.0", "operator not Available", t0)
	if blocked.State != Waiting || blocked.State.Open() || blocked.Blocked(t0.Add(time.Minute), 10*time.Minute) || !blocked.Blocked(t0.Add(10*time.Minute), 10*time.Minute) {
		t.Errorf("a cleanup that cannot start waits, then reads as blocked: %+v", blocked)
	}
	if started := progressed(&blocked, "widgets", "2.0.0", count(2, "Widget"), t0.Add(20*time.Minute)); !started.StartedAt.Time.Equal(t0) || !started.ProgressAt.Time.Equal(t0.Add(20*time.Minute)) {
		t.Errorf("a cleanup that starts after waiting keeps its start and starts its stall timer: %+v", started)
	}
}

func TestDescribeIsBounded(t *testing.T) {
	c := count(25, "Widget")
	for i := range 60 {
		c.Add(Operand{Kind: "Gadget", Name: fmt.Sprintf("g%02d", i)})
	}
	rec := progressed(nil, "widgets", "2.0.0", c, time.Now())
	if len(rec.Named) != 20 {
		t.Errorf("%d operands named, want 10 per kind", len(rec.Named))
	}
	msg := rec.Describe()
	for _, want := range []string{"waiting for operator to finish cleanup for 85 CRs of component widgets", "60 Gadget: Gadget/g00", "and 50 more", "25 Widget: Widget/ns/o000", "and 15 more"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q:\n%s", want, msg)
		}
	}
	many := Count{}
	for k := range 8 {
		for i := range 10 {
			many.Add(Operand{Kind: fmt.Sprintf("K%d", k), Name: fmt.Sprint(i)})
		}
	}
	if len(many.Named) != maxNamed {
		t.Errorf("%d operands named, want at most %d in all", len(many.Named), maxNamed)
	}
}

// TestCandidatesReadEachManifestOnce: judging rules 2 and 4 indexes the
// release once instead of scanning it for each CRD. The kept manifests'
// namespace is a number, so that apimachinery builds an error, an
// allocation, on each read of their identity: with ten times the CRDs and
// manifests, Candidates must allocate about ten times as much, not a
// hundred.
func TestCandidatesReadEachManifestOnce(t *testing.T) {
	allocs := func(crds int) float64 {
		rel := bigCleanupRelease(crds)
		for _, m := range rel.Manifests {
			if !m.IsCRD() {
				m.Obj.Object["metadata"].(map[string]interface{})["namespace"] = int64(1)
			}
		}
		return testing.AllocsPerRun(2, func() {
			if got := Candidates(rel); len(got) != crds/10 {
				t.Fatalf("%d candidates, want %d", len(got), crds/10)
			}
		})
	}
	small, large := allocs(100), allocs(1000)
	t.Logf("%.0f allocations for 100 CRDs, %.0f for 1000", small, large)
	if large > 15*small {
		t.Errorf("Candidates allocates %.0f times as much for ten times the release: it reads manifests once per CRD", large/small)
	}
}

// TestCandidatesJudgeByTheFirstManifestThatDecides: of the other
// manifests naming the CRD, the first in payload order that is another
// component's, or keeps the CRD, decides rule 2 or 4. Each case lists the
// manifests of a.example.com in order, as component and "keep" or
// "delete"; the first of component c is judged.
func TestCandidatesJudgeByTheFirstManifestThatDecides(t *testing.T) {
	for _, tc := range []struct {
		name      string
		manifests []string
		rule      Rule
		file      string
	}{
		{"alone", []string{"c delete"}, 0, ""},
		{"deleted again by the same component", []string{"c delete", "c delete"}, 0, ""},
		{"kept by the same component", []string{"c delete", "c delete", "c keep"}, RuleNotReplaced, "c_00002"},
		{"deleted by another component", []string{"c delete", "d delete"}, RuleSingleOwner, "d_00001"},
		{"kept, then deleted by another", []string{"c delete", "c keep", "d delete"}, RuleNotReplaced, "c_00001"},
		{"another's, then kept", []string{"c delete", "d delete", "c keep"}, RuleSingleOwner, "d_00001"},
		{"another's before it", []string{"d delete", "c delete"}, RuleSingleOwner, "d_00000"},
		{"kept by another", []string{"c delete", "d keep"}, RuleSingleOwner, "d_00001"},
		{"another CRD", []string{"c delete", "b.example.com d keep"}, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rel := &payload.Release{}
			for i, spec := range tc.manifests {
				name, rest, ok := strings.Cut(spec, " ")
				if !ok || !strings.Contains(name, ".") {
					name, rest = "a.example.com", spec
				}
				component, how, _ := strings.Cut(rest, " ")
				rel.Manifests = append(rel.Manifests, crdManifest(i, name, component, how == "delete"))
			}
			var skip *Note
			for _, c := range Candidates(rel) {
				if c.Component == "c" {
					skip = c.CRDs[0].Skip
				}
			}
			switch {
			case tc.rule == 0 && skip != nil:
				t.Errorf("skipped: %+v", skip)
			case tc.rule != 0 && (skip == nil || skip.Rule != tc.rule || !strings.Contains(skip.Message, tc.file)):
				t.Errorf("skip %+v, want %s naming the manifest %s", skip, tc.rule, tc.file)
			}
		})
	}
}

// TestDescribeOfAStoredRecordIsBounded: a record read back from the store
// may count and name far more than a cleanup does. Its description lists
// the first kinds, names within Count.Add's bounds, and costs the same at
// 10,000 kinds as at 1,000.
func TestDescribeOfAStoredRecordIsBounded(t *testing.T) {
	rec := storedRecord(10_000, 2_500)
	var extra []Operand
	for i := range 30 {
		extra = append(extra, Operand{Kind: "Kind000000", Namespace: "ns", Name: fmt.Sprintf("extra%02d", i)})
	}
	rec.Named = append(extra, rec.Named...)
	msg := rec.Describe()
	for _, want := range []string{
		"waiting for operator to finish cleanup for 30000 CRs of component widgets; remaining 3 Kind000000: Kind000000/ns/extra00, ",
		", Kind000000/ns/extra09; 3 Kind000001: Kind000001/ns/o000001 and 2 more; ",
		"; 3 Kind000040: Kind000040/ns/o000040 and 2 more; 3 Kind000041; ",
		"; 3 Kind000049; and 9950 more kinds",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q:\n%s", want, msg)
		}
	}
	if n := strings.Count(msg, "/ns/"); n != maxNamed {
		t.Errorf("%d operands named, want %d", n, maxNamed)
	}
	if n := strings.Count(msg, "Kind000000/"); n != maxNamedPerKind {
		t.Errorf("%d operands of Kind000000 named, want %d", n, maxNamedPerKind)
	}
	if len(msg) > 4<<10 {
		t.Errorf("message of %d bytes, want under 4 KiB", len(msg))
	}

	small := testing.AllocsPerRun(3, func() { _ = storedRecord(1_000, 250).Describe() })
	recordOnly := testing.AllocsPerRun(3, func() { _ = storedRecord(1_000, 250) })
	large := testing.AllocsPerRun(3, func() { _ = storedRecord(10_000, 2_500).Describe() })
	largeRecordOnly := testing.AllocsPerRun(3, func() { _ = storedRecord(10_000, 2_500) })
	small, large = small-recordOnly, large-largeRecordOnly
	t.Logf("Describe: %.0f allocations at 1,000 kinds, %.0f at 10,000", small, large)
	if large > small+20 {
		t.Errorf("Describe allocates %.0f times at 10,000 kinds and %.0f at 1,000: it grows with the record", large, small)
	}
}

func TestFirstKinds(t *testing.T) {
	remaining := map[string]int{}
	for i := range 200 {
		remaining[fmt.Sprintf("K%03d", 199-i)] = 1
	}
	if got := firstKinds(remaining, 3); fmt.Sprint(got) != "[K000 K001 K002]" {
		t.Errorf("first three kinds %v", got)
	}
	if got := firstKinds(map[string]int{"B": 1, "A": 2}, 3); fmt.Sprint(got) != "[A B]" {
		t.Errorf("fewer kinds than asked: %v", got)
	}
}
