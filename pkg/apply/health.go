package apply

import (
	"fmt"
	"sort"
	"strings"

	configv1 "github.com/openshift/api/config/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/payload-applier/payload-applier/pkg/graph"
	"github.com/payload-applier/payload-applier/pkg/payload"
)

// Health is the outcome of a health check on a live object.
type Health struct {
	// Reason is empty when the object is healthy.
	Reason  Reason
	Effect  payload.Effect
	Message string
	// Detail is what the object says of itself: for a ClusterOperator,
	// its condition's reason and message, which the CVO only logs.
	Detail string
	// Operator names the ClusterOperator judged. Several operators failing
	// for the same reason become one PluralReason, with PluralMessage
	// formatting their names, as the CVO condenses them.
	Operator      string
	PluralReason  Reason
	PluralMessage string
}

// Healthy reports whether the check passed.
func (h Health) Healthy() bool { return h.Reason == "" }

// CheckHealth judges a live object by the CVO's rules. required is the
// manifest, needed for ClusterOperators, whose manifest lists the versions the
// live status must reach. Kinds without rules are healthy.
func CheckHealth(required, live *unstructured.Unstructured, mode graph.Mode) Health {
	gk := live.GroupVersionKind().GroupKind()
	switch gk {
	case payload.CRDKind:
		return crdHealth(live)
	case payload.DeploymentKind:
		return deploymentHealth(live)
	case payload.DaemonSetKind:
		return terminatingHealth(live)
	case payload.JobKind:
		return jobHealth(live)
	case payload.ClusterOperatorKind:
		return clusterOperatorHealth(required, live, mode)
	}
	return Health{}
}

// condition returns the status and reason of a status condition, or "" when absent.
func condition(obj *unstructured.Unstructured, condType string) (status, reason, message string) {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]interface{})
		if !ok || m["type"] != condType {
			continue
		}
		s, _ := m["status"].(string)
		r, _ := m["reason"].(string)
		msg, _ := m["message"].(string)
		return s, r, msg
	}
	return "", "", ""
}

func crdHealth(live *unstructured.Unstructured) Health {
	if s, _, _ := condition(live, "Established"); s != "True" {
		return Health{Reason: ReasonCRDNotEstablished, Effect: payload.EffectNone,
			Message: fmt.Sprintf("CustomResourceDefinition %s is not Established yet", live.GetName())}
	}
	return Health{}
}

func terminatingHealth(live *unstructured.Unstructured) Health {
	if live.GetDeletionTimestamp() != nil {
		return Health{Reason: ReasonWorkloadNotAvail, Effect: payload.EffectFail,
			Message: fmt.Sprintf("%s %s/%s is being deleted", live.GetKind(), live.GetNamespace(), live.GetName())}
	}
	return Health{}
}

func deploymentHealth(live *unstructured.Unstructured) Health {
	if h := terminatingHealth(live); !h.Healthy() {
		return h
	}
	name := live.GetNamespace() + "/" + live.GetName()
	if s, r, msg := condition(live, "ReplicaFailure"); s == "True" {
		return Health{Reason: ReasonWorkloadNotProgress, Effect: payload.EffectFail,
			Message: fmt.Sprintf("deployment %s has a replica failure %s: %s", name, r, msg)}
	}
	avail, _, _ := condition(live, "Available")
	prog, progReason, progMsg := condition(live, "Progressing")
	if avail == "False" && prog == "False" {
		return Health{Reason: ReasonWorkloadNotAvail, Effect: payload.EffectFail,
			Message: fmt.Sprintf("deployment %s is not available and not progressing: %s", name, progMsg)}
	}
	if prog == "False" && progReason == "ProgressDeadlineExceeded" {
		return Health{Reason: ReasonWorkloadNotProgress, Effect: payload.EffectFail,
			Message: fmt.Sprintf("deployment %s is not progressing: %s", name, progMsg)}
	}
	return Health{}
}

func jobHealth(live *unstructured.Unstructured) Health {
	name := live.GetNamespace() + "/" + live.GetName()
	succeeded := nestedCount(live, "status", "succeeded")
	if succeeded > 0 {
		return Health{}
	}
	if s, r, msg := condition(live, "Failed"); s == "True" {
		return Health{Reason: ReasonJobFailed, Effect: payload.EffectFail,
			Message: fmt.Sprintf("job %s failed (%s): %s", name, r, msg)}
	}
	active := nestedCount(live, "status", "active")
	failed := nestedCount(live, "status", "failed")
	if active == 0 && failed > 0 {
		return Health{Reason: ReasonJobFailed, Effect: payload.EffectFail,
			Message: fmt.Sprintf("job %s has %.0f failed pods and none active", name, failed)}
	}
	return Health{Reason: ReasonJobNotComplete, Effect: payload.EffectNone,
		Message: fmt.Sprintf("job %s has not completed", name)}
}

// clusterOperatorHealth is the CVO's checkOperatorHealth: the same
// conditions, reasons, texts and effects. An install lets versions lag
// and only reports a Degraded operator (payload.EffectReport), as the CVO's
// InitializingMode does.
func clusterOperatorHealth(required, live *unstructured.Unstructured, mode graph.Mode) Health {
	var want, have configv1.ClusterOperator
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(required.Object, &want); err != nil {
		return operatorHealth(live.GetName(), ReasonCONoVersions, payload.EffectFail, "cannot read the manifest's status: "+err.Error())
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(live.Object, &have); err != nil {
		return operatorHealth(live.GetName(), ReasonCONotAvailable, payload.EffectFail, "cannot read its status: "+err.Error())
	}
	return OperatorHealth(&want, &have, mode)
}

// OperatorHealth judges have against the versions want declares.
func OperatorHealth(want, have *configv1.ClusterOperator, mode graph.Mode) Health {
	name := want.Name
	if len(want.Status.Versions) == 0 {
		return operatorHealth(name, ReasonCONoVersions, payload.EffectFail, "")
	}
	undone := make([]string, 0, len(want.Status.Versions))
	for _, v := range want.Status.Versions {
		current := ""
		for _, h := range have.Status.Versions {
			if h.Name == v.Name {
				current = h.Version
				break
			}
		}
		switch {
		case current == v.Version:
		case current == "":
			undone = append(undone, fmt.Sprintf("%s to %s", v.Name, v.Version))
		default:
			undone = append(undone, fmt.Sprintf("%s from %s to %s", v.Name, current, v.Version))
		}
	}
	sort.Strings(undone)

	available, progressing, degraded := false, true, true
	var availableCond, degradedCond *configv1.ClusterOperatorStatusCondition
	for i := range have.Status.Conditions {
		c := &have.Status.Conditions[i]
		switch c.Type {
		case configv1.OperatorAvailable:
			available, availableCond = c.Status == configv1.ConditionTrue, c
		case configv1.OperatorProgressing:
			if c.Status == configv1.ConditionFalse {
				progressing = false
			}
		case configv1.OperatorDegraded:
			degraded, degradedCond = c.Status != configv1.ConditionFalse, c
		}
	}
	detail := fmt.Sprintf("cluster operator %s: available=%v, progressing=%v, degraded=%v, undone=%s",
		name, available, progressing, degraded, strings.Join(undone, ", "))
	switch {
	case !available:
		if availableCond != nil && availableCond.Message != "" {
			detail = fmt.Sprintf("cluster operator %s is %s=%s: %s: %s", name, availableCond.Type, availableCond.Status, availableCond.Reason, availableCond.Message)
		}
		return operatorHealth(name, ReasonCONotAvailable, payload.EffectFail, detail)
	case degraded:
		if degradedCond != nil && degradedCond.Message != "" {
			detail = fmt.Sprintf("cluster operator %s is %s=%s: %s, %s", name, degradedCond.Type, degradedCond.Status, degradedCond.Reason, degradedCond.Message)
		}
		effect := payload.EffectFailAfterInterval
		if mode == graph.ModeInstall {
			effect = payload.EffectReport
		}
		return operatorHealth(name, ReasonCODegraded, effect, detail)
	case len(undone) > 0 && mode != graph.ModeInstall:
		// The CVO's text, and which versions lag, which it leaves out.
		detail = fmt.Sprintf("cluster operator %s is available and not degraded but has not finished updating to target version: %s", name, strings.Join(undone, ", "))
		return operatorHealth(name, ReasonCOUpdating, payload.EffectNone, detail)
	}
	return Health{}
}

// DegradedPolicy is what a Degraded ClusterOperator does to an update.
type DegradedPolicy string

const (
	// DegradedBlock is the CVO's: later run levels wait, and after a
	// grace period the update fails.
	DegradedBlock DegradedPolicy = "Block"
	// DegradedProceed lets the update go on past an operator that is
	// Available at its version but Degraded, and complete: the operator is
	// reported with a Warning Event, and its own conditions and alerts
	// remain. Users have asked for it since 2020
	// (openshift/cluster-version-operator#482, openshift/enhancements#1719).
	DegradedProceed DegradedPolicy = "Proceed"
)

// DegradedPolicyAnnotation on the ClusterVersion sets the DegradedPolicy.
const DegradedPolicyAnnotation = "payload-applier.io/degraded-operators"

// DegradedPolicyOf reads the policy from the ClusterVersion's annotations.
func DegradedPolicyOf(annotations map[string]string) DegradedPolicy {
	if DegradedPolicy(annotations[DegradedPolicyAnnotation]) == DegradedProceed {
		return DegradedProceed
	}
	return DegradedBlock
}

// operatorTexts are the CVO's messages for one operator and for several
// sharing a reason, and the plural reason.
var operatorTexts = map[Reason]struct {
	one, many    string
	pluralReason Reason
}{
	ReasonCONoVersions:   {"Cluster operator %s does not declare expected versions", "Cluster operators %s do not declare expected versions", ReasonCOsNoVersions},
	ReasonCONotAvailable: {"Cluster operator %s is not available", "Cluster operators %s are not available", ReasonCOsNotAvailable},
	ReasonCODegraded:     {"Cluster operator %s is degraded", "Cluster operators %s are degraded", ReasonCOsDegraded},
	ReasonCOUpdating:     {"Cluster operator %s is updating versions", "Cluster operators %s are updating versions", ReasonCOsUpdating},
}

func operatorHealth(name string, reason Reason, effect payload.Effect, detail string) Health {
	t := operatorTexts[reason]
	return Health{Reason: reason, Effect: effect, Message: fmt.Sprintf(t.one, name), Detail: detail,
		Operator: name, PluralReason: t.pluralReason, PluralMessage: t.many}
}

// nestedCount reads a number whatever its decoded type.
func nestedCount(obj *unstructured.Unstructured, fields ...string) float64 {
	v, _, _ := unstructured.NestedFieldNoCopy(obj.Object, fields...)
	n, _ := number(v)
	return n
}
