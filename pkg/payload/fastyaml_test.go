package payload

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/openshift/library-go/pkg/manifest"

	"github.com/payload-applier/payload-applier/pkg/payload/payloadtest"
)

// differentialInput is one file for the differential tests.
type differentialInput struct {
	name string
	data []byte
}

// differentialInputs gathers ocp-real and real-deletes (when present), the
// package's testdata, every fuzz corpus entry's byte strings, and the
// hidden-delete and merge-key cases.
func differentialInputs(t *testing.T) []differentialInput {
	t.Helper()
	var inputs []differentialInput
	walk := func(root string, optional bool) {
		if _, err := os.Stat(root); err != nil {
			if optional {
				t.Logf("%s not available, skipped: %v", root, err)
				return
			}
			t.Fatal(err)
		}
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if strings.Contains(p, string(filepath.Separator)+"fuzz"+string(filepath.Separator)) {
				for i, b := range corpusByteStrings(t, data) {
					inputs = append(inputs, differentialInput{fmt.Sprintf("%s#%d.yaml", p, i), b})
				}
				return nil
			}
			name := p
			if !hasManifestExtension(p) {
				name += ".yaml"
			}
			inputs = append(inputs, differentialInput{name, data})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	walk(ocpRealDir, true)
	walk(realDeletesDir, true)
	walk("testdata", false)
	for _, tc := range payloadtest.HiddenDeletes {
		inputs = append(inputs, differentialInput{tc.File, []byte(tc.Content)})
	}
	for i, doc := range mergeKeySpellings {
		inputs = append(inputs, differentialInput{fmt.Sprintf("merge-%d.yaml", i), []byte(doc)})
	}
	for i, doc := range fastYAMLCases {
		inputs = append(inputs, differentialInput{fmt.Sprintf("case-%d.yaml", i), []byte(doc)})
	}
	return inputs
}

// corpusByteStrings returns the []byte values of a Go fuzz corpus file.
func corpusByteStrings(t *testing.T, data []byte) [][]byte {
	var out [][]byte
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		l := sc.Text()
		if !strings.HasPrefix(l, "[]byte(") || !strings.HasSuffix(l, ")") {
			continue
		}
		s, err := strconv.Unquote(l[len("[]byte(") : len(l)-1])
		if err != nil {
			t.Fatalf("corpus line %q: %v", l, err)
		}
		out = append(out, []byte(s))
	}
	return out
}

// sameManifest says how two library-go manifests differ, or "".
func sameManifest(a, b manifest.Manifest) string {
	switch {
	case !bytes.Equal(a.Raw, b.Raw):
		return fmt.Sprintf("Raw differs:\n%s\n%s", a.Raw, b.Raw)
	case a.GVK != b.GVK:
		return fmt.Sprintf("GVK %v, %v", a.GVK, b.GVK)
	case a.String() != b.String():
		return fmt.Sprintf("identity %s, %s", a.String(), b.String())
	case (a.Obj == nil) != (b.Obj == nil):
		return "one has no object"
	case a.Obj != nil && !reflect.DeepEqual(a.Obj.Object, b.Obj.Object):
		return fmt.Sprintf("objects differ:\n%#v\n%#v", a.Obj.Object, b.Obj.Object)
	}
	return ""
}

// compareFile parses data with and without the fast reader and fails on
// any difference in manifests or findings; it returns how many documents
// the fast reader took and how many there were.
func compareFile(t testing.TB, name string, data []byte) (fast, total int) {
	fastMs, fastFindings := parseFileWith(name, data, true)
	slowMs, slowFindings := parseFileWith(name, data, false)
	if !reflect.DeepEqual(fastFindings, slowFindings) {
		t.Fatalf("%s: findings differ:\nfast: %v\nlibrary-go: %v", name, fastFindings, slowFindings)
	}
	if len(fastMs) != len(slowMs) {
		t.Fatalf("%s: %d manifests with the fast reader, %d without", name, len(fastMs), len(slowMs))
	}
	for i := range fastMs {
		a, b := fastMs[i], slowMs[i]
		if diff := sameManifest(a.Manifest, b.Manifest); diff != "" {
			t.Fatalf("%s line %d: %s", name, a.Line, diff)
		}
		if a.OriginalFilename != b.OriginalFilename || a.File != b.File || a.Line != b.Line || a.Component != b.Component || a.RunLevel != b.RunLevel || !bytes.Equal(a.src, b.src) {
			t.Fatalf("%s: manifest %d differs in where it came from", name, i)
		}
	}
	if !utf8Valid(data) || strings.HasSuffix(name, ".json") {
		return 0, 0
	}
	docs, _, err := splitDocuments(data)
	if err != nil {
		return 0, 0
	}
	for _, doc := range docs {
		if _, ok := contentLine(doc.text, doc.line); !ok {
			continue
		}
		total++
		if m, ok := fastDocument(doc.text, true); ok {
			fast++
			compareWithParseManifests(t, name, doc.text, m)
		}
	}
	return fast, total
}

// compareWithParseManifests checks a document the fast reader took against
// library-go's own ParseManifests, stream decoder and all.
func compareWithParseManifests(t testing.TB, name string, text []byte, m manifest.Manifest) {
	ms, err := manifest.ParseManifests(bytes.NewReader(text))
	if err != nil {
		t.Fatalf("%s: the fast reader took a document that ParseManifests refuses (%v):\n%s", name, err, text)
	}
	if len(ms) != 1 {
		t.Fatalf("%s: ParseManifests gives %d manifests for a document the fast reader took", name, len(ms))
	}
	if diff := sameManifest(m, ms[0]); diff != "" {
		t.Fatalf("%s: fast reader and ParseManifests: %s\n%s", name, diff, text)
	}
}

func utf8Valid(b []byte) bool { return bytes.Equal(bytes.ToValidUTF8(b, nil), b) }

// TestFastYAMLMatchesLibraryGo is the differential test: on every input,
// loading with the fast reader gives the same manifests and findings as
// without it, and every document it takes is what ParseManifests builds.
// On ocp-real nearly every document must take the fast path, or the load
// would quietly get slow again.
func TestFastYAMLMatchesLibraryGo(t *testing.T) {
	var fast, total, realFast, realTotal int
	for _, in := range differentialInputs(t) {
		f, n := compareFile(t, in.name, in.data)
		fast += f
		total += n
		if strings.HasPrefix(in.name, ocpRealDir) {
			realFast += f
			realTotal += n
		}
	}
	t.Logf("fast reader took %d of %d documents; ocp-real: %d of %d", fast, total, realFast, realTotal)
	if realTotal > 0 && realFast*100 < realTotal*98 {
		t.Errorf("the fast reader took only %d of ocp-real's %d documents", realFast, realTotal)
	}
}

// FuzzFastYAML compares the fast reader with the library-go path on
// arbitrary documents: when the fast reader takes a document, both
// library-go paths must accept it and build the same manifest; the whole
// file must give the same manifests and findings either way.
func FuzzFastYAML(f *testing.F) {
	for _, doc := range fastYAMLCases {
		f.Add([]byte(doc))
	}
	for _, tc := range payloadtest.HiddenDeletes {
		f.Add([]byte(tc.Content))
	}
	for _, doc := range mergeKeySpellings {
		f.Add([]byte(doc))
	}
	f.Fuzz(func(t *testing.T, text []byte) {
		if len(text) > 1<<16 {
			return
		}
		compareFile(t, "0000_50_fuzz_00_doc.yaml", text)
		if m, ok := fastDocument(text, true); ok {
			ms, err := parseDocument(text)
			if err != nil || len(ms) != 1 {
				t.Fatalf("the fast reader took a document the library-go path refuses (%v)", err)
			}
			if diff := sameManifest(m, ms[0]); diff != "" {
				t.Fatal(diff)
			}
		}
	})
}

// fastYAMLCases are documents at the edges of what the fast reader takes.
var fastYAMLCases = []string{
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: b\ndata:\n  k: v\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  script: |\n    #!/bin/sh\n    echo hi\n\n    exit 0\n  folded: >\n    one\n    two\n\n    three\n  stripped: |-\n    x\n  empty: |\n  next: v\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  a: 'it''s'\n  b: \"q\\\"\\n\\t\\\\/\"\n  c: yes\n  d: 010\n  e: 1.5\n  f: 1e3\n  g: 0x1f\n  h: 2001-12-14\n  i: ~\n  j: -1\n  k: +1\n  l: .inf\n  m: 18446744073709551615\n  m: 1_000\n  o: -.5\n  p: <b>&\n",
	"apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n  - name: c\n    args:\n    - --v=2\n    - -x\n    -   spaced: 1\n        more: 2\n    env: []\n    resources: {}\n  -\n    name: d\n",
	"apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  name: b\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: multi\n    line\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: |\n     \n    x\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: |\n    x\n      \n    y\n   \n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: |\n    x",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  annotations:\n    on: x\n",
	"  apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: a # c\n# c\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: \"a\"\n  namespace: 'b'\ndata:\n  \"k\": a#b\n  'l' : c\n",
	"apiVersion: v1\nkind: List\nmetadata:\n  name: a\nitems:\n- a\n",
	"apiVersion: a/b/c\nkind: X\nmetadata:\n  name: a\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: 1\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace:\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: a: b\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: \u2028x\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  a: >\n\n    x\n      more\n    y\n    z\n\n\n    w\n     \n  b: |+\n    x\n\n  c: >+\n    x\n\n\n  d: >-\n      indented\n    x\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  d: 010\n  e: 1.5\n  f: 1e3\n  g: 0x1f\n  h: 2001-12-14\n  j: -1\n  k: +1\n  m: 1_000\n  o: -.5\n  p: -0\n  q: 1e400x\n  r: [1, 2.5, -3, x, 'y', \"z\"]\n  s: +_1\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: |+\n    x\n\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: |+\n    x\n  ",
}

// TestFastYAMLDeclines: what the strict path refuses or only go-yaml
// knows is never read by the fast reader, so its errors stay library-go's.
func TestFastYAMLDeclines(t *testing.T) {
	head := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n"
	for name, doc := range map[string]string{
		"duplicate key":      head + "data:\n  k: 1\n  k: 2\n",
		"duplicate quoted":   head + "data:\n  k: 1\n  \"k\": 2\n",
		"merge key":          head + "base: &b\n  x: 1\ndata:\n  <<: *b\n",
		"quoted merge key":   head + "data:\n  \"<<\": {}\n",
		"anchor":             head + "data: &a\n  k: v\n",
		"alias":              head + "data:\n  k: *a\n",
		"tag":                head + "data:\n  k: !!str 1\n",
		"tab":                head + "data:\n\tk: v\n",
		"flow mapping":       head + "data: {k: v}\n",
		"nested flow":        head + "data:\n  k: [[1]]\n",
		"boolean key":        head + "data:\n  yes: v\n",
		"number key":         head + "data:\n  1: v\n",
		"escape":             head + "data:\n  k: \"\\x41\"\n",
		"indentation marker": head + "data:\n  k: |2\n    v\n",
		"NEL":                head + "data:\n  k: a\u0085b\n",
		"odd indentation":    head + "data:\n  k: v\n   l: w\n",
		"no kind":            "apiVersion: v1\nmetadata:\n  name: a\n",
		"name not a string":  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: 1\n",
		"namespace null":     head + "  namespace: ~\n",
		"top-level list":     "- a\n",
	} {
		if _, ok := fastDocument([]byte(doc), true); ok {
			t.Errorf("%s: the fast reader took\n%s", name, doc)
		}
	}
}
