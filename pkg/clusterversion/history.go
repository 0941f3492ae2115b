package clusterversion

import (
	"math"
	"slices"
	"strings"

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
	for len(history) > MaxHistory {
		history = pruneHistory(history)
	}
	return history
}

// pruneHistory drops the entry of history that matters least, as the CVO
// ranks entries (pkg/cvo/status_history.go), so that what an admin looks
// back for survives a long history. Never dropped: the initial entry,
// which says what the cluster was installed with
// (cluster_version{type="initial"}), the five newest, and the newest
// Completed one. Then, most kept first: the first or last Completed entry
// of a minor version; a Partial entry between Completed entries of two
// minors; any other entry; a Partial entry between Completed entries of
// two z-streams of one minor. Each step older weighs a little less, so
// that among equals the oldest goes.
func pruneHistory(h []configv1.UpdateHistory) []configv1.UpdateHistory {
	const (
		kept        = 1000.0
		minorBound  = 30.0
		minorStep   = 20.0
		zStreamStep = -20.0
		agePerEntry = -1.01
		newestKept  = 5
	)
	newestCompleted := slices.IndexFunc(h, func(e configv1.UpdateHistory) bool { return e.State == configv1.CompletedUpdate })
	drop, lowest := -1, math.Inf(1)
	for i := range h {
		rank := 0.0
		older, newer := completedAround(h, i)
		switch {
		case i == len(h)-1 || i < newestKept || i == newestCompleted:
			rank = kept
		case h[i].State == configv1.CompletedUpdate:
			if older < 0 || newer < 0 || minorOf(h[older].Version) != minorOf(h[i].Version) || minorOf(h[newer].Version) != minorOf(h[i].Version) {
				rank = minorBound
			}
		case older >= 0 && newer >= 0 && minorOf(h[older].Version) != minorOf(h[newer].Version):
			rank = minorStep
		case older >= 0 && newer >= 0 && zStreamOf(h[older].Version) != zStreamOf(h[newer].Version):
			rank = zStreamStep
		}
		rank += agePerEntry * float64(i)
		if rank < lowest {
			drop, lowest = i, rank
		}
	}
	return append(h[:drop:drop], h[drop+1:]...)
}

// completedAround is the index of the nearest Completed entry older than
// h[i], and of the nearest newer; -1 where there is none.
func completedAround(h []configv1.UpdateHistory, i int) (older, newer int) {
	older, newer = -1, -1
	for j := i + 1; j < len(h); j++ {
		if h[j].State == configv1.CompletedUpdate {
			older = j
			break
		}
	}
	for j := i - 1; j >= 0; j-- {
		if h[j].State == configv1.CompletedUpdate {
			newer = j
			break
		}
	}
	return older, newer
}

// minorOf and zStreamOf are a version's second field, and its second and
// third, as text: how the CVO tells minors and z-streams apart in
// history; "" where the version has fewer fields.
func minorOf(version string) string {
	f := strings.Split(version, ".")
	if len(f) < 2 {
		return ""
	}
	return f[1]
}

func zStreamOf(version string) string {
	micro := ""
	if f := strings.Split(version, "."); len(f) >= 3 {
		micro = f[2]
	}
	return minorOf(version) + "." + micro
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
