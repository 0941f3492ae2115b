package apply

import (
	"testing"

	"sigs.k8s.io/yaml"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/payload-applier/payload-applier/pkg/graph"
	"github.com/payload-applier/payload-applier/pkg/payload"
)

func obj(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

func TestCheckHealth(t *testing.T) {
	coManifest := `{apiVersion: config.openshift.io/v1, kind: ClusterOperator, metadata: {name: co}, status: {versions: [{name: operator, version: "2"}]}}`
	tests := []struct {
		name     string
		required string
		live     string
		reason   Reason
		effect   payload.Effect
	}{
		{"an Established CRD is healthy", "", `{apiVersion: apiextensions.k8s.io/v1, kind: CustomResourceDefinition, metadata: {name: a}, status: {conditions: [{type: Established, status: "True"}]}}`, "", ""},
		{"a CRD not yet Established waits", "", `{apiVersion: apiextensions.k8s.io/v1, kind: CustomResourceDefinition, metadata: {name: a}}`, ReasonCRDNotEstablished, payload.EffectNone},
		{"a deployment with a replica failure fails", "", `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d}, status: {conditions: [{type: ReplicaFailure, status: "True"}]}}`, ReasonWorkloadNotProgress, payload.EffectFail},
		{"a deployment neither available nor progressing fails", "", `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d}, status: {conditions: [{type: Available, status: "False"}, {type: Progressing, status: "False"}]}}`, ReasonWorkloadNotAvail, payload.EffectFail},
		{"a deployment past its progress deadline fails", "", `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d}, status: {conditions: [{type: Available, status: "True"}, {type: Progressing, status: "False", reason: ProgressDeadlineExceeded}]}}`, ReasonWorkloadNotProgress, payload.EffectFail},
		{"a deployment without conditions is not judged", "", `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d}}`, "", ""},
		{"a terminating daemonset fails", "", `{apiVersion: apps/v1, kind: DaemonSet, metadata: {name: d, deletionTimestamp: "2026-01-01T00:00:00Z"}}`, ReasonWorkloadNotAvail, payload.EffectFail},
		{"a succeeded job is healthy", "", `{apiVersion: batch/v1, kind: Job, metadata: {name: j}, status: {succeeded: 1}}`, "", ""},
		{"a failed job fails", "", `{apiVersion: batch/v1, kind: Job, metadata: {name: j}, status: {conditions: [{type: Failed, status: "True", reason: BackoffLimitExceeded}]}}`, ReasonJobFailed, payload.EffectFail},
		{"a running job waits", "", `{apiVersion: batch/v1, kind: Job, metadata: {name: j}, status: {active: 1}}`, ReasonJobNotComplete, payload.EffectNone},
		{"a cluster operator at its version is healthy", coManifest, `{apiVersion: config.openshift.io/v1, kind: ClusterOperator, metadata: {name: co}, status: {versions: [{name: operator, version: "2"}], conditions: [{type: Available, status: "True"}, {type: Degraded, status: "False"}]}}`, "", ""},
		{"a cluster operator on an old version is updating", coManifest, `{apiVersion: config.openshift.io/v1, kind: ClusterOperator, metadata: {name: co}, status: {versions: [{name: operator, version: "1"}], conditions: [{type: Available, status: "True"}, {type: Degraded, status: "False"}]}}`, ReasonCOUpdating, payload.EffectNone},
		{"a cluster operator without conditions is not available", coManifest, `{apiVersion: config.openshift.io/v1, kind: ClusterOperator, metadata: {name: co}}`, ReasonCONotAvailable, payload.EffectFail},
		{"a degraded cluster operator fails after an interval", coManifest, `{apiVersion: config.openshift.io/v1, kind: ClusterOperator, metadata: {name: co}, status: {conditions: [{type: Available, status: "True"}, {type: Degraded, status: "True"}]}}`, ReasonCODegraded, payload.EffectFailAfterInterval},
		{"a cluster operator manifest without versions fails", `{apiVersion: config.openshift.io/v1, kind: ClusterOperator, metadata: {name: co}}`, `{apiVersion: config.openshift.io/v1, kind: ClusterOperator, metadata: {name: co}}`, ReasonCONoVersions, payload.EffectFail},
		{"other kinds are healthy", "", `{apiVersion: v1, kind: ConfigMap, metadata: {name: c}}`, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			live := obj(t, tt.live)
			required := live
			if tt.required != "" {
				required = obj(t, tt.required)
			}
			h := CheckHealth(required, live, graph.ModeUpdate)
			if h.Reason != tt.reason || h.Effect != tt.effect {
				t.Errorf("got %s/%s (%s), want %s/%s", h.Reason, h.Effect, h.Message, tt.reason, tt.effect)
			}
		})
	}
}
