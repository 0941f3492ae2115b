package main

import "github.com/spf13/cobra"

// addStrictOrder declares --strict-order, one help text for every command
// that builds the graph.
func addStrictOrder(cmd *cobra.Command, strict *bool) {
	cmd.Flags().BoolVar(strict, "strict-order", false, "apply each component's manifests one at a time, as the CVO does, instead of in waves (passive manifests together, barriers alone); for a payload that depends on file order between objects the wave rule sees as independent")
}
