package payload

import (
	"flag"
	"fmt"
	"io/fs"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/payload-applier/payload-applier/pkg/payload/payloadtest"
)

var updateFixGolden = flag.Bool("update-fix", false, "rewrite testdata/fix/want and testdata/fix/changes.golden")

const fixTestdata = "testdata/fix"

// readTree returns every file under dir by relative path, with its mode.
func readTree(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out[rel] = fmt.Sprintf("%v\n%s", info.Mode().Perm(), data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func diffTrees(t *testing.T, what string, want, got map[string]string) {
	t.Helper()
	for name, w := range want {
		if g, ok := got[name]; !ok {
			t.Errorf("%s: %s is missing", what, name)
		} else if g != w {
			t.Errorf("%s: %s differs:\n--- want\n%s\n--- got\n%s", what, name, w, g)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("%s: unexpected file %s", what, name)
		}
	}
}

// runFix loads dir (and previous) as lint does and runs Fix.
func runFix(t testing.TB, dir, previous string) []Change {
	t.Helper()
	all, _, err := LoadAll(dir)
	if err != nil {
		t.Fatal(err)
	}
	opts := FixOptions{Filter: DefaultLoadOptions()}
	if previous != "" {
		opts.Previous, _ = loadFiltered(t, previous)
	}
	changes, err := Fix(all, opts)
	if err != nil {
		t.Fatalf("Fix: %v", err)
	}
	return changes
}

func formatChanges(changes []Change, dir string) string {
	var b strings.Builder
	for _, c := range changes {
		b.WriteString(strings.ReplaceAll(c.String(), dir, "DIR"))
		b.WriteString("\n")
	}
	return b.String()
}

// TestFixGolden fixes testdata/fix/next against testdata/fix/previous:
// every near-miss delete value, every key with one close known key, and
// the orphans, each said once; the result matches testdata/fix/want byte
// for byte, lints clean, and a second run changes nothing.
func TestFixGolden(t *testing.T) {
	previous := filepath.Join(fixTestdata, "previous")
	if n := len(byRule(lintDirs(t, filepath.Join(fixTestdata, "next"), previous), RuleOrphan)); n != 5 {
		t.Fatalf("the fixture has %d orphans, want 5", n)
	}
	dir := payloadtest.CopyTree(t, filepath.Join(fixTestdata, "next"))
	changes := runFix(t, dir, previous)
	got := formatChanges(changes, dir)

	wantDir := filepath.Join(fixTestdata, "want")
	goldenChanges := filepath.Join(fixTestdata, "changes.golden")
	if *updateFixGolden {
		os.RemoveAll(wantDir)
		if err := os.Rename(payloadtest.CopyTree(t, dir), wantDir); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(goldenChanges, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(goldenChanges)
	if err != nil {
		t.Fatalf("%v (run go test -run TestFixGolden -update-fix to create it)", err)
	}
	if got != string(want) {
		t.Errorf("changes differ from %s:\n%s", goldenChanges, got)
	}
	fixed := readTree(t, dir)
	diffTrees(t, "fixed tree", readTree(t, wantDir), fixed)

	if findings := lintDirs(t, dir, previous); len(findings) > 0 {
		t.Errorf("the fixed pair still has findings:\n%s", formatFindings(findings))
	}
	if again := runFix(t, dir, previous); len(again) > 0 {
		t.Errorf("a second run changed more:\n%s", formatChanges(again, dir))
	}
	diffTrees(t, "after a second run", fixed, readTree(t, dir))
}

// TestFixLeavesDoubtAlone: "false" may mean keep, a key as close to two
// known keys has no sure fix, and a rename to a key the mapping already
// has would set it twice: nothing is written, lint still reports.
func TestFixLeavesDoubtAlone(t *testing.T) {
	dir := payloadtest.CopyTree(t, filepath.Join(fixTestdata, "undecided"))
	before := readTree(t, dir)
	if changes := runFix(t, dir, ""); len(changes) > 0 {
		t.Errorf("changes:\n%s", formatChanges(changes, dir))
	}
	diffTrees(t, "undecided", before, readTree(t, dir))
	findings := lintDirs(t, dir, "")
	if len(byRule(findings, RuleDeleteValue)) != 1 || len(byRule(findings, RuleUnknownAnnotation)) != 2 {
		t.Errorf("want the delete value and the key still reported:\n%s", formatFindings(findings))
	}
}

// TestFixOCPRealUnchanged: a real payload has nothing to fix, and --fix
// leaves its tree byte-identical, modes included.
func TestFixOCPRealUnchanged(t *testing.T) {
	skipWithoutRealPayload(t, ocpRealDir)
	dir := payloadtest.CopyTree(t, ocpRealDir)
	before := readTree(t, dir)
	if changes := runFix(t, dir, ocpRealDir); len(changes) > 0 {
		t.Errorf("changes on a real payload:\n%s", formatChanges(changes, dir))
	}
	diffTrees(t, "ocp-real", before, readTree(t, dir))
}

// TestFixOrphans covers what the orphan fix leaves to a person and what it
// folds: a protected object, an object another profile still creates, a
// Namespace this release still uses, the contents of a Namespace or CRD
// it deletes, and a file name the new release already has.
func TestFixOrphans(t *testing.T) {
	cm := func(ns, name string, extra ...string) string {
		return annotated("v1", "ConfigMap", ns, name, extra...)
	}
	nsDoc := func(name string) string { return annotated("v1", "Namespace", "", name) }
	previous := writePayload(t, "4.20.1", map[string]string{
		"0000_00_a_00_ns.yaml":   nsDoc("gone") + "---\n" + nsDoc("used") + "---\n" + nsDoc("default"),
		"0000_10_a_01_cm.yaml":   cm("gone", "inside") + "---\n" + cm("used", "dropped") + "---\n" + cm("used", "other-profile"),
		"0000_20_b_00_crd.yaml":  crdDoc("example.com", "Widget", "widgets", "v1"),
		"0000_30_b_01_cr.yaml":   annotated("example.com/v1", "Widget", "used", "w"),
		"0000_40_c_00_file.yaml": cm("used", "renamed-away"),
	})
	next := writePayload(t, "4.20.2", map[string]string{
		"0000_10_a_01_cm.yaml": cm("used", "new"),
		"0000_10_a_02_sh.yaml": strings.Replace(cm("used", "other-profile"), "self-managed-high-availability", "hypershift", 1),
		// The name the orphan of 0000_40_c_00_file.yaml would take.
		"0000_40_c_00_file.yaml": cm("used", "unrelated"),
	})
	changes := runFix(t, next, previous)
	got := formatChanges(changes, next)
	want := `DIR/0000_00_a_00_ns.yaml:1: fixed orphan: wrote a delete manifest for Namespace/gone, which the previous release 4.20.1 creates (PREV/0000_00_a_00_ns.yaml:1)
DIR/0000_10_a_01_cm-delete.yaml:1: fixed orphan: wrote a delete manifest for ConfigMap/used/dropped, which the previous release 4.20.1 creates (PREV/0000_10_a_01_cm.yaml:9)
DIR/0000_20_b_00_crd.yaml:1: fixed orphan: wrote a delete manifest for CustomResourceDefinition.apiextensions.k8s.io/widgets.example.com, which the previous release 4.20.1 creates (PREV/0000_20_b_00_crd.yaml:1)
DIR/0000_40_c_00_file-delete.yaml:1: fixed orphan: wrote a delete manifest for ConfigMap/used/renamed-away, which the previous release 4.20.1 creates (PREV/0000_40_c_00_file.yaml:1)
`
	if got = strings.ReplaceAll(got, previous, "PREV"); got != want {
		t.Errorf("changes:\n%s\nwant:\n%s", got, want)
	}
	var left []string
	for _, f := range byRule(lintDirs(t, next, previous), RuleOrphan) {
		left = append(left, strings.Fields(f.Message)[0])
	}
	if want := []string{"Namespace/used", "Namespace/default", "ConfigMap/used/other-profile"}; !reflect.DeepEqual(left, want) {
		t.Errorf("orphans left to a person %v, want %v", left, want)
	}
	if again := runFix(t, next, previous); len(again) > 0 {
		t.Errorf("a second run changed more:\n%s", formatChanges(again, next))
	}
}

func TestDeleteNearMiss(t *testing.T) {
	for v, want := range map[any]bool{
		true: true, "True": true, "TRUE": true, "yes": true, "Y": true, "on": true, " true ": true,
		"true": false, false: false, "false": false, "no": false, "1": false, 1.0: false, nil: false, "delete": false,
	} {
		if got := deleteNearMiss(v); got != want {
			t.Errorf("deleteNearMiss(%#v) = %t, want %t", v, got, want)
		}
	}
}

func TestKeyFix(t *testing.T) {
	m := &Manifest{}
	for key, want := range map[string]string{
		"release.openshift.io/delet":                                 "release.openshift.io/delete",
		"release.openshift.io/deletee":                               "release.openshift.io/delete",
		"Release.OpenShift.io/delete":                                "release.openshift.io/delete",
		"release.openshift.io/create-onyl":                           "release.openshift.io/create-only",
		"include.release.openshift.io/self-managed-high-availabilty": "include.release.openshift.io/self-managed-high-availability",
		"include.release.openshift.io/Hypershift":                    "include.release.openshift.io/hypershift",
		// As close to feature-gate as to feature-set: a person decides.
		"release.openshift.io/feature-gat": "",
		"release.openshift.io/something":   "",
		"release.openshift.io/delete":      "",
		"example.com/delet":                "",
		"Release.OpenShift.io/unknown":     "",
	} {
		got, ok := keyFix(m, key)
		if !ok {
			got = ""
		}
		if got != want {
			t.Errorf("keyFix(%q) = %q, want %q", key, got, want)
		}
	}
}

// fuzzKey is an annotation key a generated document writes, and what the
// fix must make of it.
type fuzzKey struct {
	written, fixed string
}

var (
	fuzzDeleteKeys = []fuzzKey{
		{DeleteAnnotation, DeleteAnnotation},
		{"release.openshift.io/delet", DeleteAnnotation},
		{"Release.OpenShift.io/delete", DeleteAnnotation},
		{"release.openshift.io/dlete", DeleteAnnotation},
	}
	fuzzValues = []struct {
		text     string
		nearMiss bool
	}{
		{`"true"`, false}, {`"True"`, true}, {`yes`, true}, {`true`, true}, {`'TRUE'`, true},
		{`" true "`, true}, {`"false"`, false}, {`no`, false}, {`on`, true}, {`"maybe"`, false},
		{`"y\u0065s"`, true}, {`'it''s'`, false},
	}
	fuzzOther = []fuzzKey{
		{IncludePrefix + "self-managed-high-availability", IncludePrefix + "self-managed-high-availability"},
		{IncludePrefix + "single-node-developr", IncludePrefix + "single-node-developer"},
		{"example.com/note", "example.com/note"},
		{"example.com/ünïcode-✓", "example.com/ünïcode-✓"},
		{"release.openshift.io/create-onyl", CreateOnlyAnnotation},
	}
	fuzzOtherValues = []string{`"true"`, `'x: y'`, `"ünï ✓ \"q\""`, `plain text`, `"#not a comment"`}
)

// fuzzDoc writes one random document and returns its text and, per
// written key, what the key and value must read after the fix.
func fuzzDoc(r *rand.Rand, name string) (string, map[string]any) {
	type entry struct {
		key, value string
		fixedKey   string
		fixedValue any // nil: as parsed before
	}
	var entries []entry
	for _, i := range r.Perm(len(fuzzOther))[:r.Intn(len(fuzzOther)+1)] {
		k := fuzzOther[i]
		entries = append(entries, entry{key: k.written, value: fuzzOtherValues[r.Intn(len(fuzzOtherValues))], fixedKey: k.fixed})
	}
	if r.Intn(4) > 0 {
		k := fuzzDeleteKeys[r.Intn(len(fuzzDeleteKeys))]
		v := fuzzValues[r.Intn(len(fuzzValues))]
		e := entry{key: k.written, value: v.text, fixedKey: k.fixed}
		if v.nearMiss {
			e.fixedValue = "true"
		}
		entries = append(entries, e)
	}
	r.Shuffle(len(entries), func(i, j int) { entries[i], entries[j] = entries[j], entries[i] })
	quote := func(k string) string {
		switch r.Intn(3) {
		case 0:
			return fmt.Sprintf("%q", k)
		case 1:
			return "'" + k + "'"
		}
		return k
	}
	var b strings.Builder
	if r.Intn(2) == 0 {
		b.WriteString("# a comment before the document: release.openshift.io/delete: yes\n")
	}
	fmt.Fprintf(&b, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: openshift-fuzz\n", name)
	flow := r.Intn(3) == 0
	if len(entries) == 0 {
		b.WriteString("  annotations: {}\n")
	} else if flow {
		var parts []string
		for _, e := range entries {
			parts = append(parts, quote(e.key)+": "+e.value)
		}
		fmt.Fprintf(&b, "  annotations: {%s}\n", strings.Join(parts, ", "))
	} else {
		b.WriteString("  annotations:\n")
		for _, e := range entries {
			fmt.Fprintf(&b, "    %s:%s%s", quote(e.key), strings.Repeat(" ", 1+r.Intn(3)), e.value)
			if r.Intn(3) == 0 {
				b.WriteString("   # trailing ✓ comment")
			}
			b.WriteString("\n")
		}
	}
	b.WriteString("data:\n  text: |\n    release.openshift.io/delete: yes\n    spans lines\n  num: \"1\"\n")

	// The expected annotations, from the written ones through a YAML parse.
	docs, err := parseDocument([]byte(b.String()))
	if err != nil || len(docs) != 1 {
		panic(fmt.Sprintf("generated an invalid document (%v):\n%s", err, b.String()))
	}
	before := rawAnnotations(&Manifest{Manifest: docs[0]})
	want := map[string]any{}
	for _, e := range entries {
		v := before[e.key]
		if e.fixedValue != nil && e.fixedKey == DeleteAnnotation {
			v = e.fixedValue
		}
		want[e.fixedKey] = v
	}
	return b.String(), want
}

// TestFixNeverCorrupts writes random files (documents in random order and
// quoting, block and flow annotations, comments, multi-byte characters,
// separators with comments) and checks that the fix changes exactly the
// near-miss delete values and the misspelled keys: every other field
// re-parses equal, no line is added or removed, every changed line holds an
// annotation, and a second run changes nothing.
func TestFixNeverCorrupts(t *testing.T) {
	r := rand.New(rand.NewSource(27))
	total := 0
	defer func() {
		// The generator must exercise the fixes, not just the files.
		if total < 200 {
			t.Errorf("only %d changes in all iterations", total)
		}
	}()
	for iter := 0; iter < 200; iter++ {
		files := map[string]string{}
		wants := map[string]map[string]any{}
		for f := 0; f < 1+r.Intn(3); f++ {
			var docs []string
			for d := 0; d < 1+r.Intn(4); d++ {
				name := fmt.Sprintf("cm-%d-%d", f, d)
				text, want := fuzzDoc(r, name)
				docs = append(docs, text)
				wants[name] = want
			}
			sep := []string{"---\n", "--- # next\n", "\n---\n\n"}[r.Intn(3)]
			files[fmt.Sprintf("0000_50_fuzz_%02d_cm.yaml", f)] = strings.Join(docs, sep)
		}
		dir := writePayload(t, "4.20.0", files)
		before := readTree(t, dir)
		changes := runFix(t, dir, "")
		total += len(changes)
		after := readTree(t, dir)

		all, _, err := LoadAll(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(all.Manifests) != len(wants) {
			t.Fatalf("iteration %d: %d manifests after the fix, want %d", iter, len(all.Manifests), len(wants))
		}
		for _, m := range all.Manifests {
			got := map[string]any{}
			for k, v := range rawAnnotations(m) {
				got[k] = v
			}
			if want := wants[m.Obj.GetName()]; !reflect.DeepEqual(got, want) {
				t.Errorf("iteration %d: %s annotations %v, want %v\n%s", iter, m.Obj.GetName(), got, want, m.src)
			}
			if data, _ := m.Obj.Object["data"].(map[string]any); data["text"] != "release.openshift.io/delete: yes\nspans lines\n" || data["num"] != "1" {
				t.Errorf("iteration %d: %s data changed: %v", iter, m.Obj.GetName(), data)
			}
		}
		for name, b := range before {
			a := after[name]
			bl, al := strings.Split(b, "\n"), strings.Split(a, "\n")
			if len(bl) != len(al) {
				t.Errorf("iteration %d: %s has %d lines after the fix, %d before", iter, name, len(al), len(bl))
				continue
			}
			for i := range bl {
				if bl[i] != al[i] && !strings.Contains(strings.ToLower(bl[i]), "release.openshift.io/") {
					t.Errorf("iteration %d: %s line %d changed but holds no annotation:\n%s\n%s", iter, name, i, bl[i], al[i])
				}
			}
		}
		if len(changes) > 0 && reflect.DeepEqual(before, after) {
			t.Errorf("iteration %d: changes reported but nothing written", iter)
		}
		if again := runFix(t, dir, ""); len(again) > 0 {
			t.Errorf("iteration %d: a second run changed more:\n%s", iter, formatChanges(again, dir))
		}
		if t.Failed() {
			for name, text := range files {
				t.Logf("%s:\n%s", name, text)
			}
			return
		}
	}
}

// TestFixKeepsSymlinks: a symlinked manifest is not replaced
// by a file.
func TestFixKeepsSymlinks(t *testing.T) {
	dir := writePayload(t, "4.20.0", nil)
	writeFile(t, filepath.Join(dir, "sub", "real.yaml"), annotated("v1", "ConfigMap", "ns", "x", `release.openshift.io/delete: "True"`))
	if err := os.Symlink(filepath.Join("sub", "real.yaml"), filepath.Join(dir, "0000_50_a_00_cm.yaml")); err != nil {
		t.Skip(err)
	}
	if changes := runFix(t, dir, ""); len(changes) > 0 {
		t.Errorf("changes through a symlink:\n%s", formatChanges(changes, dir))
	}
	if fi, err := os.Lstat(filepath.Join(dir, "0000_50_a_00_cm.yaml")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the symlink was replaced: %v", err)
	}
}

// TestFixKeepsMode: a fixed file keeps its mode, read-only included, and
// no temporary file is left behind.
func TestFixKeepsMode(t *testing.T) {
	dir := writePayload(t, "4.20.0", map[string]string{
		"0000_50_a_00_cm.yaml": annotated("v1", "ConfigMap", "ns", "x", `release.openshift.io/delete: "True"`),
	})
	name := filepath.Join(dir, "0000_50_a_00_cm.yaml")
	if err := os.Chmod(name, 0o444); err != nil {
		t.Fatal(err)
	}
	if changes := runFix(t, dir, ""); len(changes) != 1 {
		t.Fatalf("want one change, got:\n%s", formatChanges(changes, dir))
	}
	info, err := os.Stat(name)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o444 {
		t.Errorf("mode %v, want -r--r--r--", info.Mode().Perm())
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 3 {
		t.Errorf("want the manifest and the two metadata files, got %v", entries)
	}
}

// TestFixInjectedIntoOCPReal writes a near-miss delete, or a misspelled
// delete key, into the first annotated document of each file of the real
// payload (random per file): the fix must turn each file into exactly the
// text a person would have written, byte for byte, whatever the file's
// formatting, and touch no other file.
func TestFixInjectedIntoOCPReal(t *testing.T) {
	skipWithoutRealPayload(t, ocpRealDir)
	dir := payloadtest.CopyTree(t, ocpRealDir)
	include := regexp.MustCompile(`(?m)^( +)(include\.release\.openshift\.io/self-managed-high-availability: "true")( *#.*)?$`)
	injected := []string{`True`, `yes`, `"YES"`, `'True'`, `on`, `" true "`}
	r := rand.New(rand.NewSource(2027))
	want := map[string]string{}
	files, err := filepath.Glob(filepath.Join(dir, ReleaseManifestDir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		text := string(data)
		loc := include.FindStringSubmatchIndex(text)
		if loc == nil || strings.Contains(text, DeleteAnnotation) {
			continue
		}
		indent := text[loc[2]:loc[3]]
		key, value := DeleteAnnotation, injected[r.Intn(len(injected))]
		fixed := indent + DeleteAnnotation + `: "true"`
		if r.Intn(3) == 0 {
			key, value = "release.openshift.io/delet", `"true"`
		}
		at := loc[1]
		broken := text[:at] + "\n" + indent + key + ": " + value + text[at:]
		want[name] = text[:at] + "\n" + fixed + text[at:]
		if err := os.Chmod(name, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, []byte(broken), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if len(want) < 100 {
		t.Fatalf("only %d files took an injected annotation", len(want))
	}
	t.Logf("%d of %d files took an injected annotation", len(want), len(files))
	before := readTree(t, dir)
	changes := runFix(t, dir, "")
	fixedFiles := map[string]bool{}
	for _, c := range changes {
		fixedFiles[c.File] = true
	}
	if len(fixedFiles) != len(want) {
		t.Errorf("%d files fixed, want %d", len(fixedFiles), len(want))
	}
	for name, w := range want {
		got, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != w {
			t.Errorf("%s is not what a person would write:\n%s", name, got)
		}
	}
	after := readTree(t, dir)
	for rel, b := range before {
		if _, injectedHere := want[filepath.Join(dir, rel)]; !injectedHere && after[rel] != b {
			t.Errorf("%s changed but had nothing to fix", rel)
		}
	}
}

// TestFixRealDeletes runs the orphan fix on the real svcat removal: the
// remover ServiceAccounts and Jobs, dropped without a delete manifest, get
// one each in a file of their old name; the Namespace and the
// ClusterRoleBindings, whose delete manifests the release has but excludes
// from every profile (they predate include annotations), are left to a
// person; a second run changes nothing.
func TestFixRealDeletes(t *testing.T) {
	skipWithoutRealPayload(t, realDeletesDir)
	previous := copyWithMetadata(t, filepath.Join(realDeletesDir, "before"), "4.8.0")
	next := copyWithMetadata(t, realDeletesDir, "4.9.0")
	var files []string
	for _, c := range runFix(t, next, previous) {
		files = append(files, filepath.Base(c.File))
	}
	want := []string{
		"0000_50_cluster-svcat-apiserver-operator_05_serviceaccount.yaml",
		"0000_50_cluster-svcat-controller-manager-operator_07_serviceaccount.yaml",
		"0000_90_cluster-svcat-apiserver-operator_01_remover_job.yaml",
		"0000_90_cluster-svcat-controller-manager-operator_01_remover_job.yaml",
	}
	if !reflect.DeepEqual(files, want) {
		t.Errorf("wrote %v, want %v", files, want)
	}
	var left []string
	for _, f := range byRule(lintDirs(t, next, previous), RuleOrphan) {
		left = append(left, strings.Fields(f.Message)[0])
	}
	if len(left) != 4 || !strings.HasPrefix(left[0], "Namespace/") || !strings.HasPrefix(left[1], "ClusterRoleBinding.") {
		t.Errorf("orphans left: %v", left)
	}
	before := readTree(t, next)
	if again := runFix(t, next, previous); len(again) > 0 {
		t.Errorf("a second run changed more:\n%s", formatChanges(again, next))
	}
	diffTrees(t, "after a second run", before, readTree(t, next))
}
