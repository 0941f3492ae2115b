package operator

import (
	"testing"
	"time"
)

func TestLivenessAndReadiness(t *testing.T) {
	c := newFakeCluster(t, &DirStore{Root: t.TempDir()}, "1.0.0")
	op, window := c.op, 10*time.Minute
	if err := op.Ready(); err == nil {
		t.Error("not ready before the bootstrap")
	}
	op.health.set(func(h *health) { h.bootstrapped = true })
	if err := op.Ready(); err != nil {
		t.Errorf("ready once bootstrapped: %v", err)
	}

	c.clock.Step(time.Hour)
	if err := op.Live(window); err != nil {
		t.Errorf("a standby that runs no pass is live: %v", err)
	}
	op.health.lead(op.clock.Now())
	c.clock.Step(5 * time.Minute)
	if err := op.Live(window); err != nil {
		t.Errorf("a leader within the window of its start is live: %v", err)
	}
	c.clock.Step(6 * time.Minute)
	if err := op.Live(window); err == nil {
		t.Error("a leader that ended no pass for longer than the window is not live")
	}
	op.health.set(func(h *health) { h.lastPass = c.clock.Now() })
	c.clock.Step(9 * time.Minute)
	if err := op.Live(window); err != nil {
		t.Errorf("a pass ended within the window: %v", err)
	}
	c.clock.Step(2 * time.Minute)
	if err := op.Live(window); err == nil {
		t.Error("a pass that hangs past the window makes the leader not live")
	}
}
