// Command payload-applier applies OpenShift-style release payloads: it lints
// them, plans them, applies them once, or runs as a cluster-version operator.
package main

import (
	"os"
)

func main() {
	os.Exit(run(os.Args[1:]))
}
