package payload

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	utilversion "k8s.io/apimachinery/pkg/util/version"
	"sigs.k8s.io/yaml"
)

const (
	// ReleaseMetadataFile and ImageReferencesFile sit beside the release
	// manifests in both layouts.
	ReleaseMetadataFile = "release-metadata"
	ImageReferencesFile = "image-references"

	cincinnatiKind     = "cincinnati-metadata-v0"
	channelsMetadata   = "io.openshift.upgrades.graph.release.channels"
	urlMetadata        = "url"
	imageStreamVersion = "image.openshift.io/v1"
)

// ErrMissingMetadata is wrapped by LoadAll's error when release-metadata
// or image-references is missing: the directory is not a release payload.
var ErrMissingMetadata = errors.New("not a release payload")

// releaseMetadata is the Cincinnati metadata document.
type releaseMetadata struct {
	Kind     string         `json:"kind"`
	Version  string         `json:"version"`
	Previous []string       `json:"previous,omitempty"`
	Next     []string       `json:"next,omitempty"`
	Metadata map[string]any `json:"metadata,omitempty"`
}

// parseReleaseMetadata fills r's version, channels and URL from the
// release-metadata file. Problems are findings against file.
func parseReleaseMetadata(r *Release, file string, data []byte) []Finding {
	var findings []Finding
	report := func(sev Severity, format string, args ...any) {
		findings = append(findings, Finding{File: file, Line: 1, Column: 1, Rule: RuleReleaseMetadata, Severity: sev, Message: fmt.Sprintf(format, args...)})
	}
	var md releaseMetadata
	if err := json.Unmarshal(data, &md); err != nil {
		f := Finding{File: file, Line: 1, Column: 1, Rule: RuleReleaseMetadata, Severity: SeverityError, Message: "invalid JSON: " + err.Error()}
		var syntax *json.SyntaxError
		if errors.As(err, &syntax) {
			f.Line, f.Column = offsetPosition(data, syntax.Offset)
		}
		return append(findings, f)
	}
	if md.Kind != cincinnatiKind {
		report(SeverityError, "kind is %q; release-metadata must have kind %q", md.Kind, cincinnatiKind)
	}
	switch {
	case md.Version == "":
		report(SeverityError, "version is missing; release-metadata needs a semantic version such as 4.20.0")
	default:
		if _, err := utilversion.ParseSemantic(md.Version); err != nil {
			report(SeverityError, "version %q is not a semantic version: %v", md.Version, err)
		}
	}
	r.Version = md.Version
	if v, ok := md.Metadata[urlMetadata]; ok {
		if s, isString := v.(string); isString {
			r.URL = s
		} else {
			report(SeverityWarning, "metadata.%s is a %T, not a string; it is ignored", urlMetadata, v)
		}
	}
	if v, ok := md.Metadata[channelsMetadata]; ok {
		if s, isString := v.(string); isString {
			r.Channels = splitChannels(s)
		} else {
			report(SeverityWarning, "metadata[%q] is a %T, not a comma-separated string; it is ignored", channelsMetadata, v)
		}
	}
	return findings
}

func splitChannels(s string) []string {
	var channels []string
	for _, c := range strings.Split(s, ",") {
		if c = strings.TrimSpace(c); c != "" {
			channels = append(channels, c)
		}
	}
	sort.Strings(channels)
	return channels
}

// parseImageReferences checks the image-references ImageStream against
// r.Version and records its image tags.
func parseImageReferences(r *Release, file string, data []byte) []Finding {
	var findings []Finding
	report := func(format string, args ...any) {
		findings = append(findings, Finding{File: file, Line: 1, Column: 1, Rule: RuleReleaseMetadata, Severity: SeverityError, Message: fmt.Sprintf(format, args...)})
	}
	var is struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name string `json:"name"`
		} `json:"metadata"`
		Spec struct {
			Tags []struct {
				Name string `json:"name"`
				From *struct {
					Kind string `json:"kind"`
					Name string `json:"name"`
				} `json:"from"`
			} `json:"tags"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &is); err != nil {
		report("cannot parse the ImageStream: %v", err)
		return findings
	}
	if is.Kind != "ImageStream" || is.APIVersion != imageStreamVersion {
		report("is %s %s; image-references must be an %s ImageStream", is.APIVersion, is.Kind, imageStreamVersion)
	}
	if r.Version != "" && is.Metadata.Name != r.Version {
		report("the ImageStream is named %q but release-metadata has version %q; the CVO requires them to match", is.Metadata.Name, r.Version)
	}
	for _, tag := range is.Spec.Tags {
		if tag.From == nil || tag.From.Kind != "DockerImage" || tag.Name == "" {
			continue
		}
		if r.Images == nil {
			r.Images = map[string]string{}
		}
		r.Images[tag.Name] = tag.From.Name
	}
	return findings
}
