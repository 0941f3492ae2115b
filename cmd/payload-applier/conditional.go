package main

import (
	"fmt"
	"io"
	"strings"

	configv1 "github.com/openshift/api/config/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/payload-applier/payload-applier/pkg/precondition"
)

// planConditional is the target's status.conditionalUpdates entry as the
// operator's next pass would write it: part of plan's JSON contract.
type planConditional struct {
	// Risks name the update's known risks.
	Risks []planRisk `json:"risks"`
	// Recommended is the entry's Recommended condition: "True", "False"
	// or "Unknown", with its reason and message.
	Recommended string `json:"recommended"`
	Reason      string `json:"reason"`
	Message     string `json:"message"`
}

type planRisk struct {
	Name string `json:"name"`
	URL  string `json:"url"`
}

// conditionalFor is version's entry among updates, nil without one.
func conditionalFor(updates []configv1.ConditionalUpdate, version string) *planConditional {
	for _, u := range updates {
		if u.Release.Version != version {
			continue
		}
		p := &planConditional{}
		for _, r := range u.Risks {
			p.Risks = append(p.Risks, planRisk{Name: r.Name, URL: r.URL})
		}
		if c := meta.FindStatusCondition(u.Conditions, precondition.ConditionRecommended); c != nil {
			p.Recommended, p.Reason, p.Message = string(c.Status), c.Reason, c.Message
		}
		return p
	}
	return nil
}

// writeConditional says, for status and plan, whether an update with
// known risks is recommended, and what the risks are.
func writeConditional(w io.Writer, indent, version string, c *planConditional) {
	names := make([]string, len(c.Risks))
	for i, r := range c.Risks {
		names[i] = fmt.Sprintf("%s (%s)", r.Name, r.URL)
	}
	fmt.Fprintf(w, "%s%s: Recommended=%s %s: %s\n", indent, version, c.Recommended, c.Reason, oneLine(c.Message))
	fmt.Fprintf(w, "%s  risks: %s\n", indent, strings.Join(names, ", "))
}

// writeConditionalUpdates lists status.conditionalUpdates.
func writeConditionalUpdates(w io.Writer, updates []configv1.ConditionalUpdate) {
	if len(updates) == 0 {
		return
	}
	fmt.Fprintln(w, "Updates with known risks (spec.desiredUpdate.acceptRisks accepts them by name):")
	for _, u := range updates {
		writeConditional(w, "  ", u.Release.Version, conditionalFor(updates, u.Release.Version))
	}
}
