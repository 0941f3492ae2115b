package payload

import (
	utilversion "k8s.io/apimachinery/pkg/util/version"

	"github.com/payload-applier/payload-applier/pkg/crdcompat"
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
	for _, p := range orphans(prev, next) {
		id := p.ID()
		findings = append(findings, at(prev.r, p, RuleOrphan, SeverityWarning,
			"%s is created by the previous release %s but no manifest of %s creates or deletes it, so it stays in the cluster unmanaged; add a manifest with %s: \"true\" to remove it, or keep its manifest",
			id, prev.r.Version, next.r.Version, DeleteAnnotation))
	}
	return findings
}

// checkCRDUpdates judges each CRD that both releases create with
// crdcompat's offline checks, the previous release's storage version
// taken as stored (crdcompat.Decode), as a cluster running it records:
//   - crd-immutable-field: scope, group, names.kind or names.plural
//     changed, which the API server refuses;
//   - storage-version-dropped: a stored version is gone from
//     spec.versions, so objects stored in it could not be read back;
//   - served-version-dropped: a served version is gone; the safe path is
//     one release with served: false, then removal.
//
// A dropped version that was also the storage version is reported once,
// as storage-version-dropped. A CRD that does not decode is left to the
// API server's own validation.
func checkCRDUpdates(prev, next *releaseIndex) []Finding {
	var findings []Finding
	for name, before := range prev.crds {
		after, ok := next.crds[name]
		if !ok || len(after.Versions) == 0 {
			continue
		}
		old, errOld := crdcompat.Decode(before.Manifest.Obj.Object)
		updated, errNew := crdcompat.Decode(after.Manifest.Obj.Object)
		if errOld != nil || errNew != nil {
			continue
		}
		for _, f := range crdcompat.Static(old, updated) {
			findings = append(findings, at(next.r, after.Manifest, crdRules[f.Rule], SeverityError, "%s (previous release %s: %s)",
				f.Message, prev.r.Version, position(prev.r, before.Manifest)))
		}
	}
	return findings
}

var crdRules = map[crdcompat.Rule]Rule{
	crdcompat.ImmutableFieldChanged: RuleCRDImmutableField,
	crdcompat.StoredVersionRemoved:  RuleStorageVersionDropped,
	crdcompat.ServedVersionRemoved:  RuleServedVersionDropped,
}

// orphans returns the manifests of prev whose objects next neither creates
// nor deletes, itself or with their namespace or CRD, in prev's order.
func orphans(prev, next *releaseIndex) []*Manifest {
	var out []*Manifest
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
		if _, gone := next.deletedCRDServing(p.GVK.GroupKind()); gone {
			continue
		}
		out = append(out, p)
	}
	return out
}
