package releaseimage

import (
	"fmt"
	"net"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Ref names a release image: registry/repository@sha256:<hex>, or
// registry/repository:tag. The registry and the tag or digest must be
// written out: a release is never read from an implied registry or an
// implied "latest".
type Ref struct {
	ref name.Reference
}

// ParseRef parses and validates a release image reference.
func ParseRef(s string) (Ref, error) {
	r, err := name.ParseReference(s, name.StrictValidation)
	if err != nil {
		return Ref{}, fmt.Errorf("%q is not a release image reference (registry/repository@sha256:<hex> or registry/repository:tag): %w", s, err)
	}
	if d, ok := r.(name.Digest); ok {
		if _, err := v1.NewHash(d.DigestStr()); err != nil {
			return Ref{}, fmt.Errorf("%q is not a release image reference: %w", s, err)
		}
	}
	return Ref{ref: r}, nil
}

// String is the reference as given, with a digest reference naming no tag.
func (r Ref) String() string {
	if r.ref == nil {
		return ""
	}
	return r.ref.Name()
}

// ByDigest says whether r names its image by digest. A tag can move to
// another image; the operator refuses one unless forced, as the CVO does.
func (r Ref) ByDigest() bool {
	_, ok := r.ref.(name.Digest)
	return ok
}

// Digest is the digest r names, "sha256:<hex>", or "" for a tag.
func (r Ref) Digest() string {
	if d, ok := r.ref.(name.Digest); ok {
		return d.DigestStr()
	}
	return ""
}

// Repository is the registry and repository, without a tag or digest.
func (r Ref) Repository() string {
	return r.ref.Context().Name()
}

// WithDigest is the reference to digest in r's repository.
func (r Ref) WithDigest(digest string) (Ref, error) {
	return ParseRef(r.Repository() + "@" + digest)
}

// isLoopbackHost says whether a registry's host[:port] is on this machine.
func isLoopbackHost(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = strings.Trim(hostport, "[]")
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
