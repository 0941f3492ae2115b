package payload

import (
	"bytes"
	"fmt"
	"text/template"
)

// RenderConfig fills the templates of a release's manifests/ directory, the
// CVO's own manifests, with the fields the CVO renders them with.
type RenderConfig struct {
	// ReleaseImage is the pull spec of the release the manifests ship in:
	// {{.ReleaseImage}}.
	ReleaseImage string
	// ClusterProfile is the cluster's profile: {{.ClusterProfile}}.
	ClusterProfile string
	// Images maps image-references' tag names to their pull specs:
	// {{index .Images "name"}}; filled from the release when loading.
	Images map[string]string
}

// render executes data as a template with c. A template the CVO's fields
// do not fill is an error, as in the CVO.
func (c RenderConfig) render(data []byte) ([]byte, error) {
	t, err := template.New("manifest").Parse(string(data))
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := t.Execute(&out, c); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// renderFinding reports a template in file that does not render.
func renderFinding(file string, err error) Finding {
	return Finding{File: file, Line: 1, Column: 1, Rule: RuleParseError, Severity: SeverityError,
		Message: fmt.Sprintf("template does not render: %v", err)}
}
