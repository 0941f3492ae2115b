package clusterversion

import (
	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/payload-applier/payload-applier/pkg/graph"
)

// MaxHistory bounds status.history, as in the CVO.
const MaxHistory = 100

// ModeFor picks the pass's mode from history, as the CVO does: install until
// some release has completed, reconcile while the newest entry is the
// completed desired release, update otherwise.
func ModeFor(history []configv1.UpdateHistory, desired configv1.Release) graph.Mode {
	completed := false
	for _, h := range history {
		if h.State == configv1.CompletedUpdate {
			completed = true
			break
		}
	}
	if !completed {
		return graph.ModeInstall
	}
	if h := history[0]; h.State == configv1.CompletedUpdate && sameRelease(h, desired) {
		return graph.ModeReconcile
	}
	return graph.ModeUpdate
}

// sameRelease compares versions only: the image of a local payload is its
// directory, which may move without the release changing.
func sameRelease(h configv1.UpdateHistory, r configv1.Release) bool {
	return h.Version == r.Version
}

// StartHistory records that the cluster now works towards desired. An entry
// for the same release is kept, so a restart mid-update resumes it.
func StartHistory(history []configv1.UpdateHistory, desired configv1.Release, now metav1.Time, acceptedRisks string) []configv1.UpdateHistory {
	if len(history) > 0 && sameRelease(history[0], desired) {
		if acceptedRisks != "" {
			history[0].AcceptedRisks = acceptedRisks
		}
		return history
	}
	if len(history) > 0 && history[0].State == configv1.PartialUpdate && history[0].CompletionTime == nil {
		// The previous update was left unfinished: close it as partial.
		t := now
		history[0].CompletionTime = &t
	}
	entry := configv1.UpdateHistory{
		State:         configv1.PartialUpdate,
		StartedTime:   now,
		Version:       desired.Version,
		Image:         desired.Image,
		Verified:      false,
		AcceptedRisks: acceptedRisks,
	}
	history = append([]configv1.UpdateHistory{entry}, history...)
	if len(history) > MaxHistory {
		// The initial entry, the oldest, says what the cluster was
		// installed with (cluster_version{type="initial"}): as the CVO,
		// keep it and drop the oldest of the rest.
		history = append(history[:MaxHistory-1], history[len(history)-1])
	}
	return history
}

// CompleteHistory marks the newest entry Completed.
func CompleteHistory(history []configv1.UpdateHistory, now metav1.Time) []configv1.UpdateHistory {
	if len(history) == 0 || history[0].State == configv1.CompletedUpdate {
		return history
	}
	t := now
	history[0].State = configv1.CompletedUpdate
	history[0].CompletionTime = &t
	return history
}
