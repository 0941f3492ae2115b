package main

import (
	"strings"
	"testing"
	"time"
)

func TestSideGoals(t *testing.T) {
	cvo := []sideRun{{Operator: "cluster-version-operator", Completed: 49 * time.Second, Requests: 1425, PeakRSSMiB: 134,
		FailedBy: map[string]int{"create configmaps 404": 30}}}
	ours := []sideRun{{Operator: "payload-applier", Completed: 15 * time.Second, Requests: 1500, PeakRSSMiB: 120,
		FailedBy: map[string]int{"create configmaps 404": 20, "create clusteroperators 422": 1}}}
	got := goalsReport(ours, cvo)
	for _, want := range []string{
		"start → Completed ≤ ⅓ of the CVO's, at the same client budget: met",
		"requests until Completed ≤ the CVO's: not met (1500 against 1425)",
		"idle requests per minute ≤ ½ of the CVO's: not measured",
		"peak RSS ≤ the CVO's: met",
		"does not: not met (create clusteroperators 422 ×1)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
}

func TestProbesAreNotFailures(t *testing.T) {
	for _, tc := range []struct {
		verb string
		code int
		want bool
	}{
		{"get", 404, true}, {"create", 409, true},
		{"create", 404, false}, {"update", 409, false}, {"patch", 422, false}, {"get", 500, false},
	} {
		if got := probed(tc.verb, tc.code); got != tc.want {
			t.Errorf("%s %d: probed %v, want %v", tc.verb, tc.code, got, tc.want)
		}
	}
}
