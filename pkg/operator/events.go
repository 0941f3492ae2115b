package operator

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"

	"github.com/payload-applier/payload-applier/pkg/payload"
)

// eventFlushTimeout bounds how long Shutdown waits for Events still on
// their way: the broadcaster's spam filter may drop some, which then
// never arrive.
const eventFlushTimeout = 5 * time.Second

// eventTally counts the Events recorded through a broadcaster and the
// writes its sink finished. The broadcaster drops what is still queued
// when it shuts down, so without waiting a one-shot `apply` exits before
// its Events reach the cluster.
type eventTally struct {
	recorded, written atomic.Int64
}

// wait returns once every recorded Event was written, or at the timeout.
func (t *eventTally) wait(ctx context.Context, timeout time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for t.written.Load() < t.recorded.Load() {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// countingRecorder counts what it records.
type countingRecorder struct {
	record.EventRecorder
	tally *eventTally
}

func (r countingRecorder) Event(obj runtime.Object, eventtype, reason, message string) {
	r.tally.recorded.Add(1)
	r.EventRecorder.Event(obj, eventtype, reason, message)
}

func (r countingRecorder) Eventf(obj runtime.Object, eventtype, reason, format string, args ...any) {
	r.tally.recorded.Add(1)
	r.EventRecorder.Eventf(obj, eventtype, reason, format, args...)
}

func (r countingRecorder) AnnotatedEventf(obj runtime.Object, annotations map[string]string, eventtype, reason, format string, args ...any) {
	r.tally.recorded.Add(1)
	r.EventRecorder.AnnotatedEventf(obj, annotations, eventtype, reason, format, args...)
}

// countingSink counts the writes it finished, failed ones too: the
// broadcaster gives up on those after its retries.
type countingSink struct {
	record.EventSink
	tally *eventTally
}

func (s countingSink) Create(e *corev1.Event) (*corev1.Event, error) {
	defer s.tally.written.Add(1)
	return s.EventSink.Create(e)
}

func (s countingSink) Update(e *corev1.Event) (*corev1.Event, error) {
	defer s.tally.written.Add(1)
	return s.EventSink.Update(e)
}

func (s countingSink) Patch(e *corev1.Event, data []byte) (*corev1.Event, error) {
	defer s.tally.written.Add(1)
	return s.EventSink.Patch(e, data)
}

// boundedRecorder cuts each Event's message as a condition's is cut: an
// Event quoting a 3 MiB deprecation message is refused by the apiserver,
// and lost.
type boundedRecorder struct {
	record.EventRecorder
}

func (r boundedRecorder) Event(obj runtime.Object, eventtype, reason, message string) {
	r.EventRecorder.Event(obj, eventtype, reason, payload.Bound(message, maxMessageBytes))
}

func (r boundedRecorder) Eventf(obj runtime.Object, eventtype, reason, format string, args ...any) {
	r.Event(obj, eventtype, reason, fmt.Sprintf(format, args...))
}

func (r boundedRecorder) AnnotatedEventf(obj runtime.Object, annotations map[string]string, eventtype, reason, format string, args ...any) {
	r.EventRecorder.AnnotatedEventf(obj, annotations, eventtype, reason, "%s", payload.Bound(fmt.Sprintf(format, args...), maxMessageBytes))
}
