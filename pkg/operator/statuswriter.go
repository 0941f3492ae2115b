package operator

import (
	"sync"

	configv1 "github.com/openshift/api/config/v1"
	configclient "github.com/openshift/client-go/config/clientset/versioned"
	"github.com/payload-applier/payload-applier/pkg/clusterversion"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
)

// statusWriter writes the ClusterVersion's status: fitted into its
// limits, and only when it changed.
type statusWriter struct {
	config   configclient.Interface
	put      statusPut
	fields   *fieldCache
	clock    clock.Clock
	metrics  *Metrics
	recorder record.EventRecorder
	cvRef    *corev1.ObjectReference
	cuts     cutsReporter
	last     lastWrite
	// judged are the risk evaluations the pass's conditional updates
	// were judged by; set by the pass before it writes.
	judged map[string]clusterversion.RiskResult
	// riskStatusPruned is set while the CRD does not keep the risk
	// status: the last write sent one, and its answer had none.
	riskStatusPruned bool
}

// lastWrite is the writer's newest status write: the ClusterVersion as
// written, and the resourceVersion it replaced.
type lastWrite struct {
	mu       sync.Mutex
	replaced string
	written  *configv1.ClusterVersion
}

func (w *statusWriter) remember(replaced string, written *configv1.ClusterVersion) {
	w.last.mu.Lock()
	defer w.last.mu.Unlock()
	w.last.replaced, w.last.written = replaced, written
}

// newest is cached, or what this writer wrote over it when cached is the
// very version that write replaced: a watch brings a write a moment after
// it is made, and a pass starting in between would otherwise decide on
// the status before it and have its own write refused as a conflict.
func (w *statusWriter) newest(cached *configv1.ClusterVersion) *configv1.ClusterVersion {
	w.last.mu.Lock()
	defer w.last.mu.Unlock()
	if l := w.last.written; l != nil && l.UID == cached.UID && w.last.replaced != "" && w.last.replaced == cached.ResourceVersion {
		return l
	}
	return cached
}

// cutsReporter remembers the cuts last written, so that an Event
// announces each new cut once, not every pass.
type cutsReporter struct {
	mu   sync.Mutex
	last map[string]bool
}

// fitStatus fits cv's status into its limits before a write, sets the
// truncation gauge, and announces a cut the last write did not make with
// a Warning Event. A cut that is gone is no news: a value carried over
// from the status as read was cut before and keeps its marker.
func (w *statusWriter) fitStatus(cv *configv1.ClusterVersion, applies clusterversion.RiskApplies) {
	cuts := clusterversion.Fit(&cv.Status, applies, metav1.NewTime(w.clock.Now()))
	w.metrics.observeStatusCuts(cuts.PerField)
	w.cuts.mu.Lock()
	news := false
	for _, n := range cuts.Notes {
		news = news || !w.cuts.last[n]
	}
	w.cuts.last = map[string]bool{}
	for _, n := range cuts.Notes {
		w.cuts.last[n] = true
	}
	w.cuts.mu.Unlock()
	if news {
		w.recorder.Event(w.cvRef, corev1.EventTypeWarning, clusterversion.ReasonStatusLimits, cuts.Message())
	}
}
