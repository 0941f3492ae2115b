// Package clusterconditions decides whether a conditional update's risk
// applies to this cluster: it evaluates the risk's matching rules
// (configv1.ClusterCondition) in order, as the CVO's pkg/clusterconditions
// does, and the first rule that can be evaluated decides.
package clusterconditions

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	configv1 "github.com/openshift/api/config/v1"
	"github.com/prometheus/client_golang/prometheus"
)

// Condition evaluates one type of matching rule.
type Condition interface {
	// Valid says whether rule is well formed for this type, without
	// evaluating it.
	Valid(ctx context.Context, rule *configv1.ClusterCondition) error
	// Match says whether rule matches the cluster; an error means it could
	// not be evaluated.
	Match(ctx context.Context, rule *configv1.ClusterCondition) (bool, error)
}

// Registry maps rule types to their Condition.
type Registry struct {
	types map[string]Condition
}

// New returns a registry that knows the Always type and the types given.
func New(types map[string]Condition) *Registry {
	r := &Registry{types: map[string]Condition{TypeAlways: Always{}}}
	for t, c := range types {
		r.types[t] = c
	}
	return r
}

// Types lists the rule types r evaluates, sorted.
func (r *Registry) Types() []string {
	out := make([]string, 0, len(r.types))
	for t := range r.types {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// Match walks rules in order and returns the answer of the first one that
// evaluates. When none does, it returns false and every rule's error: the
// risk's applicability is then unknown, which callers report as
// EvaluationFailed.
func (r *Registry) Match(ctx context.Context, rules []configv1.ClusterCondition) (bool, error) {
	if len(rules) == 0 {
		return false, errors.New("no matching rules")
	}
	var errs []string
	for i := range rules {
		rule := &rules[i]
		c, ok := r.types[rule.Type]
		if !ok {
			errs = append(errs, fmt.Sprintf("rule %d: unknown type %q (known: %s)", i, rule.Type, strings.Join(r.Types(), ", ")))
			continue
		}
		if err := c.Valid(ctx, rule); err != nil {
			errs = append(errs, fmt.Sprintf("rule %d (%s): invalid: %v", i, rule.Type, err))
			continue
		}
		match, err := c.Match(ctx, rule)
		if err != nil {
			errs = append(errs, fmt.Sprintf("rule %d (%s): %v", i, rule.Type, err))
			continue
		}
		return match, nil
	}
	return false, errors.New(strings.Join(errs, "; "))
}

// TypeAlways is the rule type that always matches.
const TypeAlways = "Always"

// Always matches every cluster.
type Always struct{}

// Valid refuses an Always rule that carries another type's fields.
func (Always) Valid(_ context.Context, rule *configv1.ClusterCondition) error {
	if rule.PromQL != nil {
		return errors.New("an Always rule has no promql")
	}
	return nil
}

// Match always matches.
func (Always) Match(context.Context, *configv1.ClusterCondition) (bool, error) { return true, nil }

// NewWithPromQL is the registry payload-applier start evaluates risks with:
// Always, and PromQL querying as cfg says, its query counter registered
// with reg.
func NewWithPromQL(cfg PromQLConfig, reg prometheus.Registerer) (*Registry, error) {
	promql, err := NewPromQL(cfg)
	if err != nil {
		return nil, err
	}
	if err := promql.Register(reg); err != nil {
		return nil, err
	}
	return New(map[string]Condition{TypePromQL: promql}), nil
}
