package clusterversion

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/payload-applier/payload-applier/pkg/precondition"
	"github.com/payload-applier/payload-applier/pkg/textwrap"
)

// The risk's condition, as the CVO names it; it is reported in the
// cluster_version_risk_conditions metric (the pinned API has no
// status.conditionalUpdateRisks).
const (
	ConditionApplies              = "Applies"
	ReasonMatch                   = "Match"
	ReasonNotMatch                = "NotMatch"
	ReasonRiskEvaluationFailed    = "EvaluationFailed"
	RecommendedMessageNotExposed  = "The update is recommended, because none of the conditional update risks apply to this cluster."
	RecommendedMessageAllAccepted = "The update is recommended, because either risk does not apply to this cluster or it is accepted by cluster admins."
	// maxRecommendedMessageBytes bounds the Recommended condition's message.
	maxRecommendedMessageBytes = 8 << 10
)

// reasonPattern is a valid condition reason; a risk's name that is not one
// is reported as ExposedToRisks.
var reasonPattern = regexp.MustCompile(`^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`)

// RiskResult is whether a risk applies: Applies is True, False or Unknown.
type RiskResult struct {
	Status  metav1.ConditionStatus
	Reason  string
	Message string
}

// Recommended is the Recommended condition of an update with risks, given
// what each risk's evaluation found and the risks the admins accept. It
// combines the risks as the CVO does: False outweighs Unknown, which
// outweighs True; one reason when all agree, MultipleReasons otherwise.
func Recommended(risks []configv1.ConditionalUpdateRisk, results map[string]RiskResult, accept []string) metav1.Condition {
	c := metav1.Condition{Type: precondition.ConditionRecommended, Status: metav1.ConditionTrue,
		Reason: precondition.ReasonNotExposedToRisks, Message: RecommendedMessageNotExposed}
	var messages []string
	for _, risk := range risks {
		r, ok := results[risk.Name]
		if !ok {
			r = RiskResult{metav1.ConditionUnknown, ReasonRiskEvaluationFailed, fmt.Sprintf("failed to find risk condition for risk %s", risk.Name)}
		}
		switch r.Status {
		case metav1.ConditionUnknown:
			c.Status = combinedStatus(c.Status, metav1.ConditionUnknown)
			c.Reason = combinedReason(c.Reason, precondition.ReasonEvaluationFailed)
			messages = append(messages, r.Message)
		case metav1.ConditionTrue:
			if slices.Contains(accept, risk.Name) {
				c.Status = combinedStatus(c.Status, metav1.ConditionTrue)
				c.Reason = combinedReason(c.Reason, precondition.ReasonAllExposedRisksAccepted)
				c.Message = RecommendedMessageAllAccepted
				continue
			}
			c.Status = combinedStatus(c.Status, metav1.ConditionFalse)
			want := precondition.ReasonExposedToRisks
			if reasonPattern.MatchString(risk.Name) {
				want = risk.Name
			}
			c.Reason = combinedReason(c.Reason, want)
			messages = append(messages, fmt.Sprintf("%s %s", risk.Message, risk.URL))
		}
	}
	if len(messages) > 0 {
		c.Message = strings.Join(messages, "\n\n")
	}
	c.Message = textwrap.Bound(c.Message, maxRecommendedMessageBytes)
	return c
}

func combinedStatus(now, want metav1.ConditionStatus) metav1.ConditionStatus {
	switch {
	case now == metav1.ConditionFalse || want == metav1.ConditionFalse:
		return metav1.ConditionFalse
	case now == metav1.ConditionUnknown || want == metav1.ConditionUnknown:
		return metav1.ConditionUnknown
	default:
		return want
	}
}

// combinedReason is the reason of two risks together: a stronger reason
// replaces a weaker (NotExposedToRisks, then AllExposedRisksAccepted,
// then EvaluationFailed, then ExposedToRisks), and two different strong
// ones make MultipleReasons.
func combinedReason(now, want string) string {
	const (
		notExposed = precondition.ReasonNotExposedToRisks
		accepted   = precondition.ReasonAllExposedRisksAccepted
		failed     = precondition.ReasonEvaluationFailed
		exposed    = precondition.ReasonExposedToRisks
	)
	switch {
	case now == notExposed || now == accepted && want != notExposed || now == failed && want == exposed || now == want:
		return want
	case want == notExposed || now == failed && want == accepted || now == exposed && (want == accepted || want == failed):
		return now
	default:
		return precondition.ReasonMultipleReasons
	}
}
