package clusterversion

import (
	"encoding/base64"
	"encoding/binary"
	"hash/fnv"
	"slices"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/payload-applier/payload-applier/pkg/graph"
	"github.com/payload-applier/payload-applier/pkg/payload"
)

// Status is the status to write once a pass over rel ran: obs is observed
// after the pass, so that Upgradeable sees what the pass applied (an admin
// gate, a CRD), and obs.CV carries the status the pass started from. It
// returns whether the pass completed the newest history entry.
func Status(obs Observed, rel *payload.Release, pass *Pass, now metav1.Time) (configv1.ClusterVersionStatus, bool) {
	// Only conditions and history change in place; the rest can be large.
	status := obs.CV.Status
	status.Conditions = slices.Clone(status.Conditions)
	status.History = slices.Clone(status.History)
	completing := false
	// An update whose deletes could not even be claimed stays in
	// progress, so that the pass after the ledger's repair is still an
	// update and starts them.
	if pass.Complete && (pass.LedgerErr == nil || pass.Mode != graph.ModeUpdate) {
		completing = len(status.History) > 0 && status.History[0].State != configv1.CompletedUpdate
		status.History = CompleteHistory(status.History, now)
	}
	Progress(&status, pass, obs.Patience, now)
	if obs.Invalid {
		ProgressingWhileInvalid(&status, now)
	}
	// After Progressing, which says whether an update still runs.
	deletes := UpgradeablePass{Updating: progressing(status.Conditions), Deletes: pass.Deletes, Cleanups: pass.Cleanups,
		LedgerErr: obs.Deletes.LedgerErr, CleanupErr: pass.CleanupErr}
	if obs.Upgradeable != nil {
		status.Conditions = SetCondition(status.Conditions, Upgradeable(*obs.Upgradeable, deletes, obs.CV.Spec.Overrides), now)
	}
	if pass.CleanupErr != nil {
		status.Conditions = SetCondition(status.Conditions, CleanupStateUnreadable(pass.CleanupErr), now)
	}
	if pass.LedgerErr != nil {
		// The ledger holds every delete back: it is the one to repair first.
		status.Conditions = SetCondition(status.Conditions, LedgerUnreadable(pass.LedgerErr), now)
	}
	if c, ok := CleanupCondition(pass.Cleanups, now.Time, obs.CleanupStallAfter); ok {
		status.Conditions = SetCondition(status.Conditions, c, now)
	} else {
		status.Conditions = RemoveCondition(status.Conditions, ConditionOperandCleanup)
	}
	status.ObservedGeneration = obs.CV.Generation
	status.VersionHash = VersionHash(rel)
	return status, completing
}

// VersionHash fingerprints the manifests a release applies.
func VersionHash(rel *payload.Release) string {
	h := fnv.New64a()
	var b [8]byte
	for _, m := range rel.Manifests {
		binary.LittleEndian.PutUint64(b[:], m.Hash())
		_, _ = h.Write(b[:])
	}
	return base64.URLEncoding.EncodeToString(h.Sum(nil))
}
