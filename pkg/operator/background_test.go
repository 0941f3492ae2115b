package operator

import (
	"context"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// stepper is a step that reports each run and returns what due says.
type stepper struct {
	ran chan struct{}
	due chan time.Duration
}

func newStepper() *stepper {
	return &stepper{ran: make(chan struct{}, 16), due: make(chan time.Duration, 16)}
}

func (s *stepper) step(context.Context) time.Duration {
	s.ran <- struct{}{}
	select {
	case d := <-s.due:
		return d
	default:
		return -1
	}
}

// noSignal fails if ch receives within a short while.
func noSignal(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
		t.Fatalf("%s", what)
	case <-time.After(100 * time.Millisecond):
	}
}

func TestBackgroundStepsWhenRequestedAndWhenDue(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	b := newBackground(clk)
	s := newStepper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.start(ctx, func() {}, s.step)
	waitSignal(t, s.ran, "first step")

	t.Log("below 0: the next step waits for a request, not the clock")
	noSignal(t, s.ran, "a step ran unasked")
	s.due <- time.Minute
	b.request()
	waitSignal(t, s.ran, "step on request")

	t.Log("a due step runs when its time comes")
	for deadline := time.Now().Add(guard); !clk.HasWaiters(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the goroutine never set its timer")
		}
	}
	clk.Step(time.Minute - time.Second)
	noSignal(t, s.ran, "a step ran before it was due")
	clk.Step(time.Second)
	waitSignal(t, s.ran, "step when due")

	t.Log("0 runs the step again at once")
	s.due <- 0
	b.request()
	waitSignal(t, s.ran, "step on request")
	waitSignal(t, s.ran, "step at once after 0")
}

func TestBackgroundWakesOnlyWhileStarted(t *testing.T) {
	b := newBackground(clocktesting.NewFakeClock(time.Now()))
	poked := make(chan struct{}, 16)
	b.wake()
	if b.started() != nil {
		t.Fatal("started before start")
	}

	ctx, cancel := context.WithCancel(context.Background())
	b.start(ctx, func() { poked <- struct{}{} }, nil)
	if b.started() != ctx {
		t.Fatal("started() is not the start's context")
	}
	b.wake()
	waitSignal(t, poked, "poke on wake")

	cancel()
	for deadline := time.Now().Add(guard); b.started() != nil; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("still started after its context ended")
		}
	}
	b.wake()
	noSignal(t, poked, "woken after its context ended")
}

func TestBackgroundStopsWithItsContextAndARestartReplacesIt(t *testing.T) {
	b := newBackground(clocktesting.NewFakeClock(time.Now()))
	first, second := newStepper(), newStepper()
	ctx1, cancel1 := context.WithCancel(context.Background())
	b.start(ctx1, func() {}, first.step)
	waitSignal(t, first.ran, "first start's step")

	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	b.start(ctx2, func() {}, second.step)
	waitSignal(t, second.ran, "second start's step")

	// The first goroutine ends with its context, leaving the second; it
	// may take a kick on its way out, so the test kicks until one lands.
	cancel1()
	for deadline := time.Now().Add(guard); ; {
		b.request()
		select {
		case <-second.ran:
		case <-time.After(50 * time.Millisecond):
			if time.Now().After(deadline) {
				t.Fatal("the current start does not step on request")
			}
			continue
		}
		break
	}
	noSignal(t, first.ran, "the stopped start still steps")
	if b.started() != ctx2 {
		t.Fatal("the end of an earlier start stopped the current one")
	}

	cancel2()
	for deadline := time.Now().Add(guard); b.started() != nil; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("still started after its context ended")
		}
	}
	b.request()
	noSignal(t, second.ran, "a step ran after its context ended")
}
