// Package crdcompat decides whether a CustomResourceDefinition may be
// replaced by a new one without breaking what the cluster already stores or
// the clients that use it. lint compares a payload's CRDs with the previous
// release's (Static); acceptance and apply compare them with the live CRDs
// and the objects those serve (Check).
//
// Every check reports all it finds, so that one fix does not reveal the next
// problem only on the next attempt.
package crdcompat

import (
	"fmt"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// Rule names one compatibility check, in the CVO's condition-reason style.
type Rule string

const (
	// ImmutableFieldChanged: spec.scope, spec.group, spec.names.kind or
	// spec.names.plural differ. The apiserver refuses each of them.
	ImmutableFieldChanged Rule = "ImmutableFieldChanged"
	// StoredVersionRemoved: a version in status.storedVersions is missing
	// from the new spec.versions. Objects stored in it would be unreadable.
	StoredVersionRemoved Rule = "StoredVersionRemoved"
	// ServedVersionRemoved: a served version is dropped without first going
	// served: false in an earlier release; its clients break.
	ServedVersionRemoved Rule = "ServedVersionRemoved"
	// ExistingObjectsInvalid: existing objects fail the new schema of a
	// version served before and after.
	ExistingObjectsInvalid Rule = "ExistingObjectsInvalid"
	// CompatibilityCheckError: the objects could not be read; the check
	// could not decide.
	CompatibilityCheckError Rule = "CompatibilityCheckError"
)

// maxNamedObjects bounds the objects a finding names per version.
const maxNamedObjects = 10

// Finding is one reason not to replace a CRD.
type Finding struct {
	// CRD is the CustomResourceDefinition's name.
	CRD  string
	Rule Rule
	// Version is the version concerned, empty for ImmutableFieldChanged.
	Version string
	// Objects names up to ten offending objects, each with its first field
	// error; Count is how many there are in all.
	Objects []string
	Count   int
	// Warning marks a finding that does not block: the new CRD converts
	// with a webhook, which may make the objects valid.
	Warning bool
	Message string
}

// Forceable reports whether an administrator's force may override the
// finding. A removed stored version never may: the apiserver refuses it
// anyway, and the data could not be read back.
func (f Finding) Forceable() bool { return f.Rule != StoredVersionRemoved }

func (f Finding) String() string { return f.Message }

// Blocking returns the findings that are not warnings.
func Blocking(findings []Finding) []Finding {
	var out []Finding
	for _, f := range findings {
		if !f.Warning {
			out = append(out, f)
		}
	}
	return out
}

// Static runs the checks that need no objects: immutable fields, removed
// stored versions and removed served versions. old is the live CRD, or the
// previous release's; its status.storedVersions says what is stored
// (Decode lists the storage version when a manifest has no status).
func Static(old, next *apiextensionsv1.CustomResourceDefinition) []Finding {
	var findings []Finding
	name := next.Name
	immutable := []struct{ field, before, after string }{
		{"spec.scope", string(old.Spec.Scope), string(next.Spec.Scope)},
		{"spec.group", old.Spec.Group, next.Spec.Group},
		{"spec.names.kind", old.Spec.Names.Kind, next.Spec.Names.Kind},
		{"spec.names.plural", old.Spec.Names.Plural, next.Spec.Names.Plural},
	}
	for _, f := range immutable {
		if f.before == f.after || f.before == "" {
			continue
		}
		findings = append(findings, Finding{CRD: name, Rule: ImmutableFieldChanged, Message: fmt.Sprintf(
			"CustomResourceDefinition %s changes %s from %q to %q, which the apiserver never allows; ship the new API as a new CustomResourceDefinition instead",
			name, f.field, f.before, f.after)})
	}
	stored := map[string]bool{}
	for _, v := range old.Status.StoredVersions {
		stored[v] = true
		if _, kept := versionOf(next, v); kept {
			continue
		}
		findings = append(findings, Finding{CRD: name, Rule: StoredVersionRemoved, Version: v, Message: fmt.Sprintf(
			"CustomResourceDefinition %s removes version %s, which status.storedVersions lists, so objects may still be stored as %s and could not be read back; "+
				"keep %s in spec.versions (served: false is fine) and migrate the objects to the storage version "+
				"(payload-applier crd migrate-storage %s rewrites each one, then removes %s from status.storedVersions); force does not override this",
			name, v, v, v, name, v)})
	}
	for _, v := range old.Spec.Versions {
		if _, kept := versionOf(next, v.Name); !v.Served || stored[v.Name] || kept {
			continue
		}
		findings = append(findings, Finding{CRD: name, Rule: ServedVersionRemoved, Version: v.Name, Message: fmt.Sprintf(
			"CustomResourceDefinition %s removes version %s, which is served, so its clients break; ship a release that sets served: false for %s first and remove it in a later one",
			name, v.Name, v.Name)})
	}
	return findings
}

// Summary renders findings on one line, for task errors and Events.
func Summary(findings []Finding) string {
	lines := make([]string, len(findings))
	for i, f := range findings {
		lines[i] = f.Message
	}
	return strings.Join(lines, "; ")
}
