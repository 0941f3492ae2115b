package cleanup

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// State is where a component's cleanup stands.
type State string

const (
	// Waiting: rule 1 fails; nothing was deleted yet and the gate waits.
	Waiting State = "Waiting"
	// Running: operands are being deleted; the gate stays closed.
	Running State = "Running"
	// Completed: no operand is left; the gate is open.
	Completed State = "Completed"
	// Aborted: the admin switched to Orphan mid-way; the gate is open and
	// the operands left are orphaned.
	Aborted State = "Aborted"
	// Skipped: no CRD of the component may have its operands cleaned up
	// (a rule from 2 to 5 failed, or the CRD is not the one the update
	// deletes); the gate is open and the operands are orphaned.
	Skipped State = "Skipped"
	// Blocked: no CRD may have its operands cleaned up, and for at least
	// one the reason is that its API is not served by the CRD itself (a
	// built-in or aggregated API has the same name, or its names are not
	// accepted), so listing "its" objects would reach another API's. The
	// gate is open: deleting the CRD itself touches no other API.
	Blocked State = "Blocked"
)

// States lists every state, for tests that must cover them all.
var States = []State{Waiting, Running, Completed, Aborted, Skipped, Blocked}

// Open reports whether the component's deletes may go ahead.
func (s State) Open() bool {
	return s == Completed || s == Aborted || s == Skipped || s == Blocked
}

// Limits of what a record names, as the status shows it: operands, and
// notes on the CRDs left alone. The counts are kept beyond them.
const (
	maxNamedPerKind = 10
	maxNamed        = 50
	// maxDescribedKinds bounds the kinds a status message lists.
	maxDescribedKinds = 50
	maxNotes          = 10
	maxNoteLen        = 512
)

// Operand is one custom resource a cleanup waits for.
type Operand struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

func (o Operand) String() string {
	if o.Namespace == "" {
		return o.Kind + "/" + o.Name
	}
	return o.Kind + "/" + o.Namespace + "/" + o.Name
}

// Record is the persisted memory of one component's cleanup.
type Record struct {
	Component string `json:"component"`
	// Release is the update that started the cleanup.
	Release string `json:"release"`
	State   State  `json:"state"`
	// StartedAt is when the gate first closed; ProgressAt when the count of
	// remaining operands last went down (or the start).
	StartedAt  *metav1.Time `json:"startedAt,omitempty"`
	ProgressAt *metav1.Time `json:"progressAt,omitempty"`
	// Remaining counts the operands still there, per kind.
	Remaining map[string]int `json:"remaining,omitempty"`
	// Named lists some of them: at most 10 per kind and 50 in all.
	Named []Operand `json:"named,omitempty"`
	// Skips says which CRDs' operands are left alone, and why: at most
	// maxNotes; MoreSkips counts the rest.
	Skips     []string `json:"skips,omitempty"`
	MoreSkips int      `json:"moreSkips,omitempty"`
	// BlockedCRDs counts the CRDs left alone because their API is not
	// served by them; their notes are among Skips.
	BlockedCRDs int `json:"blockedCRDs,omitempty"`
	// Message explains a Waiting or Aborted state.
	Message string `json:"message,omitempty"`
}

// Total counts the remaining operands.
func (r *Record) Total() int {
	n := 0
	for _, c := range r.Remaining {
		n += c
	}
	return n
}

// Stalled reports whether a running cleanup made no progress for after.
func (r *Record) Stalled(now time.Time, after time.Duration) bool {
	return r.State == Running && r.ProgressAt != nil && now.Sub(r.ProgressAt.Time) >= after
}

// Blocked reports whether a waiting cleanup has waited for after.
func (r *Record) Blocked(now time.Time, after time.Duration) bool {
	return r.State == Waiting && r.StartedAt != nil && now.Sub(r.StartedAt.Time) >= after
}

// Count is what one look at the operands found.
type Count struct {
	Remaining map[string]int
	Named     []Operand
}

// Add counts op, naming it within the bounds.
func (c *Count) Add(op Operand) {
	if c.Remaining == nil {
		c.Remaining = map[string]int{}
	}
	c.Remaining[op.Kind]++
	if c.Remaining[op.Kind] <= maxNamedPerKind && len(c.Named) < maxNamed {
		c.Named = append(c.Named, op)
	}
}

// progressed records a look that found count, at now: the start of a
// cleanup, its progress, or its end.
func progressed(prev *Record, component, release string, count Count, now time.Time) Record {
	ts := metav1.NewTime(now)
	rec := Record{Component: component, Release: release, StartedAt: &ts, ProgressAt: &ts}
	if prev != nil && (prev.State == Running || prev.State == Waiting) {
		rec.Release, rec.StartedAt = prev.Release, prev.StartedAt
		if prev.State == Running {
			rec.ProgressAt = prev.ProgressAt
		}
	}
	before := -1
	if prev != nil && prev.State == Running {
		before = prev.Total()
	}
	rec.Remaining, rec.Named = count.Remaining, count.Named
	sort.Slice(rec.Named, func(i, j int) bool { return rec.Named[i].String() < rec.Named[j].String() })
	switch total := rec.Total(); {
	case total == 0:
		rec.State = Completed
	case before >= 0 && total < before:
		rec.State, rec.ProgressAt = Running, &ts
	default:
		rec.State = Running
	}
	return rec
}

// waiting records a look at which nothing could be deleted, for why (rule
// 1 fails, or deleting failed): a cleanup not started yet waits, and a
// running one keeps its counts and stall timer.
func waiting(prev *Record, component, release, why string, now time.Time) Record {
	if prev != nil && (prev.State == Running || prev.State == Waiting) {
		rec := *prev
		rec.Message = why
		return rec
	}
	ts := metav1.NewTime(now)
	return Record{Component: component, Release: release, State: Waiting, StartedAt: &ts, Message: why}
}

// Describe is the status message of a running cleanup: the count, then
// what remains, per kind, with the named operands. A stored record may
// hold far more than a cleanup names, so the message lists the first
// maxDescribedKinds kinds and the names within the bounds of Count.Add.
func (r *Record) Describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "waiting for operator to finish cleanup for %d CRs", r.Total())
	if r.Component != "" {
		fmt.Fprintf(&b, " of component %s", r.Component)
	}
	kinds := firstKinds(r.Remaining, maxDescribedKinds)
	names := make(map[string][]string, len(kinds))
	for _, k := range kinds {
		names[k] = nil
	}
	named := 0
	for _, op := range r.Named {
		if named == maxNamed {
			break
		}
		if list, listed := names[op.Kind]; listed && len(list) < maxNamedPerKind {
			names[op.Kind] = append(list, op.String())
			named++
		}
	}
	for i, k := range kinds {
		sep := "; "
		if i == 0 {
			sep = "; remaining "
		}
		fmt.Fprintf(&b, "%s%d %s", sep, r.Remaining[k], k)
		if list := names[k]; len(list) > 0 {
			b.WriteString(": " + strings.Join(list, ", "))
			if more := r.Remaining[k] - len(list); more > 0 {
				fmt.Fprintf(&b, " and %d more", more)
			}
		}
	}
	if more := len(r.Remaining) - len(kinds); more > 0 {
		fmt.Fprintf(&b, "; and %d more kinds", more)
	}
	return b.String()
}

// firstKinds returns the first n kinds of remaining in sorted order,
// without sorting them all.
func firstKinds(remaining map[string]int, n int) []string {
	first := make([]string, 0, min(n, len(remaining)))
	for k := range remaining {
		if len(first) == n && k >= first[n-1] {
			continue
		}
		i, _ := slices.BinarySearch(first, k)
		if len(first) == n {
			first = first[:n-1]
		}
		first = slices.Insert(first, i, k)
	}
	return first
}
