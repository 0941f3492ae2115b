package payload

import (
	"bytes"
	"fmt"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// This file holds what the one strict parse (parseDocument) refuses beyond
// duplicate keys, which sigs.k8s.io/yaml's strict mode already refuses:
// YAML that would change an object's annotations or identity without the
// text saying so where a reader looks.

// docProblem is a problem found at a known place in one document; line and
// col count from the document's own first line, and line 0 stands for the
// document's first line of content.
type docProblem struct {
	rule      Rule
	line, col int
	msg       string
}

func (p *docProblem) Error() string { return p.msg }

// checkMergeKeys refuses a YAML merge key (<<: *anchor, or <<: {mapping}),
// which copies keys into a mapping where the text does not show them: an
// anchor can thus add or override a delete annotation. Payload manifests
// are generated, so a merge is never intended. Anchors and aliases without
// a merge are fine: an alias repeats a node whole and overrides nothing.
func checkMergeKeys(text []byte) error {
	if !mayHoldMergeKey(text) {
		return nil
	}
	line, col, found, err := mergeKeyPosition(text)
	if err != nil {
		// The YAML parser that reads the document took it, so this should
		// not happen; refuse rather than let a merge through unchecked.
		return fmt.Errorf("cannot check the document for merge keys: %w", err)
	}
	if !found {
		return nil
	}
	return &docProblem{rule: RuleYAMLMergeKey, line: line, col: col,
		msg: "a YAML merge key (<<) copies keys into this mapping that the text does not show here, such as a delete annotation; write every key out (a key that reads <<, quoted or not, is refused)"}
}

// mayHoldMergeKey lets nearly every document skip the second parse that
// mergeKeyPosition needs. The YAML parser merges only at a key whose value
// reads "<<", and text spells that either with those two characters or
// with a double-quoted escape: \x3c, \u003c, \U0000003c, or a backslash
// before a line break that joins two lines. FuzzMergeKeyGate checks this.
func mayHoldMergeKey(text []byte) bool {
	if bytes.Contains(text, []byte("<<")) {
		return true
	}
	for rest := text; ; {
		i := bytes.IndexByte(rest, '\\')
		if i < 0 || i+1 >= len(rest) {
			return false
		}
		switch rest[i+1] {
		// \r and \n, and the first byte of the other line breaks YAML
		// knows: NEL (C2 85), LS and PS (E2 80 A8/A9).
		case 'x', 'u', 'U', '\r', '\n', 0xC2, 0xE2:
			return true
		}
		rest = rest[i+1:]
	}
}

// mergeKeyPosition finds the first mapping key that reads "<<" in the
// document, whatever its quoting or tag: a superset of the keys the YAML
// parser that builds the object merges at. Aliases are not followed, so
// the walk is linear in the text.
func mergeKeyPosition(text []byte) (line, col int, found bool, err error) {
	var root yamlv3.Node
	if err := yamlv3.Unmarshal(text, &root); err != nil {
		return 0, 0, false, err
	}
	stack := []*yamlv3.Node{&root}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if n.Kind == yamlv3.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				if k := n.Content[i]; k.Kind == yamlv3.ScalarNode && k.Value == "<<" {
					return k.Line, k.Column, true, nil
				}
			}
		}
		// Children in reverse, so that the first key in the text is found first.
		for i := len(n.Content) - 1; i >= 0; i-- {
			stack = append(stack, n.Content[i])
		}
	}
	return 0, 0, false, nil
}

// identityFields name an object. YAML reads some unquoted values as other
// types than strings (no and y as booleans, 123 as a number, ~ as null),
// and library-go then sees no such field, without a word: a namespace: no
// would make the object cluster-scoped.
var identityFields = [][]string{{"apiVersion"}, {"kind"}, {"metadata", "name"}, {"metadata", "namespace"}}

// checkIdentityTypes refuses an identity field of obj, the document text
// parsed, that is set to anything but a string.
func checkIdentityTypes(text []byte, obj map[string]any) *docProblem {
	for _, field := range identityFields {
		v, found, err := unstructured.NestedFieldNoCopy(obj, field...)
		if err != nil || !found {
			// Absent, or metadata is no mapping: other checks say so.
			continue
		}
		if _, isString := v.(string); isString {
			continue
		}
		p := &docProblem{rule: RuleParseError, col: 1,
			msg: fmt.Sprintf("%s is %s, not a string", strings.Join(field, "."), describeValue(v))}
		switch v.(type) {
		case map[string]any, []any:
		default:
			p.msg += "; quote it (YAML reads unquoted no, yes, on, off, y and n as booleans, 123 as a number and ~ as null)"
		}
		if line, col, ok := locateKey(text, 1, field...); ok {
			p.line, p.col = line, col
		}
		return p
	}
	return nil
}
