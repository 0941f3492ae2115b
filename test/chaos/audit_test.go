package chaos

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/payload-applier/payload-applier/test/cluster"
)

// target names an object the way the audit log does.
type target struct {
	group, resource, subresource, namespace, name string
}

func (t target) String() string {
	s := t.resource
	if t.subresource != "" {
		s += "/" + t.subresource
	}
	if t.group != "" {
		s += "." + t.group
	}
	if t.namespace != "" {
		return s + " " + t.namespace + "/" + t.name
	}
	return s + " " + t.name
}

func targetOf(o *object) target {
	return target{group: o.kind.gvk.Group, resource: o.kind.resource, namespace: o.namespace, name: o.name}
}

// writeRules say which writes an actor under test may make after the
// update was requested, besides the payload's own objects.
type writeRules struct {
	// user is the actor's token user.
	user string
	// ledger is the delete ledger's namespace and name.
	ledgerNamespace, ledgerName string
	// operatorNamespace, when set, may hold the actor's Events and Lease.
	operatorNamespace string
	// clusterVersion, when set, is the ClusterVersion whose status the
	// actor may write.
	clusterVersion string
}

// checkWrites reads the audit log since mark and fails the test unless
// the actor's writes were exactly what the update asks for:
//
//   - every object v2 marks, and that v1 created, received exactly one
//     DELETE, and nothing else received any (a DELETE answered 503 or
//     429, refused before it reached storage, is not counted: its retry
//     is the delete);
//   - every other write went to an object v2 applies, the ledger, the
//     ClusterVersion's status, or the actor's own Events and Lease.
//
// The scenarios never opt in to operand cleanup (no CRD delete manifest
// says operand-cleanup: Supported, and the policy stays Orphan), so the
// one widening of the delete rule does not apply: every DELETE must name a
// marked object. Operand deletes are checked by FuzzSyncDeletes and the
// operand cleanup e2e tests.
//
// The audit log of a DELETE has no object UID (the request body is
// DeleteOptions), so DELETEs are counted by name. That equals a count by
// UID because nothing creates a marked object after the install: such a
// create would be a write outside the allowed set, and fail here too.
func (e *env) checkWrites(t *testing.T, mark cluster.AuditMark, rules writeRules) {
	t.Helper()
	events, err := testCluster.AuditEventsSince(mark)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range e.writeProblems(events, rules) {
		t.Error(p)
	}
}

// writeProblems is checkWrites on a list of audit events.
func (e *env) writeProblems(events []cluster.AuditEvent, rules writeRules) []string {
	var problems []string
	// A create's name is only known once it completed.
	createdNames := map[string]string{}
	for _, ev := range cluster.FilterAudit(events, cluster.AuditFilter{Stage: cluster.AuditStageResponseComplete, User: rules.user, Verb: "create"}) {
		if ev.ObjectRef != nil {
			createdNames[ev.AuditID] = ev.ObjectRef.Name
		}
	}
	// A DELETE's answer, by request.
	deleteCodes := map[string]int{}
	for _, ev := range cluster.FilterAudit(events, cluster.AuditFilter{Stage: cluster.AuditStageResponseComplete, User: rules.user, Verb: "delete"}) {
		if ev.ResponseStatus != nil {
			deleteCodes[ev.AuditID] = ev.ResponseStatus.Code
		}
	}
	applied, marked := map[target]bool{}, map[target]*object{}
	for _, o := range e.sc.objects {
		switch {
		case o.inV2Apply():
			applied[targetOf(o)] = true
		case o.fate == fateDelete:
			marked[targetOf(o)] = o
		}
	}
	deletes := map[target]int{}
	var stray []string
	for _, ev := range cluster.FilterAudit(events, cluster.AuditFilter{User: rules.user, WritesOnly: true}) {
		if ev.ObjectRef == nil {
			stray = append(stray, ev.String())
			continue
		}
		r := ev.ObjectRef
		tg := target{group: r.APIGroup, resource: r.Resource, subresource: r.Subresource, namespace: r.Namespace, name: r.Name}
		if tg.group == "" && tg.resource == "namespaces" {
			tg.namespace = "" // the log names a Namespace as its own namespace
		}
		if ev.Verb == "create" && tg.name == "" {
			tg.name = createdNames[ev.AuditID]
		}
		if ev.Verb == "delete" {
			if code := deleteCodes[ev.AuditID]; code == 503 || code == 429 {
				// The apiserver refused it before acting (an API not
				// served yet after a restart): the retry is the delete.
				continue
			}
			deletes[tg]++
			if marked[tg] == nil {
				stray = append(stray, ev.String())
			}
			continue
		}
		if !rules.allows(tg, applied) {
			stray = append(stray, fmt.Sprintf("%s %s", ev.Verb, tg))
		}
	}
	if len(stray) > 0 {
		sort.Strings(stray)
		problems = append(problems, fmt.Sprintf("%s wrote %d times to what the update does not ask for:\n  %s",
			rules.user, len(stray), strings.Join(firstN(stray, 20), "\n  ")))
	}
	for tg, o := range marked {
		want := 0
		if o.inV1 {
			want = 1
		}
		if got := deletes[tg]; got != want {
			problems = append(problems, fmt.Sprintf("%s received %d DELETE requests from %s, want %d (created by v1: %v)",
				o, got, rules.user, want, o.inV1))
		}
	}
	sort.Strings(problems)
	return problems
}

func (r writeRules) allows(tg target, applied map[target]bool) bool {
	switch {
	case applied[tg]:
		return true
	case tg.group == "" && tg.resource == "configmaps" && tg.namespace == r.ledgerNamespace && (tg.name == r.ledgerName || tg.name == ""):
		// An empty name is a create whose completion is not logged yet.
		return true
	case r.operatorNamespace != "" && tg.namespace == r.operatorNamespace &&
		(tg.resource == "events" || tg.resource == "leases"):
		return true
	case r.clusterVersion != "" && tg.resource == "clusterversions" && tg.subresource == "status" && tg.name == r.clusterVersion:
		return true
	}
	return false
}

func firstN(s []string, n int) []string {
	if len(s) <= n {
		return s
	}
	return append(s[:n:n], fmt.Sprintf("... and %d more", len(s)-n))
}

// writersSince counts write requests per user since mark, for the users
// given, skipping the resources in skip (e.g. "leases").
func writersSince(t *testing.T, mark cluster.AuditMark, users []string, skip ...string) map[string][]string {
	t.Helper()
	events, err := testCluster.AuditEventsSince(mark)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, user := range users {
		for _, ev := range cluster.FilterAudit(events, cluster.AuditFilter{User: user, WritesOnly: true}) {
			if ev.ObjectRef != nil && containsString(skip, ev.ObjectRef.Resource) {
				continue
			}
			out[user] = append(out[user], ev.String())
		}
	}
	return out
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
