package apply

import (
	"fmt"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/payload-applier/payload-applier/pkg/apply/cleanup"
	"github.com/payload-applier/payload-applier/pkg/apply/deletion"
)

// NewForConfig builds an Engine on the cluster rc points at, filling what
// cfg leaves unset: the dynamic client, the REST client that sends
// DELETEs, discovery, a cached discovery RESTMapper, and the ConfigMaps of
// the delete ledger and the operand cleanups that cfg.Self names, and the
// metadata client of WatchLive. The clients it builds send their requests
// within cfg.Budget; a client cfg gives keeps its own limit.
func NewForConfig(rc *rest.Config, cfg Config) (*Engine, error) {
	if err := cfg.Budget.Validate(); err != nil {
		return nil, fmt.Errorf("apply engine: budget: %w", err)
	}
	if !cfg.Budget.Unlimited() {
		cfg.limiter = newBudgetLimiter(cfg.Budget)
	}
	rc = withBudget(WithWarnings(rc), cfg.limiter)
	if cfg.Dynamic == nil {
		dyn, err := dynamic.NewForConfig(rc)
		if err != nil {
			return nil, err
		}
		cfg.Dynamic = dyn
	}
	if cfg.Metadata == nil {
		md, err := metadata.NewForConfig(rc)
		if err != nil {
			return nil, err
		}
		cfg.Metadata = md
	}
	kube, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	if cfg.REST == nil {
		cfg.REST = kube.CoreV1().RESTClient()
	}
	if cfg.Mapper == nil || cfg.Discovery == nil {
		disc, err := discovery.NewDiscoveryClientForConfig(rc)
		if err != nil {
			return nil, err
		}
		if cfg.Discovery == nil {
			cfg.Discovery = disc
		}
		if cfg.Mapper == nil {
			cfg.Mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
		}
	}
	self := cfg.Self.WithDefaults()
	if cfg.Ledger == nil {
		cfg.Ledger = deletion.NewConfigMapStore(kube, self.Namespace, self.Ledger)
	}
	if cfg.CleanupStore == nil {
		cfg.CleanupStore = cleanup.NewConfigMapStore(kube, self.Namespace, self.OperandCleanup)
	}
	return New(cfg)
}
