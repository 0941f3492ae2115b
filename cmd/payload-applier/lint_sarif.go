package main

import (
	"encoding/json"
	"io"
	"net/url"
	"path"
	"path/filepath"
	"strings"

	"github.com/payload-applier/payload-applier/pkg/payload"
)

// SARIF 2.1.0, the subset lint writes: one run, every rule, one result
// per finding. Code scanning (GitHub, GitLab, IDEs) reads it.
const (
	sarifVersion = "2.1.0"
	sarifSchema  = "https://json.schemastore.org/sarif-2.1.0.json"
	// sarifSrcRoot is the base that result paths are relative to: the
	// repository root, as code scanning expects.
	sarifSrcRoot = "%SRCROOT%"
	projectURL   = "https://github.com/payload-applier/payload-applier"
)

type sarifLog struct {
	Schema  string     `json:"$schema"`
	Version string     `json:"version"`
	Runs    []sarifRun `json:"runs"`
}

type sarifRun struct {
	Tool    sarifTool     `json:"tool"`
	Results []sarifResult `json:"results"`
}

type sarifTool struct {
	Driver sarifDriver `json:"driver"`
}

type sarifDriver struct {
	Name           string      `json:"name"`
	Version        string      `json:"version,omitempty"`
	InformationURI string      `json:"informationUri"`
	Rules          []sarifRule `json:"rules"`
}

type sarifRule struct {
	ID                   string        `json:"id"`
	ShortDescription     sarifMessage  `json:"shortDescription"`
	FullDescription      sarifMessage  `json:"fullDescription"`
	Help                 *sarifHelp    `json:"help,omitempty"`
	HelpURI              string        `json:"helpUri"`
	DefaultConfiguration sarifRuleConf `json:"defaultConfiguration"`
}

type sarifHelp struct {
	Text     string `json:"text"`
	Markdown string `json:"markdown"`
}

type sarifRuleConf struct {
	Level string `json:"level"`
}

type sarifMessage struct {
	Text string `json:"text"`
}

type sarifResult struct {
	RuleID    string          `json:"ruleId"`
	RuleIndex int             `json:"ruleIndex"`
	Level     string          `json:"level"`
	Message   sarifMessage    `json:"message"`
	Locations []sarifLocation `json:"locations"`
}

type sarifLocation struct {
	PhysicalLocation sarifPhysicalLocation `json:"physicalLocation"`
}

type sarifPhysicalLocation struct {
	ArtifactLocation sarifArtifactLocation `json:"artifactLocation"`
	Region           *sarifRegion          `json:"region,omitempty"`
}

type sarifArtifactLocation struct {
	URI       string `json:"uri"`
	URIBaseID string `json:"uriBaseId"`
}

type sarifRegion struct {
	StartLine   int `json:"startLine"`
	StartColumn int `json:"startColumn,omitempty"`
}

// sarifLevel maps a severity to SARIF's level; info is a note.
func sarifLevel(s payload.Severity) string {
	switch s {
	case payload.SeverityError:
		return "error"
	case payload.SeverityWarning:
		return "warning"
	}
	return "note"
}

// printSARIF writes findings as a SARIF log. dir is the payload root the
// findings' paths start with; prefix is the payload root's path from the
// repository root, which result paths start with instead.
func printSARIF(w io.Writer, findings []payload.Finding, dir, prefix string) error {
	driver := sarifDriver{Name: "payload-applier", Version: applierVersion(), InformationURI: projectURL}
	index := map[payload.Rule]int{}
	for _, r := range payload.AllRules {
		index[r.ID] = len(driver.Rules)
		driver.Rules = append(driver.Rules, sarifRuleOf(r))
	}
	results := []sarifResult{}
	for _, f := range findings {
		i, ok := index[f.Rule]
		if !ok {
			// Every rule is in AllRules; should one be missing, the log
			// still names it rather than point at another rule.
			i = len(driver.Rules)
			index[f.Rule] = i
			driver.Rules = append(driver.Rules, sarifRuleOf(payload.RuleInfo{ID: f.Rule, Severity: f.Severity, Summary: string(f.Rule)}))
		}
		loc := sarifPhysicalLocation{ArtifactLocation: sarifArtifactLocation{URI: sarifURI(f.File, dir, prefix), URIBaseID: sarifSrcRoot}}
		if f.Line > 0 {
			loc.Region = &sarifRegion{StartLine: f.Line, StartColumn: max(f.Column, 0)}
		}
		results = append(results, sarifResult{
			RuleID:    string(f.Rule),
			RuleIndex: i,
			Level:     sarifLevel(f.Severity),
			Message:   sarifMessage{Text: f.Message},
			Locations: []sarifLocation{{PhysicalLocation: loc}},
		})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(sarifLog{
		Schema:  sarifSchema,
		Version: sarifVersion,
		Runs:    []sarifRun{{Tool: sarifTool{Driver: driver}, Results: results}},
	})
}

func sarifRuleOf(r payload.RuleInfo) sarifRule {
	rule := sarifRule{
		ID:                   string(r.ID),
		ShortDescription:     sarifMessage{Text: r.Summary},
		FullDescription:      sarifMessage{Text: r.Summary},
		HelpURI:              payload.RuleHelpURL(r.ID),
		DefaultConfiguration: sarifRuleConf{Level: sarifLevel(r.Severity)},
	}
	if d, ok := payload.RuleDocOf(r.ID); ok {
		rule.FullDescription.Text = d.What + " " + d.Why
		rule.Help = &sarifHelp{
			Text:     "Fix: " + d.Fix,
			Markdown: "**Fix:** " + d.Fix + "\n\nAn example that fails:\n\n```yaml\n" + strings.TrimSpace(d.Example) + "\n```\n\nSee [docs/annotations.md](" + payload.RuleHelpURL(r.ID) + ").",
		}
	}
	return rule
}

// sarifURI names file relative to the repository root: its path below
// dir, after prefix. A file outside dir, such as an orphan's manifest in
// the previous release, keeps the path lint was given.
func sarifURI(file, dir, prefix string) string {
	p := path.Clean(filepath.ToSlash(file))
	if rel, err := filepath.Rel(dir, file); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		p = path.Join(filepath.ToSlash(prefix), filepath.ToSlash(rel))
	}
	return (&url.URL{Path: strings.TrimPrefix(p, "./")}).String()
}
