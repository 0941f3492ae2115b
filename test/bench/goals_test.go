package main

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/payload-applier/payload-applier/test/cluster"
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

func TestRequestsCountUpToTheWriteThatReportedCompleted(t *testing.T) {
	start := time.Date(2026, 11, 28, 16, 0, 0, 0, time.UTC)
	ev := func(at time.Duration, verb, resource, sub string) cluster.AuditEvent {
		return cluster.AuditEvent{Stage: cluster.AuditStageResponseComplete, Verb: verb, User: cluster.AuditUser{Username: "op"},
			ObjectRef: &cluster.AuditObjectRef{Resource: resource, Subresource: sub}, ResponseStatus: &cluster.AuditStatus{Code: 200},
			RequestReceivedTimestamp: start.Add(at)}
	}
	events := []cluster.AuditEvent{
		ev(100*time.Millisecond, "create", "configmaps", ""),
		ev(200*time.Millisecond, "update", "clusterversions", "status"),
		ev(900*time.Millisecond, "update", "clusterversions", "status"),
		// After the write that reported Completed, before the harness saw it.
		ev(950*time.Millisecond, "list", "deployments", ""),
		ev(1100*time.Millisecond, "list", "configmaps", ""),
	}
	r := sideRun{Completed: time.Second}
	r.count(events, "op", start)
	if r.Requests != 3 || r.Writes != 3 {
		t.Errorf("counted %d requests and %d writes, want 3 and 3: those up to the last status write", r.Requests, r.Writes)
	}
}

func TestProcCPUSecondsGrowsWithWork(t *testing.T) {
	before, err := procCPUSeconds(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	x := 0
	for deadline := time.Now().Add(300 * time.Millisecond); time.Now().Before(deadline); x++ {
	}
	after, err := procCPUSeconds(os.Getpid())
	if err != nil || after <= before {
		t.Errorf("CPU seconds %v then %v (%v) after busy work (%d loops)", before, after, err, x)
	}
}

func TestVerbTableShowsEachOperatorsMedians(t *testing.T) {
	runs := map[string][]sideRun{
		"a": {{ByVerb: map[string]int{"get configmaps": 10, "create configmaps": 3}}, {ByVerb: map[string]int{"get configmaps": 30}}, {ByVerb: map[string]int{"get configmaps": 20}}},
		"b": {{ByVerb: map[string]int{"patch configmaps": 7}}},
	}
	got := verbTable([]string{"a", "b"}, runs)
	for _, want := range []string{"| verb and resource | a | b |", "| get configmaps | 20 | 0 |", "| create configmaps | 0 | 0 |", "| patch configmaps | 0 | 7 |"} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks %q:\n%s", want, got)
		}
	}
}
