package releaseimage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/payload-applier/payload-applier/pkg/payload"
)

const (
	// DefaultMaxReleases is how many releases the cache keeps by default:
	// the current one, the one being updated to and a few to roll back to.
	DefaultMaxReleases = 8
	// DefaultTimeout bounds one Fetch, retries included.
	DefaultTimeout = 10 * time.Minute

	// ReleaseLabel is the image label that carries the release version,
	// as OpenShift's release images carry it.
	ReleaseLabel = "io.openshift.release"

	// maxConfigBytes bounds the image's config blob, read into memory.
	maxConfigBytes = 4 << 20
	// metadataFile records, in a cached release's directory, what was
	// pulled; a directory without it is not a release of the cache.
	metadataFile  = "release-image.json"
	partialPrefix = ".partial-"
	entryPrefix   = "sha256-"
)

// Registry is how releases are read from and written to registries.
type Registry struct {
	// AuthFile is a registry auth file in the docker config.json format
	// (podman's auth.json is one), consulted before the default docker
	// keychain. "" reads $REGISTRY_AUTH_FILE.
	AuthFile string
	// Insecure allows plain HTTP and unverified TLS to any registry.
	// Without it, only a registry on loopback is reached over plain HTTP.
	Insecure bool
	// Backoff paces the library's retries of transient registry errors;
	// zero means a 1s first wait, tripled up to 3 tries.
	Backoff remote.Backoff
	// Transport is the base transport to the registry; nil means one with
	// bounded dial, TLS and response-header timeouts.
	Transport http.RoundTripper
}

// Config configures a Puller.
type Config struct {
	Registry
	// CacheDir is the puller's own directory: each release is extracted
	// to CacheDir/sha256-<hex>/. Created when missing.
	CacheDir string
	// MaxReleases bounds the releases kept; the least recently fetched
	// go first. 0 means DefaultMaxReleases.
	MaxReleases int
	// Timeout bounds one Fetch; 0 means DefaultTimeout.
	Timeout time.Duration
	// Limits bound what an image may make the puller read and write; zero
	// fields take DefaultLimits.
	Limits Limits
}

// conn is a Registry ready for requests.
type conn struct {
	keychain  authn.Keychain
	transport http.RoundTripper
	insecure  bool
	backoff   remote.Backoff
	// manifestBytes caps each manifest response; 0 is the default limit.
	manifestBytes int64
}

func (r Registry) connect() (*conn, error) {
	if r.AuthFile == "" {
		r.AuthFile = os.Getenv("REGISTRY_AUTH_FILE")
	}
	kc, err := keychain(r.AuthFile)
	if err != nil {
		return nil, err
	}
	return &conn{keychain: kc, transport: newTransport(r), insecure: r.Insecure, backoff: r.Backoff}, nil
}

// FetchOptions are what may differ between two fetches of one puller.
type FetchOptions struct {
	// Platform picks the image of a multi-architecture index, as
	// "os/arch[/variant]"; "" is this process's runtime.GOOS/GOARCH. The
	// operator passes its cluster's.
	Platform string
	// Verify, when set, judges the release's digest (the index's, for a
	// multi-architecture release) before anything of the image is read:
	// nothing but the answer to a tag's HEAD is asked of the registry,
	// and nothing is written to the cache, unless it returns nil. A
	// cached release is judged too: the cache also holds releases that
	// were read unverified.
	Verify func(ctx context.Context, digest string) error
}

// VerificationError is a release whose digest FetchOptions.Verify
// refused; nothing of it was read.
type VerificationError struct {
	Ref    string
	Digest string
	Err    error
}

func (e *VerificationError) Error() string {
	return fmt.Sprintf("release image %s (%s) is not verified, nothing of it was read: %v", e.Ref, e.Digest, e.Err)
}

func (e *VerificationError) Unwrap() error { return e.Err }

// Extracted is a release pulled into the cache.
type Extracted struct {
	// Dir holds release-manifests/ (and manifests/ when the image has
	// them); load it with payload.Load before MaxReleases newer fetches
	// or a Prune can drop it. Its content is trusted as the puller's own.
	Dir string `json:"-"`
	// Digest is the digest asked for, or the one a tag resolved to, as
	// "sha256:<hex>". For a multi-architecture release it is the index's.
	Digest string `json:"digest"`
	// ImageDigest is the digest of the image manifest read: Digest, or
	// the index's entry for Platform.
	ImageDigest string `json:"imageDigest"`
	// Index says whether Digest names a multi-architecture index.
	Index bool `json:"index"`
	// Platform is the platform asked for when Digest is an index.
	Platform string `json:"platform,omitempty"`
	// Pulled is the reference the release was first pulled by.
	Pulled string `json:"pulled"`
	// Version is the image's io.openshift.release label, "" without one.
	Version string `json:"version,omitempty"`
	// FromCache says that this fetch read nothing from the registry.
	FromCache bool `json:"-"`
}

// RetrieveError is a release image the registry would not serve: it
// wraps the registry's own message (MANIFEST_UNKNOWN, UNAUTHORIZED, a
// refused connection, a digest that does not match), which the operator
// shows under the reason RetrievePayload.
type RetrieveError struct {
	Ref string
	Err error
}

func (e *RetrieveError) Error() string {
	return fmt.Sprintf("cannot retrieve release image %s: %v", e.Ref, e.Err)
}

func (e *RetrieveError) Unwrap() error { return e.Err }

// Puller pulls release images into a cache by digest. It is safe for
// concurrent use. Processes may share a cache directory (the CLI's is per
// user): none sees another's release half-extracted, but one may evict a
// release that another is still loading, which then fails to load.
type Puller struct {
	cfg  Config
	conn *conn

	// mu guards the cache directory's entries.
	mu sync.Mutex
	// pulls serialize fetches of one digest, so that it is pulled once;
	// striped by digest, so that their number stays bounded.
	pulls [16]sync.Mutex
	// pinned are digests eviction never drops; guarded by mu.
	pinned map[string]bool
	// sync makes a file or directory durable: (*os.File).Sync, which
	// tests watch.
	sync func(*os.File) error
}

// Pin replaces the digests that eviction never drops, whatever
// MaxReleases says: the operator pins the releases its history and spec
// name, so that requests for other images cannot push the release the
// cluster runs out of the cache. Prune still drops what keep leaves out.
func (p *Puller) Pin(digests []string) error {
	pinned := map[string]bool{}
	for _, d := range digests {
		h, err := v1.NewHash(d)
		if err != nil {
			return fmt.Errorf("pin: %q is not a digest: %w", d, err)
		}
		pinned[h.String()] = true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pinned = pinned
	return nil
}

// NewPuller checks cfg, creates the cache directory and drops what a
// process that died left half-extracted.
func NewPuller(cfg Config) (*Puller, error) {
	if cfg.CacheDir == "" {
		return nil, errors.New("a release image cache directory is required")
	}
	if cfg.MaxReleases < 0 {
		return nil, fmt.Errorf("the release cache size must not be negative, not %d", cfg.MaxReleases)
	}
	if cfg.MaxReleases == 0 {
		cfg.MaxReleases = DefaultMaxReleases
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	cfg.Limits = cfg.Limits.orDefaults()
	c, err := cfg.Registry.connect()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.CacheDir, 0o755); err != nil {
		return nil, fmt.Errorf("release image cache: %w", err)
	}
	c.manifestBytes = cfg.Limits.ManifestBytes
	p := &Puller{cfg: cfg, conn: c, sync: (*os.File).Sync}
	if err := p.dropPartial(); err != nil {
		return nil, err
	}
	return p, nil
}

func (c *conn) options(ctx context.Context, platform v1.Platform) []remote.Option {
	maxManifest := c.manifestBytes
	if maxManifest <= 0 {
		maxManifest = DefaultLimits().ManifestBytes
	}
	opts := []remote.Option{
		remote.WithContext(ctx),
		remote.WithAuthFromKeychain(c.keychain),
		remote.WithTransport(manifestLimit{next: c.transport, max: maxManifest}),
		remote.WithPlatform(platform),
		remote.WithUserAgent("payload-applier"),
	}
	if c.backoff.Steps > 0 {
		opts = append(opts, remote.WithRetryBackoff(c.backoff))
	}
	return opts
}

// reference is ref for requests: insecure references ask the library
// for plain HTTP too.
func (c *conn) reference(ref Ref) (name.Reference, error) {
	return name.ParseReference(ref.String(), c.nameOptions()...)
}

func (c *conn) nameOptions() []name.Option {
	if c.insecure {
		return []name.Option{name.Insecure, name.StrictValidation}
	}
	return []name.Option{name.StrictValidation}
}

// Fetch returns the release ref names, extracted into the cache, in this
// order: resolve (a tag to its digest, the registry's answer to HEAD),
// verify the digest (opts.Verify), then read the manifest and blobs,
// extract, and commit to the cache. A digest already cached is returned
// without asking the registry anything. Everything read is checked
// against the digest, and nothing of a release is in the cache until all
// of it is extracted.
func (p *Puller) Fetch(ctx context.Context, ref Ref, opts FetchOptions) (*Extracted, error) {
	if ref.ref == nil {
		return nil, errors.New("no release image reference")
	}
	platform, err := parsePlatform(opts.Platform)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, p.cfg.Timeout)
	defer cancel()
	nref, err := p.conn.reference(ref)
	if err != nil {
		return nil, err
	}
	digest := ref.Digest()
	if digest == "" {
		if digest, err = p.head(ctx, ref, nref, platform); err != nil {
			return nil, err
		}
	}
	hash, err := v1.NewHash(digest)
	if err != nil {
		return nil, err
	}
	if hash.Algorithm != "sha256" {
		return nil, fmt.Errorf("release image %s: only sha256 digests are supported, not %s", ref, hash.Algorithm)
	}
	if opts.Verify != nil {
		if err := opts.Verify(ctx, digest); err != nil {
			return nil, &VerificationError{Ref: ref.String(), Digest: digest, Err: err}
		}
	}

	lock := &p.pulls[hash.Hex[0]%byte(len(p.pulls))]
	lock.Lock()
	defer lock.Unlock()
	if e, ok := p.lookup(hash, platform.String()); ok {
		return e, nil
	}
	byDigest, err := name.NewDigest(nref.Context().Name()+"@"+digest, p.conn.nameOptions()...)
	if err != nil {
		return nil, err
	}
	return p.pull(ctx, ref.String(), byDigest, platform)
}

func parsePlatform(s string) (v1.Platform, error) {
	if s == "" {
		return v1.Platform{OS: runtime.GOOS, Architecture: runtime.GOARCH}, nil
	}
	pl, err := v1.ParsePlatform(s)
	if err != nil || pl.OS == "" || pl.Architecture == "" {
		return v1.Platform{}, fmt.Errorf("platform %q is not os/arch[/variant]", s)
	}
	return *pl, nil
}

// head resolves ref, a tag, to the digest the registry names for it: one
// HEAD, reading nothing of the image.
func (p *Puller) head(ctx context.Context, ref Ref, nref name.Reference, platform v1.Platform) (string, error) {
	desc, err := remote.Head(nref, p.conn.options(ctx, platform)...)
	if err != nil {
		return "", fetchError(ref.String(), err)
	}
	return desc.Digest.String(), nil
}

// fetchError is a refusal when a limit or the content refused the image,
// and the registry's failure otherwise.
func fetchError(asked string, err error) error {
	var ce *ContentError
	if errors.As(err, &ce) {
		return fmt.Errorf("release image %s refused: %w", asked, ce)
	}
	return &RetrieveError{Ref: asked, Err: err}
}

// pull reads the image by digest and extracts it into a partial
// directory, which is renamed into place only once whole.
func (p *Puller) pull(ctx context.Context, asked string, ref name.Digest, platform v1.Platform) (*Extracted, error) {
	retrieveErr := func(err error) error { return fetchError(asked, err) }
	opts := p.conn.options(ctx, platform)
	desc, err := remote.Get(ref, opts...)
	if err != nil {
		return nil, retrieveErr(err)
	}
	e := &Extracted{Digest: ref.DigestStr(), Index: desc.MediaType.IsIndex(), Pulled: asked}
	if e.Index {
		e.Platform = platform.String()
	}
	img, err := p.image(ref, desc, platform, opts)
	if err != nil {
		return nil, retrieveErr(err)
	}
	imgDigest, err := img.Digest()
	if err != nil {
		return nil, retrieveErr(err)
	}
	e.ImageDigest = imgDigest.String()
	manifest, err := img.Manifest()
	if err != nil {
		return nil, retrieveErr(err)
	}
	if err := p.checkSizes(manifest); err != nil {
		return nil, retrieveErr(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, retrieveErr(err)
	}
	e.Version = cf.Config.Labels[ReleaseLabel]
	layers, err := img.Layers()
	if err != nil {
		return nil, retrieveErr(err)
	}

	tmp, err := os.MkdirTemp(p.cfg.CacheDir, partialPrefix)
	if err != nil {
		return nil, fmt.Errorf("release image cache: %w", err)
	}
	defer os.RemoveAll(tmp)
	if err := extract(ctx, tmp, layers, p.cfg.Limits, p.sync); err != nil {
		return nil, retrieveErr(err)
	}
	if err := ctx.Err(); err != nil {
		return nil, retrieveErr(err)
	}
	data, err := json.Marshal(e)
	if err != nil {
		return nil, err
	}
	if err := p.writeSynced(tmp, metadataFile, data); err != nil {
		return nil, fmt.Errorf("release image cache: %w", err)
	}
	if err := p.commit(tmp, e.Digest); err != nil {
		return nil, err
	}
	e.Dir = p.dir(e.Digest)
	return e, nil
}

// checkSizes refuses, before reading them, a config or layers larger than
// the limits allow.
func (p *Puller) checkSizes(m *v1.Manifest) error {
	if m.Config.Size > maxConfigBytes {
		return &ContentError{Reason: fmt.Sprintf("the image's config is %d bytes, more than %s", m.Config.Size, sizeOf(maxConfigBytes))}
	}
	if n, max := len(m.Layers), p.cfg.Limits.Layers; n > max {
		return overLimit("Layers", int64(max), "the image has %d layers, more than %d", n, max)
	}
	var total int64
	for _, l := range m.Layers {
		if l.Size < 0 {
			return &ContentError{Reason: fmt.Sprintf("layer %s has a negative size", l.Digest)}
		}
		total += l.Size
		if total > p.cfg.Limits.ReadBytes {
			return overLimit("ReadBytes", p.cfg.Limits.ReadBytes, "the image's layers are more than %s", sizeOf(p.cfg.Limits.ReadBytes))
		}
	}
	return nil
}

func (p *Puller) dir(digest string) string {
	return filepath.Join(p.cfg.CacheDir, entryName(digest))
}

// entryName is a digest's directory name: sha256-<hex>, as ':' is not
// welcome in every file system.
func entryName(digest string) string {
	return strings.Replace(digest, ":", "-", 1)
}

// writeSynced writes name in dir, durably, and syncs dir, the last step
// before an extraction is whole.
func (p *Puller) writeSynced(dir, name string, data []byte) error {
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = p.sync(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return p.syncDir(dir)
}

func (p *Puller) syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = p.sync(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// commit renames a whole extraction, already on disk, into place,
// replacing an entry for the same digest (pulled for another platform),
// and evicts the least recently used releases beyond MaxReleases. The
// cache directory is synced so that the rename survives a crash.
func (p *Puller) commit(tmp, digest string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	dst := p.dir(digest)
	if err := p.removeEntry(dst); err != nil {
		return err
	}
	if err := os.Rename(tmp, dst); err != nil {
		return fmt.Errorf("release image cache: %w", err)
	}
	if err := p.syncDir(p.cfg.CacheDir); err != nil {
		return fmt.Errorf("release image cache: %w", err)
	}
	return p.evict(digest)
}

// removeEntry takes an entry out of the cache with one rename, so that a
// reader never sees it half removed, and then deletes it.
func (p *Puller) removeEntry(dir string) error {
	gone, err := os.MkdirTemp(p.cfg.CacheDir, partialPrefix)
	if err != nil {
		return fmt.Errorf("release image cache: %w", err)
	}
	err = os.Rename(dir, filepath.Join(gone, "entry"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		os.Remove(gone)
		return fmt.Errorf("release image cache: %w", err)
	}
	return os.RemoveAll(gone)
}

type cacheEntry struct {
	digest string
	used   time.Time
}

// entries lists the releases in the cache; mu must be held.
func (p *Puller) entries() ([]cacheEntry, error) {
	des, err := os.ReadDir(p.cfg.CacheDir)
	if err != nil {
		return nil, fmt.Errorf("release image cache: %w", err)
	}
	var out []cacheEntry
	for _, de := range des {
		if !de.IsDir() || !strings.HasPrefix(de.Name(), entryPrefix) {
			continue
		}
		digest := "sha256:" + strings.TrimPrefix(de.Name(), entryPrefix)
		info, err := os.Stat(filepath.Join(p.cfg.CacheDir, de.Name(), metadataFile))
		if err != nil {
			continue
		}
		out = append(out, cacheEntry{digest: digest, used: info.ModTime()})
	}
	return out, nil
}

func (p *Puller) evict(keep string) error {
	entries, err := p.entries()
	if err != nil {
		return err
	}
	if len(entries) <= p.cfg.MaxReleases {
		return nil
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].used.Before(entries[j].used) })
	excess := len(entries) - p.cfg.MaxReleases
	for _, e := range entries {
		if excess == 0 {
			break
		}
		if e.digest == keep || p.pinned[e.digest] {
			continue
		}
		if err := p.removeEntry(p.dir(e.digest)); err != nil {
			return err
		}
		excess--
	}
	return nil
}

// lookup returns the cached release of digest, marking it used. An entry
// pulled from an index for another platform is no hit. An entry that is
// not whole (what a crash or a hand in the cache leaves) is dropped, so
// that the release is pulled again.
func (p *Puller) lookup(digest v1.Hash, platform string) (*Extracted, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	dir := p.dir(digest.String())
	if _, err := os.Lstat(dir); err != nil {
		return nil, false
	}
	e, err := readEntry(dir, digest.String())
	if err != nil {
		_ = p.removeEntry(dir) // a miss either way; the pull replaces it
		return nil, false
	}
	if e.Index && e.Platform != platform {
		return nil, false
	}
	now := time.Now()
	_ = os.Chtimes(filepath.Join(dir, metadataFile), now, now)
	e.Dir, e.FromCache = dir, true
	return e, true
}

// readEntry reads what a cache entry says it holds, and checks that it
// holds what every release has: a non-empty release-metadata in
// release-manifests/.
func readEntry(dir, digest string) (*Extracted, error) {
	data, err := os.ReadFile(filepath.Join(dir, metadataFile))
	if err != nil {
		return nil, err
	}
	var e Extracted
	if err := json.Unmarshal(data, &e); err != nil {
		return nil, fmt.Errorf("%s: %w", metadataFile, err)
	}
	if e.Digest != digest {
		return nil, fmt.Errorf("%s names %q, not %s", metadataFile, e.Digest, digest)
	}
	meta := filepath.Join(dir, payload.ReleaseManifestDir, payload.ReleaseMetadataFile)
	info, err := os.Lstat(meta)
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() || info.Size() == 0 {
		return nil, fmt.Errorf("%s is empty or not a file", meta)
	}
	return &e, nil
}

// Cached returns the release of digest ("sha256:<hex>") when the cache
// holds it whole, without asking a registry. platform is as in
// FetchOptions.
func (p *Puller) Cached(digest, platform string) (*Extracted, bool) {
	h, err := v1.NewHash(digest)
	if err != nil || h.Algorithm != "sha256" {
		return nil, false
	}
	pl, err := parsePlatform(platform)
	if err != nil {
		return nil, false
	}
	return p.lookup(h, pl.String())
}

// Drop takes digest's release out of the cache, as when what the cache
// holds of it does not load: the next Fetch pulls it again.
func (p *Puller) Drop(digest string) error {
	h, err := v1.NewHash(digest)
	if err != nil {
		return fmt.Errorf("drop: %q is not a digest: %w", digest, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.removeEntry(p.dir(h.String()))
}

// Prune drops every cached release whose digest keep does not list, so
// that the operator can keep only those its history still names. It
// returns the digests it dropped.
func (p *Puller) Prune(keep []string) ([]string, error) {
	wanted := map[string]bool{}
	for _, d := range keep {
		h, err := v1.NewHash(d)
		if err != nil {
			return nil, fmt.Errorf("prune: %q is not a digest: %w", d, err)
		}
		wanted[h.String()] = true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	entries, err := p.entries()
	if err != nil {
		return nil, err
	}
	var dropped []string
	for _, e := range entries {
		if wanted[e.digest] {
			continue
		}
		if err := p.removeEntry(p.dir(e.digest)); err != nil {
			return dropped, err
		}
		dropped = append(dropped, e.digest)
	}
	sort.Strings(dropped)
	return dropped, nil
}

// dropPartial removes what an extraction or a removal left when its
// process died. A partial directory is never a release.
func (p *Puller) dropPartial() error {
	des, err := os.ReadDir(p.cfg.CacheDir)
	if err != nil {
		return fmt.Errorf("release image cache: %w", err)
	}
	// A live fetch ends within its timeout; a partial directory older than
	// twice the longest one is left by a process that died, not one that
	// shares the cache and is still extracting.
	stale := time.Now().Add(-2 * max(p.cfg.Timeout, DefaultTimeout))
	for _, de := range des {
		if !strings.HasPrefix(de.Name(), partialPrefix) {
			continue
		}
		if info, err := de.Info(); err != nil || info.ModTime().After(stale) {
			continue
		}
		if err := os.RemoveAll(filepath.Join(p.cfg.CacheDir, de.Name())); err != nil {
			return fmt.Errorf("release image cache: %w", err)
		}
	}
	return nil
}
