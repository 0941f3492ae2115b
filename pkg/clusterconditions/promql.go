package clusterconditions

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/url"
	"strings"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	"github.com/prometheus/client_golang/api"
	prometheusv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/payload-applier/payload-applier/pkg/textwrap"
)

// TypePromQL is the rule type that matches when a PromQL query returns 1.
const TypePromQL = "PromQL"

// In-cluster values on OpenShift, as the CVO uses them: the monitoring
// stack's Thanos querier, the pod's service account token and the service
// CA. payload-applier has no default URL: it also runs where these do not
// exist.
const (
	OpenShiftPrometheusURL = "https://thanos-querier.openshift-monitoring.svc:9091"
	OpenShiftCAFile        = "/etc/tls/service-ca/service-ca.crt"
	OpenShiftTokenFile     = "/var/run/secrets/kubernetes.io/serviceaccount/token"
)

const (
	// DefaultQueryTimeout bounds one query, and separately one call's wait
	// for its turn behind other queries.
	DefaultQueryTimeout = 10 * time.Second
	// MaxResponseBytes bounds a query's response; a one-sample vector takes
	// a few hundred bytes.
	MaxResponseBytes = 1 << 20
	// maxErrorBytes bounds the text of an evaluation failure, which ends up
	// in the ClusterVersion's status.
	maxErrorBytes = 1024
)

// PromQLConfig says where PromQL rules are queried.
type PromQLConfig struct {
	// URL is the base of a Prometheus-compatible HTTP API (the part before
	// /api/v1/query). Empty: PromQL rules fail to evaluate, saying so.
	URL string
	// CAFile holds the PEM certificates an https URL is verified with;
	// empty: the system's. Read again when it changes.
	CAFile string
	// TokenFile holds the bearer token sent with each query, read for every
	// query since it rotates; empty: none.
	TokenFile string
	// Timeout bounds one query; zero: DefaultQueryTimeout.
	Timeout time.Duration
	// ClusterID replaces the empty value in `_id=""` when a call's context
	// carries none (WithClusterID).
	ClusterID string
	// Clock paces the cache; nil: the real one.
	Clock clock.Clock
}

// PromQL evaluates PromQL rules against one Prometheus, through a cache
// that holds the query rate down (cache.go).
type PromQL struct {
	url       *url.URL // nil: not configured
	timeout   time.Duration
	clusterID string
	transport *transport
	cache     *cache
}

// NewPromQL returns the PromQL type for cfg; it fails only on a malformed
// URL. Files are read when queries are made: a missing one fails those
// queries, not the operator's start.
func NewPromQL(cfg PromQLConfig) (*PromQL, error) {
	p := &PromQL{timeout: cfg.Timeout, clusterID: cfg.ClusterID}
	if p.timeout <= 0 {
		p.timeout = DefaultQueryTimeout
	}
	if cfg.URL != "" {
		u, err := url.Parse(cfg.URL)
		if err != nil {
			return nil, fmt.Errorf("prometheus URL %q: %w", cfg.URL, err)
		}
		if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("prometheus URL %q: want http(s)://host[:port][/path]", cfg.URL)
		}
		p.url = u
	}
	p.transport = newTransport(p.url, cfg.CAFile, cfg.TokenFile, MaxResponseBytes)
	clk := cfg.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	p.cache = newCache(p.query, clk, p.timeout)
	return p, nil
}

// Register adds payload_applier_risk_queries_total to r.
func (p *PromQL) Register(r prometheus.Registerer) error {
	return r.Register(p.cache.queries)
}

// Valid requires a non-empty query.
func (p *PromQL) Valid(_ context.Context, rule *configv1.ClusterCondition) error {
	if rule.PromQL == nil {
		return errors.New("a PromQL rule needs promql")
	}
	if strings.TrimSpace(rule.PromQL.PromQL) == "" {
		return errors.New("a PromQL rule needs a non-empty promql.promql")
	}
	return nil
}

// Match returns true for a query answering 1 and false for 0, from the
// cache while its answer is fresh; anything else fails.
func (p *PromQL) Match(ctx context.Context, rule *configv1.ClusterCondition) (bool, error) {
	if err := p.Valid(ctx, rule); err != nil {
		return false, err
	}
	if p.url == nil {
		return false, errors.New("no Prometheus to query: payload-applier start has no --prometheus-url")
	}
	id, ok := ClusterIDFrom(ctx)
	if !ok {
		id = p.clusterID
	}
	return p.cache.match(ctx, WithIDLabel(rule.PromQL.PromQL, id))
}

// WithIDLabel fills the cluster's ID into `_id=""` matchers of query, as
// the CVO does for the update service's queries.
func WithIDLabel(query, clusterID string) string {
	return strings.ReplaceAll(query, `_id=""`, `_id="`+clusterID+`"`)
}

type clusterIDKey struct{}

// WithClusterID returns ctx carrying the cluster's ID (the ClusterVersion's
// spec.clusterID) for the PromQL rules evaluated with it.
func WithClusterID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, clusterIDKey{}, id)
}

// ClusterIDFrom returns the cluster's ID that ctx carries, if any.
func ClusterIDFrom(ctx context.Context) (string, bool) {
	id, ok := ctx.Value(clusterIDKey{}).(string)
	return id, ok
}

// query asks Prometheus once, within the timeout.
func (p *PromQL) query(ctx context.Context, query string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	match, err := p.queryOnce(ctx, query)
	if err != nil {
		return false, fmt.Errorf("%s", textwrap.Bound(err.Error(), maxErrorBytes))
	}
	return match, nil
}

func (p *PromQL) queryOnce(ctx context.Context, query string) (bool, error) {
	hc, err := p.transport.queryClient()
	if err != nil {
		return false, err
	}
	client, err := api.NewClient(api.Config{Address: p.url.String(), Client: hc})
	if err != nil {
		return false, err
	}
	// The zero time lets Prometheus evaluate at its own now.
	value, warnings, err := prometheusv1.NewAPI(getOnly{client}).Query(ctx, query, time.Time{})
	if err != nil {
		return false, fmt.Errorf("query %s: %w", p.url.Redacted(), err)
	}
	for _, w := range warnings {
		klog.Warningf("PromQL risk query %q: Prometheus warns: %s", query, w)
	}
	return sampleMatch(value)
}

// sampleMatch reads a query's answer: a vector of exactly one sample, 0
// or 1.
func sampleMatch(value model.Value) (bool, error) {
	vector, ok := value.(model.Vector)
	if !ok {
		kind := "nothing"
		if value != nil {
			kind = fmt.Sprintf("a %s (%s)", value.Type(), value)
		}
		return false, fmt.Errorf("the query returned %s, not a vector of one sample", kind)
	}
	if len(vector) != 1 {
		return false, fmt.Errorf("the query returned %d samples, not one%s", len(vector), describeSamples(vector))
	}
	v := float64(vector[0].Value)
	switch {
	case v == 0:
		return false, nil
	case v == 1:
		return true, nil
	case math.IsNaN(v):
		return false, fmt.Errorf("the query returned NaN for %s, not 0 or 1", vector[0].Metric)
	}
	return false, fmt.Errorf("the query returned %v for %s, not 0 or 1", vector[0].Value, vector[0].Metric)
}

// describeSamples lists the first samples of v, for an error message.
func describeSamples(v model.Vector) string {
	const shown = 3
	if len(v) == 0 {
		return ""
	}
	parts := make([]string, 0, shown)
	for i, s := range v {
		if i == shown {
			parts = append(parts, fmt.Sprintf("and %d more", len(v)-shown))
			break
		}
		parts = append(parts, fmt.Sprintf("%s => %s", s.Metric, s.Value))
	}
	return ": " + strings.Join(parts, ", ")
}
