package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestStatusTextShowsTheDesiredImageAndWhetherEachReleaseWasVerified(t *testing.T) {
	const image = "registry.example.com/release@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	started := metav1.NewTime(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))
	doc := statusJSON{
		Current: "1.0.1",
		Desired: configv1.Release{Version: "1.0.1", Image: image},
		Status: configv1.ClusterVersionStatus{History: []configv1.UpdateHistory{
			{Version: "1.0.1", State: configv1.CompletedUpdate, StartedTime: started, CompletionTime: &started, Image: image, Verified: true},
			{Version: "1.0.0", State: configv1.CompletedUpdate, StartedTime: started, CompletionTime: &started},
		}},
	}
	var out bytes.Buffer
	writeStatusText(&out, doc, started.Time)
	text := out.String()
	if !strings.Contains(text, "Desired image: "+image+"\n") {
		t.Errorf("no desired image line:\n%s", text)
	}
	for version, verified := range map[string]string{"1.0.1": "true", "1.0.0": "false"} {
		row := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(version) + `\s+Completed\s+\S+\s+\S+\s+` + verified + `\s*$`)
		if !row.MatchString(text) {
			t.Errorf("history row of %s does not say verified %s:\n%s", version, verified, text)
		}
	}
	if !strings.Contains(text, "VERIFIED") {
		t.Errorf("history has no VERIFIED column:\n%s", text)
	}
}

func TestStatusTextHasNoImageLineWhenNoImageIsDesired(t *testing.T) {
	var out bytes.Buffer
	writeStatusText(&out, statusJSON{Current: "1.0.0", Desired: configv1.Release{Version: "1.0.0"}}, time.Now())
	if strings.Contains(out.String(), "Desired image") {
		t.Errorf("a release without an image shows one:\n%s", out.String())
	}
}
