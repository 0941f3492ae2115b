package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/payload-applier/payload-applier/pkg/clusterversion"
)

// patienceFlags set how long an update waits on ClusterOperators before
// status says more; the defaults are the CVO's, which has no such flags.
type patienceFlags struct {
	degraded, slow time.Duration
}

func (f *patienceFlags) add(cmd *cobra.Command) {
	cmd.Flags().DurationVar(&f.degraded, "clusteroperator-degraded-grace", clusterversion.DefaultDegradedPatience,
		"how long an update waits on a Degraded ClusterOperator before it reports Failing=True")
	cmd.Flags().DurationVar(&f.slow, "clusteroperator-slow-after", clusterversion.DefaultSlowPatience,
		"report Failing=Unknown SlowClusterOperator once an update has waited this long on a ClusterOperator (machine-config: three times as long)")
}

func (f *patienceFlags) patience() (clusterversion.Patience, error) {
	if f.degraded <= 0 {
		return clusterversion.Patience{}, withExitCode(exitUsage, fmt.Errorf("--clusteroperator-degraded-grace must be positive, not %s", f.degraded))
	}
	if f.slow <= 0 {
		return clusterversion.Patience{}, withExitCode(exitUsage, fmt.Errorf("--clusteroperator-slow-after must be positive, not %s", f.slow))
	}
	return clusterversion.Patience{Degraded: f.degraded, Slow: f.slow, SlowMachineConfig: 3 * f.slow}, nil
}
