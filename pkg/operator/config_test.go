package operator

import (
	"testing"

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
