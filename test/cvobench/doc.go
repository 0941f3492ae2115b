// Package cvobench measures payload-applier's load + filter + graph of a
// payload beside the cluster-version-operator's LoadUpdate + task graph on
// the same payload, in one run. It is its own Go module, never built by
// the main module's `go test ./...`: the CVO needs another library-go than
// the pins. run.sh (make bench-load) runs both sides; docs/benchmarks.md
// records the figures.
package cvobench
