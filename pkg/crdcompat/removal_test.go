package crdcompat

import (
	"reflect"
	"strings"
	"testing"

	"github.com/blang/semver/v4"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestRemovedInAnnotation(t *testing.T) {
	if got := RemovedInAnnotation("example.com"); got != "example.com/removed-in" {
		t.Errorf("RemovedInAnnotation = %q", got)
	}
}

func TestParseRemovedIn(t *testing.T) {
	for value, want := range map[string]string{
		"4.22": "4.22", "0.1": "0.1", "5.0": "5.0", "10.100": "10.100",
		"": "error", "4": "error", "4.22.0": "error", "v4.22": "error", "4.x": "error",
		"04.22": "error", "4.022": "error", " 4.22": "error", "4.22\n": "error", "-1.2": "error",
		"99999999999.1": "error",
	} {
		got, err := ParseRemovedIn(value)
		switch {
		case want == "error" && err == nil:
			t.Errorf("ParseRemovedIn(%q) = %v, want an error", value, got)
		case want != "error" && (err != nil || got.String() != want):
			t.Errorf("ParseRemovedIn(%q) = %v, %v; want %s", value, got, err, want)
		}
	}
}

func TestRemovalDue(t *testing.T) {
	for _, tc := range []struct {
		current, removed string
		due              bool
	}{
		{"4.21.3", "4.22", true},    // the next minor
		{"4.21.3", "4.21", true},    // overdue: still due
		{"4.21.3", "4.19", true},    // long overdue
		{"4.21.3", "3.9", true},     // an older major
		{"4.21.3", "4.23", false},   // two minors away
		{"4.21.3", "5.0", true},     // the next major's first minor
		{"4.21.3", "5.1", false},    // beyond the next major's first minor
		{"4.21.3", "6.0", false},    // two majors away
		{"1.0.0", "1.1", true},      // first release
		{"1.1.0-rc.1", "1.2", true}, // a pre-release is on its line
		{"1.1.0-rc.1", "1.3", false},
		{"0.9.0", "1.0", true},
	} {
		cur := semver.MustParse(tc.current)
		removed, err := ParseRemovedIn(tc.removed)
		if err != nil {
			t.Fatal(err)
		}
		if got := RemovalDue(cur, removed); got != tc.due {
			t.Errorf("RemovalDue(%s, %s) = %t, want %t", tc.current, tc.removed, got, tc.due)
		}
	}
}

func markedCRD(annotations map[string]string, versions ...apiextensionsv1.CustomResourceDefinitionVersion) *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "gadgets.example.com", Annotations: annotations},
		Spec:       apiextensionsv1.CustomResourceDefinitionSpec{Group: "example.com", Versions: versions},
	}
}

func TestDueRemovals(t *testing.T) {
	alpha := apiextensionsv1.CustomResourceDefinitionVersion{Name: "v1alpha1", Served: true, Deprecated: true}
	beta := apiextensionsv1.CustomResourceDefinitionVersion{Name: "v1beta1", Served: true, Deprecated: true}
	v1 := apiextensionsv1.CustomResourceDefinitionVersion{Name: "v1", Served: true, Storage: true}
	removedIn := func(v string) map[string]string { return map[string]string{"example.com/removed-in": v} }
	for name, tc := range map[string]struct {
		current string
		crd     *apiextensionsv1.CustomResourceDefinition
		stored  []string
		want    []string // "version@line"
		err     string
	}{
		"a deprecated version removed in the next minor and still stored is due": {
			current: "1.0.3", crd: markedCRD(removedIn("1.1"), alpha, v1), stored: []string{"v1alpha1", "v1"},
			want: []string{"v1alpha1@1.1"},
		},
		"a version no longer stored is not: nothing can be stored in it": {
			current: "1.0.3", crd: markedCRD(removedIn("1.1"), alpha, v1), stored: []string{"v1"},
		},
		"a stored version with no objects left still is: storedVersions is what the apiserver checks": {
			current: "1.0.3", crd: markedCRD(removedIn("1.1"), alpha, v1), stored: []string{"v1alpha1"},
			want: []string{"v1alpha1@1.1"},
		},
		"a removal two minors away is not due yet": {
			current: "1.0.3", crd: markedCRD(removedIn("1.2"), alpha, v1), stored: []string{"v1alpha1", "v1"},
		},
		"an overdue removal is due": {
			current: "1.3.0", crd: markedCRD(removedIn("1.2"), alpha, v1), stored: []string{"v1alpha1", "v1"},
			want: []string{"v1alpha1@1.2"},
		},
		"a removal in the next major's first minor is due": {
			current: "4.21.0", crd: markedCRD(removedIn("5.0"), alpha, v1), stored: []string{"v1alpha1", "v1"},
			want: []string{"v1alpha1@5.0"},
		},
		"a removal later in the next major is not": {
			current: "4.21.0", crd: markedCRD(removedIn("5.1"), alpha, v1), stored: []string{"v1alpha1", "v1"},
		},
		"every deprecated stored version is due, and only those": {
			current: "1.0.0", crd: markedCRD(removedIn("1.1"), alpha, beta, v1), stored: []string{"v1beta1", "v1alpha1", "v1"},
			want: []string{"v1alpha1@1.1", "v1beta1@1.1"},
		},
		"without deprecated: true nothing is scheduled": {
			current: "1.0.0", crd: markedCRD(removedIn("1.1"), apiextensionsv1.CustomResourceDefinitionVersion{Name: "v1alpha1", Served: true}, v1),
			stored: []string{"v1alpha1", "v1"},
		},
		"without the annotation nothing is scheduled": {
			current: "1.0.0", crd: markedCRD(nil, alpha, v1), stored: []string{"v1alpha1", "v1"},
		},
		"another group's removed-in is not this CRD's": {
			current: "1.0.0", crd: markedCRD(map[string]string{"other.io/removed-in": "1.1"}, alpha, v1), stored: []string{"v1alpha1", "v1"},
		},
		"a malformed annotation is an error": {
			current: "1.0.0", crd: markedCRD(removedIn("1.1.0"), alpha, v1), stored: []string{"v1alpha1"},
			err: `example.com/removed-in: removed-in "1.1.0" is not a release line`,
		},
		"a current version that is not semver is an error": {
			current: "latest", crd: markedCRD(removedIn("1.1"), alpha, v1), stored: []string{"v1alpha1"},
			err: `current release "latest" is not a Semantic Version`,
		},
	} {
		t.Run(name, func(t *testing.T) {
			due, err := DueRemovals(tc.current, tc.crd, tc.stored)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range due {
				if r.CRD != "gadgets.example.com" {
					t.Errorf("CRD = %q", r.CRD)
				}
				got = append(got, r.Version+"@"+r.RemovedIn.String())
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("due = %v, want %v", got, tc.want)
			}
		})
	}
}
