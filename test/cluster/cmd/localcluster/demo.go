package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/payload-applier/payload-applier/test/cluster"
	"github.com/payload-applier/payload-applier/test/cluster/cmd/localcluster/story"
)

// errInterrupted marks a demo ended by SIGINT or SIGTERM before it finished.
var errInterrupted = errors.New("interrupted")

const demoUsage = `Usage: localcluster run [flags]

The payload-applier demo, which "make run" starts. It starts a local control
plane and an OCI registry in this process, and publishes the releases of
examples/payloads as a release team would, with the commands it would run: a
signing key, its public half in every release as the verification ConfigMap,
"payload-applier release pack" to push each release, "release sign" to sign
each digest into a signature ConfigMap, which it creates in the cluster. It
starts the operator ("payload-applier start --release-cache"), then walks
this story, requesting each release by digest (spec.desiredUpdate.image) and
printing "payload-applier status" at each step:

  1. install 1.0.0, with a gadget component whose custom resource carries
     a finalizer;
  2. request an unsigned build of 1.0.1, which is refused
     (ImageVerificationFailed) with nothing of it applied;
  3. update to the signed 1.0.1, which deletes the gadget component: the
     finalizer keeps the custom resource terminating, and Upgradeable turns
     False;
  4. request the minor update 1.1.0, which is refused while the delete is
     pending;
  5. remove the finalizer (as the gadget controller would): the deletes
     finish, Upgradeable turns True and 1.1.0 is accepted, verified and
     completes.

It stops everything it started when it ends, fails, times out or is
interrupted, unless --keep asks to leave it running.

Flags:
`

// demoFlags are the flags of `localcluster run`.
type demoFlags struct {
	keep          bool
	timeout       time.Duration
	startTimeout  time.Duration
	stepTimeout   time.Duration
	finalizerHold time.Duration
	cli           string
	payloads      string
}

func demo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f := demoFlags{}
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.BoolVar(&f.keep, "keep", false, "after the story, leave the control plane and the operator running until Ctrl-C, and keep the data directory")
	fs.DurationVar(&f.timeout, "timeout", 5*time.Minute, "give up unless the story has finished by then (a first build of the control plane binaries does not count)")
	fs.DurationVar(&f.startTimeout, "start-timeout", 90*time.Second, "how long each control plane component may take to become ready")
	fs.DurationVar(&f.stepTimeout, "step-timeout", 90*time.Second, "how long each step of the story may wait for the operator")
	fs.DurationVar(&f.finalizerHold, "finalizer-hold", 5*time.Second, "how long the custom resource stays terminating before the demo removes its finalizer")
	fs.StringVar(&f.cli, "cli", "", "payload-applier binary to use (default: build ./cmd/payload-applier into bin/payload-applier)")
	fs.StringVar(&f.payloads, "payloads", "", "the payload directories 1.0.0, 1.0.1 and 1.1.0 to publish (default: examples/payloads of the checkout)")
	fs.Usage = func() {
		fmt.Fprint(stderr, demoUsage)
		fs.PrintDefaults()
	}
	if err := parse(fs, args); err != nil {
		return err
	}
	err := f.run(ctx, stdout, stderr)
	if err != nil && ctx.Err() != nil {
		return errInterrupted
	}
	return err
}

func (f *demoFlags) run(signalCtx context.Context, stdout, stderr io.Writer) (err error) {
	root, err := story.ModuleRoot()
	if err != nil {
		return err
	}
	if f.payloads == "" {
		f.payloads = filepath.Join(root, "examples", "payloads")
	}
	for _, v := range []string{story.ReleaseInstall, story.ReleaseRemove, story.ReleaseMinor} {
		if st, err := os.Stat(filepath.Join(f.payloads, v)); err != nil || !st.IsDir() {
			fmt.Fprintf(stderr, "--payloads %s has no release directory %s\n", f.payloads, v)
			return errUsage
		}
	}

	// A first build of the control plane takes minutes, more than the whole
	// story; it has its own bound, like the e2e tests'.
	buildCtx, cancelBuild := context.WithTimeout(signalCtx, 30*time.Minute)
	binDir, err := cluster.EnsureBinaries(buildCtx)
	cancelBuild()
	if err != nil {
		return err
	}

	ctx, cancel := context.WithTimeoutCause(signalCtx, f.timeout, fmt.Errorf("the demo did not finish within %s (--timeout)", f.timeout))
	defer cancel()
	started := time.Now()
	if f.cli == "" {
		f.cli = filepath.Join(root, "bin", "payload-applier")
		fmt.Fprintf(stdout, "localcluster: building %s\n", f.cli)
		if err := story.BuildCLI(ctx, root, f.cli); err != nil {
			return err
		}
	}

	// The data directory is kept until the outcome is known: its logs are
	// what a failure points at.
	c, err := cluster.Start(ctx, cluster.Options{BinDir: binDir, KeepDataDir: true, StartTimeout: f.startTimeout})
	if err != nil {
		return err
	}
	defer func() {
		fmt.Fprintln(stderr, "localcluster: stopping the control plane")
		if stopErr := c.Stop(); stopErr != nil {
			fmt.Fprintf(stderr, "localcluster: stop: %v\n", stopErr)
		}
		if f.keep || (err != nil && signalCtx.Err() == nil) {
			fmt.Fprintf(stderr, "localcluster: kept %s (logs in %s)\n", c.DataDir(), c.LogDir())
		} else if rmErr := os.RemoveAll(c.DataDir()); rmErr != nil {
			fmt.Fprintf(stderr, "localcluster: remove %s: %v\n", c.DataDir(), rmErr)
		}
	}()
	fmt.Fprintln(stdout, c.Describe(time.Since(started)))

	reg, releases, stopRegistry, err := f.publish(ctx, c, stdout)
	if err != nil {
		return err
	}
	defer func() {
		if closeErr := stopRegistry(); closeErr != nil {
			fmt.Fprintf(stderr, "localcluster: stop the registry: %v\n", closeErr)
		}
	}()

	op, err := story.StartOperator(ctx, story.OperatorOptions{
		CLI:          f.cli,
		Kubeconfig:   c.ApplierKubeconfig(),
		ReleaseCache: filepath.Join(c.DataDir(), "release-cache"),
		LogPath:      filepath.Join(c.LogDir(), "payload-applier.log"),
	})
	if err != nil {
		return err
	}
	defer func() {
		fmt.Fprintln(stderr, "localcluster: stopping the operator")
		if stopErr := op.Stop(); stopErr != nil {
			fmt.Fprintf(stderr, "localcluster: %v\n", stopErr)
		}
	}()
	fmt.Fprintf(stdout, "\noperator: %s %s (pid %d); metrics %s; log %s\n",
		f.cli, strings.Join(op.Args(), " "), op.PID(), op.MetricsURL(), op.LogPath())

	err = story.Run(ctx, story.Options{
		Kubeconfig:    c.Kubeconfig(),
		CLI:           f.cli,
		Releases:      releases,
		Operator:      op,
		Out:           stdout,
		StepTimeout:   f.stepTimeout,
		FinalizerHold: f.finalizerHold,
	})
	if err != nil {
		if signalCtx.Err() == nil {
			fmt.Fprintf(stderr, "\nlocalcluster: the demo failed. The operator's log (%s) ends with:\n%s\n\n", op.LogPath(), story.LastLines(op.LogPath(), 20))
		}
		return err
	}
	if !f.keep {
		return nil
	}
	fmt.Fprintf(stdout, `
--keep: the control plane and the operator keep running. From another shell:

  export KUBECONFIG=%s
  %s status
  %s lint %s
  %s status -o json | grep -A2 '"desired"'
  curl -s %s
  tail -f %s

Change spec.desiredUpdate of the ClusterVersion "version" to try other
updates; the registry at %s keeps serving, and the releases as published, the
key and the signatures are in %s. Press Ctrl-C to stop everything; the data directory %s is kept.
`, c.Kubeconfig(), f.cli, f.cli, releases.Signed[story.ReleaseMinor], f.cli, op.MetricsURL(), op.LogPath(), reg.Host, filepath.Join(c.DataDir(), "releases"), c.DataDir())
	<-signalCtx.Done()
	return nil
}

// publish starts the registry and publishes the story's releases to it,
// with their signatures in the cluster. The registry's log goes to the
// cluster's log directory; stop ends both.
func (f *demoFlags) publish(ctx context.Context, c *cluster.Cluster, stdout io.Writer) (reg *story.Registry, releases *story.Releases, stop func() error, err error) {
	dir := filepath.Join(c.DataDir(), "releases")
	store := filepath.Join(dir, "signature-store")
	if err := os.MkdirAll(store, 0o755); err != nil {
		return nil, nil, nil, err
	}
	logFile, err := os.Create(filepath.Join(c.LogDir(), "registry.log"))
	if err != nil {
		return nil, nil, nil, err
	}
	reg, err = story.StartRegistry(store, logFile)
	if err != nil {
		logFile.Close()
		return nil, nil, nil, err
	}
	stop = func() error { return errors.Join(reg.Close(), logFile.Close()) }
	fmt.Fprintf(stdout, "\n==> Publishing the releases of %s as signed images to the registry at %s\n", f.payloads, reg.Host)
	releases, err = story.Publish(ctx, story.PublishOptions{CLI: f.cli, Payloads: f.payloads, Dir: dir, Registry: reg, Out: stdout})
	if err == nil {
		fmt.Fprintf(stdout, "\n  # the signatures go where the operator looks first, as kubectl apply -f signatures/ would put them:\n")
		err = releases.ApplySignatures(ctx, c.Kubeconfig(), stdout)
	}
	if err != nil {
		return nil, nil, nil, errors.Join(err, stop())
	}
	return reg, releases, stop, nil
}
