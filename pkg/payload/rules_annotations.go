package payload

import (
	"fmt"
	"path"
	"sort"
	"strings"
	"sync"

	configv1 "github.com/openshift/api/config/v1"
	"github.com/openshift/api/features"

	"github.com/payload-applier/payload-applier/pkg/crdcompat"
)

const releasePrefix = "release.openshift.io/"

// knownReleaseAnnotations are the release.openshift.io/ keys a manifest
// may carry: those the applier reads, and bootstrap-required, which the
// installer reads and real payloads use.
var knownReleaseAnnotations = []string{
	DeleteAnnotation,
	CreateOnlyAnnotation,
	OperandCleanupAnnotation,
	OperandNamespacesAnnotation,
	FeatureSetAnnotation,
	FeatureGateAnnotation,
	MajorVersionAnnotation,
	VerificationConfigMapAnnotation,
	bootstrapRequiredAnnotation,
}

// includeValues are the values of include.release.openshift.io/<profile>.
// Only "true" includes; "false-except-for-the-config-operator" marks the
// FeatureGate manifests that only the config operator renders.
var includeValues = map[string]bool{"true": true, "false": true, "false-except-for-the-config-operator": true}

// knownFeatureSets lists the feature-set names library-go accepts.
var knownFeatureSets = sync.OnceValue(func() map[string]bool {
	known := map[string]bool{"Default": true, string(configv1.CustomNoUpgrade): true}
	for _, byFeatureSet := range features.AllFeatureSets() {
		for fs := range byFeatureSet {
			if fs != "" {
				known[string(fs)] = true
			}
		}
	}
	return known
})

// checkDeleteValue: release.openshift.io/delete must be exactly "true".
func checkDeleteValue(r *Release, m *Manifest) []Finding {
	v, ok := rawAnnotations(m)[DeleteAnnotation]
	if !ok {
		return nil
	}
	s, isString := v.(string)
	if isString && s == "true" {
		return nil
	}
	fix := fmt.Sprintf(`write %s: "true" (quoted) to delete %s, or remove the annotation to keep it`, DeleteAnnotation, m.ID())
	if !isString {
		return []Finding{atKey(r, m, DeleteAnnotation, RuleDeleteValue, SeverityError,
			"%s is %s, not a string; %s", DeleteAnnotation, describeValue(v), fix)}
	}
	return []Finding{atKey(r, m, DeleteAnnotation, RuleDeleteValue, SeverityError,
		`%s is %q, and only "true" is accepted; %s`, DeleteAnnotation, s, fix)}
}

func describeValue(v any) string {
	switch v := v.(type) {
	case nil:
		return "empty"
	case bool:
		return fmt.Sprintf("the YAML boolean %t", v)
	case string:
		return fmt.Sprintf("%q", v)
	case map[string]any:
		return "a mapping"
	case []any:
		return "a list"
	default:
		return fmt.Sprintf("the YAML number %v", v)
	}
}

// checkAnnotationKeys: keys under release.openshift.io/ must be known, and
// include.release.openshift.io/ must name a known profile, so that a typo
// such as release.openshift.io/delet cannot pass silently.
func checkAnnotationKeys(r *Release, m *Manifest) []Finding {
	var findings []Finding
	removedIn := removedInKey(m)
	for _, key := range sortedKeys(rawAnnotations(m)) {
		if key == removedIn {
			continue
		}
		if known, ok := caseVariant(key); ok {
			findings = append(findings, atKey(r, m, key, RuleUnknownAnnotation, SeverityError,
				"annotation %s differs from %s only by case; annotation keys are case-sensitive, so it has no effect", key, known))
			continue
		}
		switch {
		case strings.HasPrefix(key, releasePrefix):
			if contains(knownReleaseAnnotations, key) {
				continue
			}
			findings = append(findings, atKey(r, m, key, RuleUnknownAnnotation, SeverityError,
				"unknown annotation %s%s; known %s* annotations are %s", key, suggest(key, knownReleaseAnnotations),
				releasePrefix, strings.Join(knownReleaseAnnotations, ", ")))
		case strings.HasPrefix(key, IncludePrefix):
			profile := strings.TrimPrefix(key, IncludePrefix)
			if contains(KnownProfiles, profile) {
				continue
			}
			findings = append(findings, atKey(r, m, key, RuleUnknownAnnotation, SeverityError,
				"unknown cluster profile %q in %s%s; known profiles are %s", profile, key,
				suggest(profile, KnownProfiles), strings.Join(KnownProfiles, ", ")))
		}
	}
	return findings
}

// removedInKey is the <group>/removed-in annotation key a CRD of a
// release.openshift.io group may carry to schedule removals, or "".
func removedInKey(m *Manifest) string {
	if !m.IsCRD() {
		return ""
	}
	return crdcompat.RemovedInAnnotation(crdInfoOf(m).Group)
}

// keyFix returns the known key that key, an annotation key of m that
// checkAnnotationKeys rejects, surely means: the one it spells with other
// case, or the one close known key. lint --fix renames these only.
func keyFix(m *Manifest, key string) (string, bool) {
	if key == removedInKey(m) {
		return "", false
	}
	if known, ok := caseVariant(key); ok {
		return known, knownAnnotationKey(known)
	}
	var close []string
	switch {
	case strings.HasPrefix(key, releasePrefix):
		if contains(knownReleaseAnnotations, key) {
			return "", false
		}
		close = closeCandidates(key, knownReleaseAnnotations)
	case strings.HasPrefix(key, IncludePrefix):
		profile := strings.TrimPrefix(key, IncludePrefix)
		if contains(KnownProfiles, profile) {
			return "", false
		}
		for _, p := range closeCandidates(profile, KnownProfiles) {
			close = append(close, IncludePrefix+p)
		}
	}
	if len(close) != 1 {
		return "", false
	}
	return close[0], true
}

// knownAnnotationKey reports whether checkAnnotationKeys accepts key.
func knownAnnotationKey(key string) bool {
	if strings.HasPrefix(key, IncludePrefix) {
		return contains(KnownProfiles, strings.TrimPrefix(key, IncludePrefix))
	}
	return contains(knownReleaseAnnotations, key)
}

// deleteNearMiss reports whether v, a release.openshift.io/delete value,
// plainly means "true" without being it: the YAML boolean true (true,
// yes, on unquoted), or a string that reads true, yes, y or on in any case
// or with spaces around it. lint --fix writes "true" for these only; any
// other value may mean "keep", so a person decides.
func deleteNearMiss(v any) bool {
	switch v := v.(type) {
	case bool:
		return v
	case string:
		if v == "true" {
			return false
		}
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "true", "yes", "y", "on":
			return true
		}
	}
	return false
}

// caseVariant returns the key the applier reads that key spells with
// other case, as Release.OpenShift.io/delete spells release.openshift.io/delete.
func caseVariant(key string) (string, bool) {
	lower := strings.ToLower(key)
	if lower == key {
		return "", false
	}
	for _, known := range knownReleaseAnnotations {
		if lower == known {
			return known, true
		}
	}
	if strings.HasPrefix(lower, IncludePrefix) || strings.HasPrefix(lower, releasePrefix) {
		return strings.ToLower(key), true
	}
	return "", false
}

// checkAnnotationValues: annotation values must be strings, and the ones
// the filters read must hold values they understand.
func checkAnnotationValues(r *Release, m *Manifest) []Finding {
	raw := rawAnnotations(m)
	var findings []Finding
	report := func(key, format string, args ...any) {
		findings = append(findings, atKey(r, m, key, RuleAnnotationValue, SeverityError, format, args...))
	}
	for _, key := range sortedKeys(raw) {
		if _, isString := raw[key].(string); !isString && key != DeleteAnnotation {
			report(key, "annotation %s is %s, not a string; annotations must be quoted strings (the API server rejects the object, and library-go then sees no annotations at all)", key, describeValue(raw[key]))
		}
	}
	value := func(key string) (string, bool) {
		s, ok := raw[key].(string)
		return s, ok
	}
	for _, key := range sortedKeys(raw) {
		if v, ok := value(key); ok && strings.HasPrefix(key, IncludePrefix) && !includeValues[v] {
			report(key, `%s is %q, which excludes the manifest; write "true" to include it in the profile or "false" to leave it out`, key, v)
		}
	}
	if v, ok := value(CreateOnlyAnnotation); ok && v != "true" {
		report(CreateOnlyAnnotation, `%s is %q, which has no effect; write "true" or remove the annotation`, CreateOnlyAnnotation, v)
	}
	if v, ok := value(OperandCleanupAnnotation); ok {
		switch {
		case v != OperandCleanupSupported:
			report(OperandCleanupAnnotation, `%s is %q; the one value is "Supported", which lets the cluster admin opt in to deleting the CRD's custom resources before its component is removed`, OperandCleanupAnnotation, v)
		case !m.Delete() || !m.IsCRD():
			report(OperandCleanupAnnotation, "%s only has an effect on the delete manifest of a CustomResourceDefinition", OperandCleanupAnnotation)
		}
	}
	featureSet, hasSet := value(FeatureSetAnnotation)
	if hasSet {
		for _, fs := range strings.Split(featureSet, ",") {
			if !knownFeatureSets()[fs] {
				report(FeatureSetAnnotation, "%s=%q names unknown feature set %q, so the manifest is never included; known feature sets are %s",
					FeatureSetAnnotation, featureSet, fs, strings.Join(sortedKeys(knownFeatureSets()), ", "))
			}
		}
	}
	if gates, ok := value(FeatureGateAnnotation); ok {
		if hasSet {
			report(FeatureGateAnnotation, "both %s and %s are set, so the manifest is never included; use one", FeatureSetAnnotation, FeatureGateAnnotation)
		}
		if _, _, err := parseFeatureGates(gates); err != nil {
			report(FeatureGateAnnotation, "%v; write a comma-separated list such as \"GateA,-GateB\"", err)
		}
	}
	if v, ok := value(MajorVersionAnnotation); ok {
		if !majorVersionKinds[m.GVK.GroupKind()] {
			report(MajorVersionAnnotation, "%s is only allowed on config.openshift.io FeatureGate and CustomResourceDefinition manifests, so this %s is never included", MajorVersionAnnotation, m.GVK.Kind)
		} else if _, _, err := parseMajorVersions(v); err != nil {
			report(MajorVersionAnnotation, "%v; write a comma-separated list such as \"4,5\" or \"-3\"", err)
		}
	}
	return findings
}

// checkCapabilities: capability.openshift.io/name must name capabilities
// openshift/api knows; the CVO drops a manifest naming any other.
func checkCapabilities(r *Release, m *Manifest) []Finding {
	v, ok := rawAnnotations(m)[CapabilityAnnotation].(string)
	if !ok || v == "" {
		return nil
	}
	var known []string
	for _, c := range configv1.KnownClusterVersionCapabilities {
		known = append(known, string(c))
	}
	var findings []Finding
	for _, c := range strings.Split(v, "+") {
		if contains(known, c) {
			continue
		}
		findings = append(findings, atKey(r, m, CapabilityAnnotation, RuleUnknownCapability, SeverityWarning,
			"unknown capability %q in %s=%q%s; the CVO drops manifests naming unknown capabilities (capabilities are joined with \"+\")",
			c, CapabilityAnnotation, v, suggest(c, known)))
	}
	return findings
}

// checkDeleteCreateOnly: a manifest either deletes its object or creates
// it. The CVO checks the delete annotation first, so create-only is dead
// weight on a delete manifest; real payloads carry the pair (OLM's 4.20
// pprof manifests), so it is a warning rather than an error.
func checkDeleteCreateOnly(r *Release, m *Manifest) []Finding {
	if !m.Delete() || !m.CreateOnly() {
		return nil
	}
	return []Finding{atKey(r, m, CreateOnlyAnnotation, RuleDeleteCreateOnly, SeverityWarning,
		"%s is marked both for deletion and create-only; the delete wins and create-only is ignored, so remove %s",
		m.ID(), CreateOnlyAnnotation)}
}

// checkFileNames: every file should be named 0000_<runlevel>_<component>_,
// or the update graph cannot place it by run level and component.
func checkFileNames(r *Release, manifests []*Manifest) []Finding {
	var findings []Finding
	seen := map[string]bool{}
	for _, m := range manifests {
		if seen[m.File] {
			continue
		}
		seen[m.File] = true
		if level, _ := ParseFileName(m.File); level >= 0 {
			continue
		}
		findings = append(findings, Finding{
			File: pathOf(r, m), Line: 1, Column: 1, Rule: RuleFileName, Severity: SeverityWarning,
			Message: fmt.Sprintf("file name %q does not follow 0000_<runlevel>_<component>_<name>, so it has no run level or component and runs on its own; rename it, for example 0000_50_<component>_%s",
				path.Base(m.File), path.Base(m.File)),
		})
	}
	return findings
}

// suggest returns ` (did you mean "x"?)` for the closest candidate within
// a small edit distance, or "".
func suggest(s string, candidates []string) string {
	close := closeCandidates(s, candidates)
	if len(close) == 0 {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", close[0])
}

// maxSuggestDistance bounds the edit distance of a suggestion.
const maxSuggestDistance = 3

// closeCandidates returns the candidates within maxSuggestDistance edits
// of s, closest first (ties in the candidates' order): the one notion of
// "close" that suggestions and lint --fix share.
func closeCandidates(s string, candidates []string) []string {
	var close []string
	distance := map[string]int{}
	for _, c := range candidates {
		if d := editDistance(s, c); d <= maxSuggestDistance {
			close = append(close, c)
			distance[c] = d
		}
	}
	sort.SliceStable(close, func(i, j int) bool { return distance[close[i]] < distance[close[j]] })
	return close
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
