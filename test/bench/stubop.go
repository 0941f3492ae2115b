package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// stubOperators plays the payload's operators on a script: each reports
// its ClusterOperator Available at the payload's versions delay after the
// ClusterOperator appears, and an episode makes one Degraded or not
// Available for a while, as operators do during installs and updates.
type stubOperators struct {
	delay    time.Duration
	episodes []episode
	// seen is when each ClusterOperator was first found.
	seen map[string]time.Time
	now  func() time.Time
}

// episode is one operator's trouble: from after its report starts, for
// length.
type episode struct {
	operator string
	// condition is "Degraded" or "Unavailable".
	condition     string
	after, length time.Duration
}

// parseEpisodes reads "name:Degraded|Unavailable:after:for,...".
func parseEpisodes(spec string) ([]episode, error) {
	var out []episode
	for _, item := range strings.Split(spec, ",") {
		if item = strings.TrimSpace(item); item == "" {
			continue
		}
		parts := strings.Split(item, ":")
		if len(parts) != 4 || parts[0] == "" || (parts[1] != "Degraded" && parts[1] != "Unavailable") {
			return nil, fmt.Errorf("episode %q: want operator:Degraded|Unavailable:after:for, e.g. network:Degraded:0s:20s", item)
		}
		after, err1 := time.ParseDuration(parts[2])
		length, err2 := time.ParseDuration(parts[3])
		if err1 != nil || err2 != nil || after < 0 || length <= 0 {
			return nil, fmt.Errorf("episode %q: after and for must be durations, for above zero", item)
		}
		out = append(out, episode{operator: parts[0], condition: parts[1], after: after, length: length})
	}
	return out, nil
}

func newStubOperators(delay time.Duration, episodes []episode) *stubOperators {
	return &stubOperators{delay: delay, episodes: episodes, seen: map[string]time.Time{}, now: time.Now}
}

// conditions is what operator name reports now: nil before it reports.
func (s *stubOperators) conditions(name string) map[string]string {
	now := s.now()
	seen, ok := s.seen[name]
	if !ok {
		s.seen[name], seen = now, now
	}
	reporting := seen.Add(s.delay)
	if now.Before(reporting) {
		return nil
	}
	conds := map[string]string{"Available": "True", "Degraded": "False", "Progressing": "False"}
	for _, ep := range s.episodes {
		from := reporting.Add(ep.after)
		if ep.operator != name || now.Before(from) || !now.Before(from.Add(ep.length)) {
			continue
		}
		if ep.condition == "Degraded" {
			conds["Degraded"] = "True"
		} else {
			conds["Available"] = "False"
		}
	}
	return conds
}

// report writes each payload ClusterOperator's status where it differs
// from what its script says now.
func (s *stubOperators) report(ctx context.Context, e *env, versions map[string][]interface{}) {
	cos := e.dynamic.Resource(clusterOperators)
	list, err := cos.List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	stamp := s.now().UTC().Format(time.RFC3339)
	for i := range list.Items {
		co := &list.Items[i]
		want, ok := versions[co.GetName()]
		if !ok {
			continue
		}
		conds := s.conditions(co.GetName())
		if conds == nil || reports(co, conds) {
			continue
		}
		var list []interface{}
		for _, t := range []string{"Available", "Degraded", "Progressing"} {
			reason := "AsExpected"
			if (t == "Degraded" && conds[t] == "True") || (t == "Available" && conds[t] == "False") {
				reason = "BenchEpisode"
			}
			list = append(list, map[string]interface{}{"type": t, "status": conds[t], "lastTransitionTime": stamp, "reason": reason,
				"message": "reported by the bench's stub operator"})
		}
		_ = unstructured.SetNestedSlice(co.Object, list, "status", "conditions")
		if len(want) > 0 {
			_ = unstructured.SetNestedSlice(co.Object, want, "status", "versions")
		}
		if _, err := cos.UpdateStatus(ctx, co, metav1.UpdateOptions{}); err != nil && !apierrors.IsConflict(err) {
			logf("report ClusterOperator %s: %v", co.GetName(), err)
		}
	}
}

// reports says whether co's conditions are those already.
func reports(co *unstructured.Unstructured, want map[string]string) bool {
	conds, _, _ := unstructured.NestedSlice(co.Object, "status", "conditions")
	got := map[string]string{}
	for _, c := range conds {
		if m, ok := c.(map[string]interface{}); ok {
			t, _ := m["type"].(string)
			st, _ := m["status"].(string)
			got[t] = st
		}
	}
	for t, st := range want {
		if got[t] != st {
			return false
		}
	}
	return true
}
