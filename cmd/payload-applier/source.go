package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/payload-applier/payload-applier/pkg/releaseimage"
)

// sourceRule is how every command that reads a payload reads its argument.
const sourceRule = `A payload is a directory or a release image. dir:PATH names a directory
and docker://REFERENCE an image. Without a prefix, an argument that parses
as a release image reference, registry/repository@sha256:<hex> or
registry/repository:tag (the registry and the tag or digest written out),
is an image, and any other is a directory; an argument that is both, a
reference that also names a path on disk, is refused as ambiguous. The
image is pulled (by digest; a tag is resolved first) into the release
cache, its release-manifests/ and manifests/ extracted with size limits and
without links, and loaded like a directory. Credentials come from
--registry-config, $REGISTRY_AUTH_FILE, then ~/.docker/config.json or
$DOCKER_CONFIG. The default release cache is a directory of this user's
cache directory that only this user can write; without a user cache
directory, name one with --release-cache.`

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

// puller pulls into --release-cache, by default a private directory of
// the user's cache directory.
func (f *registryFlags) puller() (*releaseimage.Puller, error) {
	cache := f.cacheDir
	if cache == "" {
		var err error
		if cache, err = defaultReleaseCache(); err != nil {
			return nil, err
		}
	}
	return releaseimage.NewPuller(releaseimage.Config{Registry: f.registry(), CacheDir: cache})
}

// defaultReleaseCache is <user cache dir>/payload-applier/releases, each
// directory of it made or checked to be this user's alone. A release in the
// cache is served as pulled, so a directory another user can write to, such
// as one under a shared $TMPDIR, would let them plant one.
func defaultReleaseCache() (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no user cache directory to keep pulled releases in (%v): name one with --release-cache", err)
	}
	dir := base
	for _, name := range []string{"payload-applier", "releases"} {
		dir = filepath.Join(dir, name)
		if err := privateDir(dir); err != nil {
			return "", fmt.Errorf("the default release cache: %w; name another with --release-cache", err)
		}
	}
	return dir, nil
}

// privateDir creates dir with mode 0700, or checks that the one there is a
// directory, not a link, owned by this user and writable by nobody else;
// one of ours that others may read is made 0700.
func privateDir(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	info, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	switch {
	case info.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("%s is a symbolic link", dir)
	case !info.IsDir():
		return fmt.Errorf("%s is not a directory", dir)
	}
	uid, ok := fileOwner(info)
	switch {
	case !ok:
		return fmt.Errorf("the owner of %s cannot be checked on this system", dir)
	case uid != os.Getuid():
		return fmt.Errorf("%s is owned by user %d, not by this user (%d)", dir, uid, os.Getuid())
	case info.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("%s is writable by other users (mode %04o)", dir, info.Mode().Perm())
	case info.Mode().Perm() != 0o700:
		return os.Chmod(dir, 0o700)
	}
	return nil
}

// payloadArg is a payload argument read by sourceRule: a directory, or an
// image when image is set.
type payloadArg struct {
	dir   string
	image *releaseimage.Ref
}

// parsePayloadArg applies sourceRule to arg, without reading the image.
func parsePayloadArg(arg string) (payloadArg, error) {
	if path, ok := strings.CutPrefix(arg, "dir:"); ok {
		if path == "" {
			return payloadArg{}, errors.New("dir: names no directory")
		}
		return payloadArg{dir: path}, nil
	}
	if s, ok := strings.CutPrefix(arg, "docker://"); ok {
		ref, err := releaseimage.ParseRef(s)
		if err != nil {
			return payloadArg{}, err
		}
		return payloadArg{image: &ref}, nil
	}
	ref, refErr := releaseimage.ParseRef(arg)
	_, statErr := os.Lstat(arg)
	// ENOTDIR: a file stands where a directory of the path would be.
	onDisk := !errors.Is(statErr, fs.ErrNotExist) && !errors.Is(statErr, syscall.ENOTDIR)
	switch {
	case refErr == nil && onDisk:
		return payloadArg{}, fmt.Errorf("%s is ambiguous: it is a release image reference and also a path on disk; write docker://%s for the image or dir:%s for the directory", arg, arg, arg)
	case refErr == nil:
		return payloadArg{image: &ref}, nil
	case statErr == nil:
		return payloadArg{dir: arg}, nil
	case onDisk:
		return payloadArg{}, statErr
	}
	return payloadArg{}, fmt.Errorf("no such directory, and %w", refErr)
}

// checkDir says why dir is not a payload directory, nil when it may be one.
func checkDir(dir string) error {
	info, err := os.Stat(dir)
	switch {
	case err != nil:
		return err
	case !info.IsDir():
		return fmt.Errorf("%s is a file, not a payload directory or a release image reference", dir)
	}
	return nil
}

// payloadSource is the directory of the payload arg names, following
// sourceRule, and for an image its pull spec by digest ("" for a
// directory). The image is pulled unverified: what it says of it goes to
// log.
func (f *registryFlags) payloadSource(ctx context.Context, log io.Writer, arg string) (dir, image string, err error) {
	src, err := parsePayloadArg(arg)
	if err != nil {
		return "", "", err
	}
	if src.image == nil {
		return src.dir, "", checkDir(src.dir)
	}
	ref := *src.image
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

// unverifiedNotice is what plan and lint say of an image they read: they
// check no signature.
func unverifiedNotice(image string) string {
	return fmt.Sprintf("release image %s was not verified", image)
}
