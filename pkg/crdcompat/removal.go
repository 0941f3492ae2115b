package crdcompat

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"

	"github.com/blang/semver/v4"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// ReasonVersionRemovalPending is the Upgradeable=False reason while a CRD
// version that the next minor or major release removes is still stored.
const ReasonVersionRemovalPending = "CustomResourceDefinitionVersionRemovalPending"

// removedInName is the name part of the removed-in annotation; its prefix
// is the CRD's own group.
const removedInName = "removed-in"

// RemovedInAnnotation is the key by which a CRD of group announces the
// release that removes its deprecated versions: "<group>/removed-in". A
// CRD's group is a DNS subdomain, so the key is a valid qualified name, and
// only the CRD's owner writes under its group.
func RemovedInAnnotation(group string) string { return group + "/" + removedInName }

// MinorVersion is a release line, major.minor.
type MinorVersion struct{ Major, Minor uint64 }

func (v MinorVersion) String() string { return fmt.Sprintf("%d.%d", v.Major, v.Minor) }

// Less orders release lines.
func (v MinorVersion) Less(o MinorVersion) bool {
	return v.Major < o.Major || (v.Major == o.Major && v.Minor < o.Minor)
}

var removedInPattern = regexp.MustCompile(`^(0|[1-9][0-9]{0,8})\.(0|[1-9][0-9]{0,8})$`)

// ParseRemovedIn reads a removed-in value: exactly "X.Y", decimal, without
// leading zeros, a "v" or a patch number.
func ParseRemovedIn(s string) (MinorVersion, error) {
	m := removedInPattern.FindStringSubmatch(s)
	if m == nil {
		return MinorVersion{}, fmt.Errorf("removed-in %q is not a release line X.Y such as \"4.22\"", s)
	}
	major, _ := strconv.ParseUint(m[1], 10, 64)
	minor, _ := strconv.ParseUint(m[2], 10, 64)
	return MinorVersion{Major: major, Minor: minor}, nil
}

// Removal is a CRD version that a release marks deprecated with a release
// line that removes it.
type Removal struct {
	CRD       string
	Version   string
	RemovedIn MinorVersion
}

// ScheduledRemovals returns the versions crd marks deprecated: true, each
// with the release line its removed-in annotation names; none when the
// annotation is absent. A value that does not parse is an error (lint
// rejects it).
func ScheduledRemovals(crd *apiextensionsv1.CustomResourceDefinition) ([]Removal, error) {
	value, ok := crd.Annotations[RemovedInAnnotation(crd.Spec.Group)]
	if !ok {
		return nil, nil
	}
	line, err := ParseRemovedIn(value)
	if err != nil {
		return nil, fmt.Errorf("CustomResourceDefinition %s: %s: %w", crd.Name, RemovedInAnnotation(crd.Spec.Group), err)
	}
	var out []Removal
	for _, v := range crd.Spec.Versions {
		if v.Deprecated {
			out = append(out, Removal{CRD: crd.Name, Version: v.Name, RemovedIn: line})
		}
	}
	return out, nil
}

// RemovalDue reports whether a removal in line removed is due with the
// next minor or major update from current: it is the next minor or
// earlier (an overdue removal still is), or the next major's first minor.
// Whether a next minor of current's major will ship is unknown, so a
// removal in (major+1).0 counts too: Upgradeable=False blocks minor and
// major updates alike.
func RemovalDue(current semver.Version, removed MinorVersion) bool {
	nextMinor := MinorVersion{Major: current.Major, Minor: current.Minor + 1}
	nextMajor := MinorVersion{Major: current.Major + 1}
	return !nextMinor.Less(removed) || removed == nextMajor
}

// PendingRemoval is a due removal of a version the live CRD still lists
// in status.storedVersions.
type PendingRemoval struct {
	Removal
	// Objects counts the CRD's objects, in any version: the API does not
	// say which version an object is stored in, so each may still be
	// stored in Version. -1 when they could not be counted.
	Objects int
	// Err says why the live CRD or its objects could not be read; the
	// removal then counts as pending, as nothing shows it is not.
	Err string
}

// DueRemovals is the pure rule: of the versions that marked (a CRD as the
// current release ships it) schedules for removal, those due with the next
// minor or major update from current and that storedVersions (the live
// CRD's status) still lists. A version that storedVersions does not list
// holds no object, whatever the count: the apiserver adds a version to
// storedVersions before it stores anything in it. A listed version blocks
// even with no objects left, since the apiserver refuses to drop a listed
// version from spec.versions; `crd migrate-storage` then only trims
// storedVersions.
func DueRemovals(current string, marked *apiextensionsv1.CustomResourceDefinition, storedVersions []string) ([]Removal, error) {
	cur, err := semver.Parse(current)
	if err != nil {
		return nil, fmt.Errorf("current release %q is not a Semantic Version: %w", current, err)
	}
	scheduled, err := ScheduledRemovals(marked)
	if err != nil {
		return nil, err
	}
	var out []Removal
	for _, r := range scheduled {
		if RemovalDue(cur, r.RemovedIn) && slices.Contains(storedVersions, r.Version) {
			out = append(out, r)
		}
	}
	return out, nil
}
