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
