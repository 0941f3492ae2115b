package payload

import (
	"github.com/blang/semver/v4"

	"github.com/payload-applier/payload-applier/pkg/crdcompat"
)

// checkCRDRemovedIn: a CRD's <group>/removed-in (crdcompat.RemovedInAnnotation)
// must name a release line X.Y, later than this release's while it still
// ships a version it marks deprecated; without one it schedules nothing
// (a warning). The operator blocks minor and major updates on it
// while a due version is still stored, so a wrong value would block them
// for nothing, or never.
func checkCRDRemovedIn(r *Release, m *Manifest) []Finding {
	if !m.IsCRD() || m.Delete() {
		return nil
	}
	key := crdcompat.RemovedInAnnotation(crdInfoOf(m).Group)
	raw, ok := rawAnnotations(m)[key]
	if !ok {
		return nil
	}
	value, isString := raw.(string)
	if !isString {
		// annotation-value reports it.
		return nil
	}
	line, err := crdcompat.ParseRemovedIn(value)
	if err != nil {
		return []Finding{atKey(r, m, key, RuleCRDRemovedIn, SeverityError,
			"%s: %v; write the release line that removes the deprecated versions, quoted", key, err)}
	}
	// Left behind by the release that removed the versions, it is harmless.
	if !hasDeprecatedVersion(m) {
		return []Finding{atKey(r, m, key, RuleCRDRemovedIn, SeverityWarning,
			"%s is set, but no version of %s is marked deprecated: true, so it schedules no removal; mark the versions to remove deprecated, or drop the annotation", key, m.Obj.GetName())}
	}
	if v, err := semver.Parse(r.Version); err == nil && !(crdcompat.MinorVersion{Major: v.Major, Minor: v.Minor}).Less(line) {
		return []Finding{atKey(r, m, key, RuleCRDRemovedIn, SeverityError,
			"%s is %q, not later than this release %s, which still ships the versions it removes; name a later release line, or remove the versions", key, value, r.Version)}
	}
	return nil
}

func hasDeprecatedVersion(m *Manifest) bool {
	versions, _ := mapAt(m.Obj.Object, "spec")["versions"].([]any)
	for _, v := range versions {
		if entry, _ := v.(map[string]any); entry["deprecated"] == true {
			return true
		}
	}
	return false
}
