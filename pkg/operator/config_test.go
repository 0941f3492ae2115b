package operator

import (
	"strings"
	"testing"

	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

func TestClientConfigLeavesRateLimitsToTheServerUnlessAsked(t *testing.T) {
	limiter := flowcontrol.NewTokenBucketRateLimiter(1, 1)
	tests := map[string]struct {
		in      rest.Config
		wantQPS float32
	}{
		"unset: no client limit":        {rest.Config{Host: "h"}, -1},
		"set by the kubeconfig: kept":   {rest.Config{Host: "h", QPS: 20, Burst: 40}, 20},
		"an explicit limiter: kept too": {rest.Config{Host: "h", RateLimiter: limiter}, 0},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			in := tc.in
			got := ClientConfig(&in)
			if got.QPS != tc.wantQPS {
				t.Errorf("QPS %v, want %v", got.QPS, tc.wantQPS)
			}
			if in.QPS != tc.in.QPS || got == &in {
				t.Error("ClientConfig changed its argument")
			}
		})
	}
}

func TestNewNamesEveryMissingClient(t *testing.T) {
	_, err := New(Config{})
	if err == nil {
		t.Fatal("New accepted a Config without clients")
	}
	for _, field := range []string{"KubeClient", "ConfigClient", "DynamicClient", "Engine", "Recorder", "Releases"} {
		if !strings.Contains(err.Error(), "Config."+field+" is required") {
			t.Errorf("the error does not name %s: %v", field, err)
		}
	}
}

func TestNewForConfigBuildsOnlyTheClientsLeftUnset(t *testing.T) {
	kube := kubefake.NewClientset()
	op, err := NewForConfig(&rest.Config{Host: "https://127.0.0.1:1"}, Config{
		KubeClient: kube,
		Releases:   &DirStore{Root: t.TempDir()},
	})
	if err != nil {
		t.Fatal(err)
	}
	if op.kube != kube {
		t.Error("NewForConfig replaced the KubeClient it was given")
	}
	if op.config == nil || op.dynamic == nil || op.engine == nil || op.recorder == nil || op.events == nil {
		t.Errorf("NewForConfig left a client unset: %+v", op)
	}
	if op.cfg.Namespace != "openshift-cluster-version" || op.cfg.Name != "version" || op.Identity() == "" {
		t.Errorf("defaults not applied: namespace %q, name %q, identity %q", op.cfg.Namespace, op.cfg.Name, op.Identity())
	}
}
