package payload

import (
	utilversion "k8s.io/apimachinery/pkg/util/version"
)

// checkMinorLeftovers (minor-leftover): a delete manifest that the
// previous release already carried. A cluster cannot leave a minor
// version while its deletes are pending (Upgradeable=False), so by the
// next minor the object is gone and the manifest is dead weight that
// could delete a re-created object: an error. Within a z-stream the
// CVO's rules allow leftovers, and the finding is informational.
// When either version does not parse, the rule cannot tell and is quiet.
func checkMinorLeftovers(prev, next *releaseIndex) []Finding {
	from, errFrom := utilversion.ParseSemantic(prev.r.Version)
	to, errTo := utilversion.ParseSemantic(next.r.Version)
	if errFrom != nil || errTo != nil {
		return nil
	}
	zStream := from.Major() == to.Major() && from.Minor() == to.Minor()
	var findings []Finding
	for _, m := range next.r.Manifests {
		if !m.Delete() {
			continue
		}
		var earlier *Manifest
		for _, p := range prev.byID[m.ID()] {
			if p.Delete() {
				earlier = p
				break
			}
		}
		if earlier == nil {
			continue
		}
		if zStream {
			findings = append(findings, atKey(next.r, m, DeleteAnnotation, RuleMinorLeftover, SeverityInfo,
				"%s was already deleted by %s (%s); a leftover delete manifest is allowed in a z-stream update (%s to %s), but drop it before the next minor release",
				m.ID(), prev.r.Version, position(prev.r, earlier), prev.r.Version, next.r.Version))
			continue
		}
		findings = append(findings, atKey(next.r, m, DeleteAnnotation, RuleMinorLeftover, SeverityError,
			"%s was already deleted by %s (%s); clusters leave %d.%d only once its deletes are done, so drop this delete manifest from the %d.%d release",
			m.ID(), prev.r.Version, position(prev.r, earlier), from.Major(), from.Minor(), to.Major(), to.Minor()))
	}
	return findings
}

// checkOrphans (orphan): an object that the previous release created and
// that no manifest of the new release creates or deletes stays in the
// cluster, unmanaged: the CVO never deletes what a payload merely drops.
// Objects in a namespace that the new release deletes, and objects of a
// kind whose CRD it deletes, go with them and are not reported.
func checkOrphans(prev, next *releaseIndex) []Finding {
	var findings []Finding
	for _, p := range prev.r.Manifests {
		if p.Delete() {
			continue
		}
		id := p.ID()
		if len(next.byID[id]) > 0 {
			continue
		}
		if _, gone := next.deletedNamespaces[id.Namespace]; gone && id.Namespace != "" {
			continue
		}
		if _, gone := next.deletedCRDServing(groupKindOf(p)); gone {
			continue
		}
		findings = append(findings, at(prev.r, p, RuleOrphan, SeverityWarning,
			"%s is created by the previous release %s but no manifest of %s creates or deletes it, so it stays in the cluster unmanaged; add a manifest with %s: \"true\" to remove it, or keep its manifest",
			id, prev.r.Version, next.r.Version, DeleteAnnotation))
	}
	return findings
}

// checkCRDVersions compares each CRD that both releases create:
//   - storage-version-dropped: the previous storage version is gone from
//     spec.versions. Objects stored in it could no longer be read, and the
//     API server refuses the update while status.storedVersions lists it;
//   - served-version-dropped: a version the previous release served is
//     gone. Clients still using it break; the safe path is one release
//     with served: false, then removal.
//
// A dropped version that was also the storage version is reported once,
// as storage-version-dropped.
func checkCRDVersions(prev, next *releaseIndex) []Finding {
	var findings []Finding
	for name, before := range prev.crds {
		after, ok := next.crds[name]
		if !ok || len(after.Versions) == 0 {
			continue
		}
		for _, v := range before.Versions {
			if _, kept := after.version(v.Name); kept {
				continue
			}
			switch {
			case v.Storage:
				findings = append(findings, at(next.r, after.Manifest, RuleStorageVersionDropped, SeverityError,
					"CustomResourceDefinition %s removes version %s, the storage version in %s (%s); objects stored as %s could not be read, so keep %s in spec.versions (served: false is fine) until storage has moved to another version",
					name, v.Name, prev.r.Version, position(prev.r, before.Manifest), v.Name, v.Name))
			case v.Served:
				findings = append(findings, at(next.r, after.Manifest, RuleServedVersionDropped, SeverityError,
					"CustomResourceDefinition %s removes version %s, which %s serves (%s); clients using it break, so ship a release with served: false for %s first and remove it later",
					name, v.Name, prev.r.Version, position(prev.r, before.Manifest), v.Name))
			}
		}
	}
	return findings
}
