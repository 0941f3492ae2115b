package clusterversion

import (
	"reflect"
	"testing"

	"github.com/payload-applier/payload-applier/pkg/payload"
)

// TestCondenseAsTheCVO ports the CVO's Test_condenseClusterOperators
// (pkg/cvo/sync_worker_test.go, read at openshift/cluster-version-operator
// 6e719331f): other failures pass first, in their order; operators with
// one reason become one, named in order, with the heaviest effect.
func TestCondenseAsTheCVO(t *testing.T) {
	co := func(name, reason string, effect payload.Effect, one, pluralReason, many string) Failure {
		return Failure{Reason: reason, Message: "Cluster operator " + name + " " + one, Effect: effect, Operator: name,
			PluralReason: pluralReason, PluralMessage: "Cluster operators %s " + many}
	}
	degraded := func(name string, effect payload.Effect) Failure {
		return co(name, "ClusterOperatorDegraded", effect, "is degraded", "ClusterOperatorsDegraded", "are degraded")
	}
	updating := func(name string) Failure {
		return co(name, "ClusterOperatorUpdating", payload.EffectNone, "is updating versions", "ClusterOperatorsUpdating", "are updating versions")
	}
	notAvailableA := co("test-co-A", "ClusterOperatorNotAvailable", payload.EffectFail, "is not available", "ClusterOperatorsNotAvailable", "are not available")
	apiError := func(name string) Failure {
		return Failure{Reason: "UpdatePayloadResourceNotFound", Message: `clusteroperator "` + name + `" not found`, Effect: payload.EffectFail, Subject: name}
	}
	one := func(f Failure) problem {
		name := f.Operator
		if name == "" {
			name = f.Subject
		}
		return problem{reason: f.Reason, message: f.Message, effect: f.Effect, names: []string{name}}
	}
	many := func(reason, message string, effect payload.Effect, names ...string) problem {
		return problem{reason: reason, message: message, effect: effect, names: names}
	}
	tests := []struct {
		name  string
		input []Failure
		want  []problem
	}{
		{name: "no errors"},
		{name: "one ClusterOperator, one API",
			input: []Failure{updating("test-co-A"), apiError("test-co-A")},
			want:  []problem{one(apiError("test-co-A")), one(updating("test-co-A"))}},
		{name: "two ClusterOperator with different reasons, one API",
			input: []Failure{updating("test-co-B"), notAvailableA, apiError("test-co")},
			want:  []problem{one(apiError("test-co")), one(notAvailableA), one(updating("test-co-B"))}},
		{name: "two ClusterOperator with the same reason",
			input: []Failure{updating("test-co-B"), updating("test-co-A")},
			want: []problem{many("ClusterOperatorsUpdating", "Cluster operators test-co-A, test-co-B are updating versions", payload.EffectNone,
				"test-co-A", "test-co-B")}},
		{name: "two ClusterOperator with the same reason, one different",
			input: []Failure{updating("test-co-B"), updating("test-co-A"), degraded("test-co-C", payload.EffectFailAfterInterval)},
			want: []problem{one(degraded("test-co-C", payload.EffectFailAfterInterval)),
				many("ClusterOperatorsUpdating", "Cluster operators test-co-A, test-co-B are updating versions", payload.EffectNone, "test-co-A", "test-co-B")}},
		{name: "there ClusterOperator with the same reason but different effects",
			input: []Failure{degraded("test-co-B", payload.EffectFail), degraded("test-co-A", payload.EffectNone), degraded("test-co-C", payload.EffectFailAfterInterval)},
			want: []problem{many("ClusterOperatorsDegraded", "Cluster operators test-co-A, test-co-B, test-co-C are degraded", payload.EffectFail,
				"test-co-A", "test-co-B", "test-co-C")}},
		{name: "to ClusterOperator with the same reason but None and FailAfterInterval effects",
			input: []Failure{degraded("test-co-A", payload.EffectNone), degraded("test-co-C", payload.EffectFailAfterInterval)},
			want: []problem{many("ClusterOperatorsDegraded", "Cluster operators test-co-A, test-co-C are degraded", payload.EffectFailAfterInterval,
				"test-co-A", "test-co-C")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []problem
			for _, p := range condense(tt.input) {
				// Only what the CVO's case compares.
				got = append(got, problem{reason: p.reason, message: p.message, effect: p.effect, names: p.names})
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}
