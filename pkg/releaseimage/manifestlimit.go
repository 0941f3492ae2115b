package releaseimage

import (
	"net/http"
	"path"
	"strings"

	"github.com/payload-applier/payload-applier/pkg/egress"
)

// manifestLimit caps every manifest response at max bytes: the library
// reads a manifest or index whole into memory, up to 100 MiB of it.
type manifestLimit struct {
	next http.RoundTripper
	max  int64
}

func (m manifestLimit) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := m.next.RoundTrip(req)
	if err != nil || !isManifestPath(req.URL.Path) {
		return resp, err
	}
	// A HEAD's length is the manifest's size: refused before any GET.
	if resp.ContentLength > m.max {
		resp.Body.Close()
		return nil, m.tooLarge()
	}
	resp.Body = egress.CapBody(resp.Body, m.max, m.tooLarge())
	return resp, nil
}

func (m manifestLimit) tooLarge() error {
	return overLimit("ManifestBytes", m.max, "a manifest or index of more than %s", sizeOf(m.max))
}

// isManifestPath says whether p is /v2/<repository>/manifests/<reference>;
// a repository may itself have a "manifests" component.
func isManifestPath(p string) bool {
	return strings.HasPrefix(p, "/v2/") && path.Base(path.Dir(p)) == "manifests"
}
