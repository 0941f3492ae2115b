package payload

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/openshift/library-go/pkg/manifest"
	validationpath "k8s.io/apimachinery/pkg/api/validation/path"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/payload-applier/payload-applier/pkg/textwrap"
)

// fileNamePattern is the CVO's task-graph file-name rule.
var fileNamePattern = regexp.MustCompile(`^0000_(\d+)_([a-zA-Z0-9]+(-[a-zA-Z0-9]+)*?)_`)

// ParseFileName returns the run level and component of a payload file name
// such as 0000_50_olm_07-collect-profiles.cronjob.yaml, or -1 and "" when
// the name does not follow the 0000_<runlevel>_<component>_ rule.
func ParseFileName(name string) (runLevel int, component string) {
	match := fileNamePattern.FindStringSubmatch(path.Base(name))
	if match == nil {
		return -1, ""
	}
	level, err := strconv.Atoi(match[1])
	if err != nil {
		return -1, ""
	}
	return level, match[2]
}

func hasManifestExtension(name string) bool {
	switch path.Ext(name) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// document is one YAML document of a file: its text and the line at which
// that text starts.
type document struct {
	text []byte
	line int
}

// splitDocuments cuts a YAML stream at its "---" lines, the way the
// apimachinery YAML reader that library-go uses does: a line starting with
// "---" followed by nothing but spaces or a comment ends a document; any
// other text after "---" is an error.
func splitDocuments(data []byte) ([]document, *document, error) {
	var docs []document
	start, startLine := 0, 1
	line := 1
	for pos := 0; pos < len(data); line++ {
		end := bytes.IndexByte(data[pos:], '\n')
		next := len(data)
		if end >= 0 {
			next = pos + end + 1
		}
		l := data[pos:next]
		if bytes.HasPrefix(l, []byte("...")) && isMarker(l[3:]) {
			// A document end: only blank lines and comments may follow
			// until the next "---"; the parser drops anything else.
			docs = append(docs, document{text: data[start:pos], line: startLine})
			rest := next
			for restLine := line + 1; rest < len(data); restLine++ {
				e := bytes.IndexByte(data[rest:], '\n')
				stop := len(data)
				if e >= 0 {
					stop = rest + e + 1
				}
				r := data[rest:stop]
				if bytes.HasPrefix(r, []byte("---")) {
					break
				}
				if t := bytes.TrimSpace(r); len(t) > 0 && t[0] != '#' {
					return nil, &document{text: r, line: restLine}, fmt.Errorf("text after the document end marker \"...\" on line %d, which the parser ignores; remove it, or start a new document with \"---\"", line)
				}
				rest = stop
			}
			start, startLine = next, line+1
			pos = next
			continue
		}
		if bytes.HasPrefix(l, []byte("---")) {
			trimmed := bytes.TrimSpace(l[3:])
			if len(trimmed) > 0 && trimmed[0] != '#' {
				return nil, &document{text: l, line: line}, fmt.Errorf("invalid YAML document separator %q", truncate(string(bytes.TrimSpace(l)), 40))
			}
			docs = append(docs, document{text: data[start:pos], line: startLine})
			start, startLine = next, line+1
		}
		pos = next
	}
	docs = append(docs, document{text: data[start:], line: startLine})
	return docs, nil, nil
}

// malformed says what library-go accepts but the API would not: no
// apiVersion, or annotations or labels that are not a mapping, which
// library-go drops without a word (and a manifest without annotations is
// excluded from every profile).
func malformed(m *Manifest) string {
	if m.Obj.GetAPIVersion() == "" {
		return "document has no apiVersion"
	}
	for _, field := range []string{"annotations", "labels"} {
		v, found, _ := unstructured.NestedFieldNoCopy(m.Obj.Object, "metadata", field)
		if _, isMap := v.(map[string]any); found && v != nil && !isMap {
			return fmt.Sprintf("metadata.%s is %s, not a mapping of strings; the parser drops it", field, describeValue(v))
		}
	}
	return ""
}

// invalidName says why metadata.name or metadata.namespace could not name
// an object: every API refuses a name that is not a path segment, has
// control characters, or is longer than 253 characters.
func invalidName(m *Manifest) string {
	for _, f := range []struct{ field, value string }{{"metadata.name", m.Obj.GetName()}, {"metadata.namespace", m.Obj.GetNamespace()}} {
		if f.value == "" {
			continue
		}
		var problems []string
		if len(f.value) > 253 {
			problems = append(problems, fmt.Sprintf("is %d characters long, more than 253", len(f.value)))
		}
		if strings.IndexFunc(f.value, unicode.IsControl) >= 0 {
			problems = append(problems, "holds a control character")
		}
		problems = append(problems, validationpath.IsValidPathSegmentName(f.value)...)
		if len(problems) > 0 {
			return fmt.Sprintf("%s %q is not a valid Kubernetes name: %s", f.field, truncate(f.value, 60), strings.Join(problems, "; "))
		}
	}
	return ""
}

// isMarker reports whether what follows "---" or "..." on its line is
// only spaces or a comment.
func isMarker(rest []byte) bool {
	t := bytes.TrimSpace(rest)
	return len(t) == 0 || t[0] == '#'
}

// contentLine returns the first line of text that is neither blank nor a
// comment, counted from first; that is where a finding about the whole
// document points.
func contentLine(text []byte, first int) (int, bool) {
	for n := 0; len(text) > 0; n++ {
		l := text
		if i := bytes.IndexByte(text, '\n'); i >= 0 {
			l, text = text[:i], text[i+1:]
		} else {
			text = nil
		}
		t := bytes.TrimSpace(l)
		if len(t) > 0 && t[0] != '#' {
			return first + n, true
		}
	}
	return first, false
}

// parseFile turns one payload file into manifests. rel is the path
// relative to the payload root. Problems are findings, never panics, and a
// document that fails to parse does not stop the others.
func parseFile(rel string, data []byte) ([]*Manifest, []Finding) {
	return parseFileWith(rel, data, true)
}

// parseFileWith is parseFile with the fast YAML reader on or off (off:
// every document takes the library-go path; the differential tests
// compare the two).
func parseFileWith(rel string, data []byte, fast bool) ([]*Manifest, []Finding) {
	var findings []Finding
	problem := func(line, col int, rule Rule, format string, args ...any) {
		findings = append(findings, Finding{File: rel, Line: line, Column: col, Rule: rule, Severity: SeverityError, Message: fmt.Sprintf(format, args...)})
	}
	if !utf8.Valid(data) {
		problem(1, 1, RuleParseError, "file is not valid UTF-8")
		return nil, findings
	}
	var docs []document
	if path.Ext(rel) == ".json" {
		docs = []document{{text: data, line: 1}}
	} else {
		var bad *document
		var err error
		docs, bad, err = splitDocuments(data)
		if err != nil {
			problem(bad.line, 1, RuleParseError, "%v", err)
			return nil, findings
		}
	}

	level, component := ParseFileName(rel)
	base := path.Base(rel)
	var manifests []*Manifest
	firstSeen := map[ObjectID]*Manifest{}
	for _, doc := range docs {
		line, ok := contentLine(doc.text, doc.line)
		if !ok {
			continue
		}
		if len(doc.text) > MaxObjectBytes {
			problem(line, 1, RuleParseError, "the document is %d bytes, more than the %.1f MiB that etcd stores in one object", len(doc.text), float64(MaxObjectBytes)/(1<<20))
			continue
		}
		var parsed []manifest.Manifest
		var err error
		if m, ok := fastDocument(doc.text, fast); ok {
			parsed = []manifest.Manifest{m}
		} else {
			parsed, err = parseDocument(doc.text)
		}
		if err != nil {
			l, c, rule, msg := describeParseError(err, doc, line)
			problem(l, c, rule, "%s", msg)
			continue
		}
		for i := range parsed {
			m := &Manifest{
				Manifest:  parsed[i],
				File:      rel,
				Line:      line,
				RunLevel:  level,
				Component: component,
				src:       doc.text,
				srcLine:   doc.line,
			}
			m.OriginalFilename = base
			if why := malformed(m); why != "" {
				problem(line, 1, RuleParseError, "%s", why)
				continue
			}
			if why := invalidName(m); why != "" {
				problem(line, 1, RuleInvalidName, "%s", why)
				continue
			}
			id := m.ID()
			if first, dup := firstSeen[id]; dup {
				problem(line, 1, RuleDuplicateInFile, "%s is defined twice in this file, first at line %d; library-go and the CVO reject the file, so keep one definition", id, first.Line)
				continue
			}
			firstSeen[id] = m
			manifests = append(manifests, m)
		}
	}
	return manifests, findings
}

// parseDocument parses one document into a library-go Manifest the way
// ParseManifests does (YAML converted to JSON, then Manifest.UnmarshalJSON;
// empty and null documents yield nothing), minus its stream decoder, which
// a 10 MB payload notices. A panic in a decoder becomes an error: bad input
// must never crash a load.
func parseDocument(text []byte) (ms []manifest.Manifest, err error) {
	defer func() {
		if r := recover(); r != nil {
			ms, err = nil, fmt.Errorf("parser failed: %v", r)
		}
	}()
	// Strict, and for JSON documents too: a key set twice in a mapping is
	// an error, not a silent "last one wins" (encoding/json's rule) that
	// could hide a delete annotation.
	js, err := yaml.YAMLToJSONStrict(text)
	if err != nil {
		return nil, err
	}
	if err := checkMergeKeys(text); err != nil {
		return nil, err
	}
	js = bytes.TrimSpace(js)
	if len(js) == 0 || bytes.Equal(js, []byte("null")) {
		return nil, nil
	}
	var m manifest.Manifest
	if err := m.UnmarshalJSON(js); err != nil {
		// library-go fails on a kind or name that is no string, in words
		// about Go; say which field, and where.
		var obj map[string]any
		if json.Unmarshal(js, &obj) == nil {
			if p := checkIdentityTypes(text, obj); p != nil {
				return nil, p
			}
		}
		return nil, err
	}
	if len(m.Raw) == 0 {
		return nil, nil
	}
	// library-go reads a namespace that is no string as none at all.
	if p := checkIdentityTypes(text, m.Obj.Object); p != nil {
		return nil, p
	}
	return []manifest.Manifest{m}, nil
}

var (
	yamlLinePattern = regexp.MustCompile(`yaml: line (\d+): `)
	missingKind     = regexp.MustCompile(`Object 'Kind' is missing`)
	missingVersion  = regexp.MustCompile(`Object 'apiVersion' is missing`)
	duplicateKey    = regexp.MustCompile(`line (\d+): key ("[^"]*"|\S+) already set in map`)
	// goTypes finds the Go type names that encoding/json puts in its errors.
	goTypes = regexp.MustCompile(`(?:Go struct field |Go value of type )(\S+)(?: of type (\S+))?`)
)

// describeParseError turns a parse error into a rule, a position in the
// file and a message short enough for one line.
func describeParseError(err error, doc document, line int) (int, int, Rule, string) {
	var p *docProblem
	if errors.As(err, &p) {
		if p.line == 0 {
			return line, p.col, p.rule, p.msg
		}
		return doc.line + p.line - 1, p.col, p.rule, p.msg
	}
	msg := err.Error()
	switch {
	case missingKind.MatchString(msg):
		return line, 1, RuleParseError, "document has no kind"
	case missingVersion.MatchString(msg):
		return line, 1, RuleParseError, "document has no apiVersion"
	case strings.Contains(msg, "must contain kubernetes required fields kind and name"):
		return line, 1, RuleParseError, "metadata.name is missing or empty"
	}
	if m := duplicateKey.FindStringSubmatch(msg); m != nil {
		if n, convErr := strconv.Atoi(m[1]); convErr == nil {
			return doc.line + n - 1, 1, RuleParseError, fmt.Sprintf("key %s is set twice in one mapping; the later one would silently replace the first (a second annotations: hides the first one's keys)", m[2])
		}
	}
	msg = withoutGoTypes(msg)
	if m := yamlLinePattern.FindStringSubmatchIndex(msg); m != nil {
		n, convErr := strconv.Atoi(msg[m[2]:m[3]])
		if convErr == nil {
			what := "invalid YAML: "
			if jsonShaped(doc.text) {
				what = "invalid JSON (read by the YAML parser): "
			}
			return doc.line + n - 1, 1, RuleParseError, what + truncate(msg[m[1]:], 200) + jsonEscapeHint(doc.text, msg)
		}
	}
	msg = strings.TrimPrefix(msg, "error parsing: ")
	return line, 1, RuleParseError, "cannot parse document: " + truncate(msg, 200) + jsonEscapeHint(doc.text, msg)
}

// jsonShaped reports whether a document is written as JSON: a .json file,
// or a flow mapping in a YAML file.
func jsonShaped(text []byte) bool {
	t := bytes.TrimSpace(text)
	return len(t) > 0 && t[0] == '{'
}

// jsonEscapeHint explains the two JSON escapes that the YAML parser, which
// reads JSON documents too, does not take.
func jsonEscapeHint(text []byte, msg string) string {
	if !jsonShaped(text) || !strings.Contains(msg, "escape") {
		return ""
	}
	return `; write / rather than \/, and characters beyond U+FFFF as they are rather than as \u surrogate pairs`
}

// withoutGoTypes rewrites the Go type names encoding/json puts in its
// errors ("Go struct field ObjectMeta.metadata.annotations of type
// map[string]string") in the payload's words.
func withoutGoTypes(msg string) string {
	return goTypes.ReplaceAllStringFunc(msg, func(s string) string {
		m := goTypes.FindStringSubmatch(s)
		field := m[1]
		if i := strings.IndexByte(field, '.'); i >= 0 && strings.HasPrefix(s, "Go struct field") {
			field = field[i+1:]
		}
		if strings.HasPrefix(s, "Go struct field") {
			return "field " + field + describeGoType(m[2])
		}
		return "a value of the wrong kind"
	})
}

// describeGoType names a Go type as YAML would: a mapping, a list, a string.
func describeGoType(t string) string {
	switch {
	case t == "":
		return ""
	case strings.HasPrefix(t, "map["):
		return ", which must be a mapping"
	case strings.HasPrefix(t, "[]"):
		return ", which must be a list"
	case t == "string":
		return ", which must be a string"
	case strings.HasPrefix(t, "int") || strings.HasPrefix(t, "float"):
		return ", which must be a number"
	case t == "bool":
		return ", which must be true or false"
	}
	return ""
}

// offsetPosition converts a byte offset into a 1-based line and column.
func offsetPosition(text []byte, offset int64) (int, int) {
	if offset < 0 {
		offset = 0
	}
	if offset > int64(len(text)) {
		offset = int64(len(text))
	}
	before := text[:offset]
	line := bytes.Count(before, []byte("\n")) + 1
	col := int(offset) - bytes.LastIndexByte(before, '\n')
	if col < 1 {
		col = 1
	}
	return line, col
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return textwrap.Clip(s, n) + "..."
}
