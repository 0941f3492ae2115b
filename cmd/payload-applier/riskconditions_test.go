package main

import (
	"context"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	"github.com/prometheus/client_golang/prometheus"
)

func TestStartPrometheusFlags(t *testing.T) {
	cmd := newStartCommand()
	for flag, def := range map[string]string{
		"prometheus-url": "", "prometheus-ca-file": "", "prometheus-token-file": "", "prometheus-query-timeout": "10s",
	} {
		f := cmd.Flags().Lookup(flag)
		if f == nil {
			t.Errorf("start has no --%s", flag)
			continue
		}
		if f.DefValue != def {
			t.Errorf("--%s defaults to %q, want %q", flag, f.DefValue, def)
		}
	}
	if u := cmd.Flags().Lookup("prometheus-url"); u != nil && !strings.Contains(u.Usage, "https://thanos-querier.openshift-monitoring.svc:9091") {
		t.Errorf("--prometheus-url does not name the OpenShift in-cluster URL: %s", u.Usage)
	}
}

func TestRiskConditionsFromFlags(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"no URL", nil, ""},
		{"a URL with missing files", []string{"--prometheus-url", "https://thanos-querier.openshift-monitoring.svc:9091", "--prometheus-ca-file", "/nonexistent/ca.crt", "--prometheus-token-file", "/nonexistent/token"}, ""},
		{"a URL without a scheme", []string{"--prometheus-url", "thanos-querier:9091"}, "--prometheus-url"},
		{"a zero timeout", []string{"--prometheus-query-timeout", "0s"}, "--prometheus-query-timeout must be positive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := newStartCommand()
			if err := cmd.Flags().Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			var o prometheusFlags
			o.url, _ = cmd.Flags().GetString("prometheus-url")
			o.caFile, _ = cmd.Flags().GetString("prometheus-ca-file")
			o.tokenFile, _ = cmd.Flags().GetString("prometheus-token-file")
			o.timeout, _ = cmd.Flags().GetDuration("prometheus-query-timeout")
			reg := prometheus.NewRegistry()
			risks, err := o.riskConditions(reg)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(risks.Types(), ","); got != "Always,PromQL" {
				t.Errorf("rule types %s, want Always,PromQL", got)
			}
			// The counter is registered: a second registration collides.
			if _, err := o.riskConditions(reg); err == nil {
				t.Error("payload_applier_risk_queries_total was not registered")
			}
			// Always still decides where PromQL cannot be evaluated.
			match, err := risks.Match(context.Background(), []configv1.ClusterCondition{
				{Type: "PromQL", PromQL: &configv1.PromQLClusterCondition{PromQL: "1"}}, {Type: "Always"},
			})
			if err != nil || !match {
				t.Errorf("PromQL then Always = %v, %v; want a match", match, err)
			}
		})
	}
}
