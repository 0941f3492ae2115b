package operator

import (
	"cmp"
	"context"
	"errors"
	"fmt"
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
	"github.com/payload-applier/payload-applier/pkg/clusterversion"
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
	Verdict *clusterversion.Verdict
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

// Sync runs one reconcile of the ClusterVersion: observe, decide, apply,
// observe what the pass changed, and write status only when it changed.
// events, when set, receives the engine's progress.
func (o *Operator) Sync(ctx context.Context, events chan<- apply.Event) (*Outcome, error) {
	o.syncMu.Lock()
	defer o.syncMu.Unlock()
	start := o.clock.Now()
	now := metav1.NewTime(start)

	cv, err := o.readClusterVersion(ctx)
	if err != nil {
		if apierrors.IsNotFound(err) {
			o.metrics.observeStatus(nil)
		}
		return nil, fmt.Errorf("get ClusterVersion %s: %w", o.cfg.Name, err)
	}
	original := cv.DeepCopy()
	status := &cv.Status
	o.writer.judged = nil
	if restart := o.reader.refreshFeatureGate(ctx, o.config, &o.caches); restart != "" {
		o.recorder.Event(o.cvRef, corev1.EventTypeNormal, EventFeatureSetChanged, restart)
		o.attempt = 0
	}
	invalid := clusterversion.CheckSpec(cv, now)
	out := &Outcome{Target: targetVersion(cv), Invalid: invalid}
	o.reader.pinReleases(ctx, cv)
	setCapabilities(ctx, cv, o.cfg.LoadOptions.AlwaysEnabled, now, o.metrics)
	if out.Target == "" && requestedImage(cv) == "" && o.cfg.RunningRelease != "" {
		// Nothing requested and nothing installed: the release this
		// operator ships in, as the CVO installs its own.
		out.Target = o.cfg.RunningRelease
	}
	if out.Target == "" && requestedImage(cv) == "" {
		status.Conditions = clusterversion.SetCondition(status.Conditions, configv1.ClusterOperatorStatusCondition{
			Type: clusterversion.ConditionFailing, Status: configv1.ConditionTrue, Reason: clusterversion.ReasonNoDesiredUpdate,
			Message: "No release is requested: set spec.desiredUpdate.version or spec.desiredUpdate.image"}, now)
		return out, o.writer.writeStatus(ctx, original, cv)
	}

	obs, err := o.observeBefore(ctx, cv, out, now)
	if err != nil {
		return nil, err
	}
	view := o.updates.refreshUpdates(ctx, cv, out.Target, now, true)
	o.writer.judged = view.risks
	running := status.Desired.Version
	rel := o.acceptTarget(ctx, cv, out, view, obs, now)
	if status.Desired.Version != running {
		// Ask the graph about the new version at once, and list none of
		// the old version's updates meanwhile.
		o.writer.judged = o.updates.refreshUpdates(ctx, cv, out.Target, now, false).risks
	}
	if rel == nil && status.Desired.Version != "" {
		if rel, err = o.reader.currentRelease(ctx, cv); err != nil {
			out.CurrentErr = err
		}
	}
	if rel == nil {
		if obs.Upgradeable == nil {
			up := o.observe.upgradeable(ctx, cv)
			obs.Upgradeable = &up
			setUpgradeable(cv, obs, out, now)
		}
		o.metrics.observeDeletes(obs.Deletes.Deletes, obs.Upgradeable.Operators)
		return out, o.writer.writeStatus(ctx, original, cv)
	}

	res, written, err := o.applyRelease(ctx, cv, rel, out, events, now)
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
	// What the pass changed changed when it ended, not when it began.
	o.finishPass(ctx, cv, obs, rel, res, out, metav1.NewTime(o.clock.Now()))
	o.metrics.observeSync(o.clock.Since(start), res)
	klog.FromContext(ctx).V(2).Info("Pass ended", "version", rel.Version, "mode", res.Mode, "done", res.Done, "total", res.Total,
		"complete", res.Complete(), "duration", o.clock.Since(start))
	return out, o.writer.writeStatus(ctx, original, cv)
}

// finishPass observes again what the pass changed, so that Upgradeable
// sees what it applied, and sets the status the pass leads to.
func (o *Operator) finishPass(ctx context.Context, cv *configv1.ClusterVersion, obs clusterversion.Observed, rel *payload.Release,
	res *apply.SyncResult, out *Outcome, now metav1.Time) {
	out.Result, out.CleanupErr = res, res.CleanupErr
	obs.CV = cv
	up := o.observe.upgradeable(ctx, cv)
	obs.Upgradeable = &up
	next, completed := clusterversion.Status(obs, rel, passOf(res), now)
	cv.Status = next
	out.Upgradeable = *clusterversion.FindCondition(cv.Status.Conditions, configv1.OperatorUpgradeable)
	if completed {
		o.reader.pruneImageCache(ctx, cv)
		// The graph may have changed while the update ran.
		o.graphs.readAgain()
	}
	o.metrics.observeDeletes(res.Deletes, up.Operators)
	o.metrics.observeCleanups(res.Cleanups)
}

// observeBefore reads what the pass's decisions need before it runs: the
// engine's deletes and cleanups, and, when a target is to be judged, the
// cluster's Upgradeable state, which it writes as decided.
func (o *Operator) observeBefore(ctx context.Context, cv *configv1.ClusterVersion, out *Outcome, now metav1.Time) (clusterversion.Observed, error) {
	if err := o.engine.RefreshDeletes(ctx); err != nil {
		klog.FromContext(ctx).Error(err, "Refreshing deletes failed")
	}
	obs := clusterversion.Observed{CV: cv, Invalid: len(out.Invalid) > 0,
		CleanupStallAfter: cmp.Or(o.cfg.OperandCleanupStallAfter, apply.DefaultStuckAfter), Patience: o.cfg.OperatorPatience}
	var err error
	if obs.Deletes, err = o.observe.deletes(ctx, o.cfg.Sync.StuckAfter); err != nil {
		return obs, err
	}
	// Reported as Failing after the pass, which still applies.
	out.LedgerErr, out.CleanupErr = obs.Deletes.LedgerErr, obs.Deletes.CleanupErr
	// Only a target Judge checks needs Upgradeable before the walk; the
	// pass observes it once more after the walk either way.
	if out.Target == "" || !clusterversion.AlreadyTarget(cv, out.Target) {
		up := o.observe.upgradeable(ctx, cv)
		obs.Upgradeable = &up
		setUpgradeable(cv, obs, out, now)
	}
	return obs, nil
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

// acceptTarget loads a new target and decides on it. It returns the
// release to apply, or nil when the target was refused or unloadable and
// the current release should be reconciled instead.
func (o *Operator) acceptTarget(ctx context.Context, cv *configv1.ClusterVersion, out *Outcome, view graphView, obs clusterversion.Observed, now metav1.Time) *payload.Release {
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
		Type: clusterversion.ConditionReleaseAccepted, Status: configv1.ConditionTrue, Reason: clusterversion.ReasonPayloadLoaded,
		Message: fmt.Sprintf("Payload loaded version=%q", rel.Version)}
	target, _ := o.observe.targetChecks(ctx, cv, rel, forces(cv, out.Target), view.deprecated)
	target.Version = out.Target
	obs.CV, obs.Target, obs.Pending = cv, &target, view.pending
	verdict := clusterversion.Decide(obs, now).Verdict
	out.Verdict = &verdict
	if !verdict.Checked {
		// Already the target: also clears a refusal of a target that was
		// withdrawn since.
		status.Conditions = clusterversion.SetCondition(status.Conditions, accepted, now)
		return rel
	}
	if verdict.Blocking {
		out.Refused = verdict.Summary
		o.rejectTarget(cv, refusal{clusterversion.ReasonPreconditionChecks, fmt.Sprintf("Preconditions failed for payload loaded version=%q: %v", out.Target, verdict.Summary),
			"PreconditionBlock", fmt.Sprintf("Update to %s refused: %v", out.Target, verdict.Summary)}, now)
		return nil
	}
	rel, err := o.enableImplicitCapabilities(ctx, cv, rel, now)
	if err != nil {
		out.Refused = err
		o.rejectTarget(cv, refusal{clusterversion.ReasonCurrentReleaseUnreadable, fmt.Sprintf("Update to payload loaded version=%q refused: %v", out.Target, err),
			"UpdateRefused", fmt.Sprintf("Update to %s refused: %v", out.Target, err)}, now)
		return nil
	}
	if t.risk != "" {
		out.AcceptedRisks = t.risk
		o.recorder.Event(o.cvRef, corev1.EventTypeWarning, clusterversion.ReasonImageVerificationFailed, t.risk)
	}
	if verdict.Summary != nil {
		out.AcceptedRisks = strings.TrimPrefix(out.AcceptedRisks+"\n"+verdict.Message, "\n")
		o.recorder.Event(o.cvRef, corev1.EventTypeWarning, "PreconditionWarn", fmt.Sprintf("Update to %s accepted with risks: %v", out.Target, verdict.Summary))
	}
	status.Desired = configv1.Release{Version: rel.Version, Image: t.image, URL: configv1.URL(rel.URL), Channels: rel.Channels}
	status.History = clusterversion.StartHistory(status.History, status.Desired, now, out.AcceptedRisks)
	status.History[0].Verified = t.verified
	status.Conditions = clusterversion.SetCondition(status.Conditions, accepted, now)
	o.recorder.Event(o.cvRef, corev1.EventTypeNormal, "UpdateAccepted", fmt.Sprintf("Accepted release %s", rel.Version))
	return rel
}

// applyRelease runs the engine over rel in the mode the history gives.
func (o *Operator) applyRelease(ctx context.Context, cv *configv1.ClusterVersion, rel *payload.Release, out *Outcome,
	events chan<- apply.Event, now metav1.Time) (*apply.SyncResult, *configv1.ClusterVersion, error) {
	status := &cv.Status
	out.Applied = rel.Version
	out.Mode = clusterversion.ModeFor(status.History, status.Desired)
	opts := o.cfg.Sync
	opts.Mode = out.Mode
	if out.Mode == graph.ModeReconcile {
		o.attempt++
	} else {
		o.attempt = 0
	}
	opts.Attempt = o.attempt
	opts.OperandCleanup = cleanup.PolicyOf(cv.Annotations)
	opts.DegradedOperators = apply.DegradedPolicyOf(cv.Annotations)
	// The force that accepted the update also lets its CRD updates past
	// the findings it accepted.
	opts.Force = out.Mode == graph.ModeUpdate && cv.Spec.DesiredUpdate != nil && cv.Spec.DesiredUpdate.Force
	if current := precondition.LastCompletedVersion(status.History); current != "" && out.Mode == graph.ModeUpdate {
		kind, err := precondition.Classify(current, rel.Version)
		opts.Rollback = err == nil && kind == precondition.UpdateRollback
	}
	return o.runPass(ctx, cv, rel, opts, events, now)
}

// refusal is why a target is not accepted: ReleaseAccepted's reason and
// message, and the Warning Event's.
type refusal struct {
	reason, message     string
	event, eventMessage string
}

// rejectTarget sets ReleaseAccepted=False and records a warning Event only
// when the condition changes, so that a target refused every pass is
// announced once.
func (o *Operator) rejectTarget(cv *configv1.ClusterVersion, r refusal, now metav1.Time) {
	rejected := configv1.ClusterOperatorStatusCondition{Type: clusterversion.ConditionReleaseAccepted, Status: configv1.ConditionFalse, Reason: r.reason, Message: r.message}
	if c := clusterversion.FindCondition(cv.Status.Conditions, clusterversion.ConditionReleaseAccepted); c == nil || c.Status != rejected.Status || c.Message != rejected.Message {
		o.recorder.Event(o.cvRef, corev1.EventTypeWarning, r.event, r.eventMessage)
	}
	cv.Status.Conditions = clusterversion.SetCondition(cv.Status.Conditions, rejected, now)
}

// setUpgradeable writes the Upgradeable that obs decides.
func setUpgradeable(cv *configv1.ClusterVersion, obs clusterversion.Observed, out *Outcome, now metav1.Time) {
	c := clusterversion.Decide(obs, now).Upgradeable
	cv.Status.Conditions = clusterversion.SetCondition(cv.Status.Conditions, c, now)
	out.Upgradeable = c
}

// writeStatus updates status only when it changed: a no-op resync writes nothing.
func (w *statusWriter) writeStatus(ctx context.Context, original, cv *configv1.ClusterVersion) error {
	_, err := w.updateStatus(ctx, original, cv)
	return err
}

// updateStatus is writeStatus that returns the ClusterVersion as written,
// or nil when the status had not changed. It is the one writer of the
// status: it lays the risk status over it, fits both into their limits,
// and writes them together.
func (w *statusWriter) updateStatus(ctx context.Context, original, cv *configv1.ClusterVersion) (*configv1.ClusterVersion, error) {
	// Without conditional updates there is no risk status to keep: every
	// write of this writer sets both together.
	var held newerFields
	if len(original.Status.ConditionalUpdates) > 0 || len(cv.Status.ConditionalUpdates) > 0 {
		var err error
		if held, err = w.fields.of(ctx, original); err != nil {
			// Written anew from the evaluations, with new transition times.
			klog.FromContext(ctx).V(2).Info("Reading the risk status failed", "err", err)
		}
	}
	applies := clusterversion.RiskStatus(cv.Status.ConditionalUpdates, w.judged, held.applies, metav1.NewTime(w.clock.Now()))
	w.fitStatus(cv, applies)
	applies = keptApplies(applies, cv.Status.ConditionalUpdates)
	if equality.Semantic.DeepEqual(original.Status, cv.Status) && (w.riskStatusPruned || sameApplies(held.applies, applies)) {
		w.metrics.observeStatus(cv)
		return nil, nil
	}
	var written *configv1.ClusterVersion
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		body, err := statusBody(cv, applies)
		if err != nil {
			return err
		}
		raw, err := w.put(ctx, cv.Name, body)
		if err == nil {
			var fields newerFields
			if written, fields, err = decodeWritten(raw); err != nil {
				return fmt.Errorf("reading the status written: %w", err)
			}
			w.riskStatusPruned = len(applies) > 0 && len(fields.applies) == 0
			w.fields.remember(fields)
			w.remember(cv.ResourceVersion, written.DeepCopy())
			return nil
		}
		latest, getErr := w.config.ConfigV1().ClusterVersions().Get(ctx, cv.Name, metav1.GetOptions{})
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
	w.metrics.observeStatus(written)
	return written, nil
}

// imageFor is where rel was read from: the image its source names, or its
// directory.
func (r *releaseReader) imageFor(rel *payload.Release) string {
	if image := r.sourceImage(rel.Version); image != "" {
		return image
	}
	if rel.Dir == "" {
		return ""
	}
	return "file://" + rel.Dir
}

// passOf is what status needs of the engine's pass.
func passOf(res *apply.SyncResult) *clusterversion.Pass {
	p := &clusterversion.Pass{Mode: res.Mode, Done: res.Done, Total: res.Total, Complete: res.Complete(),
		Deletes: res.Deletes, Cleanups: res.Cleanups, LedgerErr: res.LedgerErr, CleanupErr: res.CleanupErr}
	for _, err := range res.Errors {
		var te *apply.TaskError
		if !errors.As(err, &te) {
			// Not about one object: its message alone, as the CVO words it.
			p.Failures = append(p.Failures, clusterversion.Failure{Reason: string(apply.ReasonFailed), Message: err.Error(),
				Summary: apply.Summary(apply.ReasonFailed, ""), Effect: payload.EffectFail})
			continue
		}
		f := clusterversion.Failure{Reason: string(te.Reason), Message: te.Error(), Summary: apply.Summary(te.Reason, ""),
			Subject: te.Subject.String(), Effect: te.Effect}
		if te.Operator != "" {
			// As the CVO words an operator's health: its own text alone.
			f.Message, f.Summary, f.Operator, f.Since, f.Detail = te.Message, apply.Summary(te.Reason, te.Operator), te.Operator, te.Since, te.Detail
			f.PluralReason, f.PluralMessage, f.PluralSummary = string(te.PluralReason), te.PluralMessage, apply.Summary(te.PluralReason, "")
		}
		p.Failures = append(p.Failures, f)
	}
	return p
}
