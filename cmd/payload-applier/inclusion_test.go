package main

import (
	"context"
	"testing"

	"github.com/spf13/cobra"
)

func TestInclusionFlagsTakeTheCVOEnvironmentAsDefaults(t *testing.T) {
	parse := func(args ...string) (*inclusionFlags, error) {
		f := &inclusionFlags{}
		cmd := &cobra.Command{}
		f.add(cmd)
		if err := cmd.ParseFlags(args); err != nil {
			t.Fatal(err)
		}
		_, err := f.loadOptions(context.Background())
		return f, err
	}
	f, err := parse()
	if err != nil || f.profile != "self-managed-high-availability" || f.exclude != "" {
		t.Fatalf("defaults: %+v %v", f, err)
	}
	t.Setenv("CLUSTER_PROFILE", "single-node-developer")
	t.Setenv("EXCLUDE_MANIFESTS", "ibm")
	f, _ = parse()
	if f.profile != "single-node-developer" || f.exclude != "ibm" {
		t.Fatalf("from the environment: %+v", f)
	}
	f, _ = parse("--profile", "hypershift", "--exclude-manifests", "other")
	if f.profile != "hypershift" || f.exclude != "other" {
		t.Fatalf("flags win: %+v", f)
	}
	opts, err := (&inclusionFlags{profile: "hypershift", exclude: "other"}).loadOptions(context.Background())
	if err != nil || *opts.Profile != "hypershift" || *opts.ExcludeIdentifier != "other" {
		t.Fatalf("options: %+v %v", opts, err)
	}
	if _, err := parse("--profile", "no-such-profile"); err == nil {
		t.Fatal("an unknown profile is refused")
	}
}
