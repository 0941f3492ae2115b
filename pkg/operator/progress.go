package operator

import (
	"context"
	"sync"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/payload-applier/payload-applier/pkg/apply"
	"github.com/payload-applier/payload-applier/pkg/clusterversion"
	"github.com/payload-applier/payload-applier/pkg/graph"
	"github.com/payload-applier/payload-applier/pkg/payload"
)

// progressInterval spaces the Progressing writes of a running pass. People
// and `oc adm upgrade` read the count, for whom a few seconds is fresh; a
// pass of a thousand objects then costs a write every few seconds instead
// of one per object, and a pass shorter than this, like most resyncs and
// small updates, writes status only once, after it.
const progressInterval = 5 * time.Second

// progressThrottle decides when a running pass writes its count.
type progressThrottle struct {
	interval time.Duration
	// lastWrite is the time of the last write, or the start of the pass.
	lastWrite time.Time
	lastDone  int
}

// due reports whether done, counted at now, is worth a write: the interval
// has passed since the last write and the count moved since.
func (p *progressThrottle) due(now time.Time, done int) bool {
	return done != p.lastDone && now.Sub(p.lastWrite) >= p.interval
}

func (p *progressThrottle) wrote(now time.Time, done int) {
	p.lastWrite, p.lastDone = now, done
}

// runPass runs the engine over rel and sends its events to events, when
// set. An install or update also writes Progressing=True with its count
// while it runs; runPass then returns the ClusterVersion as last written,
// which the final write must start from. A reconcile is not progress:
// Progressing stays False during it, as in the CVO.
func (o *Operator) runPass(ctx context.Context, cv *configv1.ClusterVersion, rel *payload.Release, opts apply.SyncOptions,
	events chan<- apply.Event, now metav1.Time) (*apply.SyncResult, *configv1.ClusterVersion, error) {
	if opts.Mode == graph.ModeReconcile {
		opts.Events = events
		res, err := o.engine.Sync(ctx, rel, opts)
		return res, nil, err
	}
	reporter := &progressReporter{
		o: o, base: cv.DeepCopy(), cv: cv.DeepCopy(), transition: now,
		throttle: progressThrottle{interval: progressInterval, lastWrite: o.clock.Now()},
		poke:     make(chan struct{}, 1), stopped: make(chan struct{}),
	}
	go reporter.run(ctx)
	engineEvents := make(chan apply.Event)
	opts.Events = engineEvents
	forwarded := make(chan struct{})
	go func() {
		defer close(forwarded)
		for ev := range engineEvents {
			reporter.observe(ev)
			if events == nil {
				continue
			}
			select {
			case events <- ev:
			case <-ctx.Done():
			}
		}
	}()
	res, err := o.engine.Sync(ctx, rel, opts)
	// The engine sends nothing once Sync returns.
	close(engineEvents)
	<-forwarded
	return res, reporter.stop(), err
}

// progressReporter writes a running pass's count to Progressing from its
// own goroutine, so that the pass never waits on a status write.
type progressReporter struct {
	o *Operator
	// transition is the pass's start, when Progressing turned True.
	transition metav1.Time
	poke       chan struct{}
	stopped    chan struct{}

	countMu     sync.Mutex
	done, total int

	// base is the ClusterVersion as the pass began, before its status was
	// fitted into its limits: each write starts from it, so that each
	// cuts what the final write will, not less because what it starts
	// from was cut already.
	base *configv1.ClusterVersion

	// The rest belongs to run. cv is the ClusterVersion as last written,
	// or as before the pass; written is nil until a write succeeds.
	throttle progressThrottle
	cv       *configv1.ClusterVersion
	written  *configv1.ClusterVersion
}

// observe takes the count of an event and wakes the writer.
func (r *progressReporter) observe(ev apply.Event) {
	r.countMu.Lock()
	r.done, r.total = ev.Done, ev.Total
	r.countMu.Unlock()
	select {
	case r.poke <- struct{}{}:
	default:
	}
}

// run writes the latest count whenever the throttle allows, until stop.
func (r *progressReporter) run(ctx context.Context) {
	defer close(r.stopped)
	for range r.poke {
		r.countMu.Lock()
		done, total := r.done, r.total
		r.countMu.Unlock()
		now := r.o.clock.Now()
		if !r.throttle.due(now, done) {
			continue
		}
		// A failed write waits its turn like any other, not the next event.
		r.throttle.wrote(now, done)
		next := r.base.DeepCopy()
		next.ResourceVersion = r.cv.ResourceVersion
		next.Status.Conditions = clusterversion.SetCondition(next.Status.Conditions, configv1.ClusterOperatorStatusCondition{
			Type: configv1.OperatorProgressing, Status: configv1.ConditionTrue,
			Message: clusterversion.WorkingTowards(next.Status.Desired.Version, done, total)}, r.transition)
		written, err := r.o.writer.updateStatus(ctx, r.cv, next)
		if err != nil {
			klog.FromContext(ctx).Error(err, "Writing progress failed")
			continue
		}
		if written != nil {
			r.cv, r.written = written, written
		}
	}
}

// stop ends the writer once the events have ended and returns the
// ClusterVersion it last wrote, or nil.
func (r *progressReporter) stop() *configv1.ClusterVersion {
	close(r.poke)
	<-r.stopped
	return r.written
}
