package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/payload-applier/payload-applier/pkg/releaseimage"
)

// releaseSubcommands build the subcommands of `payload-applier release`;
// a new one is listed here.
var releaseSubcommands = []func() *cobra.Command{newReleasePackCmd, newReleaseSignCmd}

func newReleaseCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "release",
		Short: "Build and publish release images",
		Args:  cobra.NoArgs,
	}
	for _, sub := range releaseSubcommands {
		cmd.AddCommand(sub())
	}
	return cmd
}

type releasePackOptions struct {
	registry registryFlags
	to       string
	arch     string
}

// ociPrefix marks a --to that names an OCI image layout directory.
const ociPrefix = "oci:"

func newReleasePackCmd() *cobra.Command {
	o := &releasePackOptions{}
	cmd := &cobra.Command{
		Use:   "pack DIR --to REF",
		Short: "Build a release image from a payload directory and push it",
		Long: `Pack builds a release image from the payload in DIR, in the form OpenShift
ships releases: one layer holding release-manifests/ (and manifests/, for a
payload in the CVO layout that has one), the version of release-metadata in
the label io.openshift.release. The payload is loaded and validated as
'apply' loads it first; one that does not load is refused (exit 2).

Every file is dated $SOURCE_DATE_EPOCH, or the Unix epoch, and owned by
root with mode 0644, so one payload always packs to one digest.

REF is registry/repository:tag (or @sha256:<hex>, which must be the
image's digest) to push to, or oci:PATH to write an OCI image layout at
PATH, the image named after the version in its index. Pack prints the
image by digest: repository@sha256:<hex>, or sha256:<hex> for a layout.
Exit status: 0 done, 1 the push failed, 2 invalid input or payload.`,
		Example: `  payload-applier release pack release/ --to quay.io/example/release:4.20.1
  payload-applier release pack release/ --to oci:bin/release-layout`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(cmd, args[0]) },
	}
	cmd.Flags().StringVar(&o.to, "to", "", "registry/repository:tag to push to, or oci:PATH for an OCI image layout (required)")
	cmd.Flags().StringVar(&o.arch, "arch", "", "architecture recorded in the image's config; default this machine's")
	o.registry.add(cmd)
	_ = cmd.MarkFlagRequired("to")
	return cmd
}

func (o *releasePackOptions) run(cmd *cobra.Command, dir string) error {
	created, err := sourceDateEpoch()
	if err != nil {
		return withExitCode(exitUsage, err)
	}
	var ref releaseimage.Ref
	layoutDir, toLayout := strings.CutPrefix(o.to, ociPrefix)
	if toLayout && layoutDir == "" {
		return withExitCode(exitUsage, fmt.Errorf("--to %s names no directory", o.to))
	}
	if !toLayout {
		if ref, err = releaseimage.ParseRef(o.to); err != nil {
			return withExitCode(exitUsage, fmt.Errorf("--to: %w", err))
		}
	}
	packed, err := releaseimage.PackRelease(dir, releaseimage.PackOptions{Architecture: o.arch, Created: created})
	if err != nil {
		return withExitCode(exitUsage, fmt.Errorf("payload %s not packed:\n%w", dir, err))
	}
	img, rel := packed.Image, packed.Release
	// Only what the loader reads is published: a credential or a note
	// beside the manifests stays on this machine, and the user sees so.
	if n := len(packed.Skipped); n > 0 {
		fmt.Fprintf(cmd.ErrOrStderr(), "release pack: left out %d file(s) the payload loader does not read:\n", n)
		for _, s := range packed.Skipped {
			fmt.Fprintf(cmd.ErrOrStderr(), "  %s\n", s)
		}
	}
	if toLayout {
		digest, err := releaseimage.WriteLayout(layoutDir, img, rel.Version)
		if err != nil {
			return withExitCode(exitFailed, err)
		}
		fmt.Fprintln(cmd.OutOrStdout(), digest)
		return nil
	}
	digest, err := releaseimage.Push(cmd.Context(), ref, img, o.registry.registry())
	if err != nil {
		return withExitCode(exitFailed, err)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "%s@%s\n", ref.Repository(), digest)
	return nil
}

// sourceDateEpoch is $SOURCE_DATE_EPOCH, the reproducible-builds way to
// date what a build writes; the zero time without it.
func sourceDateEpoch() (time.Time, error) {
	s := os.Getenv("SOURCE_DATE_EPOCH")
	if s == "" {
		return time.Time{}, nil
	}
	secs, err := strconv.ParseInt(s, 10, 64)
	if err != nil || secs < 0 {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q is not a count of seconds", s)
	}
	return time.Unix(secs, 0), nil
}
