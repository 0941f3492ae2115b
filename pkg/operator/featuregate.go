package operator

import (
	"context"
	"fmt"
	"sync"

	configv1 "github.com/openshift/api/config/v1"
	configclient "github.com/openshift/client-go/config/clientset/versioned"
	configinformers "github.com/openshift/client-go/config/informers/externalversions"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/payload-applier/payload-applier/pkg/payload"
)

// DefaultFeatureGateName is the FeatureGate the CVO reads the cluster's
// feature set and enabled feature gates from.
const DefaultFeatureGateName = "cluster"

// EnabledFeatureGates returns the gates fg's status enables for version,
// and whether an entry for version was found. Without one the set is
// empty, as in the CVO: a gated manifest waits until the config operator
// writes the entry for the version.
func EnabledFeatureGates(fg *configv1.FeatureGate, version string) (sets.Set[string], bool) {
	gates := sets.New[string]()
	for _, details := range fg.Status.FeatureGates {
		if details.Version != version {
			continue
		}
		for _, g := range details.Enabled {
			gates.Insert(string(g.Name))
		}
		return gates, true
	}
	return gates, false
}

// FeatureGateLoadOptions returns base filtering for the cluster fg
// describes: its spec.featureSet and the gates its status enables for
// version. A nil fg, no FeatureGate in the cluster, leaves base as it is.
func FeatureGateLoadOptions(base payload.LoadOptions, fg *configv1.FeatureGate, version string) payload.LoadOptions {
	if fg == nil {
		return base
	}
	set := string(fg.Spec.FeatureSet)
	base.RequiredFeatureSet = &set
	base.EnabledFeatureGates, _ = EnabledFeatureGates(fg, version)
	return base
}

// ReadFeatureGate gets the FeatureGate name. It returns nil, and no error,
// when the cluster has none, or no FeatureGate API at all: a cluster
// without the config operator.
func ReadFeatureGate(ctx context.Context, client configclient.Interface, name string) (*configv1.FeatureGate, error) {
	fg, err := client.ConfigV1().FeatureGates().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read FeatureGate %s: %w", name, err)
	}
	return fg, nil
}

// clusterFeatures is what the operator last read of the FeatureGate.
type clusterFeatures struct {
	mu sync.Mutex
	// read is set once a read answered, found or not.
	read bool
	// gate is the FeatureGate as last read; nil while there is none.
	gate *configv1.FeatureGate
	// featureSet is the one the sync runs with; a change restarts it.
	featureSet configv1.FeatureSet
	// seen is set once the FeatureGate was found, from when it is watched.
	seen bool
}

func (f *clusterFeatures) current() (*configv1.FeatureGate, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.gate, f.seen
}

// refreshFeatureGate reads the FeatureGate at the start of a pass, through
// caches when they watch it. A read that fails keeps the last answer. A
// new feature set restarts the sync, as the CVO restarts itself
// (featurechangestopper.go): the releases held are dropped, and the
// message returned says so; "" when the set is the same.
func (r *releaseReader) refreshFeatureGate(ctx context.Context, cc configclient.Interface, caches *loopCaches) (restart string) {
	logger := klog.FromContext(ctx)
	fg, cached := caches.featureGate(ctx, r.cfg.FeatureGateName)
	var err error
	if !cached {
		fg, err = ReadFeatureGate(ctx, cc, r.cfg.FeatureGateName)
	}
	if err != nil {
		logger.Error(err, "Keeping the feature set and gates last read")
		return ""
	}
	f := &r.features
	f.mu.Lock()
	first := !f.read
	wasFound := f.gate != nil
	changed := !equality.Semantic.DeepEqual(f.gate, fg)
	var set configv1.FeatureSet
	if fg != nil {
		set = fg.Spec.FeatureSet
	}
	previous := f.featureSet
	f.read, f.gate = true, fg
	f.seen = f.seen || fg != nil
	f.featureSet = set
	f.mu.Unlock()

	switch {
	case fg == nil && (first || wasFound):
		logger.Info("No FeatureGate in the cluster: including manifests as for the Default feature set, with the feature gates openshift/api enables in it for the profile",
			"featureGate", r.cfg.FeatureGateName)
	case fg != nil && (first || changed):
		logger.Info("FeatureGate read", "featureGate", r.cfg.FeatureGateName, "featureSet", set)
	}
	if first || set == previous {
		return ""
	}
	restart = fmt.Sprintf("FeatureSet was %q, but the current feature set is %q; restarting the sync", previous, set)
	logger.Info(restart)
	r.releases = map[string]*payload.Release{}
	return restart
}

// EventFeatureSetChanged is the Event of a sync restarted for a new
// feature set.
const EventFeatureSetChanged = "FeatureSetChanged"

// FeatureGateVersion is the version whose enabled gates filter release:
// that of the release the cluster runs or is moving to (status.desired),
// as the CVO uses its own; before any, or without a ClusterVersion, the
// release itself.
func FeatureGateVersion(cv *configv1.ClusterVersion, release string) string {
	if cv != nil && cv.Status.Desired.Version != "" {
		return cv.Status.Desired.Version
	}
	return release
}

// featureGatesChanged reports the FeatureGate changes that matter to
// inclusion: the feature set and the enabled gates.
func featureGatesChanged(a, b *configv1.FeatureGate) bool {
	return a.Spec.FeatureSet != b.Spec.FeatureSet || !equality.Semantic.DeepEqual(a.Status.FeatureGates, b.Status.FeatureGates)
}

// featureGateWatch wakes the loop when the FeatureGate changes. It starts
// once the FeatureGate has been found: on a cluster without the
// FeatureGate API an informer would log a failed list every few seconds,
// and the passes read the FeatureGate anyway.
type featureGateWatch struct {
	factory configinformers.SharedInformerFactory
}

// startOnce starts the watch when the FeatureGate has been seen and the
// watch is not running yet.
func (w *featureGateWatch) startOnce(ctx context.Context, o *Operator, poke func()) {
	if _, seen := o.reader.features.current(); w.factory != nil || !seen {
		return
	}
	byName := configinformers.WithTweakListOptions(func(lo *metav1.ListOptions) {
		lo.FieldSelector = fields.OneTermEqualSelector("metadata.name", o.cfg.FeatureGateName).String()
	})
	w.factory = configinformers.NewSharedInformerFactoryWithOptions(o.config, 0, byName)
	_, _ = w.factory.Config().V1().FeatureGates().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(interface{}) { poke() },
		DeleteFunc: func(interface{}) { poke() },
		UpdateFunc: func(oldObj, newObj interface{}) {
			a, ok1 := oldObj.(*configv1.FeatureGate)
			b, ok2 := newObj.(*configv1.FeatureGate)
			if ok1 && ok2 && featureGatesChanged(a, b) {
				poke()
			}
		},
	})
	o.caches.set(func(c *loopCaches) { c.fgInformer = w.factory.Config().V1().FeatureGates().Informer() })
	w.factory.Start(ctx.Done())
	klog.FromContext(ctx).Info("Watching the FeatureGate", "featureGate", o.cfg.FeatureGateName)
}

func (w *featureGateWatch) stop() {
	if w.factory != nil {
		w.factory.Shutdown()
	}
}
