package graph

import (
	"errors"
	"fmt"
)

// State is what happened to a task or a node in one Run.
type State string

const (
	// StateSucceeded: the task function returned nil.
	StateSucceeded State = "Succeeded"
	// StateFailed: the task function returned an error (or panicked).
	StateFailed State = "Failed"
	// StateWaiting: the task function returned an error wrapping ErrWaiting;
	// the work was issued but has not finished. Not a failure.
	StateWaiting State = "Waiting"
	// StateHeld: not run because a task before it, in its node or upstream,
	// is waiting. A later pass picks it up. Not a failure.
	StateHeld State = "Held"
	// StateBlocked: not run because a task before it, in its node or
	// upstream, failed.
	StateBlocked State = "Blocked"
	// StateCancelled: not run because the context was cancelled first.
	StateCancelled State = "Cancelled"
)

// ErrWaiting marks work that was issued but is not finished, such as a
// delete whose object still exists. A task function wraps it (or returns a
// *WaitingError) to stop its node without failing it; the caller re-runs.
var ErrWaiting = errors.New("waiting")

// WaitingError says what a task is waiting on, for example "finalizer
// kubernetes.io/pvc-protection". It matches ErrWaiting with errors.Is.
type WaitingError struct {
	On string
}

// Error reads "waiting on <On>", which is also how held tasks are reported.
func (e *WaitingError) Error() string { return "waiting on " + e.On }

// Is makes errors.Is(err, ErrWaiting) true for every *WaitingError.
func (e *WaitingError) Is(target error) bool { return target == ErrWaiting }

// PanicError is a panic in a task function, recovered so that one bad task
// fails its node instead of the process.
type PanicError struct {
	Value any
	Stack []byte
}

// Error gives the panic value; the stack is in Stack for logs.
func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

// IncompleteError reports nodes that never finished although no task
// failed, in the CVO's words, so that a cancelled pass is not mistaken for a
// complete one.
type IncompleteError struct {
	Nodes int
	First *Task
}

// Error uses the CVO's wording, which operators already search for.
func (e *IncompleteError) Error() string {
	return fmt.Sprintf("%d incomplete task nodes, beginning with %s", e.Nodes, e.First)
}

// TaskStatus is the outcome of one task.
type TaskStatus struct {
	Task *Task
	// Node is the ID of the node holding the task.
	Node  int
	State State
	// Err is the task function's error for Failed and Waiting, as it
	// returned it (a panic as *PanicError): the caller's errors name their
	// subject; nil otherwise.
	Err error
	// Cause is the task whose failure (Blocked) or wait (Held) kept this one
	// from running; nil for other states.
	Cause *Task
}

// Reason explains, in a few words, why the task ended in its state.
func (s TaskStatus) Reason() string {
	switch s.State {
	case StateBlocked:
		if s.Cause == nil {
			return "not run"
		}
		return "blocked by failed " + s.Cause.String()
	case StateHeld:
		return "waiting on " + s.Cause.String()
	case StateCancelled:
		return "cancelled"
	case StateFailed, StateWaiting:
		return s.Err.Error()
	default:
		return string(s.State)
	}
}

// NodeStatus is the outcome of one node: Succeeded when every task
// succeeded, otherwise the state of the task that stopped it.
type NodeStatus struct {
	State State
	// Cause is the failed or waiting task that stopped this node or, for a
	// Blocked or Held node, the one upstream.
	Cause *Task
}

// Result is everything a Run observed, so that callers can report progress
// without keeping their own bookkeeping.
type Result struct {
	// Tasks has one status per task, in node ID order and then task order.
	Tasks []TaskStatus
	// Nodes has one status per node, indexed by node ID.
	Nodes []NodeStatus
	// Errors holds every failure as its task function returned it, in node
	// ID order, plus a single error when Run could not start (invalid graph
	// or nil function). TaskStatus tells which task each came from.
	Errors []error
	// ContextErr is the context's error when Run returned, if any.
	ContextErr error

	offsets []int // index in Tasks of each node's first task
}

// Waiting lists the tasks that were issued and are still in progress.
func (r *Result) Waiting() []TaskStatus { return r.filter(StateWaiting) }

// NotRun lists the tasks that never started, each with its Reason.
func (r *Result) NotRun() []TaskStatus { return r.filter(StateBlocked, StateHeld, StateCancelled) }

// Count returns how many tasks ended in state s.
func (r *Result) Count(s State) int { return len(r.filter(s)) }

func (r *Result) filter(states ...State) []TaskStatus {
	var out []TaskStatus
	for _, s := range r.Tasks {
		for _, want := range states {
			if s.State == want {
				out = append(out, s)
				break
			}
		}
	}
	return out
}

// Summary condenses the run as the CVO's RunGraph does: every failure, or,
// when nothing failed but cancellation left nodes unfinished, an
// *IncompleteError followed by the context's error. Waiting and held tasks
// are not errors: they never fail a pass.
func (r *Result) Summary() []error {
	if len(r.Errors) > 0 {
		return append([]error(nil), r.Errors...)
	}
	var incomplete int
	var first *Task
	for id, n := range r.Nodes {
		if n.State != StateCancelled {
			continue
		}
		incomplete++
		if first == nil {
			first = r.firstCancelled(id)
		}
	}
	if first == nil {
		return nil
	}
	errs := []error{&IncompleteError{Nodes: incomplete, First: first}}
	if r.ContextErr != nil {
		errs = append(errs, r.ContextErr)
	}
	return errs
}

// Err joins Summary into one error, nil for a run that failed nothing.
func (r *Result) Err() error { return errors.Join(r.Summary()...) }

func (r *Result) firstCancelled(node int) *Task {
	for _, s := range r.Tasks {
		if s.Node == node && s.State == StateCancelled {
			return s.Task
		}
	}
	return nil
}
