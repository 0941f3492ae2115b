package precondition

import (
	"context"
	"strings"
	"testing"
)

func TestReleaseDeprecated(t *testing.T) {
	deprecated := map[string]string{"1.0.2": "data loss on upgrade; use 1.0.3"}
	for _, tc := range []struct {
		target  string
		graph   map[string]string
		refused bool
	}{
		{"1.0.2", deprecated, true},
		{"1.0.3", deprecated, false},
		{"1.0.2", nil, false},
	} {
		err := ReleaseDeprecated{}.Run(context.Background(), ReleaseContext{DesiredVersion: tc.target, Deprecated: tc.graph})
		if (err != nil) != tc.refused {
			t.Errorf("%s with graph %v: got %v, want refused=%v", tc.target, tc.graph, err, tc.refused)
		}
		if err != nil && (!strings.Contains(err.Error(), "use 1.0.3") || !IsBlocking(err)) {
			t.Errorf("a blocking refusal must carry the graph's message: %v", err)
		}
	}
	// An install runs the check too, and force accepts the risk.
	errs := InstallList().RunAll(context.Background(), ReleaseContext{DesiredVersion: "1.0.2", Deprecated: deprecated})
	if blocking, _ := Summarize(errs, false); !blocking {
		t.Error("an install of a deprecated release must be refused")
	}
	if blocking, summary := Summarize(errs, true); blocking || !strings.Contains(summary.Error(), NameReleaseDeprecated) {
		t.Errorf("force must accept it with the risk named: %v", summary)
	}
}
