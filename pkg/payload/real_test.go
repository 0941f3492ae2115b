package payload

import (
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

func skipWithoutRealPayload(t testing.TB, dir string) {
	t.Helper()
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("the real payload %s is not available (%v); it sits beside the checkout in ../shared/payloads", dir, err)
	}
}

func TestLoadOCPReal(t *testing.T) {
	skipWithoutRealPayload(t, ocpRealDir)
	r, err := Load(ocpRealDir, DefaultLoadOptions())
	if err != nil {
		t.Fatal(err)
	}
	if r.Version != "4.20.0" {
		t.Errorf("version %q", r.Version)
	}
	// 516 documents: 443 for a self-managed Default cluster, 65 feature-set
	// variants, 7 for other profiles only and 1 without annotations.
	if len(r.Manifests) != 443 || len(r.Skipped) != 73 {
		t.Errorf("kept %d, skipped %d; want 443 and 73", len(r.Manifests), len(r.Skipped))
	}
	byFilter := map[string]int{}
	for _, s := range r.Skipped {
		byFilter[s.Filter]++
		if s.Reason == "" {
			t.Errorf("%s skipped without a reason", s.Manifest.Position())
		}
	}
	if want := map[string]int{FilterFeatureSet: 65, FilterProfile: 7, FilterAnnotations: 1}; !reflect.DeepEqual(byFilter, want) {
		t.Errorf("skipped by filter %v, want %v", byFilter, want)
	}
	deletes := 0
	for i, m := range r.Manifests {
		if m.Index != i {
			t.Fatalf("%s has Index %d at position %d", m.Position(), m.Index, i)
		}
		if m.Delete() {
			deletes++
		}
	}
	if deletes != 9 {
		t.Errorf("%d delete manifests, want the 9 the payload README lists", deletes)
	}
}

// TestLintOCPReal pins the findings on the real payload: no errors, and
// exactly the warnings that were checked by hand (see docs/annotations.md).
// A new warning here is a false positive until proven otherwise.
func TestLintOCPReal(t *testing.T) {
	skipWithoutRealPayload(t, ocpRealDir)
	findings := lintDirs(t, ocpRealDir, "")
	var got []string
	for _, f := range findings {
		if f.Severity == SeverityError {
			t.Errorf("false positive: %s", f)
		}
		rel, _ := filepath.Rel(filepath.Join(ocpRealDir, ReleaseManifestDir), f.File)
		got = append(got, string(f.Rule)+" "+rel)
	}
	sort.Strings(got)
	want := []string{
		"delete-create-only 0000_50_olm_00-pprof-config.yaml",
		"delete-create-only 0000_50_olm_00-pprof-secret.yaml",
		"no-provider 0000_90_console-operator_03_console_plugin_storage_migration.yaml",
		"no-provider 0000_90_machine-config_01_certificate_observability_storage_migration.yaml",
		"no-provider 0000_90_machine-config_01_certificate_observability_storage_migration.yaml",
		"provider-after-consumer 0000_10_config-operator_03_servicemonitor.yaml",
		// A real typo: backOffLimit for backoffLimit. The CVO drops it silently.
		"unknown-field 0000_80_machine-config_00_v1alpha1-mcn-cleanup-job.yaml",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("findings changed:\n%s", formatFindings(findings))
	}
}

// TestLintOCPRealOtherProfiles checks that no profile or feature set turns
// up an error in the real payload.
func TestLintOCPRealOtherProfiles(t *testing.T) {
	skipWithoutRealPayload(t, ocpRealDir)
	all, _, err := LoadAll(ocpRealDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, profile := range KnownProfiles {
		for _, featureSet := range []string{"", "TechPreviewNoUpgrade", "DevPreviewNoUpgrade", "CustomNoUpgrade"} {
			opts := DefaultLoadOptions()
			opts.Profile = ptr(profile)
			opts.RequiredFeatureSet = ptr(featureSet)
			opts.EnabledFeatureGates = DefaultFeatureGates(profile)
			r := all.Filter(opts)
			if len(r.Manifests) == 0 {
				t.Errorf("%s/%s keeps nothing", profile, featureSet)
			}
			for _, f := range Lint(r, LintOptions{}) {
				if f.Severity == SeverityError {
					t.Errorf("%s/%s: %s", profile, featureSet, f)
				}
			}
		}
	}
}

// TestRealDeletes follows payloads/real-deletes/README.md: before/, then
// the top-level files. They ship no release-metadata, so each is copied
// into a payload with synthesized metadata.
func TestRealDeletes(t *testing.T) {
	skipWithoutRealPayload(t, realDeletesDir)
	beforeDir := copyWithMetadata(t, filepath.Join(realDeletesDir, "before"), "4.8.0")
	afterDir := copyWithMetadata(t, realDeletesDir, "4.9.0")

	before, err := Load(beforeDir, DefaultLoadOptions())
	if err != nil {
		t.Fatalf("before/ does not load: %v", err)
	}
	// Both svcat components define the Namespace; the CVO accepted that.
	if dups := byRule(before.Warnings, RuleDuplicateObject); len(dups) != 1 || !strings.Contains(dups[0].Message, "Namespace/openshift-service-catalog-removed") {
		t.Errorf("want one duplicate-object warning for the shared Namespace, got\n%s", formatFindings(before.Warnings))
	}

	after, err := Load(afterDir, DefaultLoadOptions())
	if err != nil {
		t.Fatalf("the top-level files do not load: %v", err)
	}
	var deleted []string
	for _, m := range after.Manifests {
		if m.Delete() {
			deleted = append(deleted, m.ID().String())
		}
		if strings.Contains(m.File, "svcat") {
			t.Errorf("%s is included but has no include annotation", m.Position())
		}
	}
	if want := []string{"ClusterRoleBinding.rbac.authorization.k8s.io/default-account-cluster-network-operator"}; !reflect.DeepEqual(deleted, want) {
		t.Errorf("deleted %v, want %v", deleted, want)
	}
	svcat := 0
	for _, s := range after.Skipped {
		if !strings.Contains(s.Manifest.File, "svcat") {
			continue
		}
		svcat++
		if !s.Manifest.Delete() || s.Filter != FilterProfile || s.Reason != "include.release.openshift.io/self-managed-high-availability unset" {
			t.Errorf("%s skipped by %s: %q", s.Manifest.Position(), s.Filter, s.Reason)
		}
	}
	if svcat != 4 {
		t.Errorf("%d svcat delete manifests skipped, want 4", svcat)
	}

	// Lint across the update: nothing is an error, and the svcat objects
	// that are neither kept nor deleted are reported as orphans, which is
	// the README's edge case.
	findings := lintDirs(t, afterDir, beforeDir)
	if HasErrors(findings) {
		t.Errorf("errors:\n%s", formatFindings(findings))
	}
	var orphans []string
	for _, f := range byRule(findings, RuleOrphan) {
		orphans = append(orphans, strings.Fields(f.Message)[0])
	}
	sort.Strings(orphans)
	wantOrphans := []string{
		"ClusterRoleBinding.rbac.authorization.k8s.io/system:openshift:operator:openshift-service-catalog-apiserver-remover",
		"ClusterRoleBinding.rbac.authorization.k8s.io/system:openshift:operator:openshift-service-catalog-controller-manager-remover",
		"Job.batch/openshift-service-catalog-removed/openshift-service-catalog-apiserver-remover",
		"Job.batch/openshift-service-catalog-removed/openshift-service-catalog-controller-manager-remover",
		"Namespace/openshift-service-catalog-removed",
		"Namespace/openshift-service-catalog-removed",
		"ServiceAccount/openshift-service-catalog-removed/openshift-service-catalog-apiserver-remover",
		"ServiceAccount/openshift-service-catalog-removed/openshift-service-catalog-controller-manager-remover",
	}
	if !reflect.DeepEqual(orphans, wantOrphans) {
		t.Errorf("orphans:\n%s", formatFindings(byRule(findings, RuleOrphan)))
	}

	// An applier that skipped profile filtering would delete the svcat
	// objects; with the Namespace deleted, its contents are no orphans.
	noProfile := DefaultLoadOptions()
	noProfile.Profile = nil
	all, _, err := LoadAll(afterDir)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(all.Filter(noProfile).Manifests); got != 7 {
		t.Errorf("without the profile filter %d manifests are kept, want all 7", got)
	}
}
