package payload

import (
	"bytes"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
)

// Severity grades a finding. Only SeverityError rejects a payload.
type Severity string

const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
	// SeverityInfo notes something that is allowed, such as a leftover
	// delete manifest in a z-stream update.
	SeverityInfo Severity = "info"
)

// Rule is the stable id of a check. docs/annotations.md lists every rule
// with what it catches and how to fix it; ids never change meaning.
type Rule string

// Rules that reading the files applies.
const (
	RuleParseError      Rule = "parse-error"
	RuleYAMLMergeKey    Rule = "yaml-merge-key"
	RuleDuplicateInFile Rule = "duplicate-in-file"
	RuleReleaseMetadata Rule = "release-metadata"
)

// Rules over each manifest, whichever profile includes it.
const (
	RuleDeleteValue        Rule = "delete-value"
	RuleInvalidName        Rule = "invalid-name"
	RuleProtectedDelete    Rule = "protected-delete"
	RuleUnknownAnnotation  Rule = "unknown-annotation"
	RuleAnnotationValue    Rule = "annotation-value"
	RuleUnknownCapability  Rule = "unknown-capability"
	RuleDeleteCreateOnly   Rule = "delete-create-only"
	RuleFileName           Rule = "file-name"
	RuleCRDVersionMismatch Rule = "crd-version-mismatch"
	RuleCRDShadowsBuiltin  Rule = "crd-shadows-builtin"
	RuleCRDRemovedIn       Rule = "crd-removed-in"
)

// Rules over the manifests that the selected profile includes.
const (
	RuleDuplicateObject          Rule = "duplicate-object"
	RuleCreatedAndDeleted        Rule = "created-and-deleted"
	RuleNamespaceDeleted         Rule = "namespace-deleted"
	RuleAPIStillUsed             Rule = "api-still-used"
	RuleProviderAfterConsumer    Rule = "provider-after-consumer"
	RuleVersionNotServed         Rule = "version-not-served"
	RuleNoProvider               Rule = "no-provider"
	RuleNoOperandCleanup         Rule = "no-operand-cleanup"
	RuleDestructiveDelete        Rule = "destructive-delete"
	RuleNamespaceOnClusterScoped Rule = "namespace-on-cluster-scoped"
)

// Rules across an update from the previous release to this one.
const (
	RuleMinorLeftover         Rule = "minor-leftover"
	RuleOrphan                Rule = "orphan"
	RuleServedVersionDropped  Rule = "served-version-dropped"
	RuleStorageVersionDropped Rule = "storage-version-dropped"
	RuleCRDImmutableField     Rule = "crd-immutable-field"
)

// Finding is one problem found in a payload. File is the path of the file
// as the caller named the payload directory; Line and Column are 1-based.
type Finding struct {
	File     string   `json:"file"`
	Line     int      `json:"line"`
	Column   int      `json:"column"`
	Rule     Rule     `json:"rule"`
	Severity Severity `json:"severity"`
	Message  string   `json:"message"`
}

// String renders the finding as path:line:col: severity: message (rule).
func (f Finding) String() string {
	return fmt.Sprintf("%s:%d:%d: %s: %s (%s)", f.File, f.Line, f.Column, f.Severity, f.Message, f.Rule)
}

// ValidationError rejects a payload as a whole. It holds every finding,
// warnings included, so that a caller can report them all; Error names
// the errors only.
type ValidationError struct {
	Dir      string
	Findings []Finding
}

// Errors returns the findings of error severity.
func (e *ValidationError) Errors() []Finding {
	var errs []Finding
	for _, f := range e.Findings {
		if f.Severity == SeverityError {
			errs = append(errs, f)
		}
	}
	return errs
}

func (e *ValidationError) Error() string {
	errs := e.Errors()
	var b strings.Builder
	fmt.Fprintf(&b, "payload %s is invalid: %d error", e.Dir, len(errs))
	if len(errs) != 1 {
		b.WriteString("s")
	}
	for _, f := range errs {
		b.WriteString("\n")
		b.WriteString(f.String())
	}
	return b.String()
}

// HasErrors reports whether any finding has error severity.
func HasErrors(findings []Finding) bool {
	for _, f := range findings {
		if f.Severity == SeverityError {
			return true
		}
	}
	return false
}

// SortFindings orders findings by file, line, column and rule, so that
// output is stable whatever order the rules ran in.
func SortFindings(findings []Finding) {
	sort.SliceStable(findings, func(i, j int) bool {
		a, b := findings[i], findings[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		if a.Column != b.Column {
			return a.Column < b.Column
		}
		return a.Rule < b.Rule
	})
}

// pathOf names a manifest's file as the caller named the payload.
func pathOf(r *Release, m *Manifest) string {
	if r == nil || r.Dir == "" {
		return m.File
	}
	return filepath.Join(r.Dir, m.File)
}

// at reports a finding at the start of m's document.
func at(r *Release, m *Manifest, rule Rule, sev Severity, format string, args ...any) Finding {
	return Finding{
		File:     pathOf(r, m),
		Line:     m.Line,
		Column:   1,
		Rule:     rule,
		Severity: sev,
		Message:  fmt.Sprintf(format, args...),
	}
}

// atKey reports a finding at the line where m's document writes key,
// falling back to the start of the document.
func atKey(r *Release, m *Manifest, key string, rule Rule, sev Severity, format string, args ...any) Finding {
	f := at(r, m, rule, sev, format, args...)
	if line, col, ok := m.locate(key); ok {
		f.Line, f.Column = line, col
	}
	return f
}

// locate finds the first line of the document that writes key as a
// mapping key, quoted or not.
func (m *Manifest) locate(key string) (line, col int, ok bool) {
	return locateKey(m.src, m.srcLine, key)
}

// locateKey finds where src, whose first line is srcLine, writes the last
// key of path as a mapping key, quoted or not, after the earlier keys of
// path. It is a text search, not a YAML parse: findings need a good
// position, and a miss only costs precision.
func locateKey(src []byte, srcLine int, path ...string) (line, col int, ok bool) {
	at, from := -1, 0
	for _, key := range path {
		if key == "" {
			return 0, 0, false
		}
		if at = keyOffset(src, from, []byte(key)); at < 0 {
			return 0, 0, false
		}
		from = at + len(key)
	}
	if at < 0 {
		return 0, 0, false
	}
	l, c := offsetPosition(src, int64(at))
	return srcLine + l - 1, c, true
}

// keyOffset returns the offset of the first mapping key k in src at or
// after from, counting an opening quote, or -1.
func keyOffset(src []byte, from int, k []byte) int {
	for from < len(src) {
		i := bytes.Index(src[from:], k)
		if i < 0 {
			return -1
		}
		i += from
		if keyAt(src, i, len(k)) {
			if i > 0 && (src[i-1] == '"' || src[i-1] == '\'') {
				i--
			}
			return i
		}
		from = i + 1
	}
	return -1
}

// keyAt reports whether text holds a mapping key of length n at i: on its
// line, the text before it is indentation, a quote, '{' or ','; after it
// comes ':'.
func keyAt(text []byte, i, n int) bool {
	j := i + n
	if j < len(text) && (text[j] == '"' || text[j] == '\'') {
		j++
	}
	for j < len(text) && (text[j] == ' ' || text[j] == '\t') {
		j++
	}
	if j >= len(text) || text[j] != ':' {
		return false
	}
	k := i - 1
	if k >= 0 && (text[k] == '"' || text[k] == '\'') {
		k--
	}
	for k >= 0 && (text[k] == ' ' || text[k] == '\t') {
		k--
	}
	return k < 0 || text[k] == '\n' || text[k] == '{' || text[k] == ','
}
