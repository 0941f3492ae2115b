package main

import (
	"fmt"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	"github.com/payload-applier/payload-applier/pkg/clusterconditions"
)

// prometheusFlags say where start queries the PromQL rules of conditional
// update risks.
type prometheusFlags struct {
	url, caFile, tokenFile string
	timeout                time.Duration
}

func (f *prometheusFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.url, "prometheus-url", "",
		"Prometheus-compatible API that PromQL risks of conditional updates are queried at (on OpenShift "+clusterconditions.OpenShiftPrometheusURL+"); empty: those risks fail to evaluate (Recommended=Unknown, EvaluationFailed)")
	cmd.Flags().StringVar(&f.caFile, "prometheus-ca-file", "",
		"PEM CA bundle that an https --prometheus-url is verified with, read again when it changes (on OpenShift the service CA, "+clusterconditions.OpenShiftCAFile+"); empty: the system's")
	cmd.Flags().StringVar(&f.tokenFile, "prometheus-token-file", "",
		"bearer token sent to --prometheus-url, read for every query (on OpenShift the service account's, "+clusterconditions.OpenShiftTokenFile+"); empty: none")
	cmd.Flags().DurationVar(&f.timeout, "prometheus-query-timeout", clusterconditions.DefaultQueryTimeout,
		"give up one PromQL risk query after this long; a call also waits at most this long for its turn (one query a second)")
}

// riskConditions builds the registry of the rule types conditional update
// risks are evaluated with, Always and PromQL, and registers PromQL's query
// counter with reg.
func (f *prometheusFlags) riskConditions(reg prometheus.Registerer) (*clusterconditions.Registry, error) {
	if f.timeout <= 0 {
		return nil, fmt.Errorf("--prometheus-query-timeout must be positive, not %s", f.timeout)
	}
	registry, err := clusterconditions.NewWithPromQL(clusterconditions.PromQLConfig{
		URL: f.url, CAFile: f.caFile, TokenFile: f.tokenFile, Timeout: f.timeout,
	}, reg)
	if err != nil {
		return nil, fmt.Errorf("--prometheus-url: %w", err)
	}
	// Files may appear after the start (mounted ConfigMaps and tokens): say
	// so, and let the queries fail until then.
	for flag, path := range map[string]string{"--prometheus-ca-file": f.caFile, "--prometheus-token-file": f.tokenFile} {
		if _, err := os.Stat(path); path != "" && err != nil {
			klog.Warningf("%s: %v; PromQL risks fail to evaluate until it is readable", flag, err)
		}
	}
	if f.url == "" {
		klog.Info("No --prometheus-url: PromQL risks of conditional updates fail to evaluate")
	}
	return registry, nil
}
