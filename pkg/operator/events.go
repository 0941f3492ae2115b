package operator

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"

	"github.com/payload-applier/payload-applier/pkg/clusterversion"
	"github.com/payload-applier/payload-applier/pkg/textwrap"
)

// eventFlushTimeout bounds how long Shutdown waits for Events still on
// their way: the broadcaster's spam filter may drop some, which then
// never arrive.
const eventFlushTimeout = 5 * time.Second

// eventTally counts the Events recorded through a broadcaster and the
// writes its sink finished. The broadcaster drops what is still queued
// when it shuts down, so without waiting a one-shot `apply` exits before
// its Events reach the cluster. Its correlator also drops Events on
// purpose (more than 25 about one object in a burst), and those are never
// written: counting alone would wait the full timeout whenever a pass
// records many, so a marker Event sent last tells when everything before
// it was handled, written or dropped.
type eventTally struct {
	recorded, written atomic.Int64

	// observed is set when the broadcaster's correlator calls spamKey, so
	// that the marker is seen; marker records one.
	observed bool
	marker   func(message string)

	mu      sync.Mutex
	waiting map[int64]chan struct{}
	markers atomic.Int64
}

// flushMarkerReason is the reason of the marker Event, which the sink
// never writes.
const flushMarkerReason = "PayloadApplierEventFlush"

// spamKey is client-go's default spam key (getSpamKey), and the point
// where the correlator takes up each Event, one at a time in order: when
// it takes up a marker, every Event recorded before it has been written or
// dropped.
func (t *eventTally) spamKey(e *corev1.Event) string {
	if e.Reason == flushMarkerReason {
		t.markerHandled(e.Message)
	}
	return strings.Join([]string{e.Source.Component, e.Source.Host, e.InvolvedObject.Kind, e.InvolvedObject.Namespace,
		e.InvolvedObject.Name, string(e.InvolvedObject.UID), e.InvolvedObject.APIVersion, e.Type}, "")
}

// markerHandled releases the waits for the marker message names and for
// those before it. The aggregator may have prefixed the message, so only
// its last word, the marker's number, counts.
func (t *eventTally) markerHandled(message string) {
	n, err := strconv.ParseInt(message[strings.LastIndexByte(message, ' ')+1:], 10, 64)
	if err != nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for id, ch := range t.waiting {
		if id <= n {
			close(ch)
			delete(t.waiting, id)
		}
	}
}

// wait returns once every recorded Event was written or dropped by the
// correlator, true then, or at the timeout, false.
func (t *eventTally) wait(ctx context.Context, timeout time.Duration) bool {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var handled chan struct{}
	if t.observed && t.marker != nil && t.written.Load() < t.recorded.Load() {
		id := t.markers.Add(1)
		handled = make(chan struct{})
		t.mu.Lock()
		if t.waiting == nil {
			t.waiting = map[int64]chan struct{}{}
		}
		t.waiting[id] = handled
		t.mu.Unlock()
		t.marker(fmt.Sprintf("Events recorded before this marker were handled: %d", id))
	}
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for t.written.Load() < t.recorded.Load() {
		select {
		case <-ctx.Done():
			return false
		case <-handled:
			return true
		case <-tick.C:
		}
	}
	return true
}

// newTalliedEvents returns the broadcaster Events go through (b, or a new
// one whose correlator the tally follows when b is nil), the tally, and a
// recorder that counts into it; markers are recorded about the object.
func newTalliedEvents(b record.EventBroadcaster, source corev1.EventSource, object *corev1.ObjectReference) (record.EventBroadcaster, *eventTally, record.EventRecorder) {
	tally := &eventTally{}
	if b == nil {
		b = record.NewBroadcaster(record.WithCorrelatorOptions(record.CorrelatorOptions{SpamKeyFunc: tally.spamKey}))
		tally.observed = true
	}
	raw := b.NewRecorder(eventScheme(), source)
	tally.marker = func(message string) { raw.Event(object, corev1.EventTypeNormal, flushMarkerReason, message) }
	return b, tally, countingRecorder{EventRecorder: raw, tally: tally}
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
	if e.Reason == flushMarkerReason {
		return e, nil
	}
	defer s.tally.written.Add(1)
	return s.EventSink.Create(e)
}

func (s countingSink) Update(e *corev1.Event) (*corev1.Event, error) {
	if e.Reason == flushMarkerReason {
		return e, nil
	}
	defer s.tally.written.Add(1)
	return s.EventSink.Update(e)
}

func (s countingSink) Patch(e *corev1.Event, data []byte) (*corev1.Event, error) {
	if e.Reason == flushMarkerReason {
		return e, nil
	}
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
	r.EventRecorder.Event(obj, eventtype, reason, textwrap.Bound(message, clusterversion.MaxMessageBytes))
}

func (r boundedRecorder) Eventf(obj runtime.Object, eventtype, reason, format string, args ...any) {
	r.Event(obj, eventtype, reason, fmt.Sprintf(format, args...))
}

func (r boundedRecorder) AnnotatedEventf(obj runtime.Object, annotations map[string]string, eventtype, reason, format string, args ...any) {
	r.EventRecorder.AnnotatedEventf(obj, annotations, eventtype, reason, "%s", textwrap.Bound(fmt.Sprintf(format, args...), clusterversion.MaxMessageBytes))
}
