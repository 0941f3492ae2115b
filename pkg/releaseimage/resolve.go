package releaseimage

import (
	"context"
	"errors"
)

// Resolve returns ref by digest: a tag is resolved with one HEAD, a
// digest is returned as it is. Nothing of the image is read, so that a
// caller can have the digest judged before anything else is asked.
func (p *Puller) Resolve(ctx context.Context, ref Ref) (Ref, error) {
	if ref.ref == nil {
		return Ref{}, errors.New("no release image reference")
	}
	if ref.ByDigest() {
		return ref, nil
	}
	platform, err := parsePlatform("")
	if err != nil {
		return Ref{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, p.cfg.Timeout)
	defer cancel()
	nref, err := p.conn.reference(ref)
	if err != nil {
		return Ref{}, err
	}
	digest, err := p.head(ctx, ref, nref, platform)
	if err != nil {
		return Ref{}, err
	}
	return ref.WithDigest(digest)
}
