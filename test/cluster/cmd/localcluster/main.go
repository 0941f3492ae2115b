// Command localcluster builds and runs the local control plane that the
// e2e tests use (etcd, kube-apiserver, kube-controller-manager), for trying
// payload-applier by hand.
//
//	localcluster build           build the binaries into the cache, print the directory
//	localcluster up              start a control plane, print how to use it, stop on Ctrl-C
//	localcluster run [--keep]    the payload-applier demo that `make run` starts
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/payload-applier/payload-applier/test/cluster"
)

const usage = `Usage: localcluster <command> [flags]

Runs a real local control plane: etcd, kube-apiserver and
kube-controller-manager built from test/cluster/tools with the Go toolchain.

Commands:
  build    build the binaries into the cache (or reuse them) and print the directory
  up       start a control plane, print its kubeconfig, and run until SIGINT/SIGTERM
  run      the payload-applier demo: start a control plane and the operator, and
           walk examples/payloads through install, a delete, a refused and an
           accepted minor update (what "make run" does)

Run "localcluster <command> --help" for a command's flags.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	var err error
	switch cmd, rest := args[0], args[1:]; cmd {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	case "build":
		err = build(ctx, rest, stdout, stderr)
	case "up":
		err = up(ctx, rest, stdout, stderr)
	case "run":
		err = demo(ctx, rest, stdout, stderr)
	default:
		fmt.Fprintf(stderr, "localcluster: unknown command %q\n\n%s", cmd, usage)
		return 2
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		return 2
	case errors.Is(err, errInterrupted):
		fmt.Fprintln(stderr, "localcluster: interrupted; everything it started is stopped")
		return 130
	default:
		fmt.Fprintf(stderr, "localcluster: %v\n", err)
		return 1
	}
}

var errUsage = errors.New("usage")

func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(fs.Output(), "unexpected arguments: %v\n", fs.Args())
		return errUsage
	}
	return nil
}

func build(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("build", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: localcluster build\n\nBuilds etcd, kube-apiserver and kube-controller-manager from test/cluster/tools\ninto $XDG_CACHE_HOME/payload-applier/bin/<key>, unless that build is current,\nand prints the directory.\n")
	}
	if err := parse(fs, args); err != nil {
		return err
	}
	dir, err := cluster.EnsureBinaries(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, dir)
	return nil
}

func up(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("up", flag.ContinueOnError)
	fs.SetOutput(stderr)
	keep := fs.Bool("keep", false, "keep the data directory (logs, audit log, etcd data) after stopping")
	timeout := fs.Duration("timeout", 90*time.Second, "how long each component may take to become ready")
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: localcluster up [flags]\n\nStarts a local control plane and prints its kubeconfig; SIGINT or SIGTERM stops it.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := parse(fs, args); err != nil {
		return err
	}

	started := time.Now()
	c, err := cluster.Start(ctx, cluster.Options{KeepDataDir: *keep, StartTimeout: *timeout})
	if err != nil {
		return err
	}
	defer func() {
		fmt.Fprintln(stderr, "localcluster: stopping the control plane")
		if err := c.Stop(); err != nil {
			fmt.Fprintf(stderr, "localcluster: stop: %v\n", err)
		}
		if *keep {
			fmt.Fprintf(stderr, "localcluster: kept %s\n", c.DataDir())
		}
	}()

	fmt.Fprintln(stdout, c.Describe(time.Since(started)))
	fmt.Fprintf(stdout, `
Use it from another shell (admin user, system:masters):

  export KUBECONFIG=%s
  go run ./cmd/payload-applier --help
  go run ./cmd/payload-applier lint ../shared/payloads/ocp-real
  go run ./cmd/payload-applier apply --payload examples/payloads/1.0.0
  go run ./cmd/payload-applier status

Any client-go program honours KUBECONFIG. Logs: %s
Audit log (one JSON event per line): %s
`, c.Kubeconfig(), c.LogDir(), c.AuditLogPath())

	fmt.Fprintln(stdout, "\nPress Ctrl-C to stop.")
	<-ctx.Done()
	return nil
}
