package precondition

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

const (
	// NameCarriedDeletes names the CarriedDeletes check.
	NameCarriedDeletes = "DeleteManifestsCarriedAcrossMinor"
	// ReasonDeleteManifestsCarriedAcrossMinor: a minor or major update
	// still carries delete manifests that the current release carried.
	ReasonDeleteManifestsCarriedAcrossMinor = "DeleteManifestsCarriedAcrossMinor"
	// maxCarriedNamed bounds the manifests a refusal names; it counts the rest.
	maxCarriedNamed = 10
)

// CarriedDeletes refuses a minor or major update whose release still
// carries a delete manifest that the current release carried:
// a cluster leaves a minor version only once its deletes are done
// (Upgradeable), so such a manifest is dead weight that would delete an
// object re-created since. Within a z-stream leftovers are allowed, as
// the CVO allows them. What the current release carried comes from the
// delete ledger, which records the release of every pass that walked a
// delete manifest; `lint --previous` applies the same rule offline.
type CarriedDeletes struct{}

var _ Precondition = CarriedDeletes{}

// Name returns NameCarriedDeletes.
func (CarriedDeletes) Name() string { return NameCarriedDeletes }

// Run compares the requested release's delete manifests with what the
// ledger says the last completed release carried.
func (c CarriedDeletes) Run(_ context.Context, rc ReleaseContext) error {
	if rc.ClusterVersion == nil || rc.Release == nil || len(rc.CarriedDeletes) == 0 {
		return nil
	}
	current := LastCompletedVersion(rc.ClusterVersion.Status.History)
	if current == "" {
		return nil
	}
	kind, err := Classify(current, rc.DesiredVersion)
	if err != nil || (kind != UpdateMinor && kind != UpdateMajor) {
		// GiantHop and Rollback report versions that do not parse.
		return nil
	}
	var carried []string
	for _, m := range rc.Release.Manifests {
		if m.Delete() && slices.Contains(rc.CarriedDeletes[m.ID()], current) {
			carried = append(carried, fmt.Sprintf("%s (%s)", m.Position(), m.ID()))
		}
	}
	if len(carried) == 0 {
		return nil
	}
	return &Error{
		Reason: ReasonDeleteManifestsCarriedAcrossMinor,
		Message: fmt.Sprintf("%s is a %s update from %s, and it still carries %s that %s carried: %s; "+
			"their objects were deleted during %s, so drop these manifests from the release, or force the update",
			rc.DesiredVersion, strings.ToLower(string(kind)), current, countDeletes(len(carried)), current, nameSome(carried), current),
		Name: c.Name(),
	}
}

func countDeletes(n int) string {
	if n == 1 {
		return "1 delete manifest"
	}
	return fmt.Sprintf("%d delete manifests", n)
}

// nameSome lists at most maxCarriedNamed items and counts the rest.
func nameSome(items []string) string {
	if len(items) <= maxCarriedNamed {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:maxCarriedNamed], ", "), len(items)-maxCarriedNamed)
}
