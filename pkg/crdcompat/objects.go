package crdcompat

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
)

// ListFunc hands each existing object of gvr, in every namespace, to
// each. It should read page by page, so that a large collection never
// sits in memory whole; each may modify the object it is given.
type ListFunc func(ctx context.Context, gvr schema.GroupVersionResource, each func(obj map[string]any)) error

// Options tune the object check. Zero values take the defaults.
type Options struct {
	// Backoff retries a listing that failed; it restarts from the first
	// page, as a continue token may have expired. Default 3 attempts,
	// 1s then 2s apart.
	Backoff *wait.Backoff
}

func (o Options) withDefaults() Options {
	if o.Backoff == nil {
		o.Backoff = &wait.Backoff{Duration: time.Second, Factor: 2, Steps: 3}
	}
	return o
}

// Check runs every check of live against next: Static, then the existing
// objects of each version both serve, read through list.
func Check(ctx context.Context, list ListFunc, live, next *apiextensionsv1.CustomResourceDefinition, opts Options) []Finding {
	return append(Static(live, next), Objects(ctx, list, live, next, opts)...)
}

// Objects validates the existing objects of every version that live and
// next both serve against next's schema for it, after applying next's
// defaults, so that a new required field with a default is no failure.
// A version whose schema is unchanged is not read: its objects passed
// that schema when they were written. Versions new in next, or no longer
// served, have no objects to break. x-kubernetes-validations rules are not
// evaluated.
//
// When next converts with a webhook, invalid objects are a warning: the
// new webhook may convert them into valid ones, and it only runs once the
// CRD is updated.
func Objects(ctx context.Context, list ListFunc, live, next *apiextensionsv1.CustomResourceDefinition, opts Options) []Finding {
	opts = opts.withDefaults()
	webhook := next.Spec.Conversion != nil && next.Spec.Conversion.Strategy == apiextensionsv1.WebhookConverter
	var findings []Finding
	for _, after := range next.Spec.Versions {
		before, ok := versionOf(live, after.Name)
		if !after.Served || !ok || !before.Served || equality.Semantic.DeepEqual(before.Schema, after.Schema) {
			continue
		}
		v, err := newValidator(after.Schema)
		if err != nil {
			findings = append(findings, Finding{CRD: next.Name, Rule: CompatibilityCheckError, Version: after.Name,
				Message: fmt.Sprintf("CustomResourceDefinition %s: the new schema of %s cannot be compiled: %s", next.Name, after.Name, excerpt(err.Error(), maxErrorRunes))})
			continue
		}
		if v == nil {
			continue
		}
		gvr := schema.GroupVersionResource{Group: live.Spec.Group, Version: after.Name, Resource: live.Spec.Names.Plural}
		var invalid, requirements []string
		var count int
		var listErr error
		err = wait.ExponentialBackoffWithContext(ctx, *opts.Backoff, func(ctx context.Context) (bool, error) {
			invalid, requirements, count = nil, nil, 0
			listErr = list(ctx, gvr, func(obj map[string]any) {
				if problem, requirement := v.validate(obj); problem != "" {
					count++
					if len(invalid) < maxNamedObjects {
						invalid = append(invalid, objectName(obj)+": "+problem)
						if requirement != "" && !slices.Contains(requirements, requirement) {
							requirements = append(requirements, requirement)
						}
					}
				}
			})
			return listErr == nil, nil
		})
		if err != nil {
			findings = append(findings, Finding{CRD: next.Name, Rule: CompatibilityCheckError, Version: after.Name,
				Message: fmt.Sprintf("CustomResourceDefinition %s: could not read the existing %s objects to check them against the new schema: %s; the check runs again on the next attempt",
					next.Name, after.Name, excerpt(cmp.Or(listErr, err).Error(), maxErrorRunes))})
			continue
		}
		if count == 0 {
			continue
		}
		f := Finding{CRD: next.Name, Rule: ExistingObjectsInvalid, Version: after.Name, Objects: invalid, Count: count, Warning: webhook}
		more := ""
		if count > len(invalid) {
			more = fmt.Sprintf("; and %d more", count-len(invalid))
		}
		f.Message = fmt.Sprintf("CustomResourceDefinition %s: the new schema of %s rejects %d existing object(s): %s%s",
			next.Name, after.Name, count, strings.Join(invalid, "; "), more)
		if len(requirements) > 0 {
			f.Message += " (new schema: " + strings.Join(requirements, "; ") + ")"
		}
		if webhook {
			f.Message += " (a warning: the new CRD converts with a webhook, which may make them valid)"
		}
		findings = append(findings, f)
	}
	return findings
}

type validator struct {
	schema     validation.SchemaValidator
	structural *structuralschema.Structural
}

// newValidator compiles a version's schema as the apiserver does; nil
// when the version has none, so that anything is valid.
func newValidator(v *apiextensionsv1.CustomResourceValidation) (*validator, error) {
	if v == nil || v.OpenAPIV3Schema == nil {
		return nil, nil
	}
	internal := &apiextensions.JSONSchemaProps{}
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.OpenAPIV3Schema, internal, nil); err != nil {
		return nil, err
	}
	structural, err := structuralschema.NewStructural(internal)
	if err != nil {
		return nil, err
	}
	sv, _, err := validation.NewSchemaValidator(internal)
	if err != nil {
		return nil, err
	}
	return &validator{schema: sv, structural: structural}, nil
}

// Bounds of what a finding quotes. A schema may allow a 300 KiB enum, and
// an object may hold a value of a MiB: a finding names the field and an
// excerpt, so that the ClusterVersion that reports it stays small.
const (
	// maxProblemRunes bounds one object's problem: the field, the error
	// and an excerpt of the offending value.
	maxProblemRunes = 160
	// maxRequirementRunes bounds what the schema requires of a field (an
	// enum's values, a pattern), stated once per finding, not per object.
	maxRequirementRunes = 240
	// maxErrorRunes bounds an error quoted from a schema or a LIST.
	maxErrorRunes = 1024
)

// validate returns the object's first field error, and how many more
// there are, or "" when it is valid; requirement is what the schema
// requires of that field, such as an enum's values, which every object
// that breaks it shares, or "". Both are excerpts. It defaults obj in
// place.
func (v *validator) validate(obj map[string]any) (problem, requirement string) {
	structuraldefaulting.Default(obj, v.structural)
	errs := validation.ValidateCustomResource(nil, obj, v.schema)
	if len(errs) == 0 {
		return "", ""
	}
	first := *errs[0]
	if first.Detail != "" {
		requirement = excerpt(first.Field+": "+first.Detail, maxRequirementRunes)
		first.Detail = ""
	}
	problem = excerpt(first.Error(), maxProblemRunes)
	if len(errs) > 1 {
		problem += fmt.Sprintf(" (and %d more field errors)", len(errs)-1)
	}
	return problem, requirement
}

// excerpt is s cut to n runes, ending "…" when cut. crdcompat sits below
// pkg/payload, whose Clip it cannot use; fmt's precision cuts on runes.
func excerpt(s string, n int) string {
	if len(s) <= n || utf8.RuneCountInString(s) <= n {
		return s
	}
	return fmt.Sprintf("%.*s…", n, s)
}

func versionOf(crd *apiextensionsv1.CustomResourceDefinition, name string) (apiextensionsv1.CustomResourceDefinitionVersion, bool) {
	for _, v := range crd.Spec.Versions {
		if v.Name == name {
			return v, true
		}
	}
	return apiextensionsv1.CustomResourceDefinitionVersion{}, false
}

func objectName(obj map[string]any) string {
	meta, _ := obj["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	if ns, _ := meta["namespace"].(string); ns != "" {
		return ns + "/" + name
	}
	return name
}
