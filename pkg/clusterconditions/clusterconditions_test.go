package clusterconditions

import (
	"context"
	"errors"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
)

// fixed answers with a set result, or fails.
type fixed struct {
	match bool
	err   error
	calls *int
}

func (fixed) Valid(context.Context, *configv1.ClusterCondition) error { return nil }

func (f fixed) Match(context.Context, *configv1.ClusterCondition) (bool, error) {
	if f.calls != nil {
		*f.calls++
	}
	return f.match, f.err
}

func TestFirstRuleThatEvaluatesDecides(t *testing.T) {
	laterCalls := 0
	r := New(map[string]Condition{
		"Broken": fixed{err: errors.New("prometheus down")},
		"No":     fixed{match: false},
		"Later":  fixed{match: true, calls: &laterCalls},
	})
	rule := func(t string) configv1.ClusterCondition { return configv1.ClusterCondition{Type: t} }
	for _, tc := range []struct {
		name    string
		rules   []configv1.ClusterCondition
		match   bool
		wantErr string
	}{
		{"always", []configv1.ClusterCondition{rule(TypeAlways)}, true, ""},
		{"a failure falls through to the next rule", []configv1.ClusterCondition{rule("Broken"), rule("No")}, false, ""},
		{"an unknown type falls through", []configv1.ClusterCondition{rule("Nope"), rule(TypeAlways)}, true, ""},
		{"the first answer stops the walk", []configv1.ClusterCondition{rule("No"), rule("Later")}, false, ""},
		{"none evaluates", []configv1.ClusterCondition{rule("Broken"), rule("Nope")}, false, "prometheus down"},
		{"no rules", nil, false, "no matching rules"},
		{"an Always with promql is invalid", []configv1.ClusterCondition{{Type: TypeAlways, PromQL: &configv1.PromQLClusterCondition{PromQL: "1"}}}, false, "invalid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			match, err := r.Match(context.Background(), tc.rules)
			if match != tc.match {
				t.Errorf("match = %v, want %v", match, tc.match)
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("unexpected error %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
	if laterCalls != 0 {
		t.Errorf("a rule after the deciding one was evaluated %d times", laterCalls)
	}
}
