package operator

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	"github.com/payload-applier/payload-applier/pkg/apply"
	"github.com/payload-applier/payload-applier/pkg/clusterversion"
	"github.com/payload-applier/payload-applier/pkg/payload/payloadtest"
)

func TestProgressThrottle(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name  string
		after time.Duration
		done  int
		want  bool
	}{
		{"before the interval", progressInterval - time.Millisecond, 5, false},
		{"after the interval, the count moved", progressInterval, 5, true},
		{"after the interval, the same count", 2 * progressInterval, 3, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := progressThrottle{interval: progressInterval}
			p.wrote(start, 3)
			if got := p.due(start.Add(tt.after), tt.done); got != tt.want {
				t.Errorf("due = %v, want %v", got, tt.want)
			}
		})
	}
}

// slowPass makes a pass over threePayload take the progress interval to
// apply a, then hold b until progress is written, so that the count
// written is one; with failGate, creating gate is forbidden.
type slowPass struct {
	c        *fakeCluster
	failGate bool
	// progress holds the Progressing=True messages written since arm.
	progress []string
	written  chan struct{}
}

func newSlowPass(t *testing.T, c *fakeCluster) *slowPass {
	s := &slowPass{c: c}
	s.arm()
	// a, b and gate are ConfigMaps of one component, which would share a
	// wave: the steps below need them one at a time.
	c.op.cfg.Sync.StrictOrder = true
	c.config.PrependReactor("update", "clusterversions", func(a clienttesting.Action) (bool, runtime.Object, error) {
		cv := a.(clienttesting.UpdateAction).GetObject().(*configv1.ClusterVersion)
		if p := clusterversion.FindCondition(cv.Status.Conditions, configv1.OperatorProgressing); a.GetSubresource() == "status" && p != nil && p.Status == configv1.ConditionTrue {
			s.progress = append(s.progress, p.Message)
			if len(s.progress) == 1 {
				close(s.written)
			}
		}
		return false, nil, nil
	})
	// An install creates each without reading it; a reconcile reads it.
	pace := func(a clienttesting.Action) (bool, runtime.Object, error) {
		switch actionName(a) {
		case "a":
			c.clock.Step(progressInterval)
		case "b":
			select {
			case <-s.written:
			case <-time.After(10 * time.Second):
				t.Error("no progress was written while the pass ran")
			}
		}
		return false, nil, nil
	}
	c.dynamic.PrependReactor("get", "configmaps", pace)
	c.dynamic.PrependReactor("create", "configmaps", pace)
	c.dynamic.PrependReactor("create", "configmaps", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if s.failGate && a.(clienttesting.CreateAction).GetObject().(metav1.Object).GetName() == "gate" {
			return true, nil, apierrors.NewForbidden(configMaps.GroupResource(), "gate", errors.New("not here"))
		}
		return false, nil, nil
	})
	return s
}

// arm readies the next pass.
func (s *slowPass) arm() {
	s.progress, s.written = nil, make(chan struct{})
}

// threePayload is a store whose 1.0.0 holds a, b and gate, few enough
// that each is read on its own.
func threePayload(t *testing.T) *DirStore {
	root := t.TempDir()
	payloadtest.WriteRelease(t, root, "1.0.0", nil, map[string]string{
		"0000_50_demo_00_a.yaml":    configMapManifest("a"),
		"0000_50_demo_01_b.yaml":    configMapManifest("b"),
		"0000_50_demo_02_gate.yaml": configMapManifest("gate"),
	})
	return &DirStore{Root: root}
}

func TestProgressingIsWrittenWhileAPassRuns(t *testing.T) {
	c := newFakeCluster(t, threePayload(t), "1.0.0")
	slow := newSlowPass(t, c)

	events := make(chan apply.Event, 64)
	out, err := c.op.Sync(context.Background(), events)
	if err != nil || !out.Result.Complete() {
		t.Fatalf("install: %v, %+v", err, out)
	}
	close(events)
	forwarded := 0
	for range events {
		forwarded++
	}
	if forwarded != 3 {
		t.Errorf("%d events reached the caller, want one per object", forwarded)
	}
	if want := "Working towards 1.0.0: 1 of 3 done (33% complete)"; len(slow.progress) != 1 || slow.progress[0] != want {
		t.Errorf("progress written = %q, want %q alone: the count moved once the interval had passed", slow.progress, want)
	}
	wantCondition(t, c.clusterVersion(t), configv1.OperatorProgressing, configv1.ConditionFalse, "", "Cluster version is 1.0.0")
	if c.statusWrites() != 2 {
		t.Errorf("%d status writes, want the progress and the final one", c.statusWrites())
	}

	t.Log("a reconcile writes no progress, however long it runs")
	slow.arm()
	close(slow.written)
	writes := c.statusWrites()
	if out = c.sync(t); out.Mode != "reconcile" {
		t.Fatalf("mode %s, want reconcile", out.Mode)
	}
	if c.statusWrites() != writes {
		t.Errorf("a no-op reconcile wrote status %d times", c.statusWrites()-writes)
	}
}

func TestTheFinalStatusIsWrittenAfterProgressEvenWhenItIsAsBeforeThePass(t *testing.T) {
	c := newFakeCluster(t, threePayload(t), "1.0.0")
	slow := newSlowPass(t, c)
	slow.failGate = true
	c.sync(t)
	stalled := "Unable to apply 1.0.0: the server is rejecting updates"
	wantCondition(t, c.clusterVersion(t), configv1.OperatorProgressing, configv1.ConditionTrue, string(apply.ReasonForbidden), stalled)

	// The second pass writes 1 of 3 on its way and ends where the first
	// did, which the cluster no longer shows.
	slow.arm()
	c.sync(t)
	if want := []string{"Working towards 1.0.0: 1 of 3 done (33% complete)", stalled}; strings.Join(slow.progress, "\n") != strings.Join(want, "\n") {
		t.Errorf("Progressing written = %q, want %q", slow.progress, want)
	}
	wantCondition(t, c.clusterVersion(t), configv1.OperatorProgressing, configv1.ConditionTrue, string(apply.ReasonForbidden), stalled)
}
