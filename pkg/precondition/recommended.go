package precondition

import (
	"context"
	"fmt"
	"slices"
	"strings"

	configv1 "github.com/openshift/api/config/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Conditional updates, as the CVO names them (pkg/cvo/availableupdates.go):
// the condition on each status.conditionalUpdates entry and its reasons.
const (
	// ConditionRecommended says whether a conditional update is
	// recommended for this cluster.
	ConditionRecommended = "Recommended"
	// ReasonNotExposedToRisks: none of the update's risks applies.
	ReasonNotExposedToRisks = "NotExposedToRisks"
	// ReasonAllExposedRisksAccepted: every risk that applies is named in
	// spec.desiredUpdate.acceptRisks.
	ReasonAllExposedRisksAccepted = "AllExposedRisksAccepted"
	// ReasonEvaluationFailed: whether a risk applies is unknown.
	ReasonEvaluationFailed = "EvaluationFailed"
	// ReasonMultipleReasons: the risks give different reasons.
	ReasonMultipleReasons = "MultipleReasons"
	// ReasonExposedToRisks replaces a risk's name that is no valid reason.
	ReasonExposedToRisks = "ExposedToRisks"

	// NameClusterVersionRecommendedUpdate names the check.
	NameClusterVersionRecommendedUpdate = "ClusterVersionRecommendedUpdate"
	// ReasonNoChannel: no channel, so whether the update is recommended is
	// unknown.
	ReasonNoChannel = "NoChannel"
	// ReasonUnknownUpdate: the target is in neither list of updates.
	ReasonUnknownUpdate = "UnknownUpdate"
	// ReasonUnknownConditionType: an entry lacks its Recommended condition.
	ReasonUnknownConditionType = "UnknownConditionType"
)

// RecommendedUpdate judges the target by the ClusterVersion's lists of
// updates, as the CVO's ClusterVersionRecommendedUpdate does, with one
// difference: a target that is not recommended because a risk applies that
// spec.desiredUpdate.acceptRisks does not name is refused (force accepts
// it), where the CVO only warns and leaves refusing to `oc adm upgrade`;
// this applier's users set spec.desiredUpdate themselves. So is a target
// whose Recommended is Unknown, unless every one of its risks is accepted.
// A target whose risks are all accepted passes with a warning naming them, so that
// history's acceptedRisks records them. With no update graph in use (no
// RetrievedUpdates condition) it passes: nothing recommends anything.
type RecommendedUpdate struct{}

var _ Precondition = RecommendedUpdate{}

// Name returns NameClusterVersionRecommendedUpdate.
func (RecommendedUpdate) Name() string { return NameClusterVersionRecommendedUpdate }

// Run looks the target up in status.conditionalUpdates, then
// status.availableUpdates.
func (r RecommendedUpdate) Run(_ context.Context, rc ReleaseContext) error {
	cv := rc.ClusterVersion
	if cv == nil {
		return nil
	}
	from, to := cv.Status.Desired.Version, rc.DesiredVersion
	warn := func(reason, format string, args ...any) error {
		return &Error{Reason: reason, Message: fmt.Sprintf(format, args...), Name: r.Name(), NonBlockingWarning: true}
	}
	for _, u := range cv.Status.ConditionalUpdates {
		if u.Release.Version != to {
			continue
		}
		c := meta.FindStatusCondition(u.Conditions, ConditionRecommended)
		switch {
		case c == nil:
			return warn(ReasonUnknownConditionType, "Update from %s to %s has a status.conditionalUpdates entry, but no Recommended condition.", from, to)
		case c.Status == metav1.ConditionTrue && c.Reason == ReasonAllExposedRisksAccepted:
			return warn(ReasonAllExposedRisksAccepted, "Update from %s to %s is exposed to risks accepted in spec.desiredUpdate.acceptRisks: %s",
				from, to, strings.Join(riskNames(u.Risks, rc.AcceptRisks, true), ", "))
		case c.Status == metav1.ConditionTrue:
			return nil
		case c.Status == metav1.ConditionFalse:
			return &Error{Reason: c.Reason, Name: r.Name(),
				Message: fmt.Sprintf("Update from %s to %s is not recommended, and spec.desiredUpdate.acceptRisks does not name its risks %s:\n\n%s",
					from, to, strings.Join(riskNames(u.Risks, rc.AcceptRisks, false), ", "), c.Message)}
		default:
			// Unknown: it may be exposed. Refused unless every risk it has
			// is accepted, so that a risk not evaluated yet (as just after
			// a start) or unevaluable lets nothing through unaccepted.
			text := fmt.Sprintf("Update from %s to %s is %s=%s: %s: %s", from, to, c.Type, c.Status, c.Reason, c.Message)
			if unaccepted := riskNames(u.Risks, rc.AcceptRisks, false); len(unaccepted) > 0 {
				return &Error{Reason: c.Reason, Name: r.Name(), Message: fmt.Sprintf("%s\n\nRefused until its risks can be evaluated, or spec.desiredUpdate.acceptRisks names %s.",
					text, strings.Join(unaccepted, ", "))}
			}
			return warn(c.Reason, "%s", text)
		}
	}
	for _, u := range cv.Status.AvailableUpdates {
		if u.Version == to {
			return nil
		}
	}
	retrieved := findCondition(cv.Status.Conditions, configv1.RetrievedUpdates)
	switch {
	case retrieved == nil:
		return nil
	case cv.Spec.Channel == "":
		return warn(ReasonNoChannel, "Configured channel is unset, so the recommended status of updating from %s to %s is unknown.", from, to)
	case retrieved.Status == configv1.ConditionTrue:
		return warn(ReasonUnknownUpdate, "%s=%s (%s), so the update from %s to %s is probably neither recommended nor supported.",
			retrieved.Type, retrieved.Status, retrieved.Reason, from, to)
	default:
		return warn(ReasonUnknownUpdate, "%s=%s (%s), so the recommended status of updating from %s to %s is unknown.",
			retrieved.Type, retrieved.Status, retrieved.Reason, from, to)
	}
}

// riskNames lists the names of risks that accept names (accepted) or
// does not (!accepted).
func riskNames(risks []configv1.ConditionalUpdateRisk, accept []string, accepted bool) []string {
	var out []string
	for _, r := range risks {
		if slices.Contains(accept, r.Name) == accepted {
			out = append(out, r.Name)
		}
	}
	return out
}
