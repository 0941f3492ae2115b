// Package operator runs the apply engine as a cluster-version operator: it
// reconciles the ClusterVersion named "version", decides between install,
// update and reconcile from its history, gates updates on preconditions, and
// reports progress, Upgradeable and metrics the way the CVO does.
package operator

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	configclient "github.com/openshift/client-go/config/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/clock"

	"github.com/payload-applier/payload-applier/pkg/apply"
	"github.com/payload-applier/payload-applier/pkg/clusterconditions"
	"github.com/payload-applier/payload-applier/pkg/clusterversion"
	"github.com/payload-applier/payload-applier/pkg/payload"
	"github.com/payload-applier/payload-applier/pkg/precondition"
	"github.com/payload-applier/payload-applier/pkg/releaseimage"
	"github.com/payload-applier/payload-applier/pkg/signature"
	"github.com/payload-applier/payload-applier/pkg/updategraph"
)

// Config wires an Operator. Zero fields take the defaults their comments
// give. New takes the clients as they are; NewForConfig builds those left
// unset.
type Config struct {
	// KubeClient reaches the operator's namespace, its leader Lease and
	// Events. Required.
	KubeClient kubernetes.Interface
	// ConfigClient reads and writes the ClusterVersion and reads the
	// ClusterOperators. Required.
	ConfigClient configclient.Interface
	// DynamicClient creates the ClusterVersion and ClusterOperator CRDs at
	// bootstrap. Required.
	DynamicClient dynamic.Interface
	// Engine applies the releases. Required.
	Engine *apply.Engine
	// Recorder records the operator's Events. Required.
	Recorder record.EventRecorder
	// EventBroadcaster, when set, is the broadcaster behind Recorder:
	// StartEvents sends its Events to the cluster and Shutdown stops it.
	EventBroadcaster record.EventBroadcaster

	// Releases finds payloads by version. Required.
	Releases ReleaseSource
	// RunningRelease is the version of the release this operator ships in
	// (start --release-image), which Releases holds: a ClusterVersion with
	// neither spec.desiredUpdate nor status.desired installs it, as the
	// CVO installs its own release. Default: none, and such a
	// ClusterVersion is Failing, NoDesiredUpdate.
	RunningRelease string
	// Puller, when set, reads the releases named by image:
	// spec.desiredUpdate.image, or the update graph's payload of a version
	// Releases does not hold. nil: a request by image is refused.
	Puller *releaseimage.Puller
	// ReleasePlatform is the os/arch picked from a multi-architecture
	// release image; "" is this process's, which runs on the cluster.
	ReleasePlatform string
	// SignatureLimits bound each verification of a release image.
	SignatureLimits signature.Limits
	// Namespace holds the ledger, the leader lease and Events. Default
	// openshift-cluster-version.
	Namespace string
	// Name is the ClusterVersion's name. Default "version".
	Name string
	// LoadOptions are the base inclusion filters: the profile and
	// EXCLUDE_MANIFESTS. The FeatureGate's feature set and gates replace
	// its own when the cluster has one, and the ClusterVersion's
	// capabilities and overrides are added on top. Default
	// payload.DefaultLoadOptions().
	LoadOptions *payload.LoadOptions
	// RequireCurrentRelease refuses an update whose current release
	// cannot be read, rather than skipping, as the CVO does, the
	// capabilities it would enable implicitly: apply, which may lack the
	// cluster's releases, sets it.
	RequireCurrentRelease bool
	// FeatureGateName is the FeatureGate read for the feature set and
	// enabled gates. Default "cluster".
	FeatureGateName string
	// Sync tunes each pass; Mode and Attempt are set by the operator.
	Sync apply.SyncOptions
	// Budget is the client-side request rate of the clients NewForConfig
	// builds: the engine's by the mode of its pass, and the operator's own
	// (observations, status, Lease, Events) at Budget.Steady in a bucket of
	// their own. Zero sets no limit.
	Budget apply.Budget
	// Metrics, when set, is where the operator's metrics are registered.
	// Delete transitions reach them through the engine's
	// apply.Config.OnDelete set to Metrics.CountDelete, which NewForConfig
	// wires.
	Metrics *Metrics
	// Clock defaults to the real clock.
	Clock clock.Clock
	// Identity names this instance in leader election and Events; it must
	// differ between instances. Default: NodeName, else the host name, and
	// a random suffix.
	Identity string
	// NodeName is the node this instance runs on ($NODE_NAME in the CVO's
	// Deployment).
	NodeName string

	// OperandCleanupStallAfter is how long an operand cleanup may make no
	// progress, or wait to start, before it reads as stalled or blocked;
	// default apply.DefaultStuckAfter.
	OperandCleanupStallAfter time.Duration
	// OperatorPatience is how long an update waits on ClusterOperators
	// before status says more; zero fields take the CVO's values.
	OperatorPatience clusterversion.Patience
	// UpdateGraph, when set, is the update graph the operator reads,
	// instead of the ClusterVersion's spec.upstream.
	UpdateGraph updategraph.Source
	// UpdateGraphRefresh is how long a fetched graph is reused for the same
	// query; default 2 minutes.
	UpdateGraphRefresh time.Duration
	// UpdateGraphTimeout bounds one read of the update graph, every try
	// and the waits between them; default 1 minute. Under Run the graph is
	// read in the background and no sync waits for it; a Sync without Run
	// (apply) waits up to this long.
	UpdateGraphTimeout time.Duration

	// RiskConditions evaluates the matching rules of conditional update
	// risks. Default clusterconditions.New(nil): the Always type only.
	RiskConditions *clusterconditions.Registry
	// RiskEvaluationTimeout bounds the evaluation of all risks in one
	// sync; a risk not evaluated by then is EvaluationFailed. Default 10s.
	RiskEvaluationTimeout time.Duration

	// AdminGates is the ConfigMap of the release's admin gates, AdminAcks
	// the admins' acknowledgements of them. Default the CVO's:
	// openshift-config-managed/admin-gates, openshift-config/admin-acks.
	AdminGates, AdminAcks types.NamespacedName

	// eventTally, set by NewForConfig with the broadcaster it makes, lets
	// Shutdown wait for the Events still on their way.
	eventTally *eventTally
}

// setDefaults fills the zero fields that have defaults. It is idempotent,
// so NewForConfig and New may both call it.
func (cfg *Config) setDefaults() {
	if cfg.Namespace == "" {
		cfg.Namespace = apply.DefaultSelf().Namespace
	}
	if cfg.Name == "" {
		cfg.Name = "version"
	}
	if cfg.FeatureGateName == "" {
		cfg.FeatureGateName = DefaultFeatureGateName
	}
	if cfg.LoadOptions == nil {
		o := payload.DefaultLoadOptions()
		cfg.LoadOptions = &o
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Identity == "" {
		cfg.Identity = hostIdentity(cfg.NodeName)
	}
	if cfg.UpdateGraphRefresh == 0 {
		cfg.UpdateGraphRefresh = defaultGraphRefresh
	}
	if cfg.UpdateGraphTimeout == 0 {
		cfg.UpdateGraphTimeout = defaultGraphTimeout
	}
	if cfg.RiskConditions == nil {
		cfg.RiskConditions = clusterconditions.New(nil)
	}
	if cfg.RiskEvaluationTimeout == 0 {
		cfg.RiskEvaluationTimeout = defaultRiskEvaluationTimeout
	}
	if cfg.AdminGates == (types.NamespacedName{}) {
		cfg.AdminGates = precondition.DefaultAdminGates
	}
	if cfg.AdminAcks == (types.NamespacedName{}) {
		cfg.AdminAcks = precondition.DefaultAdminAcks
	}
}

// eventObject is what the operator's and the engine's Events are about:
// the ClusterVersion, with the namespace the Events are recorded in.
func (cfg *Config) eventObject() *corev1.ObjectReference {
	return &corev1.ObjectReference{APIVersion: "config.openshift.io/v1", Kind: "ClusterVersion",
		Name: cfg.Name, Namespace: cfg.Namespace}
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

	syncMu  sync.Mutex
	attempt int
	graphs  *graphFetcher
	risks   *riskEvaluator
	health  health
	// writer is the one writer of the ClusterVersion's status.
	writer *statusWriter
	// updates lists the updates the graph offers.
	updates *updateLister
	// images retrieves releases by image; nil without a Puller.
	images *imageRetriever
	// reader reads releases by version or image.
	reader *releaseReader
	// observe reads what a decision needs.
	observe *observer
	// caches are the loop's informer stores, which passes read through.
	caches loopCaches
}

// New validates cfg and returns an Operator on its clients.
func New(cfg Config) (*Operator, error) {
	var errs []error
	if cfg.KubeClient == nil {
		errs = append(errs, errors.New("Config.KubeClient is required"))
	}
	if cfg.ConfigClient == nil {
		errs = append(errs, errors.New("Config.ConfigClient is required"))
	}
	if cfg.DynamicClient == nil {
		errs = append(errs, errors.New("Config.DynamicClient is required"))
	}
	if cfg.Engine == nil {
		errs = append(errs, errors.New("Config.Engine is required"))
	}
	if cfg.Recorder == nil {
		errs = append(errs, errors.New("Config.Recorder is required"))
	}
	if cfg.Releases == nil {
		errs = append(errs, errors.New("Config.Releases is required"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("operator: %w", err)
	}
	cfg.setDefaults()
	var images *imageRetriever
	if cfg.Puller != nil {
		images = newImageRetriever(cfg.Clock, cfg.Puller, cfg.ReleasePlatform)
	}
	o := &Operator{
		cfg: cfg, kube: cfg.KubeClient, config: cfg.ConfigClient, dynamic: cfg.DynamicClient,
		engine: cfg.Engine, recorder: boundedRecorder{cfg.Recorder}, events: cfg.EventBroadcaster,
		clock: cfg.Clock, metrics: cfg.Metrics,
		graphs: newGraphFetcher(cfg.Clock, cfg.UpdateGraphRefresh, cfg.UpdateGraphTimeout),
		risks:  newRiskEvaluator(cfg.Clock, cfg.RiskConditions, cfg.RiskEvaluationTimeout),
		images: images,
		cvRef:  cfg.eventObject(),
	}
	o.updates = &updateLister{cfg: &o.cfg, clock: o.clock, graphs: o.graphs, risks: o.risks, metrics: o.metrics}
	fields := &fieldCache{dynamic: o.dynamic}
	o.writer = &statusWriter{config: o.config, put: restStatusPut(o.config), fields: fields,
		clock: o.clock, metrics: o.metrics, recorder: o.recorder, cvRef: o.cvRef}
	o.reader = &releaseReader{cfg: &o.cfg, images: images, graphs: o.graphs, kube: o.kube, releases: map[string]*payload.Release{}}
	o.observe = &observer{kube: o.kube, config: o.config, dynamic: o.dynamic, engine: o.engine, fields: fields,
		adminGates: cfg.AdminGates, adminAcks: cfg.AdminAcks, current: o.reader.currentRelease, caches: &o.caches,
		target: func(cv *configv1.ClusterVersion) *payload.Release {
			rel, err := o.reader.loadRelease(targetVersion(cv), cv)
			if err != nil {
				return nil
			}
			return rel
		}}
	o.updates.observe = o.observe
	return o, nil
}

// NewForConfig builds the clients cfg leaves unset on the cluster rc points
// at, within cfg.Budget, and returns the Operator: Events go through a
// broadcaster that StartEvents connects, and the engine keeps its delete
// ledger in cfg.Namespace.
func NewForConfig(rc *rest.Config, cfg Config) (*Operator, error) {
	if rc == nil {
		return nil, errors.New("operator: a rest.Config is required")
	}
	if err := cfg.Budget.Validate(); err != nil {
		return nil, fmt.Errorf("operator: budget: %w", err)
	}
	cfg.setDefaults()
	rc = ClientConfig(rc)
	own := rc
	if r := cfg.Budget.Steady; !r.Unlimited() {
		own = rest.CopyConfig(rc)
		own.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(r.QPS, r.Burst)
	}
	var err error
	if cfg.KubeClient == nil {
		if cfg.KubeClient, err = kubernetes.NewForConfig(own); err != nil {
			return nil, err
		}
	}
	if cfg.ConfigClient == nil {
		if cfg.ConfigClient, err = configclient.NewForConfig(own); err != nil {
			return nil, err
		}
	}
	// The engine builds its own unless given one, so that its requests
	// take its budget.
	engineDynamic := cfg.DynamicClient
	if cfg.DynamicClient == nil {
		if cfg.DynamicClient, err = dynamic.NewForConfig(own); err != nil {
			return nil, err
		}
	}
	if cfg.Recorder == nil {
		cfg.EventBroadcaster, cfg.eventTally, cfg.Recorder = newTalliedEvents(cfg.EventBroadcaster,
			corev1.EventSource{Component: "payload-applier", Host: cfg.Identity}, cfg.eventObject())
	}
	if cfg.Engine == nil {
		self := apply.DefaultSelf()
		self.Namespace = cfg.Namespace
		cfg.Engine, err = apply.NewForConfig(rc, apply.Config{
			Dynamic:     engineDynamic,
			Budget:      cfg.Budget,
			Self:        self,
			Recorder:    cfg.Recorder,
			EventObject: cfg.eventObject(),
			Clock:       cfg.Clock,
			OnDelete:    cfg.Metrics.CountDelete,
		})
		if err != nil {
			return nil, err
		}
	}
	return New(cfg)
}

// StartEvents sends recorded Events to the cluster until Shutdown. Without
// an EventBroadcaster the Recorder delivers them itself.
func (o *Operator) StartEvents() {
	if o.events == nil {
		return
	}
	var sink record.EventSink = &typedcorev1.EventSinkImpl{Interface: o.kube.CoreV1().Events(o.cfg.Namespace)}
	if o.cfg.eventTally != nil {
		sink = countingSink{EventSink: sink, tally: o.cfg.eventTally}
	}
	o.events.StartRecordingToSink(sink)
}

// Shutdown waits, for a bounded time, until the Events recorded so far
// are written, then stops the event broadcaster, if any.
func (o *Operator) Shutdown() {
	if o.events == nil {
		return
	}
	if o.cfg.eventTally != nil {
		o.cfg.eventTally.wait(context.Background(), eventFlushTimeout)
	}
	o.events.Shutdown()
}

// Engine returns the apply engine, shared with the CLI.
func (o *Operator) Engine() *apply.Engine { return o.engine }

// releaseReader reads the releases the operator judges and applies: by
// version from the release source, by image from the release cache, and
// keeps them loaded. It reads the cluster only for the current release's
// signature keys.
type releaseReader struct {
	cfg    *Config
	images *imageRetriever
	graphs *graphFetcher
	kube   kubernetes.Interface
	// releases are the releases loaded, by version or image.
	releases map[string]*payload.Release
	// verifier checks targets by image; it is the current release's.
	verifier cachedVerifier
	// features is the cluster's FeatureGate as last read.
	features clusterFeatures
}

// loadRelease takes a release from the source once; payloads do not change
// under a running operator, and filters are applied per pass.
func (r *releaseReader) loadRelease(version string, cv *configv1.ClusterVersion) (*payload.Release, error) {
	all, ok := r.releases[version]
	if !ok {
		rel, err := r.cfg.Releases.Load(version, *r.cfg.LoadOptions)
		if err != nil {
			return nil, err
		}
		if rel.Version != version {
			return nil, fmt.Errorf("payload %s declares version %s, not the requested %s", rel.Dir, rel.Version, version)
		}
		if abs, err := filepath.Abs(rel.Dir); err == nil {
			rel.Dir = abs
		}
		// Validated: the text was only for findings, and it is about a
		// quarter of what the release holds.
		rel.DropSource()
		r.pruneReleases(cv, version)
		r.releases[version] = rel
		all = rel
	}
	return all.Filter(r.loadOptionsFor(cv, version)), nil
}

// pruneReleases forgets the cached releases the cluster no longer uses:
// a release holds every manifest in memory, and a cluster that was asked
// for many targets over its life would otherwise keep them all.
func (r *releaseReader) pruneReleases(cv *configv1.ClusterVersion, loading string) {
	inUse := map[string]bool{loading: true, cv.Status.Desired.Version: true, targetVersion(cv): true,
		precondition.LastCompletedVersion(cv.Status.History): true, cv.Status.Desired.Image: true}
	if du := cv.Spec.DesiredUpdate; du != nil {
		inUse[du.Image] = true
	}
	for v := range r.releases {
		if !inUse[v] {
			delete(r.releases, v)
		}
	}
}

// loadOptionsFor adds the cluster's feature set and gates, and the
// ClusterVersion's capabilities, spec and status (see Capabilities), and
// overrides, to the configured filters of release.
func (r *releaseReader) loadOptionsFor(cv *configv1.ClusterVersion, release string) payload.LoadOptions {
	fg, _ := r.features.current()
	return LoadOptionsFor(*r.cfg.LoadOptions, fg, cv, release)
}

// LoadOptionsFor are the filters a pass applies to release on the cluster
// cv: base, the FeatureGate fg's feature set and gates (nil: none read),
// and cv's overrides and capabilities. plan filters with it too.
func LoadOptionsFor(base payload.LoadOptions, fg *configv1.FeatureGate, cv *configv1.ClusterVersion, release string) payload.LoadOptions {
	opts := FeatureGateLoadOptions(base, fg, FeatureGateVersion(cv, release))
	opts.Overrides = cv.Spec.Overrides
	caps, _ := clusterversion.Capabilities(cv, base.AlwaysEnabled...)
	opts.Capabilities = caps.Status()
	return opts
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

// ClientConfig copies cfg for the applier's clients. It sets no
// client-side rate limit unless cfg has one, leaving the apiserver's
// capacity to API Priority and Fairness; Config.Budget sets one per client
// (docs/benchmarks.md measures both). The apiserver's warnings go through
// apply.WarningHandler.
func ClientConfig(cfg *rest.Config) *rest.Config {
	rc := apply.WithWarnings(rest.CopyConfig(cfg))
	if rc.QPS == 0 && rc.RateLimiter == nil {
		rc.QPS = -1
	}
	return rc
}
