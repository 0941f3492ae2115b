package clusterversion

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/payload-applier/payload-applier/pkg/textwrap"
)

// Limits of the ClusterVersion status (docs/operations.md, "ClusterVersion
// status limits"). etcd refuses an object over 1.5 MiB, and once a status
// write fails the cluster has no report at all: every value the operator
// writes is bounded, and the whole status has a budget well under that
// limit, leaving room for spec, metadata and managedFields.
const (
	// MaxStatusBytes is the budget of the status, as JSON.
	MaxStatusBytes = 256 << 10
	// MaxMessageBytes bounds a condition's message.
	MaxMessageBytes = 8 << 10
	// maxReasonBytes bounds a condition's reason.
	maxReasonBytes = 256
	// MaxAcceptedRisksBytes bounds a history entry's acceptedRisks.
	MaxAcceptedRisksBytes = 4 << 10
	// MaxReleaseFieldBytes bounds a release's version, image and URL,
	// and each of its channels.
	MaxReleaseFieldBytes = 1 << 10
	// maxChannels bounds a release's channels; the last one kept then
	// reads "… and N more".
	maxChannels = 32
	// MaxAvailableUpdates bounds availableUpdates, listed newest first.
	MaxAvailableUpdates = 500
	// keptHistory is how many of the newest history entries the budget
	// keeps while anything else can go.
	keptHistory = 10
	// minCutTextBytes is the shortest the budget cuts a message or an
	// acceptedRisks to.
	minCutTextBytes = 1 << 10
	// maxCutsNoteBytes bounds StatusTruncated's message; the budget
	// keeps room for it.
	maxCutsNoteBytes = 2 << 10
	// maxNamedCuts is how many cuts the note names, one by one.
	maxNamedCuts = 10
)

// essentialConditions are the conditions admins and `oc adm upgrade` read
// first: the budget cuts their messages last and never drops them.
var essentialConditions = []configv1.ClusterStatusConditionType{
	ConditionFailing, configv1.OperatorProgressing, configv1.OperatorAvailable, configv1.OperatorUpgradeable, ConditionReleaseAccepted,
}

// Cuts is what fitStatus left out of a status.
type Cuts struct {
	// Notes say what was cut, one cut each.
	Notes []string
	// PerField counts the values cut and the entries dropped, per field
	// of the status.
	PerField map[string]int
}

func (c *Cuts) add(field string, n int, note string) {
	if c.PerField == nil {
		c.PerField = map[string]int{}
	}
	c.PerField[field] += n
	c.Notes = append(c.Notes, note)
}

// Message is StatusTruncated's message, and the Event's: "" when
// nothing was cut.
func (c Cuts) Message() string {
	if len(c.Notes) == 0 {
		return ""
	}
	named := c.Notes[:min(len(c.Notes), maxNamedCuts)]
	msg := fmt.Sprintf("The status was cut to stay within its limits (docs/operations.md, %q): %s",
		"ClusterVersion status limits", strings.Join(named, "; "))
	if more := len(c.Notes) - len(named); more > 0 {
		msg += fmt.Sprintf("; … and %d more cuts", more)
	}
	return textwrap.Bound(msg, maxCutsNoteBytes)
}

// statusText is one string of the status that the limits bound.
type statusText struct {
	p *string
	// where names it in notes: "conditions[Failing].message".
	where string
	// field is the status field it belongs to, as the metric names it.
	field string
	limit int
	// tier orders the budget's cuts: 1 before 2; 0 is never cut beyond
	// limit.
	tier int
}

// statusTexts lists the strings of st the limits bound, in status order.
func statusTexts(st *configv1.ClusterVersionStatus) []statusText {
	out := statusTextsBesideConditional(st)
	for i := range st.ConditionalUpdates {
		out = append(out, conditionalUpdateTexts(st, i)...)
	}
	return out
}

// statusTextsBesideConditional lists the strings of st the limits bound,
// but those of conditionalUpdates.
func statusTextsBesideConditional(st *configv1.ClusterVersionStatus) []statusText {
	var out []statusText
	for i := range st.Conditions {
		c := &st.Conditions[i]
		where := fmt.Sprintf("conditions[%s]", c.Type)
		tier := 1
		if slices.Contains(essentialConditions, c.Type) {
			tier = 2
		}
		out = append(out,
			statusText{p: &c.Reason, where: where + ".reason", field: "conditions", limit: maxReasonBytes},
			statusText{p: &c.Message, where: where + ".message", field: "conditions", limit: MaxMessageBytes, tier: tier})
	}
	out = append(out, releaseTexts("desired", "desired", &st.Desired)...)
	for i := range st.History {
		h := &st.History[i]
		where := fmt.Sprintf("history[%d]", i)
		tier := 1
		if i == 0 {
			tier = 2
		}
		out = append(out,
			statusText{p: &h.Version, where: where + ".version", field: "history", limit: MaxReleaseFieldBytes},
			statusText{p: &h.Image, where: where + ".image", field: "history", limit: MaxReleaseFieldBytes},
			statusText{p: &h.AcceptedRisks, where: where + ".acceptedRisks", field: "history", limit: MaxAcceptedRisksBytes, tier: tier})
	}
	for i := range st.AvailableUpdates {
		out = append(out, releaseTexts("availableUpdates", fmt.Sprintf("availableUpdates[%d]", i), &st.AvailableUpdates[i])...)
	}
	return out
}

// conditionalUpdateTexts lists the strings of conditional update i.
func conditionalUpdateTexts(st *configv1.ClusterVersionStatus, i int) []statusText {
	u := &st.ConditionalUpdates[i]
	where := fmt.Sprintf("conditionalUpdates[%d]", i)
	return append(releaseTexts("conditionalUpdates", where+".release", &u.Release), conditionalTexts(u, where)...)
}

// releaseTexts lists the strings of r, of field, at where.
func releaseTexts(field, where string, r *configv1.Release) []statusText {
	out := []statusText{
		{p: &r.Version, where: where + ".version", field: field, limit: MaxReleaseFieldBytes},
		{p: &r.Image, where: where + ".image", field: field, limit: MaxReleaseFieldBytes},
		{p: (*string)(&r.URL), where: where + ".url", field: field, limit: MaxReleaseFieldBytes},
	}
	for i := range r.Channels {
		out = append(out, statusText{p: &r.Channels[i], where: fmt.Sprintf("%s.channels[%d]", where, i), field: field, limit: MaxReleaseFieldBytes})
	}
	return out
}

// Fit bounds every value of st and fits st into MaxStatusBytes,
// saying what it cut in the StatusTruncated condition; the cuts are
// cutToBudget's. The risk status that applies lays over st
// (WithRiskStatus) counts in the budget. Fitting is deterministic, and a
// fitted status needs no further cut.
func Fit(st *configv1.ClusterVersionStatus, applies RiskApplies, now metav1.Time) Cuts {
	var previous *configv1.ClusterOperatorStatusCondition
	if c := FindCondition(st.Conditions, ConditionStatusTruncated); c != nil {
		kept := *c
		previous = &kept
	}
	st.Conditions = RemoveCondition(st.Conditions, ConditionStatusTruncated)
	before := shapeOf(st)
	var cuts Cuts
	// Room for StatusTruncated itself.
	target := MaxStatusBytes - maxCutsNoteBytes - 512
	originals := boundValues(st, applies, &cuts, target)
	cutToBudget(st, originals, func() int { return StatusSize(st, applies) }, target)
	cuts.describe(before, st, originals)
	if msg := cuts.Message(); msg != "" {
		if previous != nil {
			// Kept, so that its transition time is too.
			st.Conditions = append(st.Conditions, *previous)
		}
		st.Conditions = SetCondition(st.Conditions, configv1.ClusterOperatorStatusCondition{Type: ConditionStatusTruncated,
			Status: configv1.ConditionTrue, Reason: ReasonStatusLimits, Message: msg}, now)
	}
	return cuts
}

// boundValues caps the lists of st and cuts each string to its limit. It
// returns the strings as they were, by where, so that a later cut starts
// from the whole text and the text carries one marker. Conditional
// updates, which a graph can make many and large, are bounded in order
// only until together they pass target: cutToBudget would drop every one
// after that, so they are dropped unread.
func boundValues(st *configv1.ClusterVersionStatus, applies RiskApplies, cuts *Cuts, target int) map[string]string {
	st.AvailableUpdates = st.AvailableUpdates[:min(len(st.AvailableUpdates), MaxAvailableUpdates)]
	st.History = st.History[:min(len(st.History), MaxHistory)]
	// desired's channels are the cached release's: cut a copy.
	st.Desired.Channels = capChannels(slices.Clone(st.Desired.Channels), "desired", "desired", cuts)
	for i := range st.AvailableUpdates {
		u := &st.AvailableUpdates[i]
		u.Channels = capChannels(u.Channels, "availableUpdates", fmt.Sprintf("availableUpdates[%d]", i), cuts)
	}
	boundConditional(st, cuts)
	originals := map[string]string{}
	bound := func(texts []statusText) {
		for _, t := range texts {
			originals[t.where] = *t.p
			*t.p = textwrap.Bound(*t.p, t.limit)
		}
	}
	bound(statusTextsBesideConditional(st))
	size, seen := 0, map[string]bool{}
	for i := range st.ConditionalUpdates {
		bound(conditionalUpdateTexts(st, i))
		// Each entry adds itself and a comma to the status.
		if size += JSONSize(&st.ConditionalUpdates[i]) + 1 + entryRiskSize(&st.ConditionalUpdates[i], applies, seen); size > target {
			st.ConditionalUpdates = st.ConditionalUpdates[:i+1]
			break
		}
	}
	return originals
}

// cutToBudget cuts st, its values bounded, until it is at most target
// bytes, in this order: availableUpdates from the oldest,
// conditionalUpdates from the last, history entries beyond the newest
// keptHistory, then messages and acceptedRisks to one common length (no
// shorter than minCutTextBytes), first of the other conditions and older
// history, then of the essential conditions and the newest entry; last,
// the other conditions, and history but its newest entry. desired is
// never cut. size is st's size as written.
func cutToBudget(st *configv1.ClusterVersionStatus, originals map[string]string, size func() int, target int) {
	over := func() int { return size() - target }
	if over() > 0 {
		st.AvailableUpdates = dropTail(st.AvailableUpdates, 0, over())
	}
	if over() > 0 {
		st.ConditionalUpdates = dropTail(st.ConditionalUpdates, 0, over())
	}
	if over() > 0 {
		st.History = dropTail(st.History, keptHistory, over())
	}
	for tier := 1; tier <= 2 && over() > 0; tier++ {
		cutTier(st, originals, tier, size, target)
	}
	for i := len(st.Conditions) - 1; i >= 0 && over() > 0; i-- {
		if !slices.Contains(essentialConditions, st.Conditions[i].Type) {
			st.Conditions = slices.Delete(st.Conditions, i, i+1)
		}
	}
	if over() > 0 {
		st.History = dropTail(st.History, 1, over())
	}
}

// statusShape is what a status holds before it is fitted, for the notes.
type statusShape struct {
	updates, conditionalUpdates, history int
	conditions                           []configv1.ClusterStatusConditionType
}

func shapeOf(st *configv1.ClusterVersionStatus) statusShape {
	s := statusShape{updates: len(st.AvailableUpdates), conditionalUpdates: len(st.ConditionalUpdates), history: len(st.History)}
	for _, c := range st.Conditions {
		s.conditions = append(s.conditions, c.Type)
	}
	return s
}

// describe notes what fitting before into st cut: entries dropped from
// each list, conditions dropped, and each string cut.
func (c *Cuts) describe(before statusShape, st *configv1.ClusterVersionStatus, originals map[string]string) {
	lists := []struct {
		field, which  string
		before, after int
	}{
		{"availableUpdates", "newest", before.updates, len(st.AvailableUpdates)},
		{"conditionalUpdates", "first", before.conditionalUpdates, len(st.ConditionalUpdates)},
		{"history", "newest", before.history, len(st.History)},
	}
	for _, l := range lists {
		if dropped := l.before - l.after; dropped > 0 {
			c.add(l.field, dropped, fmt.Sprintf("%s keeps the %s %d of %d entries (… and %d more)", l.field, l.which, l.after, l.before, dropped))
		}
	}
	var dropped []string
	for _, t := range before.conditions {
		if FindCondition(st.Conditions, t) == nil {
			dropped = append(dropped, string(t))
		}
	}
	if len(dropped) > 0 {
		c.add("conditions", len(dropped), "conditions dropped: "+strings.Join(dropped, ", "))
	}
	for _, t := range statusTexts(st) {
		if was := originals[t.where]; *t.p != was {
			c.add(t.field, 1, fmt.Sprintf("%s cut from %d to %d bytes", t.where, len(was), len(*t.p)))
		}
	}
}

// capChannels keeps maxChannels channels, the last saying how many more
// there are.
func capChannels(channels []string, field, where string, cuts *Cuts) []string {
	if len(channels) <= maxChannels {
		return channels
	}
	more := len(channels) - (maxChannels - 1)
	cuts.add(field, 1, fmt.Sprintf("%s.channels keeps %d of %d", where, maxChannels-1, len(channels)))
	return append(channels[:maxChannels-1:maxChannels-1], fmt.Sprintf("… and %d more", more))
}

// cutTier cuts the messages and acceptedRisks of one tier to one common
// length, the longest with which st fits target but no shorter than
// minCutTextBytes: the longest texts lose most, and no more than needed.
// Each is cut from its original, so that it carries one marker.
func cutTier(st *configv1.ClusterVersionStatus, originals map[string]string, tier int, size func() int, target int) {
	var texts []statusText
	longest := 0
	for _, t := range statusTexts(st) {
		if t.tier == tier && len(*t.p) > minCutTextBytes {
			texts = append(texts, t)
			longest = max(longest, len(*t.p))
		}
	}
	if len(texts) == 0 {
		return
	}
	cutTo := func(n int) bool {
		for _, t := range texts {
			*t.p = textwrap.Bound(originals[t.where], min(t.limit, n))
		}
		return size() <= target
	}
	if !cutTo(minCutTextBytes) {
		return
	}
	// fits is a length known to fit; longest, as the texts are now, does not.
	fits, over := minCutTextBytes, longest
	for over-fits > 1 {
		mid := fits + (over-fits)/2
		if cutTo(mid) {
			fits = mid
		} else {
			over = mid
		}
	}
	cutTo(fits)
}

// dropTail drops entries from the end of list, keeping at least keep,
// until about excess bytes of JSON are gone.
func dropTail[T any](list []T, keep, excess int) []T {
	n := len(list)
	for n > keep && excess > 0 {
		excess -= JSONSize(&list[n-1]) + 1
		n--
	}
	return list[:n]
}

// StatusSize is the size of st as JSON, as the apiserver stores it, with
// the risk status applies lays over it.
func StatusSize(st *configv1.ClusterVersionStatus, applies RiskApplies) int {
	return JSONSize(st) + riskStatusSize(st, applies)
}

// JSONSize is the size of v as json.Marshal writes it, measured without
// keeping a copy: the encoder's buffer is pooled.
func JSONSize(v any) int {
	var n byteCount
	if err := json.NewEncoder(&n).Encode(v); err != nil {
		return 0
	}
	// Encode ends the value with a newline.
	return int(n) - 1
}

// byteCount is a writer that counts what is written to it.
type byteCount int

func (c *byteCount) Write(p []byte) (int, error) {
	*c += byteCount(len(p))
	return len(p), nil
}

// boundConditional caps status.conditionalUpdates and the channels of
// their releases, for the status budget (budget.go).
func boundConditional(st *configv1.ClusterVersionStatus, cuts *Cuts) {
	st.ConditionalUpdates = st.ConditionalUpdates[:min(len(st.ConditionalUpdates), MaxConditionalUpdates)]
	for i := range st.ConditionalUpdates {
		r := &st.ConditionalUpdates[i].Release
		r.Channels = capChannels(r.Channels, "conditionalUpdates", fmt.Sprintf("conditionalUpdates[%d].release", i), cuts)
	}
}

// conditionalTexts are the strings of a conditional update the budget
// bounds, beside its release: the risks' URLs, messages and queries, and
// the conditions' messages. A risk's name is bounded where it is read
// (updategraph.MaxRiskNameBytes), as acceptRisks matches it whole.
func conditionalTexts(u *configv1.ConditionalUpdate, where string) []statusText {
	var out []statusText
	for j := range u.Risks {
		r := &u.Risks[j]
		w := fmt.Sprintf("%s.risks[%d]", where, j)
		out = append(out,
			statusText{p: &r.URL, where: w + ".url", field: "conditionalUpdates", limit: MaxRiskURLBytes},
			statusText{p: &r.Message, where: w + ".message", field: "conditionalUpdates", limit: MaxRiskMessageBytes})
		for k := range r.MatchingRules {
			if q := r.MatchingRules[k].PromQL; q != nil {
				out = append(out, statusText{p: &q.PromQL, where: fmt.Sprintf("%s.matchingRules[%d].promql", w, k), field: "conditionalUpdates", limit: MaxMessageBytes})
			}
		}
	}
	for j := range u.Conditions {
		c := &u.Conditions[j]
		out = append(out, statusText{p: &c.Message, where: fmt.Sprintf("%s.conditions[%s].message", where, c.Type), field: "conditionalUpdates", limit: MaxMessageBytes})
	}
	return out
}

// Bounds of status.conditionalUpdates.
const (
	// MaxConditionalUpdates bounds status.conditionalUpdates, as newer
	// openshift/api's CRD does.
	MaxConditionalUpdates = 500
	// MaxRiskMessageBytes bounds a risk's message in status.
	MaxRiskMessageBytes = 2 << 10
	// MaxRiskURLBytes bounds a risk's URL in status: the update graph's
	// own bound (updategraph.MaxRiskURLBytes), which a test keeps equal.
	MaxRiskURLBytes = 2048
)
