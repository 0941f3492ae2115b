package apply

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/payload-applier/payload-applier/pkg/payload"
)

// Health is the outcome of a health check on a live object.
type Health struct {
	// Reason is empty when the object is healthy.
	Reason  Reason
	Effect  Effect
	Message string
}

// Healthy reports whether the check passed.
func (h Health) Healthy() bool { return h.Reason == "" }

// CheckHealth judges a live object by the CVO's rules. required is the
// manifest, needed for ClusterOperators, whose manifest lists the versions the
// live status must reach. Kinds without rules are healthy.
func CheckHealth(required, live *unstructured.Unstructured) Health {
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
		return clusterOperatorHealth(required, live)
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
		return Health{Reason: ReasonCRDNotEstablished, Effect: EffectNone,
			Message: fmt.Sprintf("CustomResourceDefinition %s is not Established yet", live.GetName())}
	}
	return Health{}
}

func terminatingHealth(live *unstructured.Unstructured) Health {
	if live.GetDeletionTimestamp() != nil {
		return Health{Reason: ReasonWorkloadNotAvail, Effect: EffectFail,
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
		return Health{Reason: ReasonWorkloadNotProgress, Effect: EffectFail,
			Message: fmt.Sprintf("deployment %s has a replica failure %s: %s", name, r, msg)}
	}
	avail, _, _ := condition(live, "Available")
	prog, progReason, progMsg := condition(live, "Progressing")
	if avail == "False" && prog == "False" {
		return Health{Reason: ReasonWorkloadNotAvail, Effect: EffectFail,
			Message: fmt.Sprintf("deployment %s is not available and not progressing: %s", name, progMsg)}
	}
	if prog == "False" && progReason == "ProgressDeadlineExceeded" {
		return Health{Reason: ReasonWorkloadNotProgress, Effect: EffectFail,
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
		return Health{Reason: ReasonJobFailed, Effect: EffectFail,
			Message: fmt.Sprintf("job %s failed (%s): %s", name, r, msg)}
	}
	active := nestedCount(live, "status", "active")
	failed := nestedCount(live, "status", "failed")
	if active == 0 && failed > 0 {
		return Health{Reason: ReasonJobFailed, Effect: EffectFail,
			Message: fmt.Sprintf("job %s has %.0f failed pods and none active", name, failed)}
	}
	return Health{Reason: ReasonJobNotComplete, Effect: EffectNone,
		Message: fmt.Sprintf("job %s has not completed", name)}
}

// statusVersions reads status.versions as name → version.
func statusVersions(obj *unstructured.Unstructured) map[string]string {
	out := map[string]string{}
	vs, _, _ := unstructured.NestedSlice(obj.Object, "status", "versions")
	for _, v := range vs {
		m, ok := v.(map[string]interface{})
		if !ok {
			continue
		}
		n, _ := m["name"].(string)
		ver, _ := m["version"].(string)
		out[n] = ver
	}
	return out
}

func clusterOperatorHealth(required, live *unstructured.Unstructured) Health {
	name := live.GetName()
	want := statusVersions(required)
	if len(want) == 0 {
		return Health{Reason: ReasonCONoVersions, Effect: EffectFail,
			Message: fmt.Sprintf("cluster operator %s manifest lists no status.versions", name)}
	}
	if s, r, msg := condition(live, "Available"); s != "True" {
		detail := "has not reported Available"
		if s != "" {
			detail = fmt.Sprintf("is not available (%s: %s)", r, msg)
		}
		return Health{Reason: ReasonCONotAvailable, Effect: EffectFail,
			Message: fmt.Sprintf("cluster operator %s %s", name, detail)}
	}
	if s, r, msg := condition(live, "Degraded"); s != "False" {
		return Health{Reason: ReasonCODegraded, Effect: EffectFailAfterInterval,
			Message: fmt.Sprintf("cluster operator %s is degraded (%s: %s)", name, r, msg)}
	}
	have := statusVersions(live)
	var behind []string
	for n, v := range want {
		if have[n] != v {
			behind = append(behind, fmt.Sprintf("%s from %s to %s", n, orNone(have[n]), v))
		}
	}
	if len(behind) > 0 {
		sort.Strings(behind)
		return Health{Reason: ReasonCOUpdating, Effect: EffectNone,
			Message: fmt.Sprintf("cluster operator %s is updating versions: %s", name, strings.Join(behind, ", "))}
	}
	return Health{}
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// nestedCount reads a number whatever its decoded type.
func nestedCount(obj *unstructured.Unstructured, fields ...string) float64 {
	v, _, _ := unstructured.NestedFieldNoCopy(obj.Object, fields...)
	n, _ := number(v)
	return n
}
