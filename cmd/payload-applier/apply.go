package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	"github.com/spf13/cobra"

	"github.com/payload-applier/payload-applier/pkg/apply"
	"github.com/payload-applier/payload-applier/pkg/apply/deletion"
	"github.com/payload-applier/payload-applier/pkg/clusterversion"
	"github.com/payload-applier/payload-applier/pkg/operator"
	"github.com/payload-applier/payload-applier/pkg/payload"
	"github.com/payload-applier/payload-applier/pkg/releaseimage"
	"github.com/payload-applier/payload-applier/pkg/signature"
)

type applyOptions struct {
	cluster  clusterFlags
	patience patienceFlags
	// operatorPatience is read from patience by run.
	operatorPatience clusterversion.Patience
	payloadDir       string
	payloads         string
	force            bool
	strictOrder      bool
	timeout          time.Duration
	parallelism      int
	output           string
	updateGraph      string
	graphWait        time.Duration
	stallAfter       time.Duration
	stuckAfter       time.Duration
	leaseWait        time.Duration
	ignoreLease      bool
	registry         registryFlags
	inclusion        inclusionFlags
	rate             budgetFlags
	// load are the inclusion filters, read from inclusion by run.
	load *payload.LoadOptions
	// budget is read from rate by run.
	budget apply.Budget
}

func newApplyCommand() *cobra.Command { return (&applyOptions{}).command() }

func (o *applyOptions) command() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "apply --payload DIR|IMAGE",
		Short: "Apply one release payload once, through the operator's engine, then exit",
		Long: `Apply runs one sync of one release against the cluster and exits. It uses the
same engine and the same state as 'payload-applier start': the ClusterVersion
named "version", created with its CRD when missing.

The first apply to a cluster is an install. Applying another version is an
update, checked by the update preconditions. Applying the same version again
is a reconcile. Deletes are issued in update mode and not waited for: the ones
still in progress are listed. The update graph (spec.upstream, or
--update-graph) is read as 'start' reads it: a deprecated release is neither
installed nor updated to unless --force is given. Apply waits for the graph
up to --update-graph-timeout, then goes on without it.

Manifests are included as 'start' includes them: for --profile (default
$CLUSTER_PROFILE), without those --exclude-manifests (default
$EXCLUDE_MANIFESTS) excludes, and for the feature set and gates of the
cluster's FeatureGate "cluster". An update that puts an object the cluster
runs behind a disabled capability enables that capability, as 'start'
does; apply reads the cluster's current release for it from its image,
through --release-cache, or from the release store --payloads. When it
cannot read it, apply refuses the update (exit 3) rather than stop
managing those objects.

Apply holds the operator's leader-election Lease while it runs, so that a
running 'payload-applier start' waits; when another instance holds it,
apply refuses (exit 1, naming the holder) unless --lease-wait lets it wait
or --ignore-lease lets it write beside it. A Lease that looks abandoned is
taken only after apply has seen it unchanged for its duration, so a holder
whose clock lags keeps it.

A release image is read as 'start' reads spec.desiredUpdate.image: apply
resolves a tag to its digest (one HEAD; both are printed) and asks the
operator for the image by digest, and the operator verifies it, once the
cluster runs a release, with the keys of that release (its verification
ConfigMap) before reading anything of the image but its digest. An image
that cannot be verified is refused (exit 3) unless --force, which applies
it and records the risk in the history (verified: false, and the reason
in acceptedRisks). An install is not verified, as in the CVO. A
directory is not verified either.

Apply sets no client-side limit on its requests to the apiserver;
--kube-api-qps and --install-kube-api-qps set the ones 'start' takes by
default, the CVO's.

Exit codes: 0 every task applied (deletes may still be pending); 1 task
failures, a delete the safety gate refused, or a delete ledger that cannot
be read (applies still run; no delete does); 2 invalid input or payload, or
a release image that cannot be retrieved; 3 refused by a precondition, by
the verification of a release image, or for want of the current release.

` + sourceRule + ` Nothing of a release is applied unless all of it is
pulled, extracted, loaded and, for an update, verified or forced; when it is
refused, the release the cluster runs is reconciled instead.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	o.cluster.add(cmd)
	cmd.Flags().StringVar(&o.payloadDir, "payload", "", "release payload directory or release image (required)")
	cmd.Flags().StringVar(&o.payloads, "payloads", "", "release store, as for 'start': a directory with one payload directory per version, where the cluster's current release is read from when it was not installed from an image")
	o.registry.addPull(cmd)
	cmd.Flags().BoolVar(&o.force, "force", false, "apply even when preconditions or a release image's verification fail; the failures are recorded as accepted risks")
	cmd.Flags().DurationVar(&o.timeout, "timeout", 30*time.Minute, "give up after this long; 0 means no limit")
	cmd.Flags().IntVar(&o.parallelism, "parallelism", 0, "concurrent graph nodes; 0 uses the mode's default")
	addStrictOrder(cmd, &o.strictOrder)
	cmd.Flags().StringVarP(&o.output, "output", "o", "text", "output format: text or json")
	cmd.Flags().StringVar(&o.updateGraph, "update-graph", "", "read the update graph from this Cincinnati JSON file instead of spec.upstream")
	cmd.Flags().DurationVar(&o.graphWait, "update-graph-timeout", time.Minute, "give up reading the update graph (every try and the waits between them) after this long, and go on without it")
	cmd.Flags().DurationVar(&o.leaseWait, "lease-wait", 0, "wait this long for the operator's Lease when another instance holds it; 0 refuses at once a Lease renewed within its duration")
	cmd.Flags().BoolVar(&o.ignoreLease, "ignore-lease", false, "apply without the operator's Lease, beside a running operator (the ledger merges both writers' records)")
	cmd.Flags().DurationVar(&o.stuckAfter, "delete-stuck-after", apply.DefaultStuckAfter, "report a delete still in progress after this long as stuck (Upgradeable=False, ResourceDeletionFailed)")
	cmd.Flags().DurationVar(&o.stallAfter, "operand-cleanup-stall-after", apply.DefaultStuckAfter, "report an operand cleanup stalled after this long without progress, or blocked after this long unable to start")
	o.inclusion.add(cmd)
	// A one-shot run an admin waits for: no limit unless asked, where
	// 'start' takes the CVO's.
	o.rate.add(cmd, apply.Budget{})
	o.patience.add(cmd)
	_ = cmd.MarkFlagRequired("payload")
	return cmd
}

func (o *applyOptions) run(cmd *cobra.Command) error {
	if err := checkOutput(o.output, "text", "json"); err != nil {
		return err
	}
	if o.parallelism < 0 {
		return withExitCode(exitUsage, errors.New("--parallelism must not be negative"))
	}
	if o.graphWait <= 0 {
		return withExitCode(exitUsage, fmt.Errorf("--update-graph-timeout must be positive, not %s", o.graphWait))
	}
	if o.stuckAfter <= 0 {
		return withExitCode(exitUsage, fmt.Errorf("--delete-stuck-after must be positive, not %s", o.stuckAfter))
	}
	if o.stallAfter <= 0 {
		return withExitCode(exitUsage, fmt.Errorf("--operand-cleanup-stall-after must be positive, not %s", o.stallAfter))
	}
	var err error
	if o.budget, err = o.rate.budget(); err != nil {
		return withExitCode(exitUsage, err)
	}
	if o.operatorPatience, err = o.patience.patience(); err != nil {
		return err
	}
	if o.load, err = o.inclusion.loadOptions(cmd.Context()); err != nil {
		return withExitCode(exitUsage, err)
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if o.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.timeout)
		defer cancel()
	}
	src, err := o.source(ctx, cmd.ErrOrStderr())
	if err != nil {
		return withExitCode(exitUsage, fmt.Errorf("payload %s rejected, nothing was applied:\n%w", o.payloadDir, err))
	}
	cfg, err := o.cluster.restConfig()
	if err != nil {
		return withExitCode(exitUsage, err)
	}
	op, err := operator.NewForConfig(cfg, o.operatorConfig(src))
	if err != nil {
		return withExitCode(exitUsage, err)
	}
	if err := op.Bootstrap(ctx); err != nil {
		return withExitCode(exitFailed, err)
	}
	op.StartEvents()
	defer op.Shutdown()
	var out *operator.Outcome
	sync := func(ctx context.Context) error {
		if err := src.request(ctx, op, o.force); err != nil {
			return err
		}
		events := make(chan apply.Event, 64)
		printed := make(chan struct{})
		printer := newProgressPrinter(cmd.ErrOrStderr(), o.output == "text")
		go func() {
			defer close(printed)
			for ev := range events {
				printer.event(ev)
			}
		}()
		var err error
		out, err = op.Sync(ctx, events)
		close(events)
		<-printed
		printer.finish()
		return err
	}
	if o.ignoreLease {
		err = sync(ctx)
	} else {
		// The operator's Lease keeps `start` from writing meanwhile.
		err = op.HoldLease(ctx, o.leaseWait, sync)
	}
	var held *operator.LeaseHeldError
	if errors.As(err, &held) {
		return withExitCode(exitFailed, fmt.Errorf("%w: nothing was applied; wait for it with --lease-wait, stop it, or pass --ignore-lease to write beside it", held))
	}
	if err != nil {
		return withExitCode(exitFailed, err)
	}
	if o.output == "json" {
		if err := writeApplyJSON(cmd.OutOrStdout(), out); err != nil {
			return err
		}
	} else {
		writeApplyText(cmd.OutOrStdout(), out)
	}
	return applyExit(out, src.what)
}

// operatorConfig is the operator apply runs one sync of.
func (o *applyOptions) operatorConfig(src *applySource) operator.Config {
	return operator.Config{
		Releases:        src.releases,
		Puller:          src.puller,
		ReleasePlatform: o.registry.platform,
		Namespace:       o.cluster.namespace,
		LoadOptions:     o.load,
		// Rather than stop managing what an update moves behind a
		// capability, as the CVO would when it cannot tell.
		RequireCurrentRelease: true,
		Sync:                  apply.SyncOptions{Parallelism: o.parallelism, StuckAfter: o.stuckAfter, StrictOrder: o.strictOrder},
		UpdateGraph:           graphSource(o.updateGraph),
		// One sync: it reads the graph itself, waiting at most this long.
		UpdateGraphTimeout: o.graphWait,

		OperandCleanupStallAfter: o.stallAfter,
		OperatorPatience:         o.operatorPatience,
		Budget:                   o.budget,
	}
}

// applySource is what apply asks the operator for: a directory's release,
// loaded by the CLI, or a release image by digest, which the operator
// retrieves and verifies itself, as it does for 'start'.
type applySource struct {
	releases operator.ReleaseSource
	puller   *releaseimage.Puller
	// what names the release in messages: its version, or the image.
	what    string
	request func(ctx context.Context, op *operator.Operator, force bool) error
}

// source reads --payload by sourceRule. Only a directory is read here: an
// image is resolved to its digest, and nothing of it is pulled before the
// operator has judged that digest.
func (o *applyOptions) source(ctx context.Context, log io.Writer) (*applySource, error) {
	arg, err := parsePayloadArg(o.payloadDir)
	if err != nil {
		return nil, err
	}
	if arg.image == nil {
		if err := checkDir(arg.dir); err != nil {
			return nil, err
		}
		rel, err := payload.Load(arg.dir, *o.load)
		if err != nil {
			return nil, err
		}
		// The puller reads a current release installed from an image; a
		// directory applies without one when there is no release cache.
		p, _ := o.registry.puller()
		return &applySource{releases: releaseBeside{LoadedRelease: operator.LoadedRelease{Release: rel}, store: &operator.DirStore{Root: o.payloads}},
			puller: p, what: rel.Version,
			request: func(ctx context.Context, op *operator.Operator, force bool) error {
				return op.RequestRelease(ctx, rel.Version, force)
			}}, nil
	}
	p, err := o.registry.puller()
	if err != nil {
		return nil, err
	}
	ref, err := p.Resolve(ctx, *arg.image)
	if err != nil {
		return nil, err
	}
	image := ref.String()
	if !arg.image.ByDigest() {
		fmt.Fprintf(log, "release image %s is %s\n", arg.image, image)
	}
	if e, ok := p.Cached(ref.Digest(), o.registry.platform); ok {
		fmt.Fprintf(log, "release image %s: %s, cached in %s\n", image, e.Digest, e.Dir)
	}
	return &applySource{
		releases: &operator.DirStore{Root: o.payloads}, puller: p, what: image,
		request: func(ctx context.Context, op *operator.Operator, force bool) error {
			return op.RequestImage(ctx, image, force)
		}}, nil
}

// releaseBeside is one release at hand (the one apply was given, or the
// one start ships in), and the --payloads store for the others the
// operator reads.
type releaseBeside struct {
	operator.LoadedRelease
	store *operator.DirStore
}

// Load implements operator.ReleaseSource.
func (s releaseBeside) Load(version string, opts payload.LoadOptions) (*payload.Release, error) {
	if version == s.Release.Version {
		return s.Release, nil
	}
	return s.store.Load(version, opts)
}

// applyExit maps an outcome to the documented exit codes; what names the
// release asked for.
func applyExit(out *operator.Outcome, what string) error {
	target := cmp.Or(out.Target, what)
	var unverified *releaseimage.VerificationError
	switch {
	case out.Refused != nil:
		hint := ""
		switch {
		case out.Upgradeable.Reason == clusterversion.ReasonDeletionInProgress:
			hint = "\n(apply the release the cluster runs again to carry its pending deletes forward)"
		case errors.Is(out.Refused, operator.ErrCurrentReleaseUnreadable):
			hint = "\n(give apply the release store that holds it with --payloads, or a --release-cache that can read its image)"
		}
		return withExitCode(exitRefused, fmt.Errorf("update to %s refused, nothing of it was applied: %w%s", target, out.Refused, hint))
	case out.VerifyErr != nil && out.Applied != out.Target, errors.As(out.RetrieveErr, &unverified):
		// Forced, the target is applied and VerifyErr is its recorded risk.
		return withExitCode(exitRefused, fmt.Errorf("release %s refused, nothing of it was applied: %s (--force applies it, recording the risk)", target, verificationMessage(cmp.Or(out.VerifyErr, out.RetrieveErr))))
	case out.RetrieveErr != nil:
		return withExitCode(exitUsage, fmt.Errorf("release image %s cannot be retrieved, nothing was applied from it: %w", target, out.RetrieveErr))
	case out.LoadErr != nil:
		return withExitCode(exitUsage, fmt.Errorf("release %s rejected, nothing was applied from it: %w", target, out.LoadErr))
	case out.Result == nil:
		return withExitCode(exitFailed, fmt.Errorf("nothing was applied"))
	case !out.Result.Complete():
		return withExitCode(exitFailed, fmt.Errorf("%d of %d tasks did not apply", out.Result.Total-out.Result.Done, out.Result.Total))
	case out.Result.LedgerErr != nil:
		return withExitCode(exitFailed, fmt.Errorf("every task applied, but no delete ran: the delete ledger is unreadable: %w (see docs/operations.md, \"Repairing the delete ledger\")", out.Result.LedgerErr))
	case out.Result.CleanupErr != nil:
		return withExitCode(exitFailed, fmt.Errorf("every task applied, but no component with operand cleanup was removed: the operand cleanup state is unreadable: %w (see docs/operations.md, \"Repairing the operand cleanup state\")", out.Result.CleanupErr))
	case len(out.Result.Deletes.Refused) > 0:
		// The release completed; the objects the gate protects stay.
		return withExitCode(exitFailed, fmt.Errorf("%d delete(s) refused: %s", len(out.Result.Deletes.Refused), out.Result.Deletes.Refused[0].LastError))
	}
	return nil
}

// verificationMessage is err as ReleaseAccepted says it.
func verificationMessage(err error) string {
	var se *signature.Error
	if errors.As(err, &se) {
		return se.Message()
	}
	return err.Error()
}

func writeApplyText(w io.Writer, out *operator.Outcome) {
	res := out.Result
	if res == nil {
		return
	}
	fmt.Fprintf(w, "release %s (%s): %d of %d applied\n", res.Release, res.Mode, res.Done, res.Total)
	if out.AcceptedRisks != "" {
		fmt.Fprintf(w, "accepted risks: %s\n", out.AcceptedRisks)
	}
	for _, e := range res.Errors {
		fmt.Fprintf(w, "  error: %v\n", e)
	}
	if n := len(res.Deletes.InProgress); n > 0 {
		fmt.Fprintf(w, "%d delete(s) still in progress (not waited for):\n", n)
		for _, d := range res.Deletes.InProgress {
			fmt.Fprintf(w, "  %s %s%s\n", d.ID, d.State, finalizerNote(d))
		}
	}
	if n := len(res.Deletes.Refused); n > 0 {
		fmt.Fprintf(w, "%d delete(s) refused:\n", n)
		for _, d := range res.Deletes.Refused {
			fmt.Fprintf(w, "  %s (%s): %s\n", d.ID, d.File, d.LastError)
		}
	}
	fmt.Fprintf(w, "Upgradeable=%s %s\n", out.Upgradeable.Status, out.Upgradeable.Reason)
}

func finalizerNote(d deletion.Record) string {
	if len(d.Finalizers) == 0 {
		return ""
	}
	return fmt.Sprintf(" (finalizers: %v)", d.Finalizers)
}

// applyJSON is the machine-readable result of `apply -o json`.
type applyJSON struct {
	Target  string `json:"target"`
	Applied string `json:"applied,omitempty"`
	Mode    string `json:"mode,omitempty"`
	Done    int    `json:"done"`
	Total   int    `json:"total"`
	Refused string `json:"refused,omitempty"`
	// VerifyError is why a release image was not verified, whether or not
	// --force let it through; AcceptedRisks what --force accepted.
	VerifyError   string                                  `json:"verifyError,omitempty"`
	AcceptedRisks string                                  `json:"acceptedRisks,omitempty"`
	LoadError     string                                  `json:"loadError,omitempty"`
	Errors        []string                                `json:"errors"`
	Objects       []objectJSON                            `json:"objects"`
	Deletes       []deletion.Record                       `json:"deletesInProgress"`
	Upgradeable   configv1.ClusterOperatorStatusCondition `json:"upgradeable"`
}

type objectJSON struct {
	Object  string `json:"object"`
	File    string `json:"file"`
	Action  string `json:"action"`
	Message string `json:"message,omitempty"`
}

func writeApplyJSON(w io.Writer, out *operator.Outcome) error {
	doc := applyJSON{Target: out.Target, Applied: out.Applied, Mode: string(out.Mode), Upgradeable: out.Upgradeable,
		Errors: []string{}, Objects: []objectJSON{}, Deletes: []deletion.Record{}}
	if out.Refused != nil {
		doc.Refused = out.Refused.Error()
	}
	if out.LoadErr != nil {
		doc.LoadError = out.LoadErr.Error()
	}
	if out.VerifyErr != nil {
		doc.VerifyError = out.VerifyErr.Error()
	}
	doc.AcceptedRisks = out.AcceptedRisks
	if res := out.Result; res != nil {
		doc.Done, doc.Total = res.Done, res.Total
		for _, e := range res.Errors {
			doc.Errors = append(doc.Errors, e.Error())
		}
		for _, r := range res.Objects {
			doc.Objects = append(doc.Objects, objectJSON{Object: r.ID.String(), File: r.File, Action: string(r.Action), Message: r.Message})
		}
		doc.Deletes = append(doc.Deletes, res.Deletes.InProgress...)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}
