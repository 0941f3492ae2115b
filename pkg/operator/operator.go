// Package operator runs the apply engine as a cluster-version operator: it
// reconciles the ClusterVersion named "version", decides between install,
// update and reconcile from its history, gates updates on preconditions, and
// reports progress, Upgradeable and metrics the way the CVO does.
package operator

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	configclient "github.com/openshift/client-go/config/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/payload-applier/payload-applier/pkg/apply"
	"github.com/payload-applier/payload-applier/pkg/apply/deletion"
	"github.com/payload-applier/payload-applier/pkg/payload"
)

// Config wires an Operator. Zero fields take the defaults their comments give.
type Config struct {
	// RESTConfig reaches the cluster. Required.
	RESTConfig *rest.Config
	// Releases finds payloads by version. Required.
	Releases ReleaseSource
	// Namespace holds the ledger, the leader lease and Events. Default
	// openshift-cluster-version.
	Namespace string
	// Name is the ClusterVersion's name. Default "version".
	Name string
	// LoadOptions are the base inclusion filters; the ClusterVersion's
	// capabilities and overrides are added on top. Default
	// payload.DefaultLoadOptions().
	LoadOptions *payload.LoadOptions
	// Sync tunes each pass; Mode and Attempt are set by the operator.
	Sync apply.SyncOptions
	// Metrics, when set, is where the operator's metrics are registered.
	Metrics *Metrics
	// Clock defaults to the real clock.
	Clock clock.Clock
	// Identity names this instance in leader election and Events; it must
	// differ between instances. Default: the host name and a random suffix.
	Identity string
}

// Operator reconciles the ClusterVersion. One Sync runs at a time.
type Operator struct {
	cfg      Config
	kube     kubernetes.Interface
	config   configclient.Interface
	dynamic  dynamic.Interface
	engine   *apply.Engine
	recorder record.EventRecorder
	events   record.EventBroadcaster
	cvRef    *corev1.ObjectReference
	clock    clock.Clock
	metrics  *Metrics

	syncMu   sync.Mutex
	attempt  int
	releases map[string]*payload.Release
}

// New validates cfg and builds the clients and the engine.
func New(cfg Config) (*Operator, error) {
	var errs []error
	if cfg.RESTConfig == nil {
		errs = append(errs, errors.New("Config.RESTConfig is required"))
	}
	if cfg.Releases == nil {
		errs = append(errs, errors.New("Config.Releases is required"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("operator: %w", err)
	}
	if cfg.Namespace == "" {
		cfg.Namespace = apply.DefaultSelf().Namespace
	}
	if cfg.Name == "" {
		cfg.Name = "version"
	}
	if cfg.LoadOptions == nil {
		o := payload.DefaultLoadOptions()
		cfg.LoadOptions = &o
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Identity == "" {
		cfg.Identity = hostIdentity()
	}
	rc := ClientConfig(cfg.RESTConfig)
	kube, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	cfgClient, err := configclient.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	o := &Operator{
		cfg: cfg, kube: kube, config: cfgClient, dynamic: dyn, clock: cfg.Clock,
		metrics:  cfg.Metrics,
		releases: map[string]*payload.Release{},
		cvRef: &corev1.ObjectReference{APIVersion: "config.openshift.io/v1", Kind: "ClusterVersion",
			Name: cfg.Name, Namespace: cfg.Namespace},
	}
	o.events = record.NewBroadcaster()
	o.recorder = o.events.NewRecorder(eventScheme(), corev1.EventSource{Component: "payload-applier", Host: cfg.Identity})
	self := apply.DefaultSelf()
	self.Namespace = cfg.Namespace
	o.engine, err = apply.NewForConfig(rc, apply.Config{
		Dynamic:     dyn,
		Self:        self,
		Recorder:    o.recorder,
		EventObject: o.cvRef,
		Clock:       cfg.Clock,
		OnDelete:    o.countDelete,
	})
	if err != nil {
		return nil, err
	}
	return o, nil
}

// StartEvents sends recorded Events to the cluster until Shutdown.
func (o *Operator) StartEvents() {
	o.events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: o.kube.CoreV1().Events(o.cfg.Namespace)})
}

// Shutdown flushes and stops the event broadcaster.
func (o *Operator) Shutdown() { o.events.Shutdown() }

// Engine returns the apply engine, shared with the CLI.
func (o *Operator) Engine() *apply.Engine { return o.engine }

// loadRelease reads and validates a release once; payload directories do
// not change under a running operator, and filters are applied per pass.
func (o *Operator) loadRelease(version string, cv *configv1.ClusterVersion) (*payload.Release, error) {
	all, ok := o.releases[version]
	if !ok {
		dir, err := o.cfg.Releases.Dir(version)
		if err != nil {
			return nil, err
		}
		rel, err := payload.Load(dir, *o.cfg.LoadOptions)
		if err != nil {
			return nil, err
		}
		if rel.Version != version {
			return nil, fmt.Errorf("payload %s declares version %s, not the requested %s", dir, rel.Version, version)
		}
		if abs, err := filepath.Abs(dir); err == nil {
			rel.Dir = abs
		}
		// Validated: the text was only for findings, and it is about a
		// quarter of what the release holds.
		rel.DropSource()
		o.releases[version] = rel
		all = rel
	}
	return all.Filter(o.loadOptionsFor(cv)), nil
}

// loadOptionsFor adds the ClusterVersion's capabilities and overrides to the
// configured filters.
func (o *Operator) loadOptionsFor(cv *configv1.ClusterVersion) payload.LoadOptions {
	opts := *o.cfg.LoadOptions
	opts.Overrides = cv.Spec.Overrides
	if caps := enabledCapabilities(cv.Spec.Capabilities); caps != nil {
		opts.Capabilities = caps
	}
	return opts
}

// enabledCapabilities resolves the spec's baseline plus additional set.
func enabledCapabilities(spec *configv1.ClusterVersionCapabilitiesSpec) *configv1.ClusterVersionCapabilitiesStatus {
	if spec == nil {
		return nil
	}
	baseline := configv1.ClusterVersionCapabilitySetCurrent
	if spec.BaselineCapabilitySet != "" {
		baseline = spec.BaselineCapabilitySet
	}
	enabled := map[configv1.ClusterVersionCapability]bool{}
	for _, c := range configv1.ClusterVersionCapabilitySets[baseline] {
		enabled[c] = true
	}
	for _, c := range spec.AdditionalEnabledCapabilities {
		enabled[c] = true
	}
	st := &configv1.ClusterVersionCapabilitiesStatus{KnownCapabilities: configv1.KnownClusterVersionCapabilities}
	for _, c := range configv1.KnownClusterVersionCapabilities {
		if enabled[c] {
			st.EnabledCapabilities = append(st.EnabledCapabilities, c)
		}
	}
	return st
}

// retryTimes spaces retries after failed syncs: interval/16, doubling, then
// the full interval, as the CVO does.
func retryDelay(interval time.Duration, failures int) time.Duration {
	d := interval / 16
	for i := 1; i < failures && d < interval; i++ {
		d *= 2
	}
	if d > interval {
		d = interval
	}
	return wait.Jitter(d, 0.2)
}

// Identity is the name this instance uses in leader election.
func (o *Operator) Identity() string { return o.cfg.Identity }

// countDelete feeds delete transitions to the metrics.
func (o *Operator) countDelete(t deletion.Transition, _ deletion.Record) {
	if o.metrics != nil {
		o.metrics.deletesTotal.WithLabelValues(string(t)).Inc()
	}
}

// ClientConfig copies cfg for the applier's clients. It sets no
// client-side rate limit unless cfg has one: the apiserver's API Priority
// and Fairness shares its capacity, and a client limit of 50 requests per
// second made a 1000-object install 13× slower (docs/benchmarks.md).
func ClientConfig(cfg *rest.Config) *rest.Config {
	rc := rest.CopyConfig(cfg)
	if rc.QPS == 0 && rc.RateLimiter == nil {
		rc.QPS = -1
	}
	return rc
}
