package clusterversion

import (
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
)

// history reads "C 4.6.3, P 4.1.4, ..." newest first: C Completed, P
// Partial.
func history(spec string) []configv1.UpdateHistory {
	var h []configv1.UpdateHistory
	for _, item := range strings.Split(spec, ",") {
		state, version, _ := strings.Cut(strings.TrimSpace(item), " ")
		s := configv1.CompletedUpdate
		if state == "P" {
			s = configv1.PartialUpdate
		}
		h = append(h, configv1.UpdateHistory{State: s, Version: version})
	}
	return h
}

func historyString(h []configv1.UpdateHistory) string {
	var parts []string
	for _, e := range h {
		s := "C"
		if e.State == configv1.PartialUpdate {
			s = "P"
		}
		parts = append(parts, s+" "+e.Version)
	}
	return strings.Join(parts, ", ")
}

// TestPruneHistoryAsTheCVO ports every case of the CVO's Test_prune
// (pkg/cvo/status_history_test.go at openshift/cluster-version-operator
// 6e719331f): a history one over its limit of 10, and what is left.
func TestPruneHistoryAsTheCVO(t *testing.T) {
	for _, tc := range []struct{ name, history, want string }{
		{"partial update within a minor transition",
			"C 4.6.3, C 4.5.3, C 4.4.3, C 4.3.3, C 4.3.2, C 4.3.1, C 4.2.1, P 4.1.4, P 4.1.3, P 4.1.2, C 4.1.1",
			"C 4.6.3, C 4.5.3, C 4.4.3, C 4.3.3, C 4.3.2, C 4.3.1, C 4.2.1, P 4.1.4, P 4.1.3, C 4.1.1"},
		{"partial update within a z-stream transition",
			"C 4.5.3, C 4.4.3, C 4.4.3, C 4.4.2, C 4.1.10, C 4.1.9, C 4.1.4, P 4.1.3, C 4.1.2, P 4.0.1, C 4.0.1",
			"C 4.5.3, C 4.4.3, C 4.4.3, C 4.4.2, C 4.1.10, C 4.1.9, C 4.1.4, C 4.1.2, P 4.0.1, C 4.0.1"},
		{"prune oldest not in mostImportantWeight set",
			"C 4.11.0, C 4.10.0, C 4.9.0, C 4.8.0, C 4.7.0, C 4.6.0, C 4.5.0, C 4.4.0, C 4.3.0, C 4.2.0, C 4.1.0",
			"C 4.11.0, C 4.10.0, C 4.9.0, C 4.8.0, C 4.7.0, C 4.6.0, C 4.5.0, C 4.4.0, C 4.3.0, C 4.1.0"},
		{"prune only partial not in mostImportantWeight set",
			"C 4.11.0, P 4.10.0, C 4.9.0, C 4.8.0, C 4.7.0, P 4.6.0, C 4.5.0, C 4.4.0, C 4.3.0, C 4.2.0, C 4.1.0",
			"C 4.11.0, P 4.10.0, C 4.9.0, C 4.8.0, C 4.7.0, C 4.5.0, C 4.4.0, C 4.3.0, C 4.2.0, C 4.1.0"},
		{"prune the z-stream partial over the minor partial",
			"C 4.11.0, C 4.10.0, C 4.9.0, C 4.8.0, C 4.6.1, P 4.6.1, C 4.6.0, C 4.4.0, P 4.3.0, C 4.2.0, C 4.1.0",
			"C 4.11.0, C 4.10.0, C 4.9.0, C 4.8.0, C 4.6.1, C 4.6.0, C 4.4.0, P 4.3.0, C 4.2.0, C 4.1.0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := historyString(pruneHistory(history(tc.history))); got != tc.want {
				t.Errorf("pruned to\n  %s\nwant\n  %s", got, tc.want)
			}
		})
	}
}

// A long run of z-stream updates in one minor is pruned from the middle:
// the entry the cluster was installed with, and the minor's first and
// last, stay.
func TestPruneHistoryKeepsTheInitialEntryAndMinorBounds(t *testing.T) {
	h := history("C 4.2.0")
	for z := 9; z >= 0; z-- {
		h = append(h, history("C 4.1."+string(rune('0'+z)))...)
	}
	h = append(h, history("C 4.0.0")...)
	got := historyString(pruneHistory(h))
	for _, kept := range []string{"C 4.2.0", "C 4.1.9", "C 4.1.0", "C 4.0.0"} {
		if !strings.Contains(got, kept) {
			t.Errorf("%s dropped: %s", kept, got)
		}
	}
	if strings.Contains(got, "C 4.1.1,") {
		t.Errorf("the oldest entry inside the minor stays: %s", got)
	}
}
