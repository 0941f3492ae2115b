package main

import (
	"fmt"
	"io"

	"github.com/payload-applier/payload-applier/pkg/payload"
)

const lintFixHelp = `With --fix, lint first writes the fixes it is sure of into DIR, one line
per change (file:line: fixed RULE: what; on stdout with --output text, on
stderr otherwise), then lints the result and reports what remains:
  delete-value        a near miss ("True", "yes", unquoted true) becomes "true"
  unknown-annotation  a misspelled key with exactly one close known key is
                      renamed to it
  orphan              with --previous, each orphan gets a delete manifest
                      (apiVersion, kind, name, namespace, the delete
                      annotation and the old manifest's inclusion
                      annotations) in a new file named after the previous
                      release's file, so it keeps its run level and component
Only the fixed bytes change: comments, key order, quoting and the other
documents of a file stay as they were, a file is rewritten atomically and
only when its re-parse shows exactly the intended change, and a second
run changes nothing. DIR must be a directory, not a release image.`

// lintFix runs the fixes of lint --fix on all, loaded from dir (pulled
// from image, when set), prints each change to w and returns the payload
// as it now is, with its load findings.
func lintFix(w io.Writer, source, image, dir string, all, previous *payload.Release, filter payload.LoadOptions) (*payload.Release, []payload.Finding, error) {
	if image != "" {
		return nil, nil, withExitCode(exitUsage, fmt.Errorf("--fix needs a payload directory, not the release image %s", source))
	}
	changes, err := payload.Fix(all, payload.FixOptions{Filter: filter, Previous: previous})
	for _, c := range changes {
		fmt.Fprintln(w, c.String())
	}
	if err != nil {
		return nil, nil, withExitCode(exitUsage, fmt.Errorf("--fix: %w", err))
	}
	all, findings, err := payload.LoadAll(dir)
	if err != nil {
		return nil, nil, withExitCode(exitUsage, fmt.Errorf("cannot load %s after fixing it: %w", source, err))
	}
	return all, findings, nil
}

// fixOutput is where lint --fix reports its changes: stdout beside text
// findings, stderr when stdout is for a machine.
func fixOutput(format string, stdout, stderr io.Writer) io.Writer {
	if format == "text" {
		return stdout
	}
	return stderr
}
