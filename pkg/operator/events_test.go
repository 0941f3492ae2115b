package operator

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
)

// slowSink takes a while per write, as a distant apiserver does, and
// writes to a fake clientset.
type slowSink struct {
	kube *fake.Clientset
}

func (s slowSink) Create(e *corev1.Event) (*corev1.Event, error) {
	time.Sleep(20 * time.Millisecond)
	return s.kube.CoreV1().Events(e.Namespace).Create(context.Background(), e, metav1.CreateOptions{})
}

func (s slowSink) Update(e *corev1.Event) (*corev1.Event, error) {
	return s.kube.CoreV1().Events(e.Namespace).Update(context.Background(), e, metav1.UpdateOptions{})
}

func (s slowSink) Patch(e *corev1.Event, _ []byte) (*corev1.Event, error) { return e, nil }

// TestShutdownWaitsForRecordedEvents: the broadcaster drops Events still
// queued when it stops, so Shutdown waits until the sink wrote them all.
func TestShutdownWaitsForRecordedEvents(t *testing.T) {
	kube := fake.NewClientset()
	b := record.NewBroadcaster()
	tally := &eventTally{}
	op := &Operator{events: b, cfg: Config{eventTally: tally}}
	b.StartRecordingToSink(countingSink{EventSink: slowSink{kube: kube}, tally: tally})
	rec := countingRecorder{EventRecorder: b.NewRecorder(eventScheme(), corev1.EventSource{Component: "test"}), tally: tally}
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "ns", UID: "u"}}
	const n = 5
	for i := range n {
		rec.Eventf(obj, corev1.EventTypeNormal, "Test", "event %d", i)
	}
	op.Shutdown()
	list, err := kube.CoreV1().Events("ns").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != n {
		t.Errorf("%d Events written before Shutdown returned, want %d", len(list.Items), n)
	}
}

// TestShutdownWaitsOnlyForEventsTheCorrelatorSends: client-go's
// correlator drops Events about one object beyond a burst of 25, and those
// are never written. Shutdown must not wait its full timeout for them; the
// marker that tells it so is never written either.
func TestShutdownWaitsOnlyForEventsTheCorrelatorSends(t *testing.T) {
	kube := fake.NewClientset()
	obj := &corev1.ObjectReference{Kind: "ConfigMap", Name: "cm", Namespace: "ns", UID: "u", APIVersion: "v1"}
	b, tally, rec := newTalliedEvents(nil, corev1.EventSource{Component: "test"}, obj)
	b.StartRecordingToSink(countingSink{EventSink: slowSink{kube: kube}, tally: tally})
	defer b.Shutdown()
	const n = 100
	for i := range n {
		rec.Eventf(obj, corev1.EventTypeNormal, "Test", "event %d", i)
	}
	if !tally.wait(context.Background(), time.Minute) {
		t.Fatalf("wait timed out: %d of %d recorded Events written", tally.written.Load(), tally.recorded.Load())
	}
	written := tally.written.Load()
	if written == 0 || written >= n {
		t.Errorf("%d of %d Events written; the correlator should have sent some and dropped the rest", written, n)
	}
	list, err := kube.CoreV1().Events("ns").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range list.Items {
		if e.Reason == flushMarkerReason {
			t.Errorf("the flush marker was written: %q", e.Message)
		}
	}
	// Only Creates reach the fake clientset; the correlator's aggregated
	// repeats are Patches, which slowSink counts without storing.
	if len(list.Items) == 0 {
		t.Error("no Event reached the cluster")
	}
}
