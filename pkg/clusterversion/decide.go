package clusterversion

import (
	"slices"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Observed is what a decision about the ClusterVersion is made from, read
// at one moment. Nothing here is read again while deciding.
type Observed struct {
	// CV is the ClusterVersion as read, with its spec validated
	// (CheckSpec) and its capabilities resolved; nil when the cluster has
	// none.
	CV *configv1.ClusterVersion
	// Upgradeable is the cluster state Upgradeable is judged from, nil
	// when it was not read; Deletes is what the engine knows of its
	// deletes and cleanups.
	Upgradeable *UpgradeableObservation
	Deletes     UpgradeablePass
	// Target, when set, is the requested release as read for judging.
	Target *TargetObservation
	// Pending are the conditional updates of the graph's last answer,
	// while none answers for the cluster's version yet: a target among
	// them is judged by its risks, never as unknown.
	Pending []configv1.ConditionalUpdate
	// Invalid is set when the spec failed validation (CheckSpec).
	Invalid bool
	// CleanupStallAfter is when an operand cleanup reads as stalled.
	CleanupStallAfter time.Duration
	// Patience is how long an update waits on ClusterOperators.
	Patience Patience
}

// Decision is what Decide made of what was observed.
type Decision struct {
	// Upgradeable is the condition to write; its Type is empty when
	// Observed.Upgradeable was not read.
	Upgradeable configv1.ClusterOperatorStatusCondition
	// Verdict is Judge's on Observed.Target, zero without one.
	Verdict Verdict
}

// Decide judges what obs saw: Upgradeable first, then the target by the
// status that carries it, as the operator writes it.
func Decide(obs Observed, now metav1.Time) Decision {
	var d Decision
	if obs.CV != nil && obs.Upgradeable != nil {
		pass := obs.Deletes
		pass.Updating = progressing(obs.CV.Status.Conditions)
		d.Upgradeable = Upgradeable(*obs.Upgradeable, pass, obs.CV.Spec.Overrides)
	}
	if obs.Target == nil {
		return d
	}
	judged := obs.CV
	if judged != nil {
		// A shallow copy: only the conditions change, and the rest can be
		// large (conditional updates).
		c := *judged
		c.Status.Conditions = slices.Clone(c.Status.Conditions)
		judged = &c
		if d.Upgradeable.Type != "" {
			judged.Status.Conditions = SetCondition(judged.Status.Conditions, d.Upgradeable, now)
		}
		if len(obs.Pending) > 0 && len(judged.Status.ConditionalUpdates) == 0 {
			judged.Status.ConditionalUpdates = obs.Pending
		}
	}
	d.Verdict = Judge(judged, *obs.Target)
	return d
}
