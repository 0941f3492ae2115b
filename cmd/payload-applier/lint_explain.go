package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/payload-applier/payload-applier/pkg/payload"
	"github.com/payload-applier/payload-applier/pkg/textwrap"
)

// sectionTitles name docs/annotations.md's rule tables for --explain.
var sectionTitles = map[string]string{
	payload.SectionFiles:    "checked while reading the files",
	payload.SectionManifest: "checked on each manifest, whichever profile includes it",
	payload.SectionRelease:  "checked on the manifests the profile includes",
	payload.SectionUpdate:   "checked across an update, with --previous",
}

// explainRule prints a rule's documentation, the text docs/annotations.md
// is generated from. An unknown id is a usage error naming close ids.
func explainRule(w io.Writer, id string) error {
	var info *payload.RuleInfo
	for i, r := range payload.AllRules {
		if string(r.ID) == id {
			info = &payload.AllRules[i]
		}
	}
	doc, ok := payload.RuleDocOf(payload.Rule(id))
	if info == nil || !ok {
		msg := fmt.Sprintf("unknown rule %q", id)
		if close := payload.CloseRules(id); len(close) > 0 {
			ids := make([]string, len(close))
			for i, c := range close {
				ids[i] = string(c)
			}
			msg += "; did you mean " + strings.Join(ids, ", ") + "?"
		}
		return withExitCode(exitUsage, fmt.Errorf("%s ('payload-applier lint --list-rules' lists every rule)", msg))
	}
	sev := doc.SeverityText
	if sev == "" {
		sev = string(info.Severity)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s (%s)\n", info.ID, sev, sectionTitles[doc.Section])
	for _, part := range []struct{ title, text string }{
		{"What it catches", doc.What},
		{"Why it matters", doc.Why},
	} {
		fmt.Fprintf(&b, "\n%s:\n%s", part.title, wrapText(part.text, "  ", 78))
	}
	b.WriteString("\nAn example that fails:\n")
	for _, line := range strings.Split(strings.TrimSpace(doc.Example), "\n") {
		b.WriteString(strings.TrimRight("    "+line, " ") + "\n")
	}
	fmt.Fprintf(&b, "\nThe fix:\n%s", wrapText(doc.Fix, "  ", 78))
	fmt.Fprintf(&b, "\nMore: %s\n", payload.RuleHelpURL(info.ID))
	_, err := io.WriteString(w, b.String())
	return err
}

// wrapText is textwrap.Wrap ending in a newline, "" for no text.
func wrapText(text, indent string, width int) string {
	if strings.TrimSpace(text) == "" {
		return ""
	}
	return textwrap.Wrap(text, width, indent) + "\n"
}
