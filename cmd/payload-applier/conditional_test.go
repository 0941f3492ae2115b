package main

import (
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestStatusShowsConditionalUpdates(t *testing.T) {
	doc := statusJSON{Current: "1.0.0", Status: configv1.ClusterVersionStatus{ConditionalUpdates: []configv1.ConditionalUpdate{{
		Release: configv1.Release{Version: "1.1.0"},
		Risks:   []configv1.ConditionalUpdateRisk{{Name: "BadDisk", URL: "https://example.com/bad-disk", Message: "Disks fail."}},
		Conditions: []metav1.Condition{{Type: "Recommended", Status: metav1.ConditionFalse, Reason: "BadDisk",
			Message: "Disks fail.\nhttps://example.com/bad-disk"}},
	}}}}
	var b strings.Builder
	writeStatusText(&b, doc, time.Now())
	for _, want := range []string{"Updates with known risks", "1.1.0: Recommended=False BadDisk: Disks fail.", "risks: BadDisk (https://example.com/bad-disk)"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("status lacks %q:\n%s", want, b.String())
		}
	}
	if c := conditionalFor(doc.Status.ConditionalUpdates, "1.1.0"); c == nil || c.Recommended != "False" || c.Reason != "BadDisk" || len(c.Risks) != 1 {
		t.Errorf("plan's entry %+v", c)
	}
	if c := conditionalFor(doc.Status.ConditionalUpdates, "1.2.0"); c != nil {
		t.Errorf("an update without risks has no entry, got %+v", c)
	}
}
