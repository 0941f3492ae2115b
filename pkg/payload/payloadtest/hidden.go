package payloadtest

import "strings"

// HiddenDelete is a payload file whose text hides or injects a delete
// annotation, or loses an object's namespace, unless the parse refuses it:
// the loader must report Rule at Line (and Column, when not 0) of File,
// with a message containing Contains.
type HiddenDelete struct {
	Name, File, Content string
	Rule                string
	Line, Column        int
	Contains            string
}

const include = `include.release.openshift.io/self-managed-high-availability`

// configMap is a ConfigMap manifest of the default profile with the given
// metadata.name and metadata.namespace values, written as they are.
func configMap(namespace, name string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n  namespace: " + namespace +
		"\n  annotations:\n    " + include + ": \"true\"\n"
}

const oneLineNumericNamespace = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":7,"annotations":{"` + include + `":"true"}}}`

// HiddenDeletes are the shapes that can hide or inject a delete (a key set
// twice in a JSON document, a YAML merge key, namespace: no) and their near
// relatives.
var HiddenDeletes = []HiddenDelete{{
	Name: "a .json file whose second delete key hides the first",
	File: "0000_50_a_00_x.json",
	Content: `{
  "apiVersion": "v1",
  "kind": "ConfigMap",
  "metadata": {
    "name": "a",
    "namespace": "ns",
    "annotations": {
      "` + include + `": "true",
      "release.openshift.io/delete": "true",
      "release.openshift.io/delete": "false"
    }
  }
}
`,
	Rule: "parse-error", Line: 10, Contains: `key "release.openshift.io/delete" is set twice`,
}, {
	Name: "a flow-style YAML document whose second delete key injects a delete",
	File: "0000_50_a_00_x.yaml",
	Content: configMap("ns", "first") + "---\n" +
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"ns","annotations":{"` + include + `":"true","release.openshift.io/delete":"false","release.openshift.io/delete":"true"}}}` + "\n",
	Rule: "parse-error", Line: 9, Contains: `key "release.openshift.io/delete" is set twice`,
}, {
	Name: "a merge key that copies a delete annotation from labels",
	File: "0000_50_a_00_x.yaml",
	Content: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: ns\n  labels: &marks\n    release.openshift.io/delete: \"true\"\n" +
		"  annotations:\n    <<: *marks\n    " + include + ": \"true\"\n",
	Rule: "yaml-merge-key", Line: 9, Column: 5, Contains: "YAML merge key",
}, {
	Name:    "a merge key of an inline mapping",
	File:    "0000_50_a_00_x.yaml",
	Content: configMap("ns", "a") + "    <<: {release.openshift.io/delete: \"true\"}\n",
	Rule:    "yaml-merge-key", Line: 8, Column: 5, Contains: "YAML merge key",
}, {
	Name:    "a merge key written with escapes, which the parser still merges at",
	File:    "0000_50_a_00_x.yaml",
	Content: configMap("ns", "a") + "    ! \"\\x3c\\x3c\": {release.openshift.io/delete: \"true\"}\n",
	Rule:    "yaml-merge-key", Line: 8, Column: 5, Contains: "YAML merge key",
}, {
	Name:    "a merge key in a JSON document",
	File:    "0000_50_a_00_x.json",
	Content: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"ns","annotations":{"<<":{"release.openshift.io/delete":"true"}}}}`,
	Rule:    "yaml-merge-key", Line: 1, Contains: "YAML merge key",
}, {
	Name:    "namespace: no, which YAML reads as false",
	File:    "0000_50_a_00_x.yaml",
	Content: configMap("no", "a") + "    release.openshift.io/delete: \"true\"\n",
	Rule:    "parse-error", Line: 5, Column: 3, Contains: "metadata.namespace is the YAML boolean false, not a string; quote it",
}, {
	Name:    "a numeric name",
	File:    "0000_50_a_00_x.yaml",
	Content: configMap("ns", "123"),
	Rule:    "parse-error", Line: 4, Column: 3, Contains: "metadata.name is the YAML number 123, not a string",
}, {
	Name:    "a numeric namespace in a one-line JSON document",
	File:    "0000_50_a_00_x.json",
	Content: oneLineNumericNamespace,
	Rule:    "parse-error", Line: 1, Column: strings.Index(oneLineNumericNamespace, `"namespace"`) + 1, Contains: "metadata.namespace is the YAML number 7",
}, {
	Name:    "a null namespace",
	File:    "0000_50_a_00_x.yaml",
	Content: configMap("~", "a"),
	Rule:    "parse-error", Line: 5, Column: 3, Contains: "metadata.namespace is empty, not a string",
}, {
	Name:    "a kind that is a mapping",
	File:    "0000_50_a_00_x.yaml",
	Content: strings.Replace(configMap("ns", "a"), "kind: ConfigMap", "kind: {name: ConfigMap}", 1),
	Rule:    "parse-error", Line: 2, Column: 1, Contains: "kind is a mapping, not a string",
}}
