package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/payload-applier/payload-applier/pkg/graph"
	"github.com/payload-applier/payload-applier/pkg/payload"
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

func TestPlanJudgesAConditionalUpdateAsTheOperator(t *testing.T) {
	graphJSON := `{"nodes": [{"version": "1.0.0", "payload": "r:1.0.0"}, {"version": "1.1.0", "payload": "r:1.1.0"}], "edges": [],
  "conditionalEdges": [{"edges": [{"from": "1.0.0", "to": "1.1.0"}], "risks": [{"name": "BadDisk", "url": "https://example.com/bad-disk", "message": "Disks fail.", "matchingRules": [{"type": "Always"}]}]}]}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(graphJSON)) }))
	defer srv.Close()
	cv := &configv1.ClusterVersion{
		ObjectMeta: metav1.ObjectMeta{Name: "version"},
		Spec: configv1.ClusterVersionSpec{ClusterID: "test", Channel: "stable-1", Upstream: configv1.URL(srv.URL),
			DesiredUpdate: &configv1.Update{Version: "1.1.0"}},
		Status: configv1.ClusterVersionStatus{Desired: configv1.Release{Version: "1.0.0"},
			History: []configv1.UpdateHistory{{State: configv1.CompletedUpdate, Version: "1.0.0"}}},
	}
	c := newJudgeCluster(t, cv)
	v, _, acceptance, err := judgeUpdate(context.Background(), c.kube, c.config, c.engine, &payload.Release{Version: "1.1.0"}, graph.ModeUpdate)
	if err != nil {
		t.Fatal(err)
	}
	if !v.Blocking || acceptance.Accepted || !strings.Contains(acceptance.Message, "BadDisk") {
		t.Errorf("plan's acceptance %+v, want the update refused naming BadDisk", acceptance)
	}
	cu := acceptance.ConditionalUpdate
	if cu == nil || cu.Recommended != "False" || cu.Reason != "BadDisk" || len(cu.Risks) != 1 || cu.Risks[0].URL != "https://example.com/bad-disk" {
		t.Fatalf("plan's conditional update %+v", cu)
	}
	doc := planDoc{Release: "1.1.0", Acceptance: acceptance}
	if text := doc.text(true); !strings.Contains(text, "Known risks of 1.1.0: Recommended=False BadDisk: Disks fail. https://example.com/bad-disk") {
		t.Errorf("plan's text lacks the risk:\n%s", text)
	}
}
