package payload

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// checkProviders checks that every custom resource the release creates has
// an API to land in:
//   - version-not-served: the payload's CRD for the kind does not serve
//     the version the manifest uses;
//   - provider-after-consumer: the resource is ordered before its CRD. An
//     update applies it before the CRD exists, unless an earlier release
//     already served the API. Without the previous release that is
//     unknown, so the finding is a warning; with it, the finding is an
//     error when the previous release did not serve the kind and version,
//     and nothing otherwise. CRDs marked bootstrap-required are created by
//     the installer before the CVO starts, so they are never late;
//   - no-provider: no CRD in the payload serves the kind and it is not a
//     built-in API (see builtinAPIs), so something outside the payload
//     must install it first.
//
// Delete manifests are skipped: they do not need the API to be served.
func checkProviders(idx *releaseIndex, previous *Release) []Finding {
	var prev *releaseIndex
	if previous != nil {
		prev = newReleaseIndex(previous)
	}
	var findings []Finding
	for _, m := range idx.r.Manifests {
		if m.Delete() || m.IsCRD() {
			continue
		}
		gk := m.GVK.GroupKind()
		crd, found := idx.crdByKind[gk]
		if !found {
			if isBuiltin(gk) {
				continue
			}
			if _, deleted := idx.deletedCRDServing(gk); deleted {
				continue // api-still-used reports this
			}
			findings = append(findings, at(idx.r, m, RuleNoProvider, SeverityWarning, "%s", noProviderMessage(idx, m)))
			continue
		}
		version := m.GVK.Version
		if v, ok := crd.version(version); !ok || !v.Served {
			findings = append(findings, at(idx.r, m, RuleVersionNotServed, SeverityError,
				"%s uses %s/%s, but CustomResourceDefinition %s (%s) serves %s; use a served version",
				m.ID(), gk.Group, version, crd.Name, position(idx.r, crd.Manifest), listOrNone(crd.servedVersions())))
			continue
		}
		if crd.BootstrapRequired || !orderedBefore(m, crd.Manifest) {
			continue
		}
		order := fmt.Sprintf("%s is applied before CustomResourceDefinition %s (%s) that serves %s",
			m.ID(), crd.Name, position(idx.r, crd.Manifest), gk)
		switch {
		case prev == nil:
			findings = append(findings, at(idx.r, m, RuleProviderAfterConsumer, SeverityWarning,
				"%s; an update from a release without that API fails here until the CRD exists (lint with --previous to check), so move the CRD to an earlier run level or earlier in the component", order))
		case !prev.serves(gk, version):
			findings = append(findings, at(idx.r, m, RuleProviderAfterConsumer, SeverityError,
				"%s, and the previous release %s does not serve %s/%s; the update fails here, so move the CRD to an earlier run level or earlier in the component",
				order, prev.r.Version, gk, version))
		}
	}
	return findings
}

// serves reports whether the release, or the cluster itself, serves the
// kind at version.
func (idx *releaseIndex) serves(gk schema.GroupKind, version string) bool {
	if isBuiltin(gk) {
		return true
	}
	crd, ok := idx.crdByKind[gk]
	if !ok {
		return false
	}
	v, ok := crd.version(version)
	return ok && v.Served
}

func noProviderMessage(idx *releaseIndex, m *Manifest) string {
	gk := m.GVK.GroupKind()
	var kinds []string
	for other := range idx.crdByKind {
		if other.Group == gk.Group {
			kinds = append(kinds, other.Kind)
		}
	}
	sort.Strings(kinds)
	msg := fmt.Sprintf("%s is a %s, which no CustomResourceDefinition in the payload serves and which is not a built-in Kubernetes or OpenShift API; the apply fails unless something outside the payload installs it", m.ID(), gk)
	switch {
	case len(kinds) > 0:
		msg += fmt.Sprintf(" (the payload's CRDs of %s serve %s%s)", gk.Group, strings.Join(kinds, ", "), suggest(gk.Kind, kinds))
	case isBuiltinGroup(gk.Group):
		group := gk.Group
		if group == "" {
			group = "the core group"
		}
		msg += fmt.Sprintf(" (%s is built in but has no kind %s%s)", group, gk.Kind, suggest(gk.Kind, builtinKinds(gk.Group)))
	}
	return msg
}

func listOrNone(items []string) string {
	if len(items) == 0 {
		return "no version"
	}
	return strings.Join(items, ", ")
}

// checkV1beta1Version (crd-version-mismatch): an apiextensions.k8s.io
// v1beta1 CRD that names both spec.version and spec.versions must list
// spec.version first; the API server refuses it otherwise, and the
// version it means is ambiguous.
func checkV1beta1Version(r *Release, m *Manifest) []Finding {
	if !m.IsCRD() || m.GVK.Version != "v1beta1" || m.Delete() {
		return nil
	}
	spec := mapAt(m.Obj.Object, "spec")
	version := stringAt(spec, "version")
	versions, _ := spec["versions"].([]any)
	if version == "" || len(versions) == 0 {
		return nil
	}
	entry, _ := versions[0].(map[string]any)
	first := stringAt(entry, "name")
	if first == version {
		return nil
	}
	return []Finding{at(r, m, RuleCRDVersionMismatch, SeverityError,
		"CustomResourceDefinition %s sets spec.version %q, but spec.versions starts with %q; the deprecated spec.version must name the first entry, so list %s first or drop spec.version",
		m.Obj.GetName(), version, first, version)}
}

// checkCRDShadowsBuiltin (crd-shadows-builtin): a CRD whose group and
// plural are a built-in resource is never served, since the API server
// serves the built-in there. Whatever lists or deletes "its" custom
// resources at that resource reaches the built-in objects: operand cleanup
// would delete them, and plan counts them as what deleting the CRD takes
// with it. So a delete manifest is judged as much as one that creates it.
func checkCRDShadowsBuiltin(r *Release, m *Manifest) []Finding {
	if !m.IsCRD() {
		return nil
	}
	crd := crdInfoOf(m)
	if crd.Group == "" || crd.Plural == "" {
		return nil
	}
	kind, ok := BuiltinResource(crd.Group, crd.Plural)
	if !ok {
		return nil
	}
	builtin := schema.GroupKind{Group: crd.Group, Kind: kind}
	fix := "give the CRD a group of its own"
	if m.Delete() {
		fix = "remove this delete manifest: the CRD never served objects of its own, and cleaning them up would delete built-in ones"
	}
	return []Finding{atKey(r, m, "plural", RuleCRDShadowsBuiltin, SeverityError,
		"CustomResourceDefinition %s has group %q and plural %q, a resource the API server serves itself, as the built-in %s, and never from this CRD: whatever lists or deletes the CRD's custom resources reaches %s objects instead; %s",
		crd.Name, crd.Group, crd.Plural, builtin, builtin, fix)}
}
