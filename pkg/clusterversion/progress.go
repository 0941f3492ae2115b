package clusterversion

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/payload-applier/payload-applier/pkg/apply/cleanup"
	"github.com/payload-applier/payload-applier/pkg/apply/deletion"
	"github.com/payload-applier/payload-applier/pkg/graph"
	"github.com/payload-applier/payload-applier/pkg/payload"
	"github.com/payload-applier/payload-applier/pkg/precondition"
	"github.com/payload-applier/payload-applier/pkg/textwrap"
)

// Failure is one task of a pass that did not finish, as status tells it.
type Failure struct {
	// Reason classifies it (the engine's apply.Reason).
	Reason string
	// Message is the task's error: for a ClusterOperator, the CVO's text;
	// otherwise the object, its file, and what failed.
	Message string
	// Summary is the reason's short account, for Progressing.
	Summary string
	// Subject names the object.
	Subject string
	// Effect says how it weighs on the update: a failure, a wait (None),
	// a wait that fails after a grace period, or a report.
	Effect payload.Effect
	// Operator names the ClusterOperator, Since is when it was first
	// found short of healthy in this update, and Detail is what the
	// operator says of itself. Failures of several operators with one
	// Reason become one PluralReason, with PluralMessage (a format for
	// their names) and PluralSummary.
	Operator                                   string
	Since                                      time.Time
	Detail                                     string
	PluralReason, PluralMessage, PluralSummary string
}

// Pass is what status needs of one engine pass over a release.
type Pass struct {
	Mode graph.Mode
	// Done and Total count the apply tasks.
	Done, Total int
	// Complete is set when every apply task succeeded.
	Complete bool
	// Failures are the apply tasks that failed or wait, in any order.
	Failures []Failure
	// Deletes and Cleanups are the engine's view once the pass ended.
	Deletes  deletion.Summary
	Cleanups []cleanup.Record
	// LedgerErr and CleanupErr are set while the delete ledger, or the
	// operand cleanup state, cannot be read.
	LedgerErr, CleanupErr error
}

// Patience is how long an update waits on ClusterOperators before status
// says more: the CVO's 40 minutes before a Degraded operator fails the
// update, and 30 (machine-config 90) before a slow one is reported. A
// zero field takes the CVO's value.
type Patience struct {
	Degraded, Slow, SlowMachineConfig time.Duration
}

// Patience's defaults, the CVO's.
const (
	DefaultDegradedPatience          = 40 * time.Minute
	DefaultSlowPatience              = 30 * time.Minute
	DefaultSlowMachineConfigPatience = 90 * time.Minute
	machineConfig                    = "machine-config"
	reasonSlowClusterOperator        = "SlowClusterOperator"
)

func (p Patience) withDefaults() Patience {
	if p.Degraded <= 0 {
		p.Degraded = DefaultDegradedPatience
	}
	if p.Slow <= 0 {
		p.Slow = DefaultSlowPatience
	}
	if p.SlowMachineConfig <= 0 {
		p.SlowMachineConfig = DefaultSlowMachineConfigPatience
	}
	return p
}

// problem is one failure, or the failures of several operators with one
// reason condensed into one, as the CVO's condenseClusterOperators.
type problem struct {
	reason, message, summary string
	effect                   payload.Effect
	// names are the operators (or, for other tasks, the object), since
	// when each has been waited on, and what each says of itself.
	names   []string
	since   []time.Time
	details []string
}

// condense groups the operators' failures by reason; others pass through.
// The result is ordered as the CVO's: others first, then by reason.
func condense(failures []Failure) []problem {
	var out []problem
	byReason := map[string][]Failure{}
	var reasons []string
	for _, f := range failures {
		if f.Operator == "" {
			out = append(out, problem{reason: f.Reason, message: f.Message, summary: f.Summary, effect: f.Effect, names: []string{f.Subject}, since: []time.Time{f.Since}, details: []string{f.Detail}})
			continue
		}
		if _, ok := byReason[f.Reason]; !ok {
			reasons = append(reasons, f.Reason)
		}
		byReason[f.Reason] = append(byReason[f.Reason], f)
	}
	sort.Strings(reasons)
	for _, r := range reasons {
		fs := byReason[r]
		if len(fs) == 1 {
			f := fs[0]
			out = append(out, problem{reason: f.Reason, message: f.Message, summary: f.Summary, effect: f.Effect, names: []string{f.Operator}, since: []time.Time{f.Since}, details: []string{f.Detail}})
			continue
		}
		sort.Slice(fs, func(i, j int) bool { return fs[i].Operator < fs[j].Operator })
		p := problem{reason: fs[0].PluralReason, summary: fs[0].PluralSummary, effect: payload.EffectReport}
		for _, f := range fs {
			p.names = append(p.names, f.Operator)
			p.since = append(p.since, f.Since)
			p.details = append(p.details, f.Detail)
			p.effect = heavier(p.effect, f.Effect)
		}
		p.message = fmt.Sprintf(fs[0].PluralMessage, nameList(p.names))
		out = append(out, p)
	}
	return out
}

// heavier is the effect that weighs more, in the CVO's order: Report,
// None, FailAfterInterval, Fail.
func heavier(a, b payload.Effect) payload.Effect {
	rank := map[payload.Effect]int{payload.EffectReport: 0, payload.EffectNone: 1, payload.EffectFailAfterInterval: 2, payload.EffectFail: 3}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

// multiple is the CVO's MultipleErrors: every distinct message, sorted.
func multiple(ps []problem) problem {
	if len(ps) == 1 {
		return ps[0]
	}
	seen := map[string]bool{}
	var msgs []string
	for _, p := range ps {
		if !seen[p.message] {
			seen[p.message] = true
			msgs = append(msgs, p.message)
		}
	}
	sort.Strings(msgs)
	return problem{reason: ReasonMultipleErrors, summary: "multiple errors are preventing progress",
		message: "Multiple errors are preventing progress:\n* " + strings.Join(msgs, "\n* ")}
}

// judged is what a problem says at a moment.
type judged struct {
	// failing is set when it fails the update now.
	failing bool
	// slow is set for a wait that has lasted longer than expected.
	slow bool
	// progress is what Progressing says of it.
	progress string
}

// judge is the CVO's convertErrorToProgressing for one problem at now.
func judge(p problem, now time.Time, patience Patience) judged {
	switch p.effect {
	case payload.EffectNone:
		var exceeded []string
		mc := false
		for i, name := range p.names {
			limit := patience.Slow
			if name == machineConfig {
				limit = patience.SlowMachineConfig
			}
			if p.since[i].IsZero() || !p.since[i].Before(now.Add(-limit)) {
				continue
			}
			if name == machineConfig {
				mc = true
			} else {
				exceeded = append(exceeded, name)
			}
		}
		slow, mcSlow := minutes(patience.Slow), minutes(patience.SlowMachineConfig)
		switch {
		case len(exceeded) > 0 && !mc:
			return judged{slow: true, progress: fmt.Sprintf("waiting on %s over %s which is longer than expected", nameList(exceeded), slow)}
		case len(exceeded) > 0:
			return judged{slow: true, progress: fmt.Sprintf("waiting on %s over %s and machine-config over %s which is longer than expected", nameList(exceeded), slow, mcSlow)}
		case mc:
			return judged{slow: true, progress: fmt.Sprintf("waiting on machine-config over %s which is longer than expected", mcSlow)}
		}
		return judged{progress: "waiting on " + nameList(p.names)}
	case payload.EffectFailAfterInterval:
		var exceeded []string
		for i, name := range p.names {
			if p.since[i].Before(now.Add(-patience.Degraded)) {
				exceeded = append(exceeded, name)
			}
		}
		if len(exceeded) > 0 {
			return judged{failing: true, progress: fmt.Sprintf("wait has exceeded %s for these operators: %s", minutes(patience.Degraded), nameList(exceeded))}
		}
		return judged{progress: fmt.Sprintf("waiting up to %s on %s", minutes(patience.Degraded), nameList(p.names))}
	case payload.EffectReport:
		return judged{failing: true, progress: p.message}
	}
	return judged{failing: true}
}

// operatorDetails lists, beyond the CVO, what each operator the problems
// name says of itself and how long the update has waited on it: a line
// each, bounded, at most maxNamedObjectsInCondition of them.
func operatorDetails(ps []problem, now time.Time) string {
	var lines []string
	for _, p := range ps {
		for i, d := range p.details {
			if d == "" {
				continue
			}
			line := "* " + d
			if since := p.since[i]; !since.IsZero() && since.Before(now) {
				line += fmt.Sprintf(" (for %s)", now.Sub(since).Round(time.Second))
			}
			lines = append(lines, textwrap.Bound(line, maxDetailBytes))
		}
	}
	if len(lines) == 0 {
		return ""
	}
	sort.Strings(lines)
	if len(lines) > maxNamedObjectsInCondition {
		lines = append(lines[:maxNamedObjectsInCondition], fmt.Sprintf("* and %d more", len(lines)-maxNamedObjectsInCondition))
	}
	return "\nWaited on:\n" + strings.Join(lines, "\n")
}

// maxDetailBytes bounds one operator's line of operatorDetails.
const maxDetailBytes = 512

// sharedReason is the reason the problems share, or MultipleErrors.
func sharedReason(ps []problem) string {
	for _, p := range ps[1:] {
		if p.reason != ps[0].reason {
			return ReasonMultipleErrors
		}
	}
	return ps[0].reason
}

// nameList joins names as the CVO does, naming at most
// maxNamedObjectsInCondition of them: a stuck update can wait on hundreds.
func nameList(names []string) string {
	if len(names) > maxNamedObjectsInCondition {
		return strings.Join(names[:maxNamedObjectsInCondition], ", ") + fmt.Sprintf(" and %d more", len(names)-maxNamedObjectsInCondition)
	}
	return strings.Join(names, ", ")
}

// minutes words a duration as the CVO does: "40 minutes".
func minutes(d time.Duration) string {
	if d%time.Minute == 0 {
		return fmt.Sprintf("%d minutes", int(d/time.Minute))
	}
	return d.String()
}

// WorkingTowards is the Progressing message of an install or update.
func WorkingTowards(version string, done, total int) string {
	if done <= 0 || total <= 0 {
		return "Working towards " + version
	}
	return fmt.Sprintf("Working towards %s: %d of %d done (%d%% complete)", version, done, total, done*100/total)
}

// Progress sets Available, Progressing and Failing from a pass, as the
// CVO's updateClusterVersionStatus; nil sets Available only.
func Progress(status *configv1.ClusterVersionStatus, pass *Pass, patience Patience, now metav1.Time) {
	version := status.Desired.Version
	current := precondition.LastCompletedVersion(status.History)
	if current != "" {
		status.Conditions = SetCondition(status.Conditions, configv1.ClusterOperatorStatusCondition{
			Type: configv1.OperatorAvailable, Status: configv1.ConditionTrue, Message: "Done applying " + current}, now)
	} else {
		status.Conditions = SetCondition(status.Conditions, configv1.ClusterOperatorStatusCondition{
			Type: configv1.OperatorAvailable, Status: configv1.ConditionFalse}, now)
	}
	if pass == nil {
		return
	}
	failing, progressing := judgePass(pass, version, patience.withDefaults(), now.Time)
	status.Conditions = SetCondition(status.Conditions, failing, now)
	status.Conditions = SetCondition(status.Conditions, progressing, now)
}

// judgePass is Failing and Progressing for a pass. A single problem reads
// exactly as the CVO's. Several differ where the CVO falls short: a wait
// (None, or FailAfterInterval within its grace) never fails the update
// because another problem came with it, Progressing names what fails
// rather than "an unknown error has occurred: MultipleErrors", and waits
// alone read as waits.
func judgePass(pass *Pass, version string, patience Patience, now time.Time) (failing, progressing configv1.ClusterOperatorStatusCondition) {
	failing = configv1.ClusterOperatorStatusCondition{Type: ConditionFailing, Status: configv1.ConditionFalse}
	progressing = configv1.ClusterOperatorStatusCondition{Type: configv1.OperatorProgressing}
	reconciling := pass.Mode == graph.ModeReconcile
	problems := condense(pass.Failures)

	// Waits of one effect are judged together, as one condensed error.
	var fails, waits []problem
	var byEffect []problem
	for _, p := range problems {
		j := judge(p, now, patience)
		if reconciling {
			// No grace while reconciling, as the CVO; unlike the CVO a
			// wait is not a failure there either.
			j = judged{failing: p.effect != payload.EffectNone}
		}
		if j.failing {
			fails = append(fails, p)
			continue
		}
		waits = append(waits, p)
		i := slices.IndexFunc(byEffect, func(q problem) bool { return q.effect == p.effect })
		if i < 0 {
			byEffect = append(byEffect, problem{effect: p.effect})
			i = len(byEffect) - 1
		}
		byEffect[i].names = append(byEffect[i].names, p.names...)
		byEffect[i].since = append(byEffect[i].since, p.since...)
		byEffect[i].details = append(byEffect[i].details, p.details...)
	}
	var phrases []string
	slow := false
	for _, p := range byEffect {
		j := judge(p, now, patience)
		if reconciling {
			j = judged{progress: "waiting on " + nameList(p.names)}
		}
		phrases = append(phrases, j.progress)
		slow = slow || j.slow
	}

	switch {
	case len(fails) > 0:
		f := multiple(fails)
		failing.Status, failing.Reason, failing.Message = configv1.ConditionTrue, f.reason, f.message+operatorDetails(fails, now)
		msg := f.summary
		if j := judge(f, now, patience); j.progress != "" && !reconciling {
			msg = j.progress
		}
		if msg == "" {
			msg = "an unknown error has occurred: " + f.reason
		}
		progressing.Reason = f.reason
		if reconciling {
			progressing.Status, progressing.Message = configv1.ConditionFalse, fmt.Sprintf("Error while reconciling %s: %s", version, msg)
		} else {
			progressing.Status, progressing.Message = configv1.ConditionTrue, fmt.Sprintf("Unable to apply %s: %s", version, msg)
		}
		return failing, progressing
	case len(waits) > 0:
		progress := strings.Join(phrases, "; ")
		if slow {
			failing.Status, failing.Reason, failing.Message = configv1.ConditionUnknown, reasonSlowClusterOperator, progress+operatorDetails(waits, now)
		}
		progressing.Reason = sharedReason(waits)
		if reconciling {
			progressing.Status, progressing.Message = configv1.ConditionFalse, fmt.Sprintf("Error while reconciling %s: %s", version, progress)
			return failing, progressing
		}
		progressing.Status = configv1.ConditionTrue
		if pass.Done > 0 && pass.Total > 0 {
			progressing.Message = WorkingTowards(version, pass.Done, pass.Total) + ", " + progress
		} else {
			progressing.Message = fmt.Sprintf("Working towards %s: %s", version, progress)
		}
		return failing, progressing
	case pass.Complete || reconciling:
		progressing.Status, progressing.Message = configv1.ConditionFalse, "Cluster version is "+version
	default:
		progressing.Status, progressing.Message = configv1.ConditionTrue, WorkingTowards(version, pass.Done, pass.Total)
	}
	return failing, progressing
}
