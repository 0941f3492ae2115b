package payload

import (
	"fmt"
	"sort"
	"strings"
)

// Sections of docs/annotations.md's lint rule tables.
const (
	SectionFiles    = "files"
	SectionManifest = "manifest"
	SectionRelease  = "release"
	SectionUpdate   = "update"
)

// RuleDocsURL is docs/annotations.md as published; each rule has an
// anchor there, rule-<id>, that SARIF's helpUri points at.
const RuleDocsURL = "https://github.com/payload-applier/payload-applier/blob/main/docs/annotations.md"

// RuleDoc documents one rule. It is the one source of the rule tables in
// docs/annotations.md (TestAnnotationsDocMatchesRuleDocs keeps them equal)
// and of `lint --explain`.
type RuleDoc struct {
	// Section is the table of docs/annotations.md the rule is listed in.
	Section string
	// SeverityText replaces the rule's severity in the docs when it
	// depends on context.
	SeverityText string
	// What the rule catches, and Why that matters.
	What, Why string
	// Example is a manifest, or a pair of them, that the rule reports.
	Example string
	// Fix says how to fix a finding.
	Fix string
}

// RuleDocOf returns the documentation of a rule.
func RuleDocOf(id Rule) (RuleDoc, bool) {
	d, ok := ruleDocs[id]
	return d, ok
}

// RuleHelpURL links to a rule's row in docs/annotations.md.
func RuleHelpURL(id Rule) string { return RuleDocsURL + "#rule-" + string(id) }

// RuleDocsMarkdown renders the rule table of one section of
// docs/annotations.md, with the examples below it.
func RuleDocsMarkdown(section string) string {
	var b, ex strings.Builder
	b.WriteString("| id | severity | what it catches | how to fix |\n|---|---|---|---|\n")
	for _, r := range AllRules {
		d := ruleDocs[r.ID]
		if d.Section != section {
			continue
		}
		sev := d.SeverityText
		if sev == "" {
			sev = string(r.Severity)
		}
		fmt.Fprintf(&b, "| <a id=\"rule-%s\"></a>`%s` | %s | %s | %s |\n", r.ID, r.ID, sev, joinSentences(d.What, d.Why), d.Fix)
		fmt.Fprintf(&ex, "\n`%s`:\n\n```yaml\n%s\n```\n", r.ID, strings.TrimSpace(d.Example))
	}
	b.WriteString("\n<details><summary>An example that each rule reports</summary>\n")
	b.WriteString(ex.String())
	b.WriteString("\n</details>\n")
	return b.String()
}

func joinSentences(a, b string) string {
	if b == "" {
		return a
	}
	return a + " " + b
}

var ruleDocs = map[Rule]RuleDoc{
	"parse-error": {
		Section: SectionFiles,
		What:    "A document that is not valid YAML or JSON, text after a `---` separator or after a `...` document end, a key set twice in one mapping, in YAML or JSON (a second `annotations:`, or a second `\"release.openshift.io/delete\"` in a JSON object, would silently replace the first), a document that is not an object, one without `apiVersion`, `kind` or `metadata.name`, one whose `apiVersion`, `kind`, `metadata.name` or `metadata.namespace` is not a string (`namespace: no` is the boolean false, `name: 123` a number; the finding points at the field), `metadata.annotations` or `labels` that are not a mapping, or a document over 1.5 MiB, etcd's limit for one object.",
		Why:     "Messages speak of the payload's fields, never of Go types. Go templates in the CVO layout's `manifests/` are not rendered, because the release image they need is unknown offline, so a template that is not also valid YAML lands here. See \"Documents\" above.",
		Example: `
# 0000_50_example_01_config.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: example
  namespace: no # YAML reads the boolean false, not "no"
  annotations:
    include.release.openshift.io/self-managed-high-availability: "true"
`,
		Fix: "Fix the document at the reported line; quote such names.",
	},
	"yaml-merge-key": {
		Section: SectionFiles,
		What:    "A YAML merge key (`<<: *anchor`, `<<: {...}`, or any key that reads `<<`): it copies keys into the mapping unseen, such as a delete annotation.",
		Why:     "Payload manifests are generated, so a merge is never intended. Anchors and aliases without a merge are fine.",
		Example: `
# 0000_50_example_01_config.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: example
  namespace: openshift-example
  annotations: &annotations
    include.release.openshift.io/self-managed-high-availability: "true"
data:
  <<: *annotations # copies the annotations in, unseen
`,
		Fix: "Write every key out.",
	},
	"duplicate-in-file": {
		Section: SectionFiles,
		What:    "One file defines the same group, kind, namespace and name twice.",
		Why:     "library-go and the CVO reject the file.",
		Example: `
# 0000_50_example_01_config.yaml
apiVersion: v1
kind: ConfigMap
metadata: {name: example, namespace: openshift-example, annotations: {include.release.openshift.io/self-managed-high-availability: "true"}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: example, namespace: openshift-example, annotations: {include.release.openshift.io/self-managed-high-availability: "true"}}
`,
		Fix: "Keep one definition.",
	},
	"release-metadata": {
		Section: SectionFiles,
		What:    "`release-metadata` that is not JSON, has a kind other than `cincinnati-metadata-v0`, or has no semantic `version`; `image-references` that is not an `image.openshift.io/v1` ImageStream named after the version.",
		Why:     "A `metadata.url` or channels value that is not a string is a warning. A missing file is not a finding: lint exits with 2.",
		Example: `
# release-metadata
{"kind": "cincinnati-metadata-v0", "version": "4.20"}
# "4.20" is no semantic version; write "4.20.0"
`,
		Fix: "Fix the metadata file.",
	},
	"delete-value": {
		Section: SectionManifest,
		What:    "`release.openshift.io/delete` with any value but the string `\"true\"`.",
		Why:     "The CVO fails on any other value, and payload-applier rejects the payload rather than guess whether the author meant to delete the object: a near miss such as `\"True\"` would otherwise keep it.",
		Example: `
# 0000_50_example_01_config.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: old-config
  namespace: openshift-example
  annotations:
    include.release.openshift.io/self-managed-high-availability: "true"
    release.openshift.io/delete: "True"
`,
		Fix: "Write `release.openshift.io/delete: \"true\"`, or remove the annotation. `lint --fix` writes `\"true\"` for a near miss such as `\"True\"` or an unquoted `true`.",
	},
	"invalid-name": {
		Section: SectionManifest,
		What:    "`metadata.name` or `metadata.namespace` that no API accepts: not a path segment (`..`, a `/` or `%`), a control character such as NUL, or more than 253 characters.",
		Why:     "The API server refuses such an object, and a name that is no path segment would address another object than the one named.",
		Example: `
# 0000_50_example_01_config.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: example/config
  namespace: openshift-example
  annotations:
    include.release.openshift.io/self-managed-high-availability: "true"
`,
		Fix: "Fix the name.",
	},
	"protected-delete": {
		Section: SectionManifest,
		What:    "A delete manifest for an object the applier never deletes: the namespaces `kube-system`, `kube-public`, `kube-node-lease`, `default` and its own (also as a `Project`), its Deployment, ServiceAccount, Role, RoleBinding, ClusterRoleBinding, leader Lease, payload store, delete ledger and operand cleanup ConfigMap, the ClusterVersion `version`, and the ClusterVersion and ClusterOperator CRDs.",
		Why:     "A namespace set on a cluster-scoped kind does not hide it. The set is defined once (`payload.Applier.Protected`), shared with the engine's last gate; the operator and `apply` reject such a payload whole at load (exit 2), naming the file and line.",
		Example: `
# 0000_50_example_01_namespace.yaml
apiVersion: v1
kind: Namespace
metadata:
  name: kube-system
  annotations:
    include.release.openshift.io/self-managed-high-availability: "true"
    release.openshift.io/delete: "true"
`,
		Fix: "Remove the delete manifest.",
	},
	"unknown-annotation": {
		Section: SectionManifest,
		What:    "A `release.openshift.io/` key the applier does not know, for example `release.openshift.io/delet`, a known key spelt with other case (`Release.OpenShift.io/delete`: keys are case-sensitive, so it does nothing), or an `include.release.openshift.io/` profile it does not know.",
		Why:     "The message suggests the closest known key.",
		Example: `
# 0000_50_example_01_config.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: old-config
  namespace: openshift-example
  annotations:
    include.release.openshift.io/self-managed-high-availability: "true"
    release.openshift.io/delet: "true"
`,
		Fix: "Use a known key (see the table above). `lint --fix` renames a key that has exactly one close known key.",
	},
	"annotation-value": {
		Section: SectionManifest,
		What:    "A value that is not a string; an include value other than `true`/`false`; a create-only value other than `true`; an `operand-cleanup` value other than `Supported`, or on anything but a CRD's delete manifest; an unknown feature set; `feature-set` together with `feature-gate`; a malformed `feature-gate` or `major-version`; `major-version` on a kind that may not carry it.",
		Why:     "A value the filters do not understand has no effect or drops the manifest, without a word when the payload is applied.",
		Example: `
# 0000_50_example_01_config.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: example
  namespace: openshift-example
  annotations:
    include.release.openshift.io/self-managed-high-availability: "true"
    release.openshift.io/create-only: "yes"
`,
		Fix: "Write a value from the table above.",
	},
	"unknown-capability": {
		Section: SectionManifest,
		What:    "A capability name that openshift/api does not know.",
		Why:     "The CVO drops a manifest that names an unknown capability, on every cluster.",
		Example: `
# 0000_50_example_01_config.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: example
  namespace: openshift-example
  annotations:
    include.release.openshift.io/self-managed-high-availability: "true"
    capability.openshift.io/name: MachineApi
`,
		Fix: "Fix the name; capabilities are joined with `+`.",
	},
	"delete-create-only": {
		Section: SectionManifest,
		What:    "A delete manifest that is also create-only.",
		Why:     "The delete wins. The issue asked for an error, but the real 4.20 payload ships two such manifests (OLM's `0000_50_olm_00-pprof-config.yaml` and `-secret.yaml`) and the CVO handles them fine, so rejecting them would reject a real release.",
		Example: `
# 0000_50_example_01_config.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: old-config
  namespace: openshift-example
  annotations:
    include.release.openshift.io/self-managed-high-availability: "true"
    release.openshift.io/delete: "true"
    release.openshift.io/create-only: "true"
`,
		Fix: "Remove `create-only`.",
	},
	"file-name": {
		Section: SectionManifest,
		What:    "A file name that does not start with `0000_<runlevel>_<component>_`.",
		Why:     "The update graph cannot place it by run level and component.",
		Example: `
# deployment.yaml: no 0000_<runlevel>_<component>_ prefix
apiVersion: apps/v1
kind: Deployment
metadata:
  name: example-operator
  namespace: openshift-example
  annotations:
    include.release.openshift.io/self-managed-high-availability: "true"
`,
		Fix: "Rename it; `oc adm release new` would name it `0000_50_<image-tag>_<name>`.",
	},
	"crd-version-mismatch": {
		Section: SectionManifest,
		What:    "An `apiextensions.k8s.io/v1beta1` CRD sets both `spec.version` and `spec.versions`, and `spec.version` is not the first entry.",
		Why:     "The API server refuses it.",
		Example: `
# 0000_50_example_00_crd.yaml
apiVersion: apiextensions.k8s.io/v1beta1
kind: CustomResourceDefinition
metadata:
  name: gadgets.example.com
  annotations:
    include.release.openshift.io/self-managed-high-availability: "true"
spec:
  group: example.com
  version: v1
  versions:
  - {name: v1beta1, served: true, storage: false}
  - {name: v1, served: true, storage: true}
`,
		Fix: "List that version first, or drop `spec.version`.",
	},
	"crd-shadows-builtin": {
		Section: SectionManifest,
		What:    "A CRD whose `spec.group` and `spec.names.plural` (for a delete manifest without `spec`, its `metadata.name`, `<plural>.<group>`) are a resource Kubernetes serves itself, such as `leases` in `coordination.k8s.io`.",
		Why:     "The built-in wins: the API server never serves the CRD, so whatever lists or deletes \"the CRD's custom resources\" at that group and resource reaches the built-in objects instead, operand cleanup and `plan`'s count of what a delete takes with it included. Delete manifests are judged too, since cleaning up after a removed CRD is exactly where that happens. The built-in resources are read from client-go's scheme (`payload.BuiltinResource`), not from a list.",
		Example: `
# 0000_50_example_00_crd.yaml
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: leases.coordination.k8s.io
  annotations:
    include.release.openshift.io/self-managed-high-availability: "true"
    release.openshift.io/delete: "true"
`,
		Fix: "Give the CRD a group of its own. For a delete manifest, remove it: such a CRD never served objects of its own.",
	},
	"crd-removed-in": {
		Section: SectionManifest,
		What:    "A CRD's `<group>/removed-in` that is not a release line `X.Y` (`\"4.22\"`; not `\"v4.22\"`, `\"4.22.0\"` or `\"04.22\"`), or that names a line not later than this release's own while the CRD still marks a version `deprecated: true` (the release still ships the version it says is removed).",
		Why:     "A warning when no version is marked `deprecated: true`: the annotation then schedules nothing (a leftover in the release that removed the versions is harmless). The operator blocks minor and major updates on the schedule, so a wrong value blocks them for nothing or never.",
		Example: `
# 0000_50_example_00_crd.yaml
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.example.com
  annotations:
    include.release.openshift.io/self-managed-high-availability: "true"
    example.com/removed-in: "v4.22" # write "4.22"
spec:
  group: example.com
  names: {kind: Gadget, plural: gadgets}
  scope: Namespaced
  versions:
  - {name: v1alpha1, served: true, storage: false, deprecated: true}
  - {name: v1, served: true, storage: true}
`,
		Fix: "Name the release line that drops the deprecated versions, quoted; mark those versions `deprecated: true`.",
	},
	"unknown-field": {
		Section: SectionManifest,
		What:    "A built-in Kubernetes or OpenShift kind sets a field its Go type does not declare, such as `backOffLimit` for `backoffLimit` (ocp-real has this one).",
		Why:     "The CVO decodes into typed objects and loses the field silently; server-side apply rejects it, so the applier drops exactly that field and records a warning Event.",
		Example: `
# 0000_50_example_02_job.yaml
apiVersion: batch/v1
kind: Job
metadata:
  name: example-migration
  namespace: openshift-example
  annotations:
    include.release.openshift.io/self-managed-high-availability: "true"
spec:
  backOffLimit: 3 # the field is backoffLimit
`,
		Fix: "Fix the field name, or remove the field.",
	},
	"duplicate-object": {
		Section: SectionRelease,
		What:    "Two files create the same object.",
		Why:     "The CVO accepts this: it parses each file on its own and does not use library-go's `ManifestsFromFiles`, which would reject it. Real payloads have done it (real-deletes `before/`, the svcat Namespace), so it is a warning. The later manifest wins on every pass.",
		Example: `
# 0000_50_example_01_config.yaml
apiVersion: v1
kind: ConfigMap
metadata: {name: example, namespace: openshift-example, annotations: {include.release.openshift.io/self-managed-high-availability: "true"}}
---
# 0000_50_example_02_config.yaml
apiVersion: v1
kind: ConfigMap
metadata: {name: example, namespace: openshift-example, annotations: {include.release.openshift.io/self-managed-high-availability: "true"}}
`,
		Fix: "Keep one definition.",
	},
	"created-and-deleted": {
		Section: SectionRelease,
		What:    "One manifest creates an object and another deletes it.",
		Why:     "Two delete manifests for one object are fine.",
		Example: `
# 0000_50_example_01_config.yaml
apiVersion: v1
kind: ConfigMap
metadata: {name: example, namespace: openshift-example, annotations: {include.release.openshift.io/self-managed-high-availability: "true"}}
---
# 0000_50_example_90_delete-config.yaml
apiVersion: v1
kind: ConfigMap
metadata: {name: example, namespace: openshift-example, annotations: {include.release.openshift.io/self-managed-high-availability: "true", release.openshift.io/delete: "true"}}
`,
		Fix: "Drop one of the two.",
	},
	"namespace-deleted": {
		Section: SectionRelease,
		What:    "A Namespace has a delete manifest while another manifest, not a delete, creates an object inside it.",
		Why:     "The namespace takes the object with it: it is created and deleted again, or its creation fails while the namespace terminates.",
		Example: `
# 0000_50_example_00_namespace.yaml
apiVersion: v1
kind: Namespace
metadata: {name: openshift-example, annotations: {include.release.openshift.io/self-managed-high-availability: "true", release.openshift.io/delete: "true"}}
---
# 0000_50_example_01_config.yaml
apiVersion: v1
kind: ConfigMap
metadata: {name: example, namespace: openshift-example, annotations: {include.release.openshift.io/self-managed-high-availability: "true"}}
`,
		Fix: "Stop creating the object, or keep the namespace.",
	},
	"api-still-used": {
		Section: SectionRelease,
		What:    "A CRD has a delete manifest while another manifest, not a delete, uses its group and kind.",
		Why:     "A delete manifest without `spec` is matched by `metadata.name` (`<plural>.<group>`).",
		Example: `
# 0000_50_example_00_crd.yaml
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.example.com, annotations: {include.release.openshift.io/self-managed-high-availability: "true", release.openshift.io/delete: "true"}}
---
# 0000_50_example_01_gadget.yaml
apiVersion: example.com/v1
kind: Gadget
metadata: {name: example, namespace: openshift-example, annotations: {include.release.openshift.io/self-managed-high-availability: "true"}}
`,
		Fix: "Stop using the kind, or keep the CRD.",
	},
	"provider-after-consumer": {
		Section:      SectionRelease,
		SeverityText: "warning, or error with `--previous`",
		What:         "A custom resource that the update graph applies before the CRD that serves it: an earlier run level, or earlier in the same component.",
		Why:          "Another component at the same run level runs in parallel and is not reported. This matters only when the API is new: on an update from a release that served it, the CRD already exists. Without `--previous` lint cannot tell, so it warns. With `--previous` it is an error when the previous release did not serve that kind and version, and nothing otherwise. CRDs marked `bootstrap-required` exist before the CVO starts and are never late.",
		Example: `
# 0000_10_example_01_gadget.yaml: run level 10
apiVersion: example.com/v1
kind: Gadget
metadata: {name: example, namespace: openshift-example, annotations: {include.release.openshift.io/self-managed-high-availability: "true"}}
---
# 0000_50_other_00_crd.yaml: run level 50 serves it, too late
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.example.com, annotations: {include.release.openshift.io/self-managed-high-availability: "true"}}
spec:
  group: example.com
  names: {kind: Gadget, plural: gadgets}
  scope: Namespaced
  versions: [{name: v1, served: true, storage: true}]
`,
		Fix: "Move the CRD to an earlier run level or earlier in its component.",
	},
	"version-not-served": {
		Section: SectionRelease,
		What:    "A custom resource uses a version that the payload's CRD for its kind does not list or serves with `served: false`.",
		Why:     "The API server refuses the object.",
		Example: `
# 0000_50_example_00_crd.yaml
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.example.com, annotations: {include.release.openshift.io/self-managed-high-availability: "true"}}
spec:
  group: example.com
  names: {kind: Gadget, plural: gadgets}
  scope: Namespaced
  versions: [{name: v1, served: true, storage: true}]
---
# 0000_50_example_01_gadget.yaml
apiVersion: example.com/v1beta1
kind: Gadget
metadata: {name: example, namespace: openshift-example, annotations: {include.release.openshift.io/self-managed-high-availability: "true"}}
`,
		Fix: "Use a served version.",
	},
	"no-provider": {
		Section: SectionRelease,
		What:    "No CRD in the payload serves the kind, and it is not a built-in API (see below).",
		Why:     "The apply fails unless something outside the payload installs the CRD. A misspelt kind of a known group gets a suggestion.",
		Example: `
# 0000_50_example_01_gadget.yaml, and no CRD serves example.com Gadget
apiVersion: example.com/v1
kind: Gadget
metadata: {name: example, namespace: openshift-example, annotations: {include.release.openshift.io/self-managed-high-availability: "true"}}
`,
		Fix: "Add the CRD to the payload, or fix the kind.",
	},
	"namespace-on-cluster-scoped": {
		Section: SectionRelease,
		What:    "`metadata.namespace` on a cluster-scoped kind: a built-in one (Namespace, ClusterRole, CRD, every `config.openshift.io` kind, ...; the list is in `rules_scope.go`) or one a CRD of the payload serves with `scope: Cluster`.",
		Why:     "The API ignores the namespace, so a delete manifest written this way would look like it names another object than the one it deletes. Kinds of unknown scope are not judged; the engine drops such a namespace from the object's identity in any case.",
		Example: `
# 0000_50_example_01_clusterrole.yaml
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: example-reader
  namespace: openshift-example
  annotations:
    include.release.openshift.io/self-managed-high-availability: "true"
    release.openshift.io/delete: "true"
`,
		Fix: "Remove the namespace.",
	},
	"destructive-delete": {
		Section: SectionRelease,
		What:    "A delete manifest for a Namespace (everything in it goes too) or a CustomResourceDefinition (every custom resource of its kind goes too), including objects no payload created.",
		Why:     "Protected ones are `protected-delete` errors instead. Against a cluster, `plan` counts per kind what would go with it, and the engine records a `DeleteTakesObjects` Event before the DELETE.",
		Example: `
# 0000_50_example_00_namespace.yaml
apiVersion: v1
kind: Namespace
metadata:
  name: openshift-example
  annotations:
    include.release.openshift.io/self-managed-high-availability: "true"
    release.openshift.io/delete: "true"
`,
		Fix: "Make sure nothing outside the payload lives there, or keep the object.",
	},
	"no-operand-cleanup": {
		Section: SectionRelease,
		What:    "A release deletes a component's Deployment or DaemonSet and a CRD of the same component without `release.openshift.io/operand-cleanup: \"Supported\"` on the CRD's delete manifest.",
		Why:     "The CRD's custom resources then go after their operator, so finalizers nobody runs can wedge the CRD in Terminating.",
		Example: `
# 0000_50_example_00_crd.yaml
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.example.com, annotations: {include.release.openshift.io/self-managed-high-availability: "true", release.openshift.io/delete: "true"}}
---
# 0000_50_example_05_deployment.yaml
apiVersion: apps/v1
kind: Deployment
metadata: {name: example-operator, namespace: openshift-example, annotations: {include.release.openshift.io/self-managed-high-availability: "true", release.openshift.io/delete: "true"}}
`,
		Fix: "Mark the CRD's delete manifest `Supported` if deleting its custom resources first is safe, so that cluster admins can opt in.",
	},
	"minor-leftover": {
		Section:      SectionUpdate,
		SeverityText: "error on a minor or major update, info within a z-stream",
		What:         "A delete manifest that the previous release already carried.",
		Why:          "Clusters leave a minor version only once its deletes are done (`Upgradeable=False` while they are pending), so in the next minor the manifest is dead weight that could delete a re-created object. Within a z-stream (4.20.1 to 4.20.3), leftovers are allowed and the message says so. The operator enforces the same rule at acceptance, from the cluster's delete ledger (precondition `DeleteManifestsCarriedAcrossMinor`).",
		Example: `
# previous release 4.19.7: 0000_50_example_01_config.yaml
apiVersion: v1
kind: ConfigMap
metadata: {name: old-config, namespace: openshift-example, annotations: {include.release.openshift.io/self-managed-high-availability: "true", release.openshift.io/delete: "true"}}
---
# this release 4.20.0: 0000_50_example_01_config.yaml, the same delete again
apiVersion: v1
kind: ConfigMap
metadata: {name: old-config, namespace: openshift-example, annotations: {include.release.openshift.io/self-managed-high-availability: "true", release.openshift.io/delete: "true"}}
`,
		Fix: "Drop the delete manifest from the new minor release.",
	},
	"orphan": {
		Section: SectionUpdate,
		What:    "An object that the previous release created and that no manifest of the new release creates or deletes.",
		Why:     "The CVO never deletes what a payload merely drops, so the object stays, unmanaged. Objects in a namespace that the new release deletes, and objects of a kind whose CRD it deletes, go with them and are not reported.",
		Example: `
# previous release: 0000_50_example_01_config.yaml
apiVersion: v1
kind: ConfigMap
metadata: {name: old-config, namespace: openshift-example, annotations: {include.release.openshift.io/self-managed-high-availability: "true"}}
---
# this release: 0000_50_example_02_other.yaml, and nothing creates or deletes old-config
apiVersion: v1
kind: ConfigMap
metadata: {name: other, namespace: openshift-example, annotations: {include.release.openshift.io/self-managed-high-availability: "true"}}
`,
		Fix: "Add a delete manifest, or keep the manifest. `lint --fix --previous OLD` writes the delete manifests.",
	},
	"served-version-dropped": {
		Section: SectionUpdate,
		What:    "A CRD that both releases create drops a version that the previous release served.",
		Why:     "Clients that still use the version fail as soon as the CRD is updated.",
		Example: `
# previous release: 0000_50_example_00_crd.yaml
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.example.com, annotations: {include.release.openshift.io/self-managed-high-availability: "true"}}
spec:
  group: example.com
  names: {kind: Gadget, plural: gadgets}
  scope: Namespaced
  versions:
  - {name: v1beta1, served: true, storage: false}
  - {name: v1, served: true, storage: true}
---
# this release: 0000_50_example_00_crd.yaml, v1beta1 gone
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.example.com, annotations: {include.release.openshift.io/self-managed-high-availability: "true"}}
spec:
  group: example.com
  names: {kind: Gadget, plural: gadgets}
  scope: Namespaced
  versions:
  - {name: v1, served: true, storage: true}
`,
		Fix: "Ship one release with `served: false` for the version, then remove it.",
	},
	"storage-version-dropped": {
		Section: SectionUpdate,
		What:    "A CRD drops the previous release's storage version, which a cluster running it lists in `status.storedVersions`.",
		Why:     "Objects stored in it could no longer be read, and the API server refuses the change. A dropped version that was also served is reported only here.",
		Example: `
# previous release: 0000_50_example_00_crd.yaml
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.example.com, annotations: {include.release.openshift.io/self-managed-high-availability: "true"}}
spec:
  group: example.com
  names: {kind: Gadget, plural: gadgets}
  scope: Namespaced
  versions:
  - {name: v1beta1, served: true, storage: true}
---
# this release: 0000_50_example_00_crd.yaml, v1beta1 gone
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.example.com, annotations: {include.release.openshift.io/self-managed-high-availability: "true"}}
spec:
  group: example.com
  names: {kind: Gadget, plural: gadgets}
  scope: Namespaced
  versions:
  - {name: v1, served: true, storage: true}
`,
		Fix: "Keep the version, `served: false` if you like, migrate the objects, then remove the version from `status.storedVersions` (see docs/operations.md).",
	},
	"crd-immutable-field": {
		Section: SectionUpdate,
		What:    "A CRD changes `spec.scope`, `spec.group`, `spec.names.kind` or `spec.names.plural`.",
		Why:     "The API server refuses each.",
		Example: `
# previous release: 0000_50_example_00_crd.yaml
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.example.com, annotations: {include.release.openshift.io/self-managed-high-availability: "true"}}
spec:
  group: example.com
  names: {kind: Gadget, plural: gadgets}
  scope: Namespaced
  versions: [{name: v1, served: true, storage: true}]
---
# this release: 0000_50_example_00_crd.yaml, now cluster-scoped
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.example.com, annotations: {include.release.openshift.io/self-managed-high-availability: "true"}}
spec:
  group: example.com
  names: {kind: Gadget, plural: gadgets}
  scope: Cluster
  versions: [{name: v1, served: true, storage: true}]
`,
		Fix: "Ship the new API as a new CRD.",
	},
}

// CloseRules returns the rule ids that s may have meant: those it is part
// of, and those within a few edits of it, closest first.
func CloseRules(s string) []Rule {
	s = strings.ToLower(strings.TrimSpace(s))
	type scored struct {
		id Rule
		d  int
	}
	var close []scored
	for _, r := range AllRules {
		d := editDistance(s, string(r.ID))
		switch {
		case d <= max(2, len(s)/3):
		case s != "" && strings.Contains(string(r.ID), s):
			d = len(r.ID) // after the near misses
		default:
			continue
		}
		close = append(close, scored{r.ID, d})
	}
	sort.SliceStable(close, func(i, j int) bool { return close[i].d < close[j].d })
	ids := make([]Rule, len(close))
	for i, c := range close {
		ids[i] = c.id
	}
	return ids
}
