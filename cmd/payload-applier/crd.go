package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/client-go/dynamic"

	"github.com/payload-applier/payload-applier/pkg/storagemigration"
)

func newCRDCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "crd",
		Short: "Maintain the CustomResourceDefinitions a release updates",
	}
	cmd.AddCommand(newMigrateStorageCommand())
	return cmd
}

type migrateStorageOptions struct {
	cluster clusterFlags
	dryRun  bool
}

func newMigrateStorageCommand() *cobra.Command {
	o := &migrateStorageOptions{}
	cmd := &cobra.Command{
		Use:   "migrate-storage NAME",
		Short: "Rewrite every object of a CRD in its storage version, then drop older versions from status.storedVersions",
		Long: `migrate-storage prepares a CustomResourceDefinition for a release that
removes a version it once stored (the StoredVersionRemoved refusal). It
reads every object at the CRD's storage version, page by page, and writes
it back unchanged, so that the apiserver stores it in that version; then
it sets status.storedVersions to the storage version alone. It stops at the
first error and then leaves status.storedVersions as it was.

Run it after a release made the new version the storage version, and
before the release that removes the old one.`,
		Example: `  payload-applier crd migrate-storage widgets.example.com --dry-run
  payload-applier crd migrate-storage widgets.example.com`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := o.cluster.restConfig()
			if err != nil {
				return withExitCode(exitUsage, err)
			}
			client, err := dynamic.NewForConfig(cfg)
			if err != nil {
				return withExitCode(exitUsage, err)
			}
			res, err := storagemigration.Migrate(cmd.Context(), client, args[0], storagemigration.Options{DryRun: o.dryRun})
			if res.StorageVersion != "" {
				verb := "rewritten"
				if o.dryRun {
					verb = "would be rewritten (dry run)"
				}
				fmt.Fprintf(cmd.OutOrStdout(), "CustomResourceDefinition %s: %d objects %s in %s; %d changed and %d deleted by others meanwhile\n",
					res.CRD, res.Rewritten, verb, res.StorageVersion, res.Changed, res.Gone)
				fmt.Fprintf(cmd.OutOrStdout(), "status.storedVersions: [%s] -> [%s]\n", strings.Join(res.StoredBefore, " "), strings.Join(res.StoredAfter, " "))
			}
			return withExitCode(exitFailed, err)
		},
	}
	o.cluster.addKubeconfig(cmd)
	cmd.Flags().BoolVar(&o.dryRun, "dry-run", false, "read and count, write nothing (the writes are sent as server-side dry runs)")
	return cmd
}
