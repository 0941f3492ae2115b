// Package story walks the `make run` demo: a running payload-applier
// operator takes a cluster through the releases in examples/payloads,
// published as signed release images (Publish), installing 1.0.0,
// refusing an unsigned 1.0.1, removing a component in the signed 1.0.1
// while a finalizer holds one of its objects, refusing the minor update
// 1.1.0 until that delete is done, and then accepting it. The story acts
// only the way a person or another operator would: it sets
// spec.desiredUpdate to an image by digest, reports the gadget
// ClusterOperator's status and removes the Gadget's finalizer. Everything
// else is the operator's doing, and the story prints `payload-applier
// status` at each step.
//
// Every wait is bounded by Options.StepTimeout and ends early when the
// operator exits, so a broken operator fails the story with a message
// rather than hanging it.
package story

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/payload-applier/payload-applier/pkg/clusterversion"
	"github.com/payload-applier/payload-applier/pkg/textwrap"
)

// The releases of examples/payloads, in the order the story applies them.
const (
	ReleaseInstall = "1.0.0"
	ReleaseRemove  = "1.0.1"
	ReleaseMinor   = "1.1.0"
)

// Step names a point of the story whose state Options.AfterStep may check.
type Step int

const (
	// StepOperatorUp: the operator created the ClusterVersion; nothing is requested.
	StepOperatorUp Step = iota
	// StepInstalled: 1.0.0 is Completed, the gadget component with it.
	StepInstalled
	// StepUnsignedRefused: the unsigned 1.0.1 is refused
	// (ImageVerificationFailed) and nothing of it applied.
	StepUnsignedRefused
	// StepDeletePending: 1.0.1 is Completed; the Gadget is terminating,
	// held by its finalizer, and Upgradeable is False.
	StepDeletePending
	// StepMinorRefused: 1.1.0 is requested and refused by the preconditions.
	StepMinorRefused
	// StepMinorCompleted: the finalizer is gone, every delete is done,
	// Upgradeable is True and 1.1.0 is Completed.
	StepMinorCompleted
)

func (s Step) String() string {
	switch s {
	case StepOperatorUp:
		return "operator up"
	case StepInstalled:
		return "1.0.0 installed"
	case StepUnsignedRefused:
		return "unsigned 1.0.1 refused"
	case StepDeletePending:
		return "1.0.1 completed, gadget delete pending"
	case StepMinorRefused:
		return "1.1.0 refused"
	case StepMinorCompleted:
		return "1.1.0 completed"
	}
	return fmt.Sprintf("Step(%d)", int(s))
}

// Options configure Run. Kubeconfig, CLI and Releases are required.
type Options struct {
	// Releases are the images the story requests; their signatures are
	// in the cluster (Releases.ApplySignatures).
	Releases *Releases
	// Kubeconfig reaches the cluster as an administrator.
	Kubeconfig string
	// CLI is the payload-applier binary whose `status` the story prints.
	CLI string
	// Operator, when set, is the operator the story watches: a wait fails
	// as soon as it exits, and the last step shows its metrics.
	Operator *Operator
	// Out receives the narration and the status output. Default io.Discard.
	Out io.Writer
	// StepTimeout bounds each wait. Default 90 seconds.
	StepTimeout time.Duration
	// FinalizerHold is how long the Gadget stays terminating, counted from
	// its delete, before the story removes its finalizer. Default 5s.
	FinalizerHold time.Duration
	// AfterStep, when set, runs once each step's state is reached and its
	// status printed; an error ends the story with that error.
	AfterStep func(ctx context.Context, step Step) error
}

// story is one walk through the steps.
type story struct {
	opts  Options
	c     *clients
	out   io.Writer
	start time.Time
}

// Run walks the story against a cluster where an operator can pull
// Releases. It returns nil once 1.1.0 is Completed.
func Run(ctx context.Context, opts Options) error {
	if opts.Kubeconfig == "" || opts.CLI == "" || opts.Releases == nil {
		return errors.New("story: Options.Kubeconfig, Options.CLI and Options.Releases are required")
	}
	if opts.Out == nil {
		opts.Out = io.Discard
	}
	if opts.StepTimeout <= 0 {
		opts.StepTimeout = 90 * time.Second
	}
	if opts.FinalizerHold <= 0 {
		opts.FinalizerHold = 5 * time.Second
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", opts.Kubeconfig)
	if err != nil {
		return fmt.Errorf("story: kubeconfig %s: %w", opts.Kubeconfig, err)
	}
	c, err := newClients(cfg)
	if err != nil {
		return err
	}
	s := &story{opts: opts, c: c, out: opts.Out, start: time.Now()}
	for _, step := range []func(context.Context) error{s.operatorUp, s.install, s.refuseUnsigned, s.removeGadget, s.refuseMinor, s.finishCleanup} {
		if err := step(ctx); err != nil {
			return err
		}
	}
	s.say("The demo is complete (%s): the cluster went 1.0.0 → 1.0.1 → 1.1.0, and the gadget component is gone.",
		time.Since(s.start).Round(time.Second))
	return nil
}

func (s *story) operatorUp(ctx context.Context) error {
	s.title("The operator starts")
	// Conditions show that the operator has synced at least once, not
	// only created the ClusterVersion.
	if _, err := s.waitForClusterVersion(ctx, "the operator to create and report on ClusterVersion "+clusterVersionName,
		func(cv *configv1.ClusterVersion) bool { return len(cv.Status.Conditions) > 0 }); err != nil {
		return err
	}
	s.say("payload-applier start runs as the cluster-version operator. It created the ClusterVersion \"version\", where it reports, " +
		"and waits for someone to request a release. It pulls each release image into its --release-cache.")
	return s.checkpoint(ctx, StepOperatorUp)
}

func (s *story) install(ctx context.Context) error {
	s.title("Step 1 of 5: install release " + ReleaseInstall)
	s.say("Requesting %s: the demo sets spec.desiredUpdate.image on the ClusterVersion to %s, as `oc adm upgrade --to-image` would. "+
		"As in OpenShift, the installed release is not verified: no release runs yet whose keys could verify it.", ReleaseInstall, s.image(ReleaseInstall))
	if err := s.c.requestRelease(ctx, ReleaseInstall, s.image(ReleaseInstall)); err != nil {
		return err
	}
	if err := s.waitFor(ctx, "the operator to create ClusterOperator "+gadgetOperator, func(ctx context.Context) (bool, string, error) {
		ok, err := s.c.clusterOperatorExists(ctx, gadgetOperator)
		return ok, "ClusterOperator " + gadgetOperator + " not created yet", err
	}); err != nil {
		return err
	}
	s.say("The operator applied the manifests and created ClusterOperator %s; it now waits for the gadget operator to report it Available at %s. "+
		"No pod runs in this control plane, so the demo plays the gadget operator and reports that status.", gadgetOperator, ReleaseInstall)
	if err := s.c.reportOperatorAvailable(ctx, gadgetOperator, ReleaseInstall); err != nil {
		return err
	}
	if _, err := s.waitForClusterVersion(ctx, "release "+ReleaseInstall+" to complete", func(cv *configv1.ClusterVersion) bool {
		return completed(cv, ReleaseInstall)
	}); err != nil {
		return err
	}
	s.say("%s is installed: its history entry is Completed. Among its objects is Gadget gadget/default, whose %s finalizer "+
		"stands for cleanup the gadget controller must finish before the Gadget may go.", ReleaseInstall, gadgetFinalizer)
	return s.checkpoint(ctx, StepInstalled)
}

func (s *story) removeGadget(ctx context.Context) error {
	s.title("Step 3 of 5: update to the signed " + ReleaseRemove + ", which removes the gadget component")
	s.say("%s no longer ships the gadget component: its manifests keep their file names and carry release.openshift.io/delete: \"true\". "+
		"The operator deletes them in reverse order, ClusterOperator first and namespace last, each once the one before it is gone.", ReleaseRemove)
	if err := s.c.requestRelease(ctx, ReleaseRemove, s.image(ReleaseRemove)); err != nil {
		return err
	}
	terminating := false
	if err := s.waitFor(ctx, "release "+ReleaseRemove+" to complete with the Gadget's delete pending", func(ctx context.Context) (bool, string, error) {
		g, err := s.c.gadget(ctx)
		if err != nil {
			return false, "", err
		}
		terminating = g != nil && g.GetDeletionTimestamp() != nil
		cv, err := s.c.clusterVersion(ctx)
		if err != nil {
			return false, "", err
		}
		done := terminating && completed(cv, ReleaseRemove) && cv.Status.History[0].Verified &&
			hasCondition(cv, configv1.OperatorUpgradeable, configv1.ConditionFalse, clusterversion.ReasonDeletionInProgress)
		return done, fmt.Sprintf("Gadget terminating=%t; %s", terminating, describe(cv)), nil
	}); err != nil {
		return err
	}
	s.say("The update is verified and Completed, because deletes never hold an update back. The Gadget is terminating, but its finalizer keeps it, " +
		"so the deletes after it wait and Upgradeable=False (ResourceDeletionInProgress). The Deletes table is the operator's ledger, " +
		"ConfigMap payload-applier-delete-ledger in openshift-cluster-version.")
	return s.checkpoint(ctx, StepDeletePending)
}

func (s *story) refuseUnsigned(ctx context.Context) error {
	s.title("Step 2 of 5: request an unsigned " + ReleaseRemove)
	s.say("Someone asks for %s, an image of %s that was built outside the release process and never signed. "+
		"The release the cluster runs carries the verification ConfigMap, so its key must have signed the image's digest: "+
		"the operator looks for a signature in openshift-config-managed, then in the release's signature store.",
		s.opts.Releases.Unsigned, ReleaseRemove)
	if err := s.c.requestRelease(ctx, ReleaseRemove, s.opts.Releases.Unsigned); err != nil {
		return err
	}
	if _, err := s.waitForClusterVersion(ctx, "the operator to refuse the unsigned "+ReleaseRemove, func(cv *configv1.ClusterVersion) bool {
		return hasCondition(cv, clusterversion.ConditionReleaseAccepted, configv1.ConditionFalse, clusterversion.ReasonImageVerificationFailed)
	}); err != nil {
		return err
	}
	exists, err := s.c.configMapExists(ctx, "demo-config", UnsignedMarker)
	if err != nil {
		return err
	}
	if exists {
		return fmt.Errorf("ConfigMap demo-config/%s of the unsigned image exists: the operator applied a release it refused", UnsignedMarker)
	}
	s.say("No signature: ReleaseAccepted=False (ImageVerificationFailed), and nothing of the image was applied "+
		"(its ConfigMap demo-config/%s does not exist). The cluster stays on %s. The administrator asks for the signed image instead.",
		UnsignedMarker, ReleaseInstall)
	return s.checkpoint(ctx, StepUnsignedRefused)
}

func (s *story) refuseMinor(ctx context.Context) error {
	s.title("Step 4 of 5: request the minor update " + ReleaseMinor + " while the delete is pending")
	if err := s.c.requestRelease(ctx, ReleaseMinor, s.image(ReleaseMinor)); err != nil {
		return err
	}
	if _, err := s.waitForClusterVersion(ctx, "the operator to refuse "+ReleaseMinor, func(cv *configv1.ClusterVersion) bool {
		c := Condition(cv, clusterversion.ConditionReleaseAccepted)
		return c != nil && c.Status == configv1.ConditionFalse && c.Reason == clusterversion.ReasonPreconditionChecks && strings.Contains(c.Message, ReleaseMinor)
	}); err != nil {
		return err
	}
	s.say("%s is signed, but it is a minor update and Upgradeable=False blocks minor updates, so the operator refuses it: ReleaseAccepted=False (PreconditionChecks). "+
		"The cluster stays on %s; a z-stream update such as 1.0.2 would still go ahead. The request stays, and every pass checks it again.",
		ReleaseMinor, ReleaseRemove)
	return s.checkpoint(ctx, StepMinorRefused)
}

func (s *story) finishCleanup(ctx context.Context) error {
	s.title("Step 5 of 5: the gadget controller finishes its cleanup")
	g, err := s.c.gadget(ctx)
	if err != nil {
		return err
	}
	held := time.Duration(0)
	if g != nil && g.GetDeletionTimestamp() != nil {
		held = time.Since(g.GetDeletionTimestamp().Time)
		if wait := s.opts.FinalizerHold - held; wait > 0 {
			if err := sleep(ctx, wait); err != nil {
				return err
			}
			held = s.opts.FinalizerHold
		}
	}
	s.say("Playing the gadget controller: removing the %s finalizer from Gadget gadget/default, about %s after its delete was requested.",
		gadgetFinalizer, held.Round(time.Second))
	if err := s.c.removeGadgetFinalizer(ctx); err != nil {
		return err
	}
	if err := s.waitFor(ctx, "Gadget gadget/default to be deleted", func(ctx context.Context) (bool, string, error) {
		g, err := s.c.gadget(ctx)
		return g == nil, "the Gadget still exists", err
	}); err != nil {
		return err
	}
	s.say("The Gadget is gone. Within seconds the operator sees it and deletes the rest of the component: the Deployment, the RBAC, the CRD, then the namespace.")
	if _, err := s.waitForClusterVersion(ctx, "every delete to finish and release "+ReleaseMinor+" to complete", func(cv *configv1.ClusterVersion) bool {
		return completed(cv, ReleaseMinor) && cv.Status.History[0].Verified && hasCondition(cv, configv1.OperatorUpgradeable, configv1.ConditionTrue, "")
	}); err != nil {
		return err
	}
	s.say("Every delete is done, so Upgradeable=True, and the operator accepted the %s request it had refused and applied it. "+
		"Its history entry says verified: the signature of its digest was checked with the keys of %s.", ReleaseMinor, ReleaseRemove)
	if err := s.checkpointStatus(ctx); err != nil {
		return err
	}
	if s.opts.Operator != nil {
		lines, err := s.opts.Operator.Metrics(ctx, "payload_applier_deletes_total", "payload_applier_deletes_in_progress", "cluster_version{")
		if err != nil {
			return err
		}
		fmt.Fprintf(s.out, "\n  $ curl -s %s | grep -E '^(payload_applier_deletes|cluster_version\\{)'\n", s.opts.Operator.MetricsURL())
		for _, l := range lines {
			fmt.Fprintln(s.out, "  "+l)
		}
	}
	return s.afterStep(ctx, StepMinorCompleted)
}

// image is the signed image of version, by digest.
func (s *story) image(version string) string { return s.opts.Releases.Signed[version] }

// checkpoint prints the status and hands the step to AfterStep.
func (s *story) checkpoint(ctx context.Context, step Step) error {
	if err := s.checkpointStatus(ctx); err != nil {
		return err
	}
	return s.afterStep(ctx, step)
}

func (s *story) afterStep(ctx context.Context, step Step) error {
	if s.opts.AfterStep == nil {
		return nil
	}
	if err := s.opts.AfterStep(ctx, step); err != nil {
		return fmt.Errorf("after step %q: %w", step, err)
	}
	return nil
}

// checkpointStatus prints `payload-applier status`, as a user would run it.
func (s *story) checkpointStatus(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, s.opts.CLI, "status", "--kubeconfig", s.opts.Kubeconfig).CombinedOutput()
	fmt.Fprintln(s.out, "\n  $ payload-applier status")
	for _, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		fmt.Fprintln(s.out, "  "+line)
	}
	if err != nil {
		return fmt.Errorf("payload-applier status: %w", err)
	}
	return nil
}

// title starts a step.
func (s *story) title(t string) {
	fmt.Fprintf(s.out, "\n==> %s  [%s]\n", t, time.Since(s.start).Round(time.Second))
}

// say prints an explanation, wrapped for a terminal.
func (s *story) say(format string, args ...any) {
	fmt.Fprintln(s.out)
	fmt.Fprintln(s.out, textwrap.Wrap(fmt.Sprintf(format, args...), 78, "    "))
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}
