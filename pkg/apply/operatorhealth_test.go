package apply

import (
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/payload-applier/payload-applier/pkg/graph"
	"github.com/payload-applier/payload-applier/pkg/payload"
)

// TestOperatorHealthAsTheCVO ports the cases of the CVO's
// Test_checkOperatorHealth (pkg/cvo/internal/operatorstatus_test.go, read
// at openshift/cluster-version-operator 6e719331f): the same operator
// status gives the same reason, effect, message, plural texts and nested
// message. The CVO's "cluster operator not found" case has no counterpart:
// the engine creates the ClusterOperator before it judges it. Where the
// CVO's nested message for a lagging version says nothing of which
// versions lag, ours names them (Detail).
func TestOperatorHealthAsTheCVO(t *testing.T) {
	versions := func(nv ...string) []configv1.OperandVersion {
		var out []configv1.OperandVersion
		for i := 0; i < len(nv); i += 2 {
			out = append(out, configv1.OperandVersion{Name: nv[i], Version: nv[i+1]})
		}
		return out
	}
	cond := func(typ configv1.ClusterStatusConditionType, status configv1.ConditionStatus, reasonMessage ...string) configv1.ClusterOperatorStatusCondition {
		c := configv1.ClusterOperatorStatusCondition{Type: typ, Status: status}
		if len(reasonMessage) == 2 {
			c.Reason, c.Message = reasonMessage[0], reasonMessage[1]
		}
		return c
	}
	availableNotDegraded := []configv1.ClusterOperatorStatusCondition{
		cond(configv1.OperatorAvailable, configv1.ConditionTrue), cond(configv1.OperatorDegraded, configv1.ConditionFalse)}
	degradedRandomly := cond(configv1.OperatorDegraded, configv1.ConditionTrue, "RandomReason", "random error")
	const (
		updatingNested = "cluster operator test-co is available and not degraded but has not finished updating to target version"
		noneNested     = "cluster operator test-co: available=false, progressing=true, degraded=true, undone="
		degradedNested = "cluster operator test-co is Degraded=True: RandomReason, random error"
	)
	updating := Health{Reason: "ClusterOperatorUpdating", Effect: payload.EffectNone, Message: "Cluster operator test-co is updating versions",
		Operator: "test-co", PluralReason: "ClusterOperatorsUpdating", PluralMessage: "Cluster operators %s are updating versions"}
	notAvailable := Health{Reason: "ClusterOperatorNotAvailable", Effect: payload.EffectFail, Message: "Cluster operator test-co is not available",
		Detail: noneNested, Operator: "test-co", PluralReason: "ClusterOperatorsNotAvailable", PluralMessage: "Cluster operators %s are not available"}
	degraded := func(effect payload.Effect, nested string) Health {
		return Health{Reason: "ClusterOperatorDegraded", Effect: effect, Message: "Cluster operator test-co is degraded",
			Detail: nested, Operator: "test-co", PluralReason: "ClusterOperatorsDegraded", PluralMessage: "Cluster operators %s are degraded"}
	}
	withDetail := func(h Health, undone string) Health {
		h.Detail = updatingNested + ": " + undone
		return h
	}
	tests := []struct {
		name       string
		conditions []configv1.ClusterOperatorStatusCondition
		have, want []configv1.OperandVersion
		mode       graph.Mode
		exp        Health
	}{
		{name: "cluster operator reporting available=true and degraded=false, but no versions",
			conditions: availableNotDegraded, want: versions("operator", "v1"),
			exp: withDetail(updating, "operator to v1")},
		{name: "cluster operator reporting available=true, degraded=false, but no versions, while expecting an operator version",
			conditions: availableNotDegraded, want: versions("operator", "v1", "operand-1", "v1"),
			exp: withDetail(updating, "operand-1 to v1, operator to v1")},
		{name: "cluster operator reporting available=true and degraded=false, but no versions for operand",
			conditions: availableNotDegraded, have: versions("operator", "v0"), want: versions("operator", "v1", "operand-1", "v1"),
			exp: withDetail(updating, "operand-1 to v1, operator from v0 to v1")},
		{name: "cluster operator reporting available=true and degraded=false, but old versions",
			conditions: availableNotDegraded, have: versions("operator", "v0", "operand-1", "v0"), want: versions("operator", "v1", "operand-1", "v1"),
			exp: withDetail(updating, "operand-1 from v0 to v1, operator from v0 to v1")},
		{name: "cluster operator reporting available=true and degraded=false, but mix of desired and old versions",
			conditions: availableNotDegraded, have: versions("operator", "v0", "operand-1", "v1"), want: versions("operator", "v1", "operand-1", "v1"),
			exp: withDetail(updating, "operator from v0 to v1")},
		{name: "cluster operator reporting available=true, degraded=false, and desired operator, but old versions for 2 operands",
			conditions: availableNotDegraded, have: versions("operator", "v1", "operand-1", "v0", "operand-2", "v0"), want: versions("operator", "v1", "operand-1", "v1", "operand-2", "v1"),
			exp: withDetail(updating, "operand-1 from v0 to v1, operand-2 from v0 to v1")},
		{name: "cluster operator reporting available=true, degraded=false, and desired operator, but mix of old and desired versions for 2 operands",
			conditions: availableNotDegraded, have: versions("operator", "v1", "operand-1", "v1", "operand-2", "v0"), want: versions("operator", "v1", "operand-1", "v1", "operand-2", "v1"),
			exp: withDetail(updating, "operand-2 from v0 to v1")},
		{name: "cluster operator reporting desired versions and no conditions",
			have: versions("operator", "v1", "operand-1", "v1"), want: versions("operator", "v1", "operand-1", "v1"),
			exp: notAvailable},
		{name: "cluster operator reporting progressing=true",
			conditions: []configv1.ClusterOperatorStatusCondition{cond(configv1.OperatorProgressing, configv1.ConditionTrue)},
			have:       versions("operator", "v1", "operand-1", "v1"), want: versions("operator", "v1", "operand-1", "v1"),
			exp: notAvailable},
		{name: "cluster operator reporting available=false degraded=true",
			conditions: []configv1.ClusterOperatorStatusCondition{cond(configv1.OperatorAvailable, configv1.ConditionFalse), cond(configv1.OperatorDegraded, configv1.ConditionTrue)},
			have:       versions("operator", "v1", "operand-1", "v1"), want: versions("operator", "v1", "operand-1", "v1"),
			exp: notAvailable},
		{name: "cluster operator reporting available=true, degraded=false, and progressing=true",
			conditions: append(availableNotDegraded[:2:2], cond(configv1.OperatorProgressing, configv1.ConditionTrue)),
			have:       versions("operator", "v1", "operand-1", "v1"), want: versions("operator", "v1", "operand-1", "v1")},
		{name: "cluster operator reporting available=true degraded=true",
			conditions: []configv1.ClusterOperatorStatusCondition{cond(configv1.OperatorAvailable, configv1.ConditionTrue), degradedRandomly},
			have:       versions("operator", "v1", "operand-1", "v1"), want: versions("operator", "v1", "operand-1", "v1"),
			exp: degraded(payload.EffectFailAfterInterval, degradedNested)},
		{name: "cluster operator reporting available=true degraded=true in InitializingMode",
			conditions: []configv1.ClusterOperatorStatusCondition{cond(configv1.OperatorAvailable, configv1.ConditionTrue), degradedRandomly},
			have:       versions("operator", "v1", "operand-1", "v1"), want: versions("operator", "v1", "operand-1", "v1"), mode: graph.ModeInstall,
			exp: degraded(payload.EffectReport, degradedNested)},
		{name: "cluster operator reporting available=true progressing=true degraded=true",
			conditions: []configv1.ClusterOperatorStatusCondition{cond(configv1.OperatorAvailable, configv1.ConditionTrue), cond(configv1.OperatorProgressing, configv1.ConditionTrue), degradedRandomly},
			have:       versions("operator", "v1", "operand-1", "v1"), want: versions("operator", "v1", "operand-1", "v1"),
			exp: degraded(payload.EffectFailAfterInterval, degradedNested)},
		{name: "cluster operator reporting available=true progressing=true degraded=true in InitializingMode",
			conditions: []configv1.ClusterOperatorStatusCondition{cond(configv1.OperatorAvailable, configv1.ConditionTrue), cond(configv1.OperatorProgressing, configv1.ConditionTrue), degradedRandomly},
			have:       versions("operator", "v1", "operand-1", "v1"), want: versions("operator", "v1", "operand-1", "v1"), mode: graph.ModeInstall,
			exp: degraded(payload.EffectReport, degradedNested)},
		{name: "cluster operator reporting available=true no progressing or degraded",
			conditions: []configv1.ClusterOperatorStatusCondition{cond(configv1.OperatorAvailable, configv1.ConditionTrue)},
			have:       versions("operator", "v1", "operand-1", "v1"), want: versions("operator", "v1", "operand-1", "v1"),
			exp: degraded(payload.EffectFailAfterInterval, "cluster operator test-co: available=true, progressing=true, degraded=true, undone=")},
		{name: "cluster operator reporting available=true progressing=false degraded=false",
			conditions: append(availableNotDegraded[:2:2], cond(configv1.OperatorProgressing, configv1.ConditionFalse)),
			have:       versions("operator", "v1", "operand-1", "v1"), want: versions("operator", "v1", "operand-1", "v1")},
		// Beyond the CVO's table: the rules its code states.
		{name: "versions that lag are allowed in an install", conditions: availableNotDegraded, have: versions("operator", "v0"),
			want: versions("operator", "v1"), mode: graph.ModeInstall},
		{name: "a manifest without versions", conditions: availableNotDegraded,
			exp: Health{Reason: "ClusterOperatorNoVersions", Effect: payload.EffectFail, Message: "Cluster operator test-co does not declare expected versions",
				Operator: "test-co", PluralReason: "ClusterOperatorsNoVersions", PluralMessage: "Cluster operators %s do not declare expected versions"}},
		{name: "an unavailable operator's own words", conditions: []configv1.ClusterOperatorStatusCondition{cond(configv1.OperatorAvailable, configv1.ConditionFalse, "NoPods", "no pods")},
			want: versions("operator", "v1"), exp: func() Health {
				h := notAvailable
				h.Detail = "cluster operator test-co is Available=False: NoPods: no pods"
				return h
			}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mode := tt.mode
			if mode == "" {
				mode = graph.ModeUpdate
			}
			want := &configv1.ClusterOperator{ObjectMeta: metav1.ObjectMeta{Name: "test-co"}, Status: configv1.ClusterOperatorStatus{Versions: tt.want}}
			have := &configv1.ClusterOperator{ObjectMeta: metav1.ObjectMeta{Name: "test-co"}, Status: configv1.ClusterOperatorStatus{Versions: tt.have, Conditions: tt.conditions}}
			if got := OperatorHealth(want, have, mode); got != tt.exp {
				t.Errorf("got  %+v\nwant %+v", got, tt.exp)
			}
		})
	}
}
