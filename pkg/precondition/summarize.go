package precondition

import (
	"errors"
	"fmt"
	"strings"
)

// forcedPrefix starts the message of a summary whose blocking failures the
// administrator forced through; the operator records that text as accepted
// risks, so the prefix says plainly that the risks were not warnings.
const forcedPrefix = "Forced through blocking failures: "

// SummaryError condenses the failures of one precondition run. It keeps every
// failure, unchanged and in run order, so errors.Is and errors.As reach each
// *Error and its nested cause, and the operator can name each failed check.
type SummaryError struct {
	// Errors holds every failure as RunAll returned it.
	Errors []error
	// Blocking reports that the update must not be accepted: some failure
	// is not a NonBlockingWarning and force was not set.
	Blocking bool
	// Forced reports that force let blocking failures through; they are then
	// accepted risks rather than blockers.
	Forced bool

	message string
}

// Error returns the one-line (single failure) or bulleted (several failures)
// summary, prefixed when blocking failures were forced through.
func (e *SummaryError) Error() string { return e.message }

// Unwrap returns every failure, for errors.Is and errors.As.
func (e *SummaryError) Unwrap() []error { return e.Errors }

// Checks returns the names of the checks that failed, in run order and
// without repeats. Failures that did not come from a check have no name and
// are left out.
func (e *SummaryError) Checks() []string {
	var names []string
	seen := map[string]bool{}
	for _, err := range e.Errors {
		var pErr *Error
		if !errors.As(err, &pErr) || pErr.Name == "" || seen[pErr.Name] {
			continue
		}
		seen[pErr.Name] = true
		names = append(names, pErr.Name)
	}
	return names
}

// Describe renders one failure as a line of the summary:
// `Precondition "<Name>" failed because of "<Reason>": <Message>` for an
// *Error, and the error's own message for anything else.
func Describe(err error) string {
	var pErr *Error
	if errors.As(err, &pErr) {
		return fmt.Sprintf("Precondition %q failed because of %q: %s", pErr.Name, pErr.Reason, pErr.Message)
	}
	return err.Error()
}

// IsBlocking reports whether a single failure blocks an update: anything but
// an *Error marked NonBlockingWarning does, so an unexpected error can never
// slip an update through.
func IsBlocking(err error) bool {
	var pErr *Error
	return !errors.As(err, &pErr) || !pErr.NonBlockingWarning
}

// Summarize condenses the failures of a run into one error for the
// operator's status. It returns (false, nil) when errs holds no error. The
// update is blocked when any failure is blocking, unless force is set, in
// which case the summary is prefixed with "Forced through blocking failures: "
// and the update may proceed with the failures recorded as accepted risks.
// The returned error is a *SummaryError.
func Summarize(errs []error, force bool) (blocking bool, err error) {
	var failures []error
	for _, e := range errs {
		if e != nil {
			failures = append(failures, e)
		}
	}
	if len(failures) == 0 {
		return false, nil
	}

	lines := make([]string, 0, len(failures))
	unforceable := false
	for _, f := range failures {
		lines = append(lines, Describe(f))
		if IsBlocking(f) {
			blocking = true
			var pErr *Error
			unforceable = unforceable || (errors.As(f, &pErr) && pErr.Unforceable)
		}
	}

	message := lines[0]
	if len(lines) > 1 {
		message = "Multiple precondition checks failed:\n* " + strings.Join(lines, "\n* ")
	}
	forced := force && blocking && !unforceable
	if force && unforceable {
		message = "Force does not override every failure: " + message
	}
	if forced {
		message = forcedPrefix + message
		blocking = false
	}
	return blocking, &SummaryError{Errors: failures, Blocking: blocking, Forced: forced, message: message}
}
