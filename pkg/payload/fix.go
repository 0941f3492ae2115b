package payload

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	yamlv3 "go.yaml.in/yaml/v3"

	"github.com/payload-applier/payload-applier/pkg/atomicfile"
)

// This file holds lint --fix: the fixes lint is sure of, written into the
// payload. Edits splice bytes at the positions the YAML parser reports, so
// that everything else in a file (comments, key order, quoting, other
// documents, separators) stays byte for byte; a file is written only when
// its re-parse equals the original with exactly the intended changes.

// Change is one fix that Fix wrote.
type Change struct {
	// File is the path as the caller named the payload; Line is 1-based.
	File    string `json:"file"`
	Line    int    `json:"line"`
	Rule    Rule   `json:"rule"`
	Message string `json:"message"`
}

// String renders the change as path:line: fixed rule: message.
func (c Change) String() string {
	return fmt.Sprintf("%s:%d: fixed %s: %s", c.File, c.Line, c.Rule, c.Message)
}

// FixOptions configures Fix.
type FixOptions struct {
	// Filter selects the manifests that the orphan fix compares, as the
	// release under test is filtered for Lint.
	Filter LoadOptions
	// Previous is the release clusters run now, filtered with Filter, as
	// LintOptions.Previous; nil skips the orphan fix.
	Previous *Release
}

// Fix writes into all's directory the fixes for what lint finds and can
// repair without a person's judgment, and returns them in file and line
// order. all must come from LoadAll (every document, unfiltered).
//   - delete-value: a near miss (deleteNearMiss) becomes "true";
//   - unknown-annotation: a key with one known key it surely means
//     (keyFix) is renamed to it, unless the mapping already has that key;
//   - orphan, with opts.Previous: a delete manifest for each orphan, in a
//     new file named after the previous release's file (fixOrphans).
//
// A second run finds nothing more to do. The error is for a file that
// cannot be read or written; changes already written are returned too.
func Fix(all *Release, opts FixOptions) ([]Change, error) {
	changes, err := fixAnnotations(all)
	if err != nil {
		return changes, err
	}
	if opts.Previous != nil {
		if len(changes) > 0 {
			// A fixed include key may bring back a manifest that the
			// orphan rule missed: judge orphans on the files as they are now.
			if all, _, err = LoadAll(all.Dir); err != nil {
				return changes, err
			}
		}
		more, err := fixOrphans(all, opts)
		changes = append(changes, more...)
		if err != nil {
			return changes, err
		}
	}
	sort.SliceStable(changes, func(i, j int) bool {
		if changes[i].File != changes[j].File {
			return changes[i].File < changes[j].File
		}
		return changes[i].Line < changes[j].Line
	})
	return changes, nil
}

// splice replaces the bytes start:end of a file with text.
type splice struct {
	start, end int
	text       string
}

// docFix is what the fixes of one document change in its object's
// annotations: renames (old key to new), then the delete value.
type docFix struct {
	renames   [][2]string
	setDelete bool
}

// fixAnnotations fixes delete values and annotation keys, file by file.
func fixAnnotations(all *Release) ([]Change, error) {
	var files []string
	byFile := map[string][]*Manifest{}
	for _, m := range all.every() {
		if _, seen := byFile[m.File]; !seen {
			files = append(files, m.File)
		}
		byFile[m.File] = append(byFile[m.File], m)
	}
	var changes []Change
	for _, rel := range files {
		more, err := fixFile(all, rel, byFile[rel])
		changes = append(changes, more...)
		if err != nil {
			return changes, err
		}
	}
	return changes, nil
}

// fixFile fixes the documents of one file, ms in file order, and writes
// the file if anything changed.
func fixFile(all *Release, rel string, ms []*Manifest) ([]Change, error) {
	name := filepath.Join(all.Dir, filepath.FromSlash(rel))
	info, err := os.Lstat(name)
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		// Replacing a symlink with a file would change the payload's shape.
		return nil, nil
	}
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	starts := lineStarts(data)
	var edits []splice
	var changes []Change
	fixes := make([]docFix, len(ms))
	for i, m := range ms {
		if m.src == nil || m.srcLine < 1 || m.srcLine > len(starts) {
			continue
		}
		off := starts[m.srcLine-1]
		if off+len(m.src) > len(data) || !bytes.Equal(data[off:off+len(m.src)], m.src) {
			// The file changed since it was loaded; leave it alone.
			return nil, nil
		}
		e, c, f := fixDocument(all, m, off)
		edits, changes, fixes[i] = append(edits, e...), append(changes, c...), f
	}
	if len(edits) == 0 {
		return nil, nil
	}
	fixed := applySplices(data, edits)
	if !fixVerified(rel, data, fixed, fixes) {
		return nil, nil
	}
	if err := atomicfile.Write(name, fixed, info.Mode().Perm()); err != nil {
		return nil, err
	}
	return changes, nil
}

// fixDocument plans the fixes of one manifest whose text starts at byte
// off of its file.
func fixDocument(all *Release, m *Manifest, off int) (edits []splice, changes []Change, fix docFix) {
	defer func() {
		// Bad input never crashes lint: a document the node parser
		// chokes on is left as it is.
		if recover() != nil {
			edits, changes, fix = nil, nil, docFix{}
		}
	}()
	raw := rawAnnotations(m)
	if len(raw) == 0 {
		return nil, nil, fix
	}
	var root yamlv3.Node
	if yamlv3.Unmarshal(m.src, &root) != nil {
		return nil, nil, fix
	}
	ann := mappingAt(&root, "metadata", "annotations")
	if ann == nil {
		return nil, nil, fix
	}
	present := map[string]bool{}
	for i := 0; i+1 < len(ann.Content); i += 2 {
		present[ann.Content[i].Value] = true
	}
	change := func(n *yamlv3.Node, rule Rule, format string, args ...any) {
		changes = append(changes, Change{File: pathOf(all, m), Line: m.srcLine + n.Line - 1, Rule: rule, Message: fmt.Sprintf(format, args...)})
	}
	starts := lineStarts(m.src)
	for i := 0; i+1 < len(ann.Content); i += 2 {
		k, v := ann.Content[i], ann.Content[i+1]
		if k.Kind != yamlv3.ScalarNode {
			continue
		}
		key := k.Value
		if known, ok := keyFix(m, key); ok && !present[known] {
			if s, e, ok := scalarSpan(m.src, starts, k); ok {
				edits = append(edits, splice{off + s, off + e, requote(k, known)})
				fix.renames = append(fix.renames, [2]string{key, known})
				present[known] = true
				change(k, RuleUnknownAnnotation, "renamed annotation %s to %s", key, known)
				key = known
			}
		}
		if key == DeleteAnnotation && deleteNearMiss(raw[k.Value]) && v.Kind == yamlv3.ScalarNode {
			if s, e, ok := scalarSpan(m.src, starts, v); ok {
				edits = append(edits, splice{off + s, off + e, `"true"`})
				fix.setDelete = true
				change(v, RuleDeleteValue, "%s: %s is now \"true\"", DeleteAnnotation, string(m.src[s:e]))
			}
		}
	}
	return edits, changes, fix
}

// mappingAt follows keys down from a document node to a mapping, or nil.
func mappingAt(n *yamlv3.Node, keys ...string) *yamlv3.Node {
	if n.Kind == yamlv3.DocumentNode {
		if len(n.Content) != 1 {
			return nil
		}
		n = n.Content[0]
	}
	for _, key := range keys {
		if n.Kind != yamlv3.MappingNode {
			return nil
		}
		var next *yamlv3.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if k := n.Content[i]; k.Kind == yamlv3.ScalarNode && k.Value == key {
				next = n.Content[i+1]
			}
		}
		if next == nil {
			return nil
		}
		n = next
	}
	if n.Kind != yamlv3.MappingNode {
		return nil
	}
	return n
}

// lineStarts returns the byte offset of each line of text.
func lineStarts(text []byte) []int {
	starts := []int{0}
	for i, b := range text {
		if b == '\n' {
			starts = append(starts, i+1)
		}
	}
	return starts
}

// scalarSpan returns the bytes of text that write scalar n: plain, single-
// or double-quoted, without tag or anchor. Other scalars are left alone.
func scalarSpan(text []byte, starts []int, n *yamlv3.Node) (start, end int, ok bool) {
	if n.Anchor != "" || n.Style&yamlv3.TaggedStyle != 0 || n.Line < 1 || n.Line > len(starts) || n.Column < 1 {
		return 0, 0, false
	}
	// The parser counts columns in characters.
	start = starts[n.Line-1]
	for c := 1; c < n.Column; c++ {
		if start >= len(text) || text[start] == '\n' {
			return 0, 0, false
		}
		_, size := utf8.DecodeRune(text[start:])
		start += size
	}
	switch n.Style {
	case 0:
		end = start + len(n.Value)
		if end > len(text) || string(text[start:end]) != n.Value || strings.ContainsAny(n.Value, "\n") {
			return 0, 0, false
		}
		return start, end, true
	case yamlv3.DoubleQuotedStyle:
		if start >= len(text) || text[start] != '"' {
			return 0, 0, false
		}
		for i := start + 1; i < len(text); i++ {
			switch text[i] {
			case '\\':
				i++
			case '"':
				return start, i + 1, true
			}
		}
	case yamlv3.SingleQuotedStyle:
		if start >= len(text) || text[start] != '\'' {
			return 0, 0, false
		}
		for i := start + 1; i < len(text); i++ {
			if text[i] == '\'' {
				if i+1 < len(text) && text[i+1] == '\'' {
					i++
					continue
				}
				return start, i + 1, true
			}
		}
	}
	return 0, 0, false
}

// requote writes s, a known annotation key, in the quoting n had.
func requote(n *yamlv3.Node, s string) string {
	switch n.Style {
	case yamlv3.DoubleQuotedStyle:
		return strconv.Quote(s)
	case yamlv3.SingleQuotedStyle:
		return "'" + s + "'"
	}
	return s
}

// applySplices returns data with the edits made; edits do not overlap.
func applySplices(data []byte, edits []splice) []byte {
	sort.Slice(edits, func(i, j int) bool { return edits[i].start < edits[j].start })
	var out bytes.Buffer
	last := 0
	for _, e := range edits {
		out.Write(data[last:e.start])
		out.WriteString(e.text)
		last = e.end
	}
	out.Write(data[last:])
	return out.Bytes()
}

// fixVerified reports whether fixed, parsed, holds the objects that
// original holds with exactly the changes of fixes (one per manifest in
// file order) and nothing else: the guard that a fix never corrupts a file.
func fixVerified(rel string, original, fixed []byte, fixes []docFix) bool {
	before, beforeFindings := parseFile(rel, original)
	after, afterFindings := parseFile(rel, fixed)
	if len(before) != len(fixes) || len(after) != len(before) || len(afterFindings) != len(beforeFindings) {
		return false
	}
	for i, m := range before {
		want := m.Obj.Object
		if f := fixes[i]; len(f.renames) > 0 || f.setDelete {
			ann, ok := mapAt(want, "metadata")["annotations"].(map[string]any)
			if !ok {
				return false
			}
			for _, r := range f.renames {
				ann[r[1]] = ann[r[0]]
				delete(ann, r[0])
			}
			if f.setDelete {
				ann[DeleteAnnotation] = "true"
			}
		}
		if !reflect.DeepEqual(want, after[i].Obj.Object) {
			return false
		}
	}
	return true
}

// inclusionAnnotation reports whether key is read by an inclusion filter,
// and so belongs on a delete manifest that must reach the same clusters.
func inclusionAnnotation(key string) bool {
	switch key {
	case CapabilityAnnotation, FeatureSetAnnotation, FeatureGateAnnotation, MajorVersionAnnotation:
		return true
	}
	return strings.HasPrefix(key, IncludePrefix) || strings.HasPrefix(key, ExcludePrefix)
}

// fixOrphans writes a delete manifest for each orphan lint would report,
// in the minimal form (apiVersion, kind, name, namespace, the delete
// annotation and the old manifest's inclusion annotations). The orphans of
// one file of the previous release go, in its order, into one new file
// named after it, so that they keep its run level and component. Left to a
// person: an object that a manifest of this release names under other
// filters, one the applier never deletes, and a Namespace that objects of
// this release still live in. An orphan inside a Namespace or of a CRD
// that this fix deletes goes with it and gets no manifest of its own.
func fixOrphans(all *Release, opts FixOptions) ([]Change, error) {
	l, err := detectLayout(all.Dir)
	if err != nil {
		return nil, err
	}
	named := map[ObjectID]bool{}
	usedNamespaces := map[string]bool{}
	for _, m := range all.every() {
		named[m.ID()] = true
		if !m.Delete() {
			usedNamespaces[m.Obj.GetNamespace()] = true
		}
	}
	prev := newReleaseIndex(opts.Previous)
	var candidates []*Manifest
	deletedNamespaces := map[string]bool{}
	var deletedCRDs []crdInfo
	for _, p := range orphans(prev, newReleaseIndex(all.Filter(opts.Filter))) {
		id := p.ID()
		if _, protected := ProtectedReason(defaultProtected, id); protected || named[id] {
			continue
		}
		switch {
		case p.GVK.GroupKind() == NamespaceKind:
			if usedNamespaces[id.Name] {
				continue
			}
			deletedNamespaces[id.Name] = true
		case p.IsCRD():
			deletedCRDs = append(deletedCRDs, crdInfoOf(p))
		}
		candidates = append(candidates, p)
	}
	var files []string
	byFile := map[string][]*Manifest{}
	for _, p := range candidates {
		id := p.ID()
		if id.Namespace != "" && deletedNamespaces[id.Namespace] {
			continue
		}
		if !p.IsCRD() && servedByAny(deletedCRDs, p) {
			continue
		}
		if _, seen := byFile[p.File]; !seen {
			files = append(files, p.File)
		}
		byFile[p.File] = append(byFile[p.File], p)
	}
	var changes []Change
	taken := map[string]bool{}
	for _, old := range files {
		rel, err := orphanFileName(all.Dir, l, old, taken)
		if err != nil {
			return changes, err
		}
		taken[rel] = true
		var out bytes.Buffer
		line := 1
		for i, p := range byFile[old] {
			if i > 0 {
				out.WriteString("---\n")
				line++
			}
			doc, err := deleteManifest(p)
			if err != nil {
				return changes, err
			}
			changes = append(changes, Change{
				File: filepath.Join(all.Dir, filepath.FromSlash(rel)), Line: line, Rule: RuleOrphan,
				Message: fmt.Sprintf("wrote a delete manifest for %s, which the previous release %s creates (%s)", p.ID(), opts.Previous.Version, position(opts.Previous, p)),
			})
			out.Write(doc)
			line += bytes.Count(doc, []byte("\n"))
		}
		if err := atomicfile.Write(filepath.Join(all.Dir, filepath.FromSlash(rel)), out.Bytes(), 0o644); err != nil {
			return changes, err
		}
	}
	return changes, nil
}

func servedByAny(crds []crdInfo, m *Manifest) bool {
	for _, c := range crds {
		if c.serves(m.GVK.GroupKind()) {
			return true
		}
	}
	return false
}

// orphanFileName names the new file for the orphans of old, a file of the
// previous release: the same name in the matching manifest directory of
// this release's layout, or, when that name is taken, the name with
// -delete (then -delete-2, ...) before the extension. Either way the name
// keeps the 0000_<runlevel>_<component>_ prefix, so the deletes run at the
// old file's run level, in its component, next to where it ran.
func orphanFileName(dir string, l layout, old string, taken map[string]bool) (string, error) {
	target := l.dirs[len(l.dirs)-1]
	if d := path.Dir(old); contains(l.dirs, d) {
		target = d
	}
	base := path.Base(old)
	ext := path.Ext(base)
	stem := strings.TrimSuffix(base, ext)
	if ext != ".yaml" && ext != ".yml" {
		ext = ".yaml"
	}
	for i := 0; i < 100; i++ {
		name := stem + ext
		switch {
		case i == 1:
			name = stem + "-delete" + ext
		case i > 1:
			name = fmt.Sprintf("%s-delete-%d%s", stem, i, ext)
		}
		rel := path.Join(target, name)
		if taken[rel] {
			continue
		}
		if _, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(rel))); errors.Is(err, fs.ErrNotExist) {
			return rel, nil
		} else if err != nil {
			return "", err
		}
	}
	return "", fmt.Errorf("no free file name for the delete manifests of %s", old)
}

// deleteManifest renders the minimal delete manifest for p's object.
func deleteManifest(p *Manifest) ([]byte, error) {
	str := func(s string, style yamlv3.Style) *yamlv3.Node {
		return &yamlv3.Node{Kind: yamlv3.ScalarNode, Tag: "!!str", Value: s, Style: style}
	}
	mapping := func(kv ...*yamlv3.Node) *yamlv3.Node {
		return &yamlv3.Node{Kind: yamlv3.MappingNode, Content: kv}
	}
	annotations := mapping()
	old := p.Obj.GetAnnotations()
	keys := []string{DeleteAnnotation}
	for k := range old {
		if inclusionAnnotation(k) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := old[k]
		if k == DeleteAnnotation {
			v = "true"
		}
		annotations.Content = append(annotations.Content, str(k, 0), str(v, yamlv3.DoubleQuotedStyle))
	}
	metadata := mapping(str("name", 0), str(p.Obj.GetName(), 0))
	if ns := p.Obj.GetNamespace(); ns != "" {
		metadata.Content = append(metadata.Content, str("namespace", 0), str(ns, 0))
	}
	metadata.Content = append(metadata.Content, str("annotations", 0), annotations)
	doc := mapping(
		str("apiVersion", 0), str(p.Obj.GetAPIVersion(), 0),
		str("kind", 0), str(p.Obj.GetKind(), 0),
		str("metadata", 0), metadata,
	)
	var out bytes.Buffer
	enc := yamlv3.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}
