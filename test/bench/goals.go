package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// sideGoal is one of issue 35's goals for payload-applier beside the CVO,
// judged on the medians of the runs.
type sideGoal struct {
	what string
	// judge returns the figures compared and whether the goal is met; ok
	// false with no figures means the runs do not measure it.
	judge func(ours, cvo sideRun) (figures string, met, measured bool)
}

var sideGoals = []sideGoal{
	{"start → Completed ≤ ⅓ of the CVO's, at the same client budget", func(o, c sideRun) (string, bool, bool) {
		return fmt.Sprintf("%.1f s against %.1f s (%.2f×)", o.Completed.Seconds(), c.Completed.Seconds(), o.Completed.Seconds()/c.Completed.Seconds()),
			3*o.Completed <= c.Completed, true
	}},
	{"requests until Completed ≤ the CVO's", func(o, c sideRun) (string, bool, bool) {
		return fmt.Sprintf("%d against %d", o.Requests, c.Requests), o.Requests <= c.Requests, true
	}},
	{"idle requests per minute ≤ ½ of the CVO's", func(o, c sideRun) (string, bool, bool) {
		if c.IdleRequests == 0 {
			return "", false, false
		}
		return fmt.Sprintf("%.1f against %.1f", o.IdleRequests, c.IdleRequests), 2*o.IdleRequests <= c.IdleRequests, true
	}},
	{"idle writes per minute ≤ the CVO's", func(o, c sideRun) (string, bool, bool) {
		if c.IdleRequests == 0 {
			return "", false, false
		}
		return fmt.Sprintf("%.1f against %.1f", o.IdleWrites, c.IdleWrites), o.IdleWrites <= c.IdleWrites, true
	}},
	{"peak RSS ≤ the CVO's", func(o, c sideRun) (string, bool, bool) {
		return fmt.Sprintf("%.0f MiB against %.0f MiB", o.PeakRSSMiB, c.PeakRSSMiB), o.PeakRSSMiB <= c.PeakRSSMiB, true
	}},
	{"anonymous peak (heap and stacks, sampled every 250 ms) ≤ 64 MiB", func(o, c sideRun) (string, bool, bool) {
		return fmt.Sprintf("%.0f MiB (the CVO's: %.0f MiB)", o.AnonPeakMiB, c.AnonPeakMiB), o.AnonPeakMiB <= 64, true
	}},
}

// goalsReport judges the goals for ours against the CVO's runs, medians of
// each, and lists the kinds of failed request only ours made.
func goalsReport(ours, cvo []sideRun) string {
	if len(ours) == 0 || len(cvo) == 0 {
		return ""
	}
	o, c := medianRun(ours), medianRun(cvo)
	var b strings.Builder
	fmt.Fprintf(&b, "\nGoals (%s against the CVO, medians of %d and %d runs):\n\n", ours[0].Operator, len(ours), len(cvo))
	for _, g := range sideGoals {
		figures, met, measured := g.judge(o, c)
		verdict := "not met"
		switch {
		case !measured:
			verdict, figures = "not measured", "run with -idle"
		case met:
			verdict = "met"
		}
		fmt.Fprintf(&b, "- %s: %s (%s)\n", g.what, verdict, figures)
	}
	if only := failedOnlyBy(ours, cvo); len(only) > 0 {
		fmt.Fprintf(&b, "- no request fails that the CVO's equivalent does not: not met (%s)\n", strings.Join(only, "; "))
	} else {
		b.WriteString("- no request fails that the CVO's equivalent does not: met\n")
	}
	return b.String()
}

// failedOnlyBy lists the failed requests, by verb, resource and code, that
// ours made and the CVO's runs did not.
func failedOnlyBy(ours, cvo []sideRun) []string {
	theirs := map[string]bool{}
	for _, r := range cvo {
		for k := range r.FailedBy {
			theirs[k] = true
		}
	}
	counts := map[string]int{}
	for _, r := range ours {
		for k, n := range r.FailedBy {
			if !theirs[k] {
				counts[k] += n
			}
		}
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(counts)) {
		out = append(out, fmt.Sprintf("%s ×%d", k, counts[k]))
	}
	return out
}
