package payload

import (
	"fmt"
	"path"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// LintOptions configures Lint.
type LintOptions struct {
	// Previous is the release the cluster runs now, filtered with the same
	// options as the release under test. Nil skips the rules across
	// releases.
	Previous *Release
}

// Lint runs every rule over r and returns the findings, sorted. r should
// come from Filter (or Load): the rules about how manifests relate to each
// other see only what the selected profile includes, while the rules about
// a single manifest's annotations and file name see every manifest, kept
// or skipped, because a typo in an include annotation is often the very
// reason a manifest was skipped. Lint does not repeat the findings that
// LoadAll returned.
func Lint(r *Release, opts LintOptions) []Finding {
	var findings []Finding
	everyManifest := r.every()
	for _, m := range everyManifest {
		for _, rule := range manifestRules {
			findings = append(findings, rule(r, m)...)
		}
	}
	findings = append(findings, checkFileNames(r, everyManifest)...)

	idx := newReleaseIndex(r)
	for _, rule := range releaseRules {
		findings = append(findings, rule(idx, opts.Previous)...)
	}
	if opts.Previous != nil {
		prev := newReleaseIndex(opts.Previous)
		for _, rule := range updateRules {
			findings = append(findings, rule(prev, idx)...)
		}
	}
	SortFindings(findings)
	return findings
}

// A manifestRule checks one manifest on its own.
type manifestRule func(r *Release, m *Manifest) []Finding

// A releaseRule checks how the included manifests of one release relate;
// previous, when known, only sharpens its verdict.
type releaseRule func(idx *releaseIndex, previous *Release) []Finding

// An updateRule checks an update from prev to next.
type updateRule func(prev, next *releaseIndex) []Finding

var manifestRules = []manifestRule{
	checkDeleteValue,
	checkProtectedDelete,
	checkAnnotationKeys,
	checkAnnotationValues,
	checkCapabilities,
	checkDeleteCreateOnly,
	checkUnknownFields,
	checkV1beta1Version,
	checkCRDShadowsBuiltin,
	checkCRDRemovedIn,
}

var releaseRules = []releaseRule{
	checkObjects,
	checkNamespaceDeletes,
	checkCRDDeletes,
	checkProviders,
	checkOperandCleanup,
	checkDestructiveDeletes,
	checkNamespaceScope,
}

var updateRules = []updateRule{
	checkMinorLeftovers,
	checkOrphans,
	checkCRDUpdates,
}

// releaseIndex holds lookups over the included manifests of a release,
// built once for all rules.
type releaseIndex struct {
	r *Release
	// byID holds the manifests naming each object, in payload order.
	byID map[ObjectID][]*Manifest
	// crds are the included CRDs that are not deleted, by metadata.name.
	crds map[string]crdInfo
	// crdByKind maps a served group and kind to its first CRD.
	crdByKind map[schema.GroupKind]crdInfo
	// deletedCRDs are the CRDs with a delete manifest.
	deletedCRDs []crdInfo
	// deletedNamespaces maps a namespace name to its delete manifest.
	deletedNamespaces map[string]*Manifest
}

func newReleaseIndex(r *Release) *releaseIndex {
	idx := &releaseIndex{
		r:                 r,
		byID:              map[ObjectID][]*Manifest{},
		crds:              map[string]crdInfo{},
		crdByKind:         map[schema.GroupKind]crdInfo{},
		deletedNamespaces: map[string]*Manifest{},
	}
	for _, m := range r.Manifests {
		id := m.ID()
		idx.byID[id] = append(idx.byID[id], m)
		switch {
		case m.IsCRD() && m.Delete():
			idx.deletedCRDs = append(idx.deletedCRDs, crdInfoOf(m))
		case m.IsCRD():
			info := crdInfoOf(m)
			if _, seen := idx.crds[info.Name]; !seen {
				idx.crds[info.Name] = info
			}
			gk := schema.GroupKind{Group: info.Group, Kind: info.Kind}
			if _, seen := idx.crdByKind[gk]; !seen && info.Kind != "" {
				idx.crdByKind[gk] = info
			}
		case m.GVK.GroupKind() == NamespaceKind && m.Delete():
			if _, seen := idx.deletedNamespaces[m.Obj.GetName()]; !seen {
				idx.deletedNamespaces[m.Obj.GetName()] = m
			}
		}
	}
	return idx
}

// deletedCRDServing returns the deleted CRD that serves gk, if any.
func (idx *releaseIndex) deletedCRDServing(gk schema.GroupKind) (crdInfo, bool) {
	for _, c := range idx.deletedCRDs {
		if c.serves(gk) {
			return c, true
		}
	}
	return crdInfo{}, false
}

// position renders a manifest's file:line in r for messages.
func position(r *Release, m *Manifest) string {
	return fmt.Sprintf("%s:%d", pathOf(r, m), m.Line)
}

// orderedBefore reports whether the update graph finishes a before it
// starts b. Run levels run in payload order; inside one run level the
// components of one directory run in parallel, each in file order, so a
// manifest of another component at the same level is not ordered before.
func orderedBefore(a, b *Manifest) bool {
	if a.Index >= b.Index {
		return false
	}
	parallel := a.RunLevel >= 0 && b.RunLevel >= 0 &&
		a.RunLevel == b.RunLevel && a.Component != b.Component &&
		path.Dir(a.File) == path.Dir(b.File)
	return !parallel
}
