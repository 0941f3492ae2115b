package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime/debug"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"
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
	// exitInternal is a crash: a bug. 70 is EX_SOFTWARE of sysexits.h.
	exitInternal = 70
)

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "payload-applier",
		Short:         "Apply OpenShift-style release payloads the way the cluster-version operator does",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	addVerbosityFlag(root)
	root.AddCommand(
		newLintCommand(),
		newPlanCommand(),
		newApplyCommand(),
		newStartCommand(),
		newStatusCommand(),
		newUpdateGraphCommand(),
		newCRDCommand(),
		newReleaseCmd(),
		newVersionCommand(),
	)
	return root
}

// addVerbosityFlag adds klog's --v, as the CVO takes it (--v=2), to every
// command: the log's verbosity, 0 by default.
func addVerbosityFlag(root *cobra.Command) {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	v := fs.Lookup("v")
	v.Usage = "log verbosity: 2 logs each sync's steps, as the CVO's deployment runs it; higher is for debugging"
	root.PersistentFlags().AddGoFlag(v)
}

// newRoot builds the command tree; tests replace it.
var newRoot = newRootCommand

func run(args []string) (code int) {
	// A crash is a bug, not invalid input: it must not exit 2 as Go's
	// panic does, which scripts read as "the payload is invalid".
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(os.Stderr, "internal error (a bug in payload-applier; please report it with this trace): %v\n%s", r, debug.Stack())
			code = exitInternal
		}
	}()
	root := newRoot()
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
