package payload

import (
	"fmt"
	"testing"
)

// removalCRD is a CRD of group whose v1alpha1 is deprecated as deprecated
// says, with removedIn (a YAML value) as its removed-in annotation, on
// line 7.
func removalCRD(group, removedIn string, deprecated bool) string {
	return fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.%[1]s
  annotations:
    include.release.openshift.io/self-managed-high-availability: "true"
    %[1]s/removed-in: %[2]s
spec:
  group: %[1]s
  scope: Namespaced
  names: {kind: Gadget, plural: gadgets}
  versions:
  - {name: v1, served: true, storage: true}
  - {name: v1alpha1, served: true, storage: false, deprecated: %[3]t}
`, group, removedIn, deprecated)
}

func TestCRDRemovedInRule(t *testing.T) {
	const file = "0000_10_a_00_crd.yaml"
	cases := map[string]ruleCase{
		"a removal in the next minor lints clean": {
			version: "4.21.0", files: map[string]string{file: removalCRD("example.com", `"4.22"`, true)},
		},
		"a removal in a later major lints clean": {
			version: "4.21.0", files: map[string]string{file: removalCRD("example.com", `"5.0"`, true)},
		},
		"a CRD of a release.openshift.io group may carry it: no unknown-annotation": {
			version: "4.21.0", files: map[string]string{file: removalCRD("release.openshift.io", `"4.22"`, true)},
		},
		"a value that is no release line is an error": {
			version: "4.21.0", files: map[string]string{file: removalCRD("example.com", `"4.22.0"`, true)},
			want: []want{{RuleCRDRemovedIn, SeverityError, file, 7, `example.com/removed-in: removed-in "4.22.0" is not a release line X.Y`}},
		},
		"a v prefix is an error": {
			version: "4.21.0", files: map[string]string{file: removalCRD("example.com", `"v4.22"`, true)},
			want: []want{{RuleCRDRemovedIn, SeverityError, file, 7, `"v4.22" is not a release line`}},
		},
		"this release's own line is an error: it still ships the version": {
			version: "4.21.3", files: map[string]string{file: removalCRD("example.com", `"4.21"`, true)},
			want: []want{{RuleCRDRemovedIn, SeverityError, file, 7, `is "4.21", not later than this release 4.21.3`}},
		},
		"an earlier line is an error": {
			version: "4.21.3", files: map[string]string{file: removalCRD("example.com", `"3.9"`, true)},
			want: []want{{RuleCRDRemovedIn, SeverityError, file, 7, "not later than this release"}},
		},
		"left behind by the release that removed the version, it is only a warning": {
			version: "4.22.0", files: map[string]string{file: removalCRD("example.com", `"4.22"`, false)},
			want: []want{{RuleCRDRemovedIn, SeverityWarning, file, 7, "schedules no removal"}},
		},
		"without a deprecated version it is a warning": {
			version: "4.21.0", files: map[string]string{file: removalCRD("example.com", `"4.22"`, false)},
			want: []want{{RuleCRDRemovedIn, SeverityWarning, file, 7, "no version of gadgets.example.com is marked deprecated: true"}},
		},
		"a number, not a string, is annotation-value's": {
			version: "4.21.0", files: map[string]string{file: removalCRD("example.com", `4.22`, true)},
			want: []want{{RuleAnnotationValue, SeverityError, file, 7, "not a string"}},
		},
	}
	runRuleCases(t, cases)
}
