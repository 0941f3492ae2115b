package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/payload-applier/payload-applier/pkg/releaseimage"
)

// sourceRule is how every command that reads a payload reads its argument.
const sourceRule = `A payload is a directory or a release image. An argument that exists on
disk must be a payload directory; one that does not is read as a release
image reference, registry/repository@sha256:<hex> or registry/repository:tag,
the registry and the tag or digest written out. The image is pulled (by
digest; a tag is resolved first) into the release cache, its
release-manifests/ and manifests/ extracted with size limits and without
links, and loaded like a directory. Credentials come from --registry-config,
$REGISTRY_AUTH_FILE, then ~/.docker/config.json or $DOCKER_CONFIG.`

// registryFlags are the flags of every command that reads a payload or
// writes a release image.
type registryFlags struct {
	insecure bool
	authFile string
	platform string
	cacheDir string
}

func (f *registryFlags) add(cmd *cobra.Command) {
	flags := cmd.Flags()
	flags.BoolVar(&f.insecure, "insecure-registry", false, "allow plain HTTP and unverified TLS to a release image's registry (one on loopback is reached over plain HTTP without it)")
	flags.StringVar(&f.authFile, "registry-config", "", "registry credentials in the docker config.json format; default $REGISTRY_AUTH_FILE, then ~/.docker/config.json")
}

// addPull adds the flags that only reading a release image needs.
func (f *registryFlags) addPull(cmd *cobra.Command) {
	f.add(cmd)
	flags := cmd.Flags()
	flags.StringVar(&f.platform, "platform", "", "os/arch of a multi-architecture release image to read; default this machine's")
	flags.StringVar(&f.cacheDir, "release-cache", "", "where pulled release images are kept by digest; default <user cache dir>/payload-applier/releases")
}

func (f *registryFlags) registry() releaseimage.Registry {
	return releaseimage.Registry{AuthFile: f.authFile, Insecure: f.insecure}
}

// puller pulls into --release-cache, by default the user's cache directory.
func (f *registryFlags) puller() (*releaseimage.Puller, error) {
	cache := f.cacheDir
	if cache == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			base = os.TempDir()
		}
		cache = filepath.Join(base, "payload-applier", "releases")
	}
	return releaseimage.NewPuller(releaseimage.Config{Registry: f.registry(), CacheDir: cache})
}

// payloadDir is the directory of the payload arg names, following
// sourceRule; what it says of a pulled image goes to log.
func (f *registryFlags) payloadDir(ctx context.Context, log io.Writer, arg string) (string, error) {
	dir, _, err := f.payloadSource(ctx, log, arg)
	return dir, err
}

// payloadSource is payloadDir that also returns the image's pull spec by
// digest, "" for a directory.
func (f *registryFlags) payloadSource(ctx context.Context, log io.Writer, arg string) (dir, image string, err error) {
	info, err := os.Stat(arg)
	switch {
	case err == nil && info.IsDir():
		return arg, "", nil
	case err == nil:
		return "", "", fmt.Errorf("%s is a file, not a payload directory or a release image reference", arg)
	case !errors.Is(err, fs.ErrNotExist):
		return "", "", err
	}
	ref, perr := releaseimage.ParseRef(arg)
	if perr != nil {
		return "", "", fmt.Errorf("no such directory, and %w", perr)
	}
	p, err := f.puller()
	if err != nil {
		return "", "", err
	}
	e, err := p.Fetch(ctx, ref, releaseimage.FetchOptions{Platform: f.platform})
	if err != nil {
		return "", "", err
	}
	byDigest, err := ref.WithDigest(e.Digest)
	if err != nil {
		return "", "", err
	}
	how := "pulled"
	if e.FromCache {
		how = "cached"
	}
	fmt.Fprintf(log, "release image %s: %s, %s into %s\n", ref, e.Digest, how, e.Dir)
	return e.Dir, byDigest.String(), nil
}
