package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/payload-applier/payload-applier/pkg/payload"
)

// lintOptions are the flags of `payload-applier lint`.
type lintOptions struct {
	previous  string
	profile   string
	output    string
	strict    bool
	listRules bool
	fix       bool
	// pathPrefix and explain: lint_sarif.go and lint_explain.go.
	pathPrefix string
	explain    string
	registry   registryFlags
}

const lintLong = `Lint a release payload the way release CI should before it ships.

DIR is a payload in either layout: the CVO layout (DIR/release-manifests,
with an optional DIR/manifests that is read first) or the flat layout that
'oc adm release extract' writes (manifests, release-metadata and
image-references in DIR itself; a release-manifests directory on its own
is one). DIR and --previous may name release images instead:

` + sourceRule + `

The manifests are filtered as a cluster of --profile with the Default
feature set would filter them. Rules about how manifests relate to each
other see what that profile includes; rules about one manifest's
annotations and file name see every manifest. With --previous, the rules
across an update also run (leftover deletes, orphans, dropped CRD
versions). docs/annotations.md lists every rule; --list-rules lists them
here, and --explain RULE prints one rule's documentation: what it
catches, why, an example that fails and the fix.

--output sarif writes SARIF 2.1.0 for code scanning. Its paths are
relative to the payload directory, or start with --path-prefix, the
payload directory's path from the repository root, so that code scanning
finds the files.

Every finding is reported, not just the first. Exit status:
  0  no errors (warnings allowed, unless --strict)
  1  errors, or warnings with --strict
  2  usage errors, and payloads that cannot be read (a missing directory,
     no release-metadata or image-references)

` + lintFixHelp

const lintExample = `  payload-applier lint release/
  payload-applier lint --previous quay.io/example/release:4.19.7 quay.io/example/release@sha256:<hex>
  payload-applier lint --previous 4.19.7/ --output github release/
  payload-applier lint --profile single-node-developer --strict --output json release/release-manifests
  payload-applier lint --fix --previous 4.19.7/ release/
  payload-applier lint --output sarif --path-prefix payload/ payload/ > lint.sarif
  payload-applier lint --explain delete-value`

func newLintCommand() *cobra.Command {
	o := lintOptions{}
	cmd := &cobra.Command{
		Use:     "lint [--previous DIR|IMAGE] [--profile P] [--output text|json|github|sarif] [--strict] [--fix] DIR|IMAGE",
		Short:   "Check a release payload for mistakes before it ships",
		Long:    lintLong,
		Example: lintExample,
		Args: func(cmd *cobra.Command, args []string) error {
			if o.listRules || o.explain != "" {
				return cobra.NoArgs(cmd, args)
			}
			return cobra.ExactArgs(1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.explain != "" {
				return explainRule(cmd.OutOrStdout(), o.explain)
			}
			if o.listRules {
				return printRules(cmd.OutOrStdout())
			}
			return runLint(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), args[0], o)
		},
	}
	flags := cmd.Flags()
	flags.StringVar(&o.previous, "previous", "", "the release clusters run now, to check the update from it")
	flags.StringVar(&o.profile, "profile", payload.DefaultClusterProfile, "the cluster profile to filter for: "+strings.Join(payload.KnownProfiles, ", "))
	flags.StringVarP(&o.output, "output", "o", "text", "output format: text, json, github (workflow commands) or sarif (SARIF 2.1.0, for code scanning)")
	flags.StringVar(&o.pathPrefix, "path-prefix", "", "with --output sarif: the payload directory's path from the repository root, which result paths start with (default: paths from the payload directory)")
	flags.BoolVar(&o.strict, "strict", false, "fail on warnings too")
	flags.BoolVar(&o.listRules, "list-rules", false, "list every rule: id, severity and what it catches, one line each")
	flags.StringVar(&o.explain, "explain", "", "print a rule's documentation (what it catches, why, an example that fails, the fix) and exit")
	flags.BoolVar(&o.fix, "fix", false, "write the fixes lint is sure of into DIR, say each, then lint the result")
	o.registry.addPull(cmd)
	return cmd
}

func runLint(ctx context.Context, stdout, stderr io.Writer, source string, o lintOptions) error {
	if err := o.validate(); err != nil {
		return withExitCode(exitUsage, err)
	}
	opts := payload.DefaultLoadOptions()
	opts.Profile = &o.profile
	opts.EnabledFeatureGates = payload.DefaultFeatureGates(o.profile)

	dir, image, err := o.registry.payloadSource(ctx, stderr, source)
	if err != nil {
		return withExitCode(exitUsage, fmt.Errorf("cannot load %s: %w", source, err))
	}
	all, findings, err := payload.LoadAll(dir)
	if err != nil {
		return withExitCode(exitUsage, fmt.Errorf("cannot load %s: %w", source, err))
	}
	lintOpts := payload.LintOptions{}
	unverified := []string{image}
	if o.previous != "" {
		// The previous release is a reference, not under test: its own
		// findings are not reported.
		prevDir, prevImage, err := o.registry.payloadSource(ctx, stderr, o.previous)
		if err != nil {
			return withExitCode(exitUsage, fmt.Errorf("cannot load the previous release %s: %w", o.previous, err))
		}
		prev, _, err := payload.LoadAll(prevDir)
		if err != nil {
			return withExitCode(exitUsage, fmt.Errorf("cannot load the previous release %s: %w", o.previous, err))
		}
		lintOpts.Previous = prev.Filter(opts)
		unverified = append(unverified, prevImage)
	}
	if o.fix {
		if all, findings, err = lintFix(fixOutput(o.output, stdout, stderr), source, image, dir, all, lintOpts.Previous, opts); err != nil {
			return err
		}
	}
	findings = append(findings, payload.Lint(all.Filter(opts), lintOpts)...)
	payload.SortFindings(findings)

	write := func() error { return printFindings(stdout, findings, o.output) }
	if o.output == "sarif" {
		write = func() error { return printSARIF(stdout, findings, dir, o.pathPrefix) }
	}
	for _, image := range unverified {
		if image != "" {
			printUnverified(stdout, stderr, o.output, image)
		}
	}
	if err := write(); err != nil {
		return withExitCode(exitUsage, err)
	}
	counts := map[payload.Severity]int{}
	for _, f := range findings {
		counts[f.Severity]++
	}
	summary := fmt.Sprintf("%s: %s, %s, %d info", source,
		countNoun(counts[payload.SeverityError], "error"),
		countNoun(counts[payload.SeverityWarning], "warning"),
		counts[payload.SeverityInfo])
	switch {
	case counts[payload.SeverityError] > 0:
		return withExitCode(exitFailed, fmt.Errorf("%s", summary))
	case o.strict && counts[payload.SeverityWarning] > 0:
		return withExitCode(exitFailed, fmt.Errorf("%s (--strict fails on warnings)", summary))
	}
	fmt.Fprintln(stderr, summary)
	return nil
}

// printUnverified says that lint read image without verifying it: in the
// text and github outputs, on stderr beside the json and sarif documents.
func printUnverified(stdout, stderr io.Writer, format, image string) {
	switch format {
	case "text":
		fmt.Fprintln(stdout, unverifiedNotice(image))
	case "github":
		fmt.Fprintf(stdout, "::warning title=unverified release image::%s\n", githubData(unverifiedNotice(image)))
	default:
		fmt.Fprintln(stderr, unverifiedNotice(image))
	}
}

func (o lintOptions) validate() error {
	switch o.output {
	case "text", "json", "github", "sarif":
	default:
		return fmt.Errorf("--output must be text, json, github or sarif, not %q", o.output)
	}
	for _, p := range payload.KnownProfiles {
		if o.profile == p {
			return nil
		}
	}
	return fmt.Errorf("unknown --profile %q; known profiles are %s", o.profile, strings.Join(payload.KnownProfiles, ", "))
}

func printFindings(w io.Writer, findings []payload.Finding, format string) error {
	switch format {
	case "json":
		if findings == nil {
			findings = []payload.Finding{}
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(findings)
	case "github":
		for _, f := range findings {
			fmt.Fprintf(w, "::%s file=%s,line=%d,col=%d,title=%s::%s\n", githubLevel(f.Severity),
				githubProperty(f.File), f.Line, f.Column, githubProperty(string(f.Rule)), githubData(f.Message))
		}
		return nil
	default:
		for _, f := range findings {
			fmt.Fprintln(w, f.String())
		}
		return nil
	}
}

func githubLevel(s payload.Severity) string {
	switch s {
	case payload.SeverityError:
		return "error"
	case payload.SeverityWarning:
		return "warning"
	}
	return "notice"
}

// githubData escapes a workflow command's message.
func githubData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

// githubProperty escapes a workflow command's property value.
func githubProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}

func printRules(w io.Writer) error {
	for _, r := range payload.AllRules {
		if _, err := fmt.Fprintf(w, "%-24s %-8s %s\n", r.ID, r.Severity, r.Summary); err != nil {
			return err
		}
	}
	return nil
}
