package main

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/payload-applier/payload-applier/pkg/apply"
	"github.com/payload-applier/payload-applier/pkg/operator"
	"github.com/payload-applier/payload-applier/pkg/payload"
	"github.com/payload-applier/payload-applier/pkg/releaseimage"
)

type startOptions struct {
	goMemoryLimit string
	patience      patienceFlags
	cluster       clusterFlags
	registry      registryFlags
	payloads      string
	strictOrder   bool
	listen        string
	leaderElect   bool
	resync        time.Duration
	identity      string
	updateGraph   string
	graphEvery    time.Duration
	graphWait     time.Duration
	stallAfter    time.Duration
	stuckAfter    time.Duration
	liveWindow    time.Duration
	tlsCert       string
	tlsKey        string
	releaseImage  string
	autoUpdate    bool
	nodeName      string
	inclusion     inclusionFlags
	prometheus    prometheusFlags
	rate          budgetFlags
}

func newStartCommand() *cobra.Command { return (&startOptions{}).command() }

func (o *startOptions) command() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "start [--payloads DIR]",
		Short: "Run as the cluster-version operator",
		Long: `Start runs the operator: it reconciles the ClusterVersion named "version"
towards spec.desiredUpdate. A release named by spec.desiredUpdate.image
(registry/repository@sha256:<hex>; a tag only with force) is pulled into
--release-cache, loaded and, once the cluster runs a release, verified
with that release's keys. A version alone is found in the release store
given by --payloads (one payload sub-directory per version) or, failing
that, by the image the update graph gives for it. Releases are retrieved
beside the syncs: ReleaseAccepted is Unknown (RetrievePayload) meanwhile,
and the current release keeps being reconciled. It resyncs every 2 to 4
minutes, wakes up on ClusterVersion and ClusterOperator changes, and serves
Prometheus metrics on --listen.

It reads the update graph from spec.upstream, queried with spec.channel and
the cluster's version, or from --update-graph, to fill
status.availableUpdates, set RetrievedUpdates and ReleaseDeprecated, and
refuse updates to deprecated releases. The graph is read beside the
syncs, every --update-graph-refresh and as soon as the upstream, channel
or version changes: a sync never waits for it and uses the last answer.

Manifests are included for --profile (default $CLUSTER_PROFILE), without
those --exclude-manifests (default $EXCLUDE_MANIFESTS) excludes, and for the
feature set and feature gates of the cluster's FeatureGate "cluster", read
every pass and watched; a new feature set restarts the sync. Without a
FeatureGate, the Default feature set and its gates apply.

Conditional updates' PromQL risks are queried at --prometheus-url, each
query at most once an hour and at most one query a second.

It takes the CVO's command line as its Deployment runs it: with
--release-image, the release it ships in is read from $PAYLOAD_OVERRIDE
(default /; release-manifests/, and its own manifests/ rendered with the
image and the profile), and a ClusterVersion that neither requests nor
runs a release installs it; --serving-cert-file and --serving-key-file
name the serving certificate, --node-name (default $NODE_NAME) starts the
leader election identity, --always-enable-capabilities names capabilities
enabled whatever the ClusterVersion asks, --v sets the log's verbosity,
and --enable-auto-update=false is accepted.

Requests to the apiserver are limited as the CVO limits its own: 40 per
second (burst 80) while installing, 20 per second (burst 40) otherwise,
for the applies and deletes, and the operator's own reads and writes at
the latter rate in a bucket of their own; --kube-api-qps 0 and
--install-kube-api-qps 0 lift them.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	o.cluster.add(cmd)
	cmd.Flags().StringVar(&o.payloads, "payloads", "", "release store: a directory with one payload directory per version; without it, releases are read by image only")
	o.registry.addPull(cmd)
	cmd.Flags().StringVar(&o.listen, "listen", "127.0.0.1:9099", "address for /metrics, /healthz and /readyz; plain HTTP on loopback, HTTPS with /metrics behind the cluster's authentication and authorization elsewhere; empty disables it")
	cmd.Flags().StringVar(&o.goMemoryLimit, "go-memory-limit", defaultGoMemoryLimit, "soft memory limit of the Go runtime (GOMEMLIMIT), which collects garbage harder near it and never refuses memory; 0 for none; default "+defaultGoMemoryLimit+", or 90% of the container's memory limit when lower, unless GOMEMLIMIT is set")
	cmd.Flags().BoolVar(&o.leaderElect, "leader-elect", true, "hold a Lease so that only one instance acts")
	cmd.Flags().DurationVar(&o.resync, "resync-interval", 2*time.Minute, "base resync period; each wait is drawn from [interval, 2×interval)")
	cmd.Flags().StringVar(&o.identity, "identity", "", "leader election identity; default the host name and a random suffix")
	cmd.Flags().StringVar(&o.updateGraph, "update-graph", "", "read the update graph from this Cincinnati JSON file instead of spec.upstream")
	cmd.Flags().DurationVar(&o.graphEvery, "update-graph-refresh", 2*time.Minute, "how long a fetched update graph is reused before it is read again")
	cmd.Flags().DurationVar(&o.graphWait, "update-graph-timeout", time.Minute, "give up one read of the update graph (every try and the waits between them) after this long; reads run beside the syncs, which never wait for them")
	cmd.Flags().StringVar(&o.tlsCert, "tls-cert-file", "", "serving certificate for --listen off loopback; default a self-signed one")
	cmd.Flags().StringVar(&o.tlsKey, "tls-private-key-file", "", "key of --tls-cert-file")
	// The CVO's command line, as its Deployment runs it.
	cmd.Flags().StringVar(&o.releaseImage, "release-image", "", "the release image this operator ships in, with the release at $PAYLOAD_OVERRIDE (default /) in release-manifests/ and its own manifests/ rendered for it: a ClusterVersion with neither spec.desiredUpdate nor status.desired installs it")
	cmd.Flags().BoolVar(&o.autoUpdate, "enable-auto-update", false, "the CVO's auto-update controller; only false is supported: updates are requested in spec.desiredUpdate")
	cmd.Flags().StringVar(&o.tlsCert, "serving-cert-file", "", "the CVO's name for --tls-cert-file")
	cmd.Flags().StringVar(&o.tlsKey, "serving-key-file", "", "the CVO's name for --tls-private-key-file")
	cmd.Flags().StringVar(&o.nodeName, "node-name", os.Getenv("NODE_NAME"), "the node this instance runs on (default $NODE_NAME): leader election identities start with it, as the CVO's do")
	cmd.Flags().DurationVar(&o.liveWindow, "liveness-window", 30*time.Minute, "/healthz fails when the leading instance has ended no pass for this long")
	addStrictOrder(cmd, &o.strictOrder)
	cmd.Flags().DurationVar(&o.stuckAfter, "delete-stuck-after", apply.DefaultStuckAfter, "report a delete still in progress after this long as stuck (Upgradeable=False, ResourceDeletionFailed)")
	o.inclusion.add(cmd)
	o.rate.add(cmd, apply.CVOBudget)
	o.prometheus.add(cmd)
	o.patience.add(cmd)
	cmd.Flags().DurationVar(&o.stallAfter, "operand-cleanup-stall-after", apply.DefaultStuckAfter, "report an operand cleanup stalled after this long without progress, or blocked after this long unable to start")
	return cmd
}

func (o *startOptions) run(cmd *cobra.Command) error {
	if st, err := os.Stat(o.payloads); o.payloads != "" && (err != nil || !st.IsDir()) {
		return withExitCode(exitUsage, fmt.Errorf("--payloads %s is not a readable directory", o.payloads))
	}
	puller, err := o.registry.puller()
	if err != nil {
		return withExitCode(exitUsage, fmt.Errorf("--release-cache: %w", err))
	}
	if o.graphEvery <= 0 {
		return withExitCode(exitUsage, fmt.Errorf("--update-graph-refresh must be positive, not %s", o.graphEvery))
	}
	if o.graphWait <= 0 {
		return withExitCode(exitUsage, fmt.Errorf("--update-graph-timeout must be positive, not %s", o.graphWait))
	}
	if o.liveWindow < 2*o.resync {
		return withExitCode(exitUsage, fmt.Errorf("--liveness-window %s must be at least twice --resync-interval %s, the longest wait between passes", o.liveWindow, o.resync))
	}
	if o.stuckAfter <= 0 {
		return withExitCode(exitUsage, fmt.Errorf("--delete-stuck-after must be positive, not %s", o.stuckAfter))
	}
	if o.stallAfter <= 0 {
		return withExitCode(exitUsage, fmt.Errorf("--operand-cleanup-stall-after must be positive, not %s", o.stallAfter))
	}
	budget, err := o.rate.budget()
	if err != nil {
		return withExitCode(exitUsage, err)
	}
	patience, err := o.patience.patience()
	if err != nil {
		return err
	}
	soft, err := setGoMemoryLimit(os.DirFS("/"), o.goMemoryLimit, cmd.Flags().Changed("go-memory-limit"))
	if err != nil {
		return withExitCode(exitUsage, err)
	}
	if soft > 0 && soft < math.MaxInt64 {
		klog.FromContext(cmd.Context()).Info("Go memory limit set", "bytes", soft)
	}
	// The operator keeps the releases it uses and drops the rest; the parse
	// cache would keep an old release's objects alive after an update.
	payload.SetParseCacheLimit(0)
	loadOpts, err := o.inclusion.loadOptions(cmd.Context())
	if err != nil {
		return withExitCode(exitUsage, err)
	}
	if o.autoUpdate {
		return withExitCode(exitUsage, errors.New("--enable-auto-update=true is not supported: request updates in spec.desiredUpdate (oc adm upgrade)"))
	}
	releases, running, err := o.releases(loadOpts)
	if err != nil {
		return withExitCode(exitUsage, err)
	}
	cfg, err := o.cluster.restConfig()
	if err != nil {
		return withExitCode(exitUsage, err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	metrics, err := operator.NewMetrics(reg)
	if err != nil {
		return err
	}
	risks, err := o.prometheus.riskConditions(reg)
	if err != nil {
		return withExitCode(exitUsage, err)
	}
	op, err := operator.NewForConfig(cfg, operator.Config{
		Releases:        releases,
		RunningRelease:  running,
		NodeName:        o.nodeName,
		Puller:          puller,
		ReleasePlatform: o.registry.platform,
		Namespace:       o.cluster.namespace,
		Metrics:         metrics,
		Identity:        o.identity,
		LoadOptions:     loadOpts,

		UpdateGraph:              graphSource(o.updateGraph),
		UpdateGraphRefresh:       o.graphEvery,
		UpdateGraphTimeout:       o.graphWait,
		RiskConditions:           risks,
		OperandCleanupStallAfter: o.stallAfter,
		OperatorPatience:         patience,
		Sync:                     apply.SyncOptions{StuckAfter: o.stuckAfter, StrictOrder: o.strictOrder},
		Budget:                   budget,
	})
	if err != nil {
		return withExitCode(exitUsage, err)
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if o.listen != "" {
		var secure *secureServing
		if !isLoopback(o.listen) {
			if secure, err = o.secureServing(cfg); err != nil {
				return withExitCode(exitUsage, err)
			}
		}
		srv, err := serveMetrics(ctx, o.listen, reg, secure, probes{
			live:  func() error { return op.Live(o.liveWindow) },
			ready: op.Ready,
		})
		if err != nil {
			return withExitCode(exitUsage, err)
		}
		defer srv.Close()
	}
	err = op.Run(ctx, operator.RunOptions{ResyncInterval: o.resync, LeaderElection: o.leaderElect})
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// releases is the release store of --payloads and, with --release-image,
// the release this operator ships in, read from $PAYLOAD_OVERRIDE (default
// /) with its manifests/ rendered for that image, and its version. The
// release the running image holds is trusted as its binary is: it is not
// verified, as the CVO does not verify its own.
func (o *startOptions) releases(opts *payload.LoadOptions) (operator.ReleaseSource, string, error) {
	store := &operator.DirStore{Root: o.payloads}
	if o.releaseImage == "" {
		return store, "", nil
	}
	if _, err := releaseimage.ParseRef(o.releaseImage); err != nil {
		return nil, "", fmt.Errorf("--release-image: %w", err)
	}
	dir := cmp.Or(os.Getenv("PAYLOAD_OVERRIDE"), "/")
	rel, err := payload.LoadAndRender(dir, *opts, payload.RenderConfig{ReleaseImage: o.releaseImage, ClusterProfile: cmp.Or(ptr.Deref(opts.Profile, ""), payload.DefaultClusterProfile)})
	if err != nil {
		return nil, "", fmt.Errorf("--release-image %s: the release it ships in, at $PAYLOAD_OVERRIDE (%s): %w", o.releaseImage, dir, err)
	}
	klog.InfoS("Running from a release", "image", o.releaseImage, "version", rel.Version, "dir", dir)
	return releaseBeside{LoadedRelease: operator.LoadedRelease{Release: rel, Image: o.releaseImage}, store: store}, rel.Version, nil
}

// secureServing is what --listen off loopback needs: a certificate, and
// the delegated authentication and authorization that guard /metrics.
type secureServing struct {
	cert  tls.Certificate
	guard func(http.Handler) http.Handler
}

func (o *startOptions) secureServing(cfg *rest.Config) (*secureServing, error) {
	cert, err := servingCert(o.tlsCert, o.tlsKey)
	if err != nil {
		return nil, fmt.Errorf("--listen %s off loopback serves HTTPS: %w", o.listen, err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	guard, err := delegatedAuth(kube)
	if err != nil {
		return nil, err
	}
	return &secureServing{cert: cert, guard: guard}, nil
}

// probes are the checks behind /healthz and /readyz.
type probes struct {
	live, ready func() error
}

// serveMetrics listens before returning, so a busy port is an immediate
// error. It serves /metrics, /healthz (liveness: fails when the leading
// instance has ended no pass for --liveness-window) and /readyz (ready
// once the cluster is bootstrapped).
func serveMetrics(ctx context.Context, addr string, reg *prometheus.Registry, secure *secureServing, p probes) (*http.Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--listen %s: %w", addr, err)
	}
	var metrics http.Handler = promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	if secure != nil {
		metrics = secure.guard(metrics)
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{secure.cert}, MinVersion: tls.VersionTLS12})
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", metrics)
	mux.HandleFunc("/healthz", probeHandler(p.live))
	mux.HandleFunc("/readyz", probeHandler(p.ready))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			klog.FromContext(ctx).Error(err, "Metrics server stopped")
		}
	}()
	klog.FromContext(ctx).Info("Serving metrics", "address", ln.Addr().String())
	return srv, nil
}

// probeHandler answers 200 "ok", or 503 with why.
func probeHandler(check func() error) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		if err := check(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	}
}
