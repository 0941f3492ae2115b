package main

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"k8s.io/utils/ptr"
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
	if _, err := parse("--always-enable-capabilities", "Ingress,NoSuchCapability"); err == nil || !strings.Contains(err.Error(), `unknown capability "NoSuchCapability"`) {
		t.Fatalf("an unknown capability: %v, want it refused by name", err)
	}
}

// apply, plan and start must include the same manifests for the same
// flags and environment, as the CVO does for CLUSTER_PROFILE and
// EXCLUDE_MANIFESTS.
func TestApplyPlanAndStartReadTheSameInclusion(t *testing.T) {
	cases := map[string]struct {
		env                      map[string]string
		args                     []string
		wantProfile, wantExclude string
		wantAlways               []string
	}{
		"the CVO's --always-enable-capabilities": {args: []string{"--always-enable-capabilities=Ingress,Console"},
			wantProfile: "self-managed-high-availability", wantAlways: []string{"Ingress", "Console"}},
		"defaults":            {wantProfile: "self-managed-high-availability"},
		"the CVO environment": {env: map[string]string{"CLUSTER_PROFILE": "single-node-developer", "EXCLUDE_MANIFESTS": "x"}, wantProfile: "single-node-developer", wantExclude: "x"},
		"flags win": {env: map[string]string{"CLUSTER_PROFILE": "single-node-developer", "EXCLUDE_MANIFESTS": "x"},
			args: []string{"--profile", "hypershift", "--exclude-manifests", "y"}, wantProfile: "hypershift", wantExclude: "y"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			apply, plan, start := &applyOptions{}, &planOptions{}, &startOptions{}
			commands := map[string]struct {
				cmd *cobra.Command
				inc *inclusionFlags
			}{
				"apply": {apply.command(), &apply.inclusion},
				"plan":  {plan.command(), &plan.inclusion},
				"start": {start.command(), &start.inclusion},
			}
			want, err := (&inclusionFlags{profile: c.wantProfile, exclude: c.wantExclude, alwaysEnable: c.wantAlways}).loadOptions(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			for name, cmd := range commands {
				if err := cmd.cmd.ParseFlags(c.args); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				got, err := cmd.inc.loadOptions(context.Background())
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s includes for profile %q excluding %q, want %q excluding %q",
						name, *got.Profile, ptr.Deref(got.ExcludeIdentifier, ""), c.wantProfile, c.wantExclude)
				}
			}
		})
	}
}

// apply's operator filters with apply's inclusion, not the default one.
func TestApplyGivesTheOperatorItsInclusion(t *testing.T) {
	o := &applyOptions{}
	cmd := o.command()
	if err := cmd.ParseFlags([]string{"--profile", "single-node-developer", "--exclude-manifests", "x"}); err != nil {
		t.Fatal(err)
	}
	var err error
	if o.load, err = o.inclusion.loadOptions(context.Background()); err != nil {
		t.Fatal(err)
	}
	cfg := o.operatorConfig(&applySource{})
	if cfg.LoadOptions == nil || *cfg.LoadOptions.Profile != "single-node-developer" || ptr.Deref(cfg.LoadOptions.ExcludeIdentifier, "") != "x" {
		t.Fatalf("operator.Config.LoadOptions = %+v, want profile single-node-developer excluding x", cfg.LoadOptions)
	}
}
