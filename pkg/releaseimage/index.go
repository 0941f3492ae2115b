package releaseimage

import (
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// defaultPlatform is what an index entry without a platform serves, as
// the library and Docker read it.
var defaultPlatform = v1.Platform{OS: "linux", Architecture: "amd64"}

// image follows desc through at most Limits.Indexes indexes to the image
// for platform. The library would follow an index of indexes without
// end, one request each.
func (p *Puller) image(ref name.Digest, desc *remote.Descriptor, platform v1.Platform, opts []remote.Option) (v1.Image, error) {
	for depth := 1; desc.MediaType.IsIndex(); depth++ {
		idx, err := desc.ImageIndex()
		if err != nil {
			return nil, err
		}
		im, err := idx.IndexManifest()
		if err != nil {
			return nil, err
		}
		child, err := childFor(im, platform)
		if err != nil {
			return nil, fmt.Errorf("index %s: %w", desc.Digest, err)
		}
		// An index says what its entries are: one more is refused unread.
		if max := p.cfg.Limits.Indexes; depth >= max && child.MediaType.IsIndex() {
			return nil, overLimit("Indexes", int64(max), "more than %d nested indexes lead to an image", max)
		}
		if max := p.cfg.Limits.ManifestBytes; child.Size > max {
			return nil, overLimit("ManifestBytes", max, "index %s sizes the manifest for %s at %d bytes, more than %s", desc.Digest, platform, child.Size, sizeOf(max))
		}
		if desc, err = remote.Get(ref.Context().Digest(child.Digest.String()), opts...); err != nil {
			return nil, err
		}
	}
	return desc.Image()
}

// childFor is the first entry of an index that serves platform.
func childFor(im *v1.IndexManifest, platform v1.Platform) (v1.Descriptor, error) {
	for _, child := range im.Manifests {
		pl := defaultPlatform
		if child.Platform != nil {
			pl = *child.Platform
		}
		if pl.Satisfies(platform) {
			return child, nil
		}
	}
	return v1.Descriptor{}, fmt.Errorf("no image for platform %s", platform)
}
