package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

// exitError carries a process exit code out of a command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// withExitCode attaches an exit code to err.
func withExitCode(code int, err error) error {
	if err == nil {
		return nil
	}
	return &exitError{code: code, err: err}
}

// Exit codes shared by the commands.
const (
	exitOK      = 0
	exitFailed  = 1 // lint errors, task failures
	exitUsage   = 2 // invalid input, unreadable payload, bad flags
	exitRefused = 3 // refused by a precondition
)

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "payload-applier",
		Short:         "Apply OpenShift-style release payloads the way the cluster-version operator does",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(
		newLintCommand(),
		newPlanCommand(),
		newApplyCommand(),
		newStartCommand(),
		newStatusCommand(),
		newUpdateGraphCommand(),
		newVersionCommand(),
	)
	return root
}

func run(args []string) int {
	root := newRootCommand()
	root.SetArgs(args)
	err := root.Execute()
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
	}
	return exitCode(err)
}

// exitCode maps a command's error to the process exit code.
func exitCode(err error) int {
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	// cobra's own flag and argument errors are usage errors.
	return exitUsage
}
