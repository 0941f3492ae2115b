package payload

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// want describes one expected finding; file is relative to the payload.
type want struct {
	rule     Rule
	severity Severity
	file     string
	line     int
	contains string
}

type ruleCase struct {
	version  string
	files    map[string]string
	previous map[string]string // a previous release, when set
	prevVer  string
	want     []want
	// ignore lists rules whose findings the case does not check, for cases
	// about another rule that a destructive delete also sets off.
	ignore []Rule
}

func runRuleCases(t *testing.T, cases map[string]ruleCase) {
	t.Helper()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			version := tc.version
			if version == "" {
				version = "4.20.0"
			}
			dir := writePayload(t, version, tc.files)
			prevDir := ""
			if tc.previous != nil {
				prevVersion := tc.prevVer
				if prevVersion == "" {
					prevVersion = "4.19.3"
				}
				prevDir = writePayload(t, prevVersion, tc.previous)
			}
			var got []Finding
			for _, f := range lintDirs(t, dir, prevDir) {
				if !slices.Contains(tc.ignore, f.Rule) {
					got = append(got, f)
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %d findings, want %d:\n%s", len(got), len(tc.want), formatFindings(got))
			}
			for i, w := range tc.want {
				f := got[i]
				root := dir
				if strings.HasPrefix(w.file, "previous/") {
					root = prevDir
				}
				file := filepath.Join(root, strings.TrimPrefix(w.file, "previous/"))
				if f.Rule != w.rule || f.Severity != w.severity || f.File != file || (w.line != 0 && f.Line != w.line) || !strings.Contains(f.Message, w.contains) {
					t.Errorf("finding %d:\n got %s\nwant %s %s at %s:%d containing %q", i, f, w.severity, w.rule, file, w.line, w.contains)
				}
			}
		})
	}
}

func TestAnnotationRules(t *testing.T) {
	cm := func(extra ...string) string { return annotated("v1", "ConfigMap", "ns", "cm", extra...) }
	const file = "0000_50_x_00_cm.yaml"
	cases := map[string]ruleCase{
		"a delete value of true is accepted": {
			files: map[string]string{file: cm(`release.openshift.io/delete: "true"`)},
		},
		"delete: True is an error that says what to write": {
			files: map[string]string{file: cm(`release.openshift.io/delete: "True"`)},
			want:  []want{{RuleDeleteValue, SeverityError, file, 8, `write release.openshift.io/delete: "true" (quoted)`}},
		},
		"delete: yes is an error": {
			files: map[string]string{file: cm(`release.openshift.io/delete: "yes"`)},
			want:  []want{{RuleDeleteValue, SeverityError, file, 8, `is "yes", and only "true" is accepted`}},
		},
		"an empty delete value is an error": {
			files: map[string]string{file: cm(`release.openshift.io/delete: ""`)},
			want:  []want{{RuleDeleteValue, SeverityError, file, 8, `is "", and only "true"`}},
		},
		"delete: false is an error": {
			files: map[string]string{file: cm(`release.openshift.io/delete: "false"`)},
			want:  []want{{RuleDeleteValue, SeverityError, file, 8, `is "false"`}},
		},
		"an unquoted delete: true is a boolean, not a string": {
			files: map[string]string{file: cm(`release.openshift.io/delete: true`)},
			want:  []want{{RuleDeleteValue, SeverityError, file, 8, "the YAML boolean true, not a string"}},
		},
		"a misspelt delete annotation is unknown and the message suggests the key": {
			files: map[string]string{file: cm(`release.openshift.io/delet: "true"`)},
			want:  []want{{RuleUnknownAnnotation, SeverityError, file, 8, `(did you mean "release.openshift.io/delete"?)`}},
		},
		"an include annotation for an unknown profile is an error": {
			files: map[string]string{file: cm(`include.release.openshift.io/self-managed-high-availabilty: "true"`)},
			want:  []want{{RuleUnknownAnnotation, SeverityError, file, 8, `unknown cluster profile "self-managed-high-availabilty"`}},
		},
		"an unknown profile is caught on a manifest that it keeps out of the release": {
			files: map[string]string{file: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  namespace: ns\n  annotations:\n    include.release.openshift.io/selfmanaged: \"true\"\n"},
			want:  []want{{RuleUnknownAnnotation, SeverityError, file, 7, "unknown cluster profile"}},
		},
		"known release annotations and profiles pass": {
			files: map[string]string{file: cm(
				`include.release.openshift.io/single-node-developer: "true"`,
				`include.release.openshift.io/ibm-cloud-managed: "false"`,
				`include.release.openshift.io/hypershift: "true"`,
				`release.openshift.io/create-only: "true"`,
				`release.openshift.io/bootstrap-required: "true"`,
				`release.openshift.io/feature-set: "Default,TechPreviewNoUpgrade"`,
				`capability.openshift.io/name: "Console+Build"`,
				`exclude.release.openshift.io/internal-openshift-hosted: "true"`,
			)},
		},
		"the annotation of a release's verification ConfigMap is known": {
			files: map[string]string{file: cm(`release.openshift.io/verification-config-map: ""`)},
		},
		"an include value other than true or false is an error": {
			files: map[string]string{file: cm(`include.release.openshift.io/hypershift: "True"`)},
			want:  []want{{RuleAnnotationValue, SeverityError, file, 8, `is "True", which excludes the manifest`}},
		},
		"a create-only value other than true is an error": {
			files: map[string]string{file: cm(`release.openshift.io/create-only: "yes"`)},
			want:  []want{{RuleAnnotationValue, SeverityError, file, 8, "has no effect"}},
		},
		"an unknown feature set is an error": {
			files: map[string]string{file: cm(`release.openshift.io/feature-set: "TechPreview"`)},
			want:  []want{{RuleAnnotationValue, SeverityError, file, 8, `unknown feature set "TechPreview"`}},
		},
		"a feature set with a feature gate is an error": {
			files: map[string]string{file: cm(`release.openshift.io/feature-set: Default`, `release.openshift.io/feature-gate: Example`)},
			want:  []want{{RuleAnnotationValue, SeverityError, file, 9, "both release.openshift.io/feature-set and release.openshift.io/feature-gate"}},
		},
		"a feature gate list with an empty name is an error": {
			files: map[string]string{file: cm(`release.openshift.io/feature-gate: "A,,B"`)},
			want:  []want{{RuleAnnotationValue, SeverityError, file, 8, "empty gate name"}},
		},
		"a major version on a ConfigMap is an error": {
			files: map[string]string{file: cm(`release.openshift.io/major-version: "4"`)},
			want:  []want{{RuleAnnotationValue, SeverityError, file, 8, "only allowed on config.openshift.io FeatureGate and CustomResourceDefinition"}},
		},
		"a malformed major version is an error": {
			files: map[string]string{file: annotated("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "foos.example.com", `release.openshift.io/major-version: "four"`)},
			want:  []want{{RuleAnnotationValue, SeverityError, file, 7, `"four" is not a major version`}},
		},
		"an annotation that is not a string is an error": {
			files: map[string]string{file: cm(`example.com/replicas: 3`)},
			want:  []want{{RuleAnnotationValue, SeverityError, file, 8, "the YAML number 3, not a string"}},
		},
		"an unknown capability is a warning": {
			files: map[string]string{file: cm(`capability.openshift.io/name: "Consle"`)},
			want:  []want{{RuleUnknownCapability, SeverityWarning, file, 8, `unknown capability "Consle"`}},
		},
		"delete and create-only on one manifest is a warning": {
			files: map[string]string{file: cm(`release.openshift.io/delete: "true"`, `release.openshift.io/create-only: "true"`)},
			want:  []want{{RuleDeleteCreateOnly, SeverityWarning, file, 9, "the delete wins and create-only is ignored"}},
		},
		"a file name without run level and component is a warning": {
			files: map[string]string{"06-deployment.yaml": cm()},
			want:  []want{{RuleFileName, SeverityWarning, "06-deployment.yaml", 1, "does not follow 0000_<runlevel>_<component>_<name>"}},
		},
	}
	runRuleCases(t, cases)
}

func TestObjectRules(t *testing.T) {
	cm := func(ns, name string, extra ...string) string { return annotated("v1", "ConfigMap", ns, name, extra...) }
	deleted := `release.openshift.io/delete: "true"`
	cases := map[string]ruleCase{
		"one object created and deleted is an error at the delete": {
			files: map[string]string{
				"0000_50_a_00_cm.yaml": cm("ns", "x"),
				"0000_50_b_00_cm.yaml": cm("ns", "x", deleted),
			},
			want: []want{{RuleCreatedAndDeleted, SeverityError, "0000_50_b_00_cm.yaml", 8, "created by"}},
		},
		"one object deleted twice is fine": {
			files: map[string]string{
				"0000_50_a_00_cm.yaml": cm("ns", "x", deleted),
				"0000_50_b_00_cm.yaml": cm("ns", "x", deleted),
			},
		},
		"one object created by two files is a warning, as the CVO accepts it": {
			files: map[string]string{
				"0000_50_a_00_cm.yaml": cm("ns", "x"),
				"0000_50_b_00_cm.yaml": cm("ns", "x", `example.com/other: "value"`),
			},
			want: []want{{RuleDuplicateObject, SeverityWarning, "0000_50_b_00_cm.yaml", 1, "also created by"}},
		},
		"variants for other profiles do not duplicate each other": {
			files: map[string]string{
				"0000_50_a_00_cm.yaml":            cm("ns", "x"),
				"0000_50_a_00_cm-hypershift.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  namespace: ns\n  annotations:\n    include.release.openshift.io/hypershift: \"true\"\n",
			},
		},
		"a deleted namespace that still holds a created object is an error": {
			ignore: []Rule{RuleDestructiveDelete},
			files: map[string]string{
				"0000_50_a_00_ns.yaml": annotated("v1", "Namespace", "", "gone", deleted),
				"0000_50_a_01_cm.yaml": cm("gone", "x"),
				"0000_50_a_02_cm.yaml": cm("gone", "other", deleted),
			},
			want: []want{{RuleNamespaceDeleted, SeverityError, "0000_50_a_01_cm.yaml", 1, "is created in namespace gone"}},
		},
		"a deleted CRD whose kind is still used is an error": {
			ignore: []Rule{RuleDestructiveDelete},
			files: map[string]string{
				"0000_50_a_00_crd.yaml": annotated("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "widgets.example.com", deleted),
				"0000_50_a_01_cr.yaml":  annotated("example.com/v1", "Widget", "ns", "w"),
			},
			want: []want{{RuleAPIStillUsed, SeverityError, "0000_50_a_01_cr.yaml", 1, "whose CustomResourceDefinition widgets.example.com is deleted"}},
		},
		"a deleted CRD whose kind is only deleted is fine": {
			ignore: []Rule{RuleDestructiveDelete},
			files: map[string]string{
				"0000_50_a_00_cr.yaml":  annotated("example.com/v1", "Widget", "ns", "w", deleted),
				"0000_50_a_01_crd.yaml": annotated("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "widgets.example.com", deleted),
			},
		},
	}
	runRuleCases(t, cases)
}

func TestAPIRules(t *testing.T) {
	widget := func(version string) string { return annotated("example.com/"+version, "Widget", "ns", "w") }
	crd := crdDoc("example.com", "Widget", "widgets", "v1", "v1beta1-")
	cases := map[string]ruleCase{
		"a custom resource after its CRD is fine": {
			files: map[string]string{"0000_10_a_00_crd.yaml": crd, "0000_20_a_00_cr.yaml": widget("v1")},
		},
		"a custom resource at an earlier run level than its CRD is a warning without the previous release": {
			files: map[string]string{"0000_10_a_00_cr.yaml": widget("v1"), "0000_20_b_00_crd.yaml": crd},
			want:  []want{{RuleProviderAfterConsumer, SeverityWarning, "0000_10_a_00_cr.yaml", 1, "is applied before CustomResourceDefinition widgets.example.com"}},
		},
		"a custom resource earlier in the same component than its CRD is a warning": {
			files: map[string]string{"0000_10_a_00_cr.yaml": widget("v1"), "0000_10_a_01_crd.yaml": crd},
			want:  []want{{RuleProviderAfterConsumer, SeverityWarning, "0000_10_a_00_cr.yaml", 1, "is applied before"}},
		},
		"a custom resource in another component of the same run level runs in parallel and is not reported": {
			files: map[string]string{"0000_10_a_00_cr.yaml": widget("v1"), "0000_10_b_00_crd.yaml": crd},
		},
		"a custom resource before a CRD the previous release lacked is an error": {
			files:    map[string]string{"0000_10_a_00_cr.yaml": widget("v1"), "0000_20_b_00_crd.yaml": crd},
			previous: map[string]string{},
			want:     []want{{RuleProviderAfterConsumer, SeverityError, "0000_10_a_00_cr.yaml", 1, "the previous release 4.19.3 does not serve Widget.example.com/v1"}},
		},
		"a custom resource before a CRD the previous release served is fine": {
			files:    map[string]string{"0000_10_a_00_cr.yaml": widget("v1"), "0000_20_b_00_crd.yaml": crd},
			previous: map[string]string{"0000_20_b_00_crd.yaml": crd},
		},
		"a bootstrap-required CRD exists before the CVO starts": {
			files: map[string]string{
				"0000_05_a_00_cr.yaml":  widget("v1"),
				"0000_10_b_00_crd.yaml": strings.Replace(crd, "  annotations:\n", "  annotations:\n    release.openshift.io/bootstrap-required: \"true\"\n", 1),
			},
		},
		"a custom resource of a version its CRD does not serve is an error": {
			files: map[string]string{"0000_10_a_00_crd.yaml": crd, "0000_20_a_00_cr.yaml": widget("v1beta1")},
			want:  []want{{RuleVersionNotServed, SeverityError, "0000_20_a_00_cr.yaml", 1, "serves v1; use a served version"}},
		},
		"a custom resource of a kind no CRD serves is a warning": {
			files: map[string]string{"0000_20_a_00_cr.yaml": widget("v1")},
			want:  []want{{RuleNoProvider, SeverityWarning, "0000_20_a_00_cr.yaml", 1, "no CustomResourceDefinition in the payload serves"}},
		},
		"a misspelt kind of a CRD group is reported with a suggestion": {
			files: map[string]string{"0000_10_a_00_crd.yaml": crd, "0000_20_a_00_cr.yaml": annotated("example.com/v1", "Widgit", "ns", "w")},
			want:  []want{{RuleNoProvider, SeverityWarning, "0000_20_a_00_cr.yaml", 1, `(did you mean "Widget"?)`}},
		},
		"a misspelt built-in kind is a warning": {
			files: map[string]string{"0000_20_a_00_cr.yaml": annotated("apps/v1", "Deploymnet", "ns", "d")},
			want:  []want{{RuleNoProvider, SeverityWarning, "0000_20_a_00_cr.yaml", 1, `apps is built in but has no kind Deploymnet (did you mean "Deployment"?)`}},
		},
		"a v1beta1 CRD whose version is its first versions entry is fine": {
			files: map[string]string{"0000_10_a_00_crd.yaml": strings.NewReplacer("apiextensions.k8s.io/v1\n", "apiextensions.k8s.io/v1beta1\n", "  versions:\n", "  version: v1\n  versions:\n").Replace(crd)},
		},
		"a v1beta1 CRD whose version is not its first versions entry is an error": {
			files: map[string]string{"0000_10_a_00_crd.yaml": strings.NewReplacer("apiextensions.k8s.io/v1\n", "apiextensions.k8s.io/v1beta1\n", "  versions:\n", "  version: v1beta1\n  versions:\n").Replace(crd)},
			want:  []want{{RuleCRDVersionMismatch, SeverityError, "0000_10_a_00_crd.yaml", 1, `sets spec.version "v1beta1", but spec.versions starts with "v1"`}},
		},
		"built-in Kubernetes and aggregated OpenShift kinds need no CRD": {
			files: map[string]string{
				"0000_20_a_00_a.yaml": annotated("apps/v1", "Deployment", "ns", "d"),
				"0000_20_a_01_b.yaml": annotated("route.openshift.io/v1", "Route", "ns", "r"),
				"0000_20_a_02_c.yaml": annotated("apiregistration.k8s.io/v1", "APIService", "", "v1.example.com"),
				"0000_20_a_03_d.yaml": annotated("security.openshift.io/v1", "SecurityContextConstraints", "", "scc"),
				"0000_20_a_04_e.yaml": annotated("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration", "", "v"),
			},
		},
	}
	runRuleCases(t, cases)
}

func TestCRDShadowsBuiltin(t *testing.T) {
	deleted := `release.openshift.io/delete: "true"`
	cases := map[string]ruleCase{
		"a CRD at a built-in group and plural is an error at its plural": {
			files: map[string]string{"0000_10_a_00_crd.yaml": crdDoc("coordination.k8s.io", "Lease", "leases", "v1")},
			want: []want{{RuleCRDShadowsBuiltin, SeverityError, "0000_10_a_00_crd.yaml", 12,
				`CustomResourceDefinition leases.coordination.k8s.io has group "coordination.k8s.io" and plural "leases", a resource the API server serves itself, as the built-in Lease.coordination.k8s.io`}},
		},
		"another kind at a built-in resource is an error too": {
			files: map[string]string{"0000_10_a_00_crd.yaml": crdDoc("apps", "Widget", "deployments", "v1")},
			want:  []want{{RuleCRDShadowsBuiltin, SeverityError, "0000_10_a_00_crd.yaml", 12, "reaches Deployment.apps objects instead; give the CRD a group of its own"}},
		},
		"a deleted CRD at a built-in resource is an error, read from its name": {
			ignore: []Rule{RuleDestructiveDelete},
			files:  map[string]string{"0000_10_a_00_crd.yaml": annotated("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "leases.coordination.k8s.io", deleted)},
			want:   []want{{RuleCRDShadowsBuiltin, SeverityError, "0000_10_a_00_crd.yaml", 1, "remove this delete manifest"}},
		},
		"a CRD of its own group is fine": {
			files: map[string]string{"0000_10_a_00_crd.yaml": crdDoc("example.com", "Widget", "widgets", "v1")},
		},
		"a CRD of its own group with a built-in plural is fine": {
			files: map[string]string{"0000_10_a_00_crd.yaml": crdDoc("example.com", "Lease", "leases", "v1")},
		},
		"a CRD of a built-in group with a plural of its own is fine": {
			files: map[string]string{"0000_10_a_00_crd.yaml": crdDoc("coordination.k8s.io", "Widget", "widgets", "v1")},
		},
		"the ClusterVersion CRD is no built-in": {
			files: map[string]string{"0000_10_a_00_crd.yaml": crdDoc("config.openshift.io", "ClusterVersion", "clusterversions", "v1")},
		},
	}
	runRuleCases(t, cases)
}

func TestUpdateRules(t *testing.T) {
	deleted := `release.openshift.io/delete: "true"`
	cm := func(name string, extra ...string) string { return annotated("v1", "ConfigMap", "ns", name, extra...) }
	cases := map[string]ruleCase{
		"a delete manifest already in the previous minor is an error": {
			version: "4.20.0", prevVer: "4.19.7",
			files:    map[string]string{"0000_50_a_00_cm.yaml": cm("old", deleted)},
			previous: map[string]string{"0000_50_a_00_cm.yaml": cm("old", deleted)},
			want:     []want{{RuleMinorLeftover, SeverityError, "0000_50_a_00_cm.yaml", 8, "drop this delete manifest from the 4.20 release"}},
		},
		"a delete manifest already in the previous z-stream is allowed and says so": {
			version: "4.20.3", prevVer: "4.20.1",
			files:    map[string]string{"0000_50_a_00_cm.yaml": cm("old", deleted)},
			previous: map[string]string{"0000_50_a_00_cm.yaml": cm("old", deleted)},
			want:     []want{{RuleMinorLeftover, SeverityInfo, "0000_50_a_00_cm.yaml", 8, "allowed in a z-stream update"}},
		},
		"a new delete manifest is fine": {
			files:    map[string]string{"0000_50_a_00_cm.yaml": cm("old", deleted)},
			previous: map[string]string{"0000_50_a_00_cm.yaml": cm("old")},
		},
		"an object dropped without a delete manifest is an orphan": {
			files:    map[string]string{"0000_50_a_00_cm.yaml": cm("kept")},
			previous: map[string]string{"0000_50_a_00_cm.yaml": cm("kept"), "0000_50_a_01_cm.yaml": cm("dropped")},
			want:     []want{{RuleOrphan, SeverityWarning, "previous/0000_50_a_01_cm.yaml", 1, "ConfigMap/ns/dropped is created by the previous release 4.19.3 but no manifest of 4.20.0"}},
		},
		"objects in a deleted namespace are not orphans": {
			ignore: []Rule{RuleDestructiveDelete},
			files:  map[string]string{"0000_50_a_00_ns.yaml": annotated("v1", "Namespace", "", "ns", deleted)},
			previous: map[string]string{
				"0000_50_a_00_ns.yaml": annotated("v1", "Namespace", "", "ns"),
				"0000_50_a_01_cm.yaml": cm("inside"),
			},
		},
		"dropping a served CRD version is an error": {
			files:    map[string]string{"0000_10_a_00_crd.yaml": crdDoc("example.com", "Widget", "widgets", "v1")},
			previous: map[string]string{"0000_10_a_00_crd.yaml": crdDoc("example.com", "Widget", "widgets", "v1", "v1beta1")},
			want:     []want{{RuleServedVersionDropped, SeverityError, "0000_10_a_00_crd.yaml", 1, "removes version v1beta1, which is served, so its clients break; ship a release that sets served: false for v1beta1 first and remove it in a later one (previous release 4.19.3"}},
		},
		"dropping a version that stopped being served first is fine": {
			files:    map[string]string{"0000_10_a_00_crd.yaml": crdDoc("example.com", "Widget", "widgets", "v1")},
			previous: map[string]string{"0000_10_a_00_crd.yaml": crdDoc("example.com", "Widget", "widgets", "v1", "v1beta1-")},
		},
		"dropping the previous storage version is an error": {
			files:    map[string]string{"0000_10_a_00_crd.yaml": crdDoc("example.com", "Widget", "widgets", "v1")},
			previous: map[string]string{"0000_10_a_00_crd.yaml": crdDoc("example.com", "Widget", "widgets", "v1beta1-", "v1")},
			want:     []want{{RuleStorageVersionDropped, SeverityError, "0000_10_a_00_crd.yaml", 1, "removes version v1beta1, which status.storedVersions lists"}},
		},
		"a changed scope or kind is an error each": {
			files:    map[string]string{"0000_10_a_00_crd.yaml": strings.Replace(crdDoc("example.com", "Gadget", "widgets", "v1"), "scope: Namespaced", "scope: Cluster", 1)},
			previous: map[string]string{"0000_10_a_00_crd.yaml": crdDoc("example.com", "Widget", "widgets", "v1")},
			want: []want{
				{RuleCRDImmutableField, SeverityError, "0000_10_a_00_crd.yaml", 1, `changes spec.scope from "Namespaced" to "Cluster"`},
				{RuleCRDImmutableField, SeverityError, "0000_10_a_00_crd.yaml", 1, `changes spec.names.kind from "Widget" to "Gadget"`},
			},
		},
		"a new version is fine": {
			files:    map[string]string{"0000_10_a_00_crd.yaml": crdDoc("example.com", "Widget", "widgets", "v1", "v2")},
			previous: map[string]string{"0000_10_a_00_crd.yaml": crdDoc("example.com", "Widget", "widgets", "v1")},
		},
	}
	runRuleCases(t, cases)
}

func TestLocate(t *testing.T) {
	m := &Manifest{
		src:     []byte("metadata:\n  annotations:\n    \"release.openshift.io/delete\": \"true\"\n    x: release.openshift.io/delete: no\n"),
		srcLine: 10,
	}
	line, col, ok := m.locate(DeleteAnnotation)
	if !ok || line != 12 || col != 5 {
		t.Errorf("locate = %d:%d %v, want 12:5", line, col, ok)
	}
	if _, _, ok := m.locate("absent"); ok {
		t.Error("found an absent key")
	}
}

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"delete", "delet", 1}, {"kitten", "sitting", 3}, {"", "abc", 3}} {
		if got := editDistance(tc.a, tc.b); got != tc.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestRuleTable(t *testing.T) {
	seen := map[Rule]bool{}
	for _, r := range AllRules {
		if r.ID == "" || r.Summary == "" || r.Severity == "" {
			t.Errorf("rule %+v lacks a field", r)
		}
		if seen[r.ID] {
			t.Errorf("rule %s is listed twice", r.ID)
		}
		seen[r.ID] = true
	}
	if len(AllRules) != 31 {
		t.Errorf("AllRules lists %d rules; update this test and docs/annotations.md together", len(AllRules))
	}
}

func TestUnknownFieldRule(t *testing.T) {
	cronJob := func(field string, annotations string) string {
		return `apiVersion: batch/v1
kind: CronJob
metadata:
  name: cleanup
  namespace: ns
  annotations:
    include.release.openshift.io/self-managed-high-availability: "true"` + annotations + `
spec:
  schedule: "0 * * * *"
  jobTemplate:
    spec:
      ` + field + `: 3
      template:
        spec:
          restartPolicy: Never
          containers: [{name: c, image: i}]
`
	}
	runRuleCases(t, map[string]ruleCase{
		"a misspelled field of a built-in kind is reported": {
			files: map[string]string{"0000_50_a_01_cron.yaml": cronJob("backOffLimit", "")},
			want:  []want{{RuleUnknownField, SeverityWarning, "0000_50_a_01_cron.yaml", 1, "spec.jobTemplate.spec.backOffLimit"}},
		},
		"a declared field is fine": {
			files: map[string]string{"0000_50_a_01_cron.yaml": cronJob("backoffLimit", "")},
		},
		"a delete manifest's fields are not read": {
			files: map[string]string{"0000_50_a_01_cron.yaml": cronJob("backOffLimit", "\n    release.openshift.io/delete: \"true\"")},
		},
		"custom resources are left to their CRD's schema": {
			files: map[string]string{"0000_50_a_01_cr.yaml": `apiVersion: example.com/v1
kind: Widget
metadata:
  name: w
  namespace: ns
  annotations:
    include.release.openshift.io/self-managed-high-availability: "true"
spec: {anything: 1}
`, "0000_40_a_00_crd.yaml": `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
  annotations:
    include.release.openshift.io/self-managed-high-availability: "true"
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`},
		},
	})
}

func TestOperandCleanupRules(t *testing.T) {
	crd := func(annotations string) string {
		return "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\n  annotations:\n    include.release.openshift.io/self-managed-high-availability: \"true\"\n    release.openshift.io/delete: \"true\"" + annotations + "\n"
	}
	operator := "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: widget-operator\n  namespace: ns\n  annotations:\n    include.release.openshift.io/self-managed-high-availability: \"true\"\n    release.openshift.io/delete: \"true\"\n"
	runRuleCases(t, map[string]ruleCase{
		"a component removed without operand cleanup support is warned of": {
			ignore: []Rule{RuleDestructiveDelete},
			files:  map[string]string{"0000_50_widgets_00_crd.yaml": crd(""), "0000_50_widgets_10_operator.yaml": operator},
			want:   []want{{RuleNoOperandCleanup, SeverityWarning, "0000_50_widgets_00_crd.yaml", 7, "operand-cleanup"}},
		},
		"with Supported it is not": {
			ignore: []Rule{RuleDestructiveDelete},
			files:  map[string]string{"0000_50_widgets_00_crd.yaml": crd("\n    release.openshift.io/operand-cleanup: \"Supported\""), "0000_50_widgets_10_operator.yaml": operator},
		},
		"a CRD deleted while its component stays is not a removal": {
			ignore: []Rule{RuleDestructiveDelete},
			files:  map[string]string{"0000_50_widgets_00_crd.yaml": crd("")},
		},
		"another value is an error": {
			ignore: []Rule{RuleDestructiveDelete},
			files:  map[string]string{"0000_50_widgets_00_crd.yaml": crd("\n    release.openshift.io/operand-cleanup: \"supported\"")},
			want:   []want{{RuleAnnotationValue, SeverityError, "0000_50_widgets_00_crd.yaml", 8, `the one value is "Supported"`}},
		},
		"on anything but a CRD's delete manifest it is an error": {
			files: map[string]string{"0000_50_widgets_10_operator.yaml": strings.Replace(operator, "release.openshift.io/delete: \"true\"", "release.openshift.io/operand-cleanup: \"Supported\"", 1)},
			want:  []want{{RuleAnnotationValue, SeverityError, "0000_50_widgets_10_operator.yaml", 8, "only has an effect on the delete manifest of a CustomResourceDefinition"}},
		},
	})
}

func TestProtectedDeleteRule(t *testing.T) {
	del := func(apiVersion, kind, ns, name string) string {
		meta := "  name: " + name + "\n"
		if ns != "" {
			meta += "  namespace: " + ns + "\n"
		}
		return "apiVersion: " + apiVersion + "\nkind: " + kind + "\nmetadata:\n" + meta +
			"  annotations:\n    include.release.openshift.io/self-managed-high-availability: \"true\"\n    release.openshift.io/delete: \"true\"\n"
	}
	runRuleCases(t, map[string]ruleCase{
		"kube-public": {
			files: map[string]string{"0000_50_a_00_ns.yaml": del("v1", "Namespace", "", "kube-public")},
			want:  []want{{RuleProtectedDelete, SeverityError, "0000_50_a_00_ns.yaml", 7, "Namespace/kube-public is a protected namespace"}},
		},
		"a stray namespace on a cluster-scoped kind changes nothing": {
			ignore: []Rule{RuleNamespaceOnClusterScoped},
			files:  map[string]string{"0000_50_a_00_ns.yaml": del("v1", "Namespace", "anything", "kube-system")},
			want:   []want{{RuleProtectedDelete, SeverityError, "0000_50_a_00_ns.yaml", 8, "a protected namespace"}},
		},
		"the applier's Deployment": {
			files: map[string]string{"0000_50_a_00_d.yaml": del("apps/v1", "Deployment", "openshift-cluster-version", "cluster-version-operator")},
			want:  []want{{RuleProtectedDelete, SeverityError, "0000_50_a_00_d.yaml", 8, "the applier's own Deployment"}},
		},
		"the ClusterVersion CRD": {
			files: map[string]string{"0000_50_a_00_crd.yaml": del("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "clusterversions.config.openshift.io")},
			want:  []want{{RuleProtectedDelete, SeverityError, "0000_50_a_00_crd.yaml", 7, "the applier's own status"}},
		},
		"an ordinary namespace": {
			ignore: []Rule{RuleDestructiveDelete},
			files:  map[string]string{"0000_50_a_00_ns.yaml": del("v1", "Namespace", "", "openshift-old")},
		},
	})
}

func TestDestructiveDeleteRule(t *testing.T) {
	runRuleCases(t, map[string]ruleCase{
		"a Namespace delete warns": {
			files: map[string]string{"0000_50_a_00_ns.yaml": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: openshift-old\n  annotations:\n    include.release.openshift.io/self-managed-high-availability: \"true\"\n    release.openshift.io/delete: \"true\"\n"},
			want:  []want{{RuleDestructiveDelete, SeverityWarning, "0000_50_a_00_ns.yaml", 7, "deletes every object in it"}},
		},
		"a CRD delete warns": {
			files: map[string]string{"0000_50_a_00_crd.yaml": "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\n  annotations:\n    include.release.openshift.io/self-managed-high-availability: \"true\"\n    release.openshift.io/delete: \"true\"\n"},
			want:  []want{{RuleDestructiveDelete, SeverityWarning, "0000_50_a_00_crd.yaml", 7, "every custom resource of its kind"}},
		},
		"a ConfigMap delete does not": {
			files: map[string]string{"0000_50_a_00_cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: old\n  namespace: ns\n  annotations:\n    include.release.openshift.io/self-managed-high-availability: \"true\"\n    release.openshift.io/delete: \"true\"\n"},
		},
	})
}

func TestNamespaceOnClusterScopedRule(t *testing.T) {
	const inc = "  annotations:\n    include.release.openshift.io/self-managed-high-availability: \"true\"\n"
	runRuleCases(t, map[string]ruleCase{
		"a built-in cluster-scoped kind": {
			files: map[string]string{"0000_50_a_00_cr.yaml": "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: r\n  namespace: ns\n" + inc},
			want:  []want{{RuleNamespaceOnClusterScoped, SeverityError, "0000_50_a_00_cr.yaml", 5, "ClusterRole.rbac.authorization.k8s.io is cluster-scoped"}},
		},
		"a kind a payload CRD serves cluster-scoped": {
			files: map[string]string{
				"0000_40_a_00_crd.yaml": "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\n" + inc +
					"spec:\n  group: example.com\n  scope: Cluster\n  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}\n  versions:\n  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}\n",
				"0000_50_a_01_w.yaml": "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n  namespace: ns\n" + inc,
			},
			want: []want{{RuleNamespaceOnClusterScoped, SeverityError, "0000_50_a_01_w.yaml", 5, "Widget.example.com is cluster-scoped"}},
		},
		"a namespaced kind": {
			files: map[string]string{"0000_50_a_00_cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  namespace: ns\n" + inc},
		},
		"an unknown kind is not judged": {
			files:  map[string]string{"0000_50_a_00_x.yaml": "apiVersion: example.org/v1\nkind: Thing\nmetadata:\n  name: t\n  namespace: ns\n" + inc},
			ignore: []Rule{RuleNoProvider},
		},
	})
}

func TestLintClosesSilentHoles(t *testing.T) {
	const inc = `    include.release.openshift.io/self-managed-high-availability: "true"` + "\n"
	cm := func(name, extra string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n  namespace: ns\n  annotations:\n" + inc + extra
	}
	runRuleCases(t, map[string]ruleCase{
		"a second annotations: that hides the delete annotation": {
			files: map[string]string{"0000_50_a_00_x.yaml": cm("x", `    release.openshift.io/delete: "true"`+"\n  annotations:\n"+inc)},
			want:  []want{{RuleParseError, SeverityError, "0000_50_a_00_x.yaml", 0, `key "annotations" is set twice`}},
		},
		"text after a document end": {
			files: map[string]string{"0000_50_a_00_x.yaml": cm("x", "...\nkind: Secret\n")},
			want:  []want{{RuleParseError, SeverityError, "0000_50_a_00_x.yaml", 9, `text after the document end marker "..."`}},
		},
		"a document end followed by comments and a new document is fine": {
			files: map[string]string{"0000_50_a_00_x.yaml": cm("x", "...\n# a comment\n---\n"+cm("z", ""))},
		},
		"a name with a slash": {
			files: map[string]string{"0000_50_a_00_x.yaml": cm("../x", "")},
			want:  []want{{RuleInvalidName, SeverityError, "0000_50_a_00_x.yaml", 1, `metadata.name "../x" is not a valid Kubernetes name`}},
		},
		"a name with a NUL": {
			files: map[string]string{"0000_50_a_00_x.yaml": cm(`"a\0b"`, "")},
			want:  []want{{RuleInvalidName, SeverityError, "0000_50_a_00_x.yaml", 1, "holds a control character"}},
		},
		"a name of 400 characters": {
			files: map[string]string{"0000_50_a_00_x.yaml": cm(strings.Repeat("a", 400), "")},
			want:  []want{{RuleInvalidName, SeverityError, "0000_50_a_00_x.yaml", 1, "is 400 characters long, more than 253"}},
		},
		"no apiVersion": {
			files: map[string]string{"0000_50_a_00_x.yaml": strings.TrimPrefix(cm("x", ""), "apiVersion: v1\n")},
			want:  []want{{RuleParseError, SeverityError, "0000_50_a_00_x.yaml", 1, "document has no apiVersion"}},
		},
		"annotations that are not a mapping": {
			files: map[string]string{"0000_50_a_00_x.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  namespace: ns\n  annotations: \"a string\"\n"},
			want:  []want{{RuleParseError, SeverityError, "0000_50_a_00_x.yaml", 1, "metadata.annotations is"}},
		},
		"a known key in other case": {
			files: map[string]string{"0000_50_a_00_x.yaml": cm("x", `    Release.OpenShift.io/Delete: "true"`+"\n")},
			want:  []want{{RuleUnknownAnnotation, SeverityError, "0000_50_a_00_x.yaml", 8, "differs from release.openshift.io/delete only by case"}},
		},
	})
}

func TestParseMessagesNeverShowGoTypes(t *testing.T) {
	for _, doc := range []string{
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  annotations: [a, b]\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata: [x]\n",
		"apiVersion: [v1]\nkind: ConfigMap\nmetadata:\n  name: x\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  labels: {a: [1]}\n",
	} {
		_, findings := parseFile("0000_50_a_00_x.yaml", []byte(doc))
		for _, f := range findings {
			if strings.Contains(f.Message, "Go ") || strings.Contains(f.Message, "map[string]") || strings.Contains(f.Message, "[]interface") {
				t.Errorf("message shows a Go type: %s", f.Message)
			}
		}
	}
}
