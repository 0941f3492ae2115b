package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// Placeholder; replaced by the lint implementation.
func newLintCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "lint DIR",
		Short: "Validate a release payload",
		RunE: func(*cobra.Command, []string) error {
			return withExitCode(exitUsage, errors.New("lint is not implemented yet"))
		},
	}
}
