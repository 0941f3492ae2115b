package operator

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"

	configv1 "github.com/openshift/api/config/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"

	"github.com/payload-applier/payload-applier/pkg/apply"
	"github.com/payload-applier/payload-applier/pkg/apply/cleanup"
	"github.com/payload-applier/payload-applier/pkg/apply/deletion"
	"github.com/payload-applier/payload-applier/pkg/graph"
	"github.com/payload-applier/payload-applier/pkg/payload"
	"github.com/payload-applier/payload-applier/pkg/precondition"
)

// Outcome is what one Sync decided and did.
type Outcome struct {
	// Target is the version the spec asks for.
	Target string
	// Applied is the version this pass applied; it differs from Target when
	// Target was refused or could not be loaded.
	Applied string
	Mode    graph.Mode
	// Result is the engine's pass, nil when nothing was applied.
	Result *apply.SyncResult
	// LoadErr is set when Target's payload failed to load or validate.
	LoadErr error
	// Refused is set when a blocking precondition refused Target.
	Refused error
	// Verdict is Judge's on Target, nil when Target could not be loaded.
	Verdict *Verdict
	// Retrieving is set while Target's release image is being retrieved.
	Retrieving bool
	// RetrieveErr is set when Target's release image cannot be retrieved.
	RetrieveErr error
	// VerifyErr is set when Target's release image failed verification,
	// whether or not force let it through.
	VerifyErr error
	// CurrentErr is set when Target was not applied and the release the
	// cluster already runs could not be loaded to reconcile it instead.
	CurrentErr error
	// AcceptedRisks holds warnings and forced failures of an accepted update.
	AcceptedRisks string
	// Upgradeable is the condition as written.
	Upgradeable configv1.ClusterOperatorStatusCondition
	// LedgerErr is set while the delete ledger cannot be read.
	LedgerErr error
	// CleanupErr is set while the operand cleanup state cannot be read.
	CleanupErr error
	// Invalid lists what failed validation in the spec; this pass acted as
	// if those fields were unset.
	Invalid field.ErrorList
}

// Sync runs one reconcile of the ClusterVersion: pick the target, check it,
// apply it, and write status only when it changed. events, when set,
// receives the engine's progress.
func (o *Operator) Sync(ctx context.Context, events chan<- apply.Event) (*Outcome, error) {
	o.syncMu.Lock()
	defer o.syncMu.Unlock()
	logger := klog.FromContext(ctx)
	start := o.clock.Now()

	cv, err := o.config.ConfigV1().ClusterVersions().Get(ctx, o.cfg.Name, metav1.GetOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) {
			o.metrics.observeStatus(nil)
		}
		return nil, fmt.Errorf("get ClusterVersion %s: %w", o.cfg.Name, err)
	}
	original := cv.DeepCopy()
	status := &cv.Status
	now := metav1.NewTime(start)
	o.refreshFeatureGate(ctx)
	invalid := checkSpec(cv, now)
	out := &Outcome{Target: targetVersion(cv), Invalid: invalid}
	o.pinReleases(ctx, cv)
	o.setCapabilities(ctx, cv, now)

	if out.Target == "" && requestedImage(cv) == "" {
		status.Conditions = setCondition(status.Conditions, configv1.ClusterOperatorStatusCondition{
			Type: ConditionFailing, Status: configv1.ConditionTrue, Reason: ReasonNoDesiredUpdate,
			Message: "No release is requested: set spec.desiredUpdate.version or spec.desiredUpdate.image"}, now)
		return out, o.writeStatus(ctx, original, cv)
	}

	// Upgradeable must be current before a new target is judged by it.
	if err := o.engine.RefreshDeletes(ctx); err != nil {
		logger.Error(err, "Refreshing deletes failed")
	}
	deletes, err := o.engine.Deletes(ctx, o.cfg.Sync.StuckAfter)
	var unreadable *deletion.UnreadableError
	switch {
	case errors.As(err, &unreadable):
		// Reported as Failing after the pass, which still applies.
		out.LedgerErr = err
	case err != nil:
		return nil, err
	}
	cleanups, err := o.engine.Cleanups(ctx)
	switch {
	case errors.As(err, &unreadable):
		// As for the ledger: reported after the pass, which still applies.
		out.CleanupErr = err
	case err != nil:
		return nil, err
	}
	// Only a target Judge checks needs Upgradeable before the walk; the
	// pass observes it once more after the walk either way.
	judging := out.Target == "" || out.Target != status.Desired.Version || len(status.History) == 0
	if judging {
		o.setUpgradeable(ctx, cv, deletes, cleanups, out, now)
	}
	view := o.refreshUpdates(ctx, cv, out.Target, now, true)

	running := status.Desired.Version
	rel := o.acceptTarget(ctx, cv, out, view, now)
	if status.Desired.Version != running {
		// Ask the graph about the new version at once, and list none of
		// the old version's updates meanwhile.
		o.refreshUpdates(ctx, cv, out.Target, now, false)
	}
	if rel == nil && status.Desired.Version != "" {
		if rel, err = o.currentRelease(ctx, cv); err != nil {
			out.CurrentErr = err
		}
	}
	if rel == nil {
		if !judging {
			o.setUpgradeable(ctx, cv, deletes, cleanups, out, now)
		}
		return out, o.writeStatus(ctx, original, cv)
	}
	out.Applied = rel.Version
	out.Mode = modeFor(status.History, status.Desired)
	opts := o.cfg.Sync
	opts.Mode = out.Mode
	if out.Mode == graph.ModeReconcile {
		o.attempt++
	} else {
		o.attempt = 0
	}
	opts.Attempt = o.attempt
	opts.OperandCleanup = cleanup.PolicyOf(cv.Annotations)
	// The force that accepted the update also lets its CRD updates past
	// the findings it accepted.
	opts.Force = out.Mode == graph.ModeUpdate && cv.Spec.DesiredUpdate != nil && cv.Spec.DesiredUpdate.Force
	if current := precondition.LastCompletedVersion(status.History); current != "" && out.Mode == graph.ModeUpdate {
		kind, err := precondition.Classify(current, rel.Version)
		opts.Rollback = err == nil && kind == precondition.UpdateRollback
	}
	res, written, err := o.runPass(ctx, cv, rel, opts, events, now)
	if err != nil {
		return nil, err
	}
	if written != nil {
		// Compare with what the pass wrote and update on top of it, so
		// that the final write is neither skipped as unchanged nor refused
		// as a conflict.
		original = written
		cv.ResourceVersion = written.ResourceVersion
	}
	out.Result = res
	// An update whose deletes could not even be claimed stays in progress,
	// so that the pass after the ledger's repair is still an update and
	// starts them.
	if res.Complete() && (res.LedgerErr == nil || out.Mode != graph.ModeUpdate) {
		completing := len(status.History) > 0 && status.History[0].State != configv1.CompletedUpdate
		status.History = completeHistory(status.History, now)
		if completing {
			o.pruneImageCache(ctx, cv)
			// The graph may have changed while the update ran.
			o.graphs.readAgain()
		}
	}
	out.CleanupErr = res.CleanupErr
	o.setUpgradeable(ctx, cv, res.Deletes, res.Cleanups, out, now)
	progressConditions(status, res, now)
	if len(invalid) > 0 {
		progressingWhileInvalid(status, now)
	}
	if res.CleanupErr != nil {
		status.Conditions = setCondition(status.Conditions, cleanupStateUnreadable(res.CleanupErr), now)
	}
	if res.LedgerErr != nil {
		// The ledger's holds every delete back: it is the one to repair first.
		status.Conditions = setCondition(status.Conditions, ledgerUnreadable(res.LedgerErr), now)
	}
	o.setCleanupCondition(cv, res.Cleanups, now)
	status.ObservedGeneration = cv.Generation
	status.VersionHash = versionHash(rel)
	if o.metrics != nil {
		o.metrics.observeSync(o.clock.Since(start), res)
	}
	return out, o.writeStatus(ctx, original, cv)
}

// targetVersion is the version the spec asks for, or the one already
// desired. A request by image alone names none until its release is read:
// "" then, unless it names the release already desired.
func targetVersion(cv *configv1.ClusterVersion) string {
	if du := cv.Spec.DesiredUpdate; du != nil {
		if du.Version != "" {
			return du.Version
		}
		if du.Image != "" && !sameImage(du.Image, cv.Status.Desired.Image) {
			return ""
		}
	}
	return cv.Status.Desired.Version
}

// acceptTarget loads a new target and runs the preconditions. It returns
// the release to apply, or nil when the target was refused or unloadable and
// the current release should be reconciled instead.
func (o *Operator) acceptTarget(ctx context.Context, cv *configv1.ClusterVersion, out *Outcome, view graphView, now metav1.Time) *payload.Release {
	status := &cv.Status
	t := o.resolveTarget(ctx, cv, out, now)
	if t == nil {
		return nil
	}
	rel := t.rel
	if out.Target == "" {
		// Requested by image alone: its release says which version it is.
		out.Target = rel.Version
	}
	accepted := configv1.ClusterOperatorStatusCondition{
		Type: ConditionReleaseAccepted, Status: configv1.ConditionTrue, Reason: ReasonPayloadLoaded,
		Message: fmt.Sprintf("Payload loaded version=%q", rel.Version)}
	judged := cv
	if len(view.pending) > 0 && len(cv.Status.ConditionalUpdates) == 0 {
		// No answer for the cluster's version yet: a target that the last
		// answer makes a conditional update is judged by its risks, never
		// as unknown.
		c := *cv
		c.Status.ConditionalUpdates = view.pending
		judged = &c
	}
	verdict := Judge(ctx, o.engine, judged, out.Target, rel, view.deprecated)
	out.Verdict = &verdict
	if !verdict.Checked {
		// Already the target: also clears a refusal of a target that was
		// withdrawn since.
		status.Conditions = setCondition(status.Conditions, accepted, now)
		return rel
	}
	if verdict.Blocking {
		out.Refused = verdict.Summary
		o.rejectTarget(cv, ReasonPreconditionChecks, fmt.Sprintf("Preconditions failed for payload loaded version=%q: %v", out.Target, verdict.Summary),
			"PreconditionBlock", fmt.Sprintf("Update to %s refused: %v", out.Target, verdict.Summary), now)
		return nil
	}
	rel, err := o.enableImplicitCapabilities(ctx, cv, rel, now)
	if err != nil {
		out.Refused = err
		o.rejectTarget(cv, ReasonCurrentReleaseUnreadable, fmt.Sprintf("Update to payload loaded version=%q refused: %v", out.Target, err),
			"UpdateRefused", fmt.Sprintf("Update to %s refused: %v", out.Target, err), now)
		return nil
	}
	if t.risk != "" {
		out.AcceptedRisks = t.risk
		o.recorder.Event(o.cvRef, corev1.EventTypeWarning, ReasonImageVerificationFailed, t.risk)
	}
	if verdict.Summary != nil {
		out.AcceptedRisks = strings.TrimPrefix(out.AcceptedRisks+"\n"+verdict.Message, "\n")
		o.recorder.Event(o.cvRef, corev1.EventTypeWarning, "PreconditionWarn", fmt.Sprintf("Update to %s accepted with risks: %v", out.Target, verdict.Summary))
	}
	status.Desired = configv1.Release{Version: rel.Version, Image: t.image, URL: configv1.URL(rel.URL), Channels: rel.Channels}
	status.History = startHistory(status.History, status.Desired, now, out.AcceptedRisks)
	status.History[0].Verified = t.verified
	status.Conditions = setCondition(status.Conditions, accepted, now)
	o.recorder.Event(o.cvRef, corev1.EventTypeNormal, "UpdateAccepted", fmt.Sprintf("Accepted release %s", rel.Version))
	return rel
}

// rejectTarget sets ReleaseAccepted=False and records a warning Event only
// when the condition changes, so that a target refused every pass is
// announced once.
func (o *Operator) rejectTarget(cv *configv1.ClusterVersion, reason, message, eventReason, eventMessage string, now metav1.Time) {
	rejected := configv1.ClusterOperatorStatusCondition{Type: ConditionReleaseAccepted, Status: configv1.ConditionFalse, Reason: reason, Message: message}
	if c := findCondition(cv.Status.Conditions, ConditionReleaseAccepted); c == nil || c.Status != rejected.Status || c.Message != rejected.Message {
		o.recorder.Event(o.cvRef, corev1.EventTypeWarning, eventReason, eventMessage)
	}
	cv.Status.Conditions = setCondition(cv.Status.Conditions, rejected, now)
}

// setUpgradeable observes the cluster now and writes the Upgradeable it
// decides, with the pass's deletes and cleanups.
func (o *Operator) setUpgradeable(ctx context.Context, cv *configv1.ClusterVersion, deletes deletion.Summary, cleanups []cleanup.Record, out *Outcome, now metav1.Time) {
	obs := o.observeUpgradeable(ctx, cv)
	c := decideUpgradeable(obs, upgradeablePass{Deletes: deletes, Cleanups: cleanups, LedgerErr: out.LedgerErr, CleanupErr: out.CleanupErr}, cv.Spec.Overrides)
	cv.Status.Conditions = setCondition(cv.Status.Conditions, c, now)
	out.Upgradeable = c
	if o.metrics != nil {
		o.metrics.observeDeletes(deletes, obs.Operators)
	}
}

// writeStatus updates status only when it changed: a no-op resync writes nothing.
func (o *Operator) writeStatus(ctx context.Context, original, cv *configv1.ClusterVersion) error {
	_, err := o.updateStatus(ctx, original, cv)
	return err
}

// updateStatus is writeStatus that returns the ClusterVersion as written,
// or nil when the status had not changed. It is the one writer of the
// status, and fits it into its limits first.
func (o *Operator) updateStatus(ctx context.Context, original, cv *configv1.ClusterVersion) (*configv1.ClusterVersion, error) {
	o.fitStatus(cv)
	if equality.Semantic.DeepEqual(original.Status, cv.Status) {
		o.metrics.observeStatus(cv)
		return nil, nil
	}
	var written *configv1.ClusterVersion
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		// The typed object serializes spec fields older CRDs lack; the
		// status subresource ignores spec, so skip the warnings.
		var err error
		written, err = o.config.ConfigV1().ClusterVersions().UpdateStatus(ctx, cv, metav1.UpdateOptions{FieldValidation: "Ignore"})
		if err == nil {
			return nil
		}
		latest, getErr := o.config.ConfigV1().ClusterVersions().Get(ctx, cv.Name, metav1.GetOptions{})
		if getErr != nil {
			return err
		}
		latest.Status = cv.Status
		cv = latest
		return err
	})
	if err != nil {
		return nil, err
	}
	o.metrics.observeStatus(written)
	return written, nil
}

// imageFor is where rel was read from: the image its source names, or its
// directory.
func (o *Operator) imageFor(rel *payload.Release) string {
	if image := o.sourceImage(rel.Version); image != "" {
		return image
	}
	if rel.Dir == "" {
		return ""
	}
	return "file://" + rel.Dir
}

// versionHash fingerprints the manifests a release applies.
func versionHash(rel *payload.Release) string {
	h := fnv.New64a()
	var b [8]byte
	for _, m := range rel.Manifests {
		binary.LittleEndian.PutUint64(b[:], m.Hash())
		_, _ = h.Write(b[:])
	}
	return base64.URLEncoding.EncodeToString(h.Sum(nil))
}
