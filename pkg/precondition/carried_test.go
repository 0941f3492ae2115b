package precondition

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/payload-applier/payload-applier/pkg/payload"
	"github.com/payload-applier/payload-applier/pkg/payload/payloadtest"
)

const deleteConfigMap = `apiVersion: v1
kind: ConfigMap
metadata:
  name: old
  namespace: demo
  annotations:
    release.openshift.io/delete: "true"
`

const createConfigMap = `apiVersion: v1
kind: ConfigMap
metadata:
  name: kept
  namespace: demo
`

// loadRelease writes and loads a release whose only manifests are files.
func loadRelease(t *testing.T, version string, files map[string]string) *payload.Release {
	t.Helper()
	dir := payloadtest.WriteRelease(t, t.TempDir(), version, nil, files)
	rel, _, err := payload.LoadAll(dir)
	if err != nil {
		t.Fatal(err)
	}
	return rel
}

func TestCarriedDeletes(t *testing.T) {
	oldID := payload.ObjectID{Kind: "ConfigMap", Namespace: "demo", Name: "old"}
	withDelete := map[string]string{"0000_50_demo_01_old.yaml": deleteConfigMap, "0000_50_demo_00_kept.yaml": createConfigMap}
	withoutDelete := map[string]string{"0000_50_demo_00_kept.yaml": createConfigMap}
	onCurrent := map[payload.ObjectID][]string{oldID: {"1.0.4", "1.1.1"}}
	onOlder := map[payload.ObjectID][]string{oldID: {"1.0.4"}}

	for _, tc := range []struct {
		name    string
		current string
		target  string
		files   map[string]string
		carried map[payload.ObjectID][]string
		refused bool
	}{
		{"a minor update carrying the current release's delete manifest is refused", "1.1.1", "1.2.0", withDelete, onCurrent, true},
		{"a major update carrying it is refused", "1.1.1", "2.0.0", withDelete, onCurrent, true},
		{"a z-stream may carry it", "1.1.1", "1.1.2", withDelete, onCurrent, false},
		{"a minor update that dropped it is accepted", "1.1.1", "1.2.0", withoutDelete, onCurrent, false},
		{"a delete manifest only an older release carried is new to the current one", "1.1.1", "1.2.0", withDelete, onOlder, false},
		{"a ledger that knows nothing refuses nothing", "1.1.1", "1.2.0", withDelete, nil, false},
		{"a rollback is left to Rollback", "1.1.1", "1.0.9", withDelete, onCurrent, false},
		{"an unparsable target is left to GiantHop", "1.1.1", "next", withDelete, onCurrent, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc := ReleaseContext{
				DesiredVersion: tc.target,
				ClusterVersion: clusterVersion(tc.current, withHistory(completed(tc.current))),
				Release:        loadRelease(t, "1.2.0", tc.files),
				CarriedDeletes: tc.carried,
			}
			err := CarriedDeletes{}.Run(context.Background(), rc)
			if (err != nil) != tc.refused {
				t.Fatalf("refused = %v, want %v (%v)", err != nil, tc.refused, err)
			}
			if err == nil {
				return
			}
			var pErr *Error
			if !errors.As(err, &pErr) || pErr.Reason != ReasonDeleteManifestsCarriedAcrossMinor || pErr.NonBlockingWarning || pErr.Name != NameCarriedDeletes {
				t.Fatalf("want a blocking %s error, got %#v", ReasonDeleteManifestsCarriedAcrossMinor, err)
			}
			for _, want := range []string{"0000_50_demo_01_old.yaml:1", oldID.String(), tc.current} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("message %q does not name %q", err, want)
				}
			}
		})
	}
}

func TestCarriedDeletesRunsWithTheDefaultsAndForceAcceptsIt(t *testing.T) {
	oldID := payload.ObjectID{Kind: "ConfigMap", Namespace: "demo", Name: "old"}
	rc := ReleaseContext{
		DesiredVersion: "1.2.0",
		ClusterVersion: clusterVersion("1.1.1", withHistory(completed("1.1.1"))),
		Release:        loadRelease(t, "1.2.0", map[string]string{"0000_50_demo_01_old.yaml": deleteConfigMap}),
		CarriedDeletes: map[payload.ObjectID][]string{oldID: {"1.1.1"}},
	}
	errs := DefaultList().RunAll(context.Background(), rc)
	if blocking, _ := Summarize(errs, false); !blocking {
		t.Fatalf("want the default checks to block, got %v", errs)
	}
	blocking, summary := Summarize(errs, true)
	if blocking || summary == nil || !strings.Contains(summary.Error(), NameCarriedDeletes) {
		t.Fatalf("force must accept the update and record the risk, got blocking=%v %v", blocking, summary)
	}
}

func TestNameSomeCountsWhatItLeavesOut(t *testing.T) {
	items := make([]string, 12)
	for i := range items {
		items[i] = "x"
	}
	if got := nameSome(items); !strings.HasSuffix(got, "x and 2 more") || strings.Count(got, "x") != 10 {
		t.Errorf("nameSome = %q", got)
	}
}
