package operator

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"

	"github.com/payload-applier/payload-applier/pkg/clusterversion"
	"github.com/payload-applier/payload-applier/pkg/graph"
	"github.com/payload-applier/payload-applier/pkg/payload"
	"github.com/payload-applier/payload-applier/pkg/releaseimage"
)

// deadRegistry is the transport of an operator whose registry is gone; it
// counts what it was asked.
type deadRegistry struct{ asked atomic.Int32 }

func (d *deadRegistry) RoundTrip(*http.Request) (*http.Response, error) {
	d.asked.Add(1)
	return nil, errors.New("the registry is gone")
}

// restart stands in for a new operator process reading the cache through
// puller: nothing the last one loaded or retrieved is kept.
func (c *imageCluster) restart(puller *releaseimage.Puller) {
	c.op.cfg.Puller = puller
	c.op.images = newImageRetriever(c.clock, puller, "")
	c.op.reader.images = c.op.images
	c.op.reader.releases = map[string]*payload.Release{}
	c.op.reader.verifier = cachedVerifier{}
}

// newPuller is a puller on the cluster's cache directory.
func (c *imageCluster) newPuller(t *testing.T, cfg releaseimage.Config) *releaseimage.Puller {
	t.Helper()
	cfg.CacheDir, cfg.Timeout = c.cacheDir, time.Minute
	p, err := releaseimage.NewPuller(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// servedOfImages is what the registry served since the last Take, but the
// API version check, GET /v2/, which reads nothing of an image.
func servedOfImages(c *imageCluster) []string {
	var out []string
	for _, req := range c.registry.Take() {
		if req != "GET /v2/" {
			out = append(out, req)
		}
	}
	return out
}

// cacheEntries lists the cache directory.
func (c *imageCluster) cacheEntries(t *testing.T) []string {
	t.Helper()
	des, err := os.ReadDir(c.cacheDir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, de := range des {
		out = append(out, de.Name())
	}
	return out
}

// updateByImage publishes and signs version holding ConfigMap name, and
// updates to it by digest; it returns the image.
func (c *imageCluster) updateByImage(t *testing.T, version, name string) string {
	t.Helper()
	image := c.publish(t, version, name)
	c.sign(t, image)
	c.requestImage(t, image, "", false)
	c.sync(t)
	if h := c.clusterVersion(t).Status.History[0]; h.Version != version || h.State != configv1.CompletedUpdate || h.Image != image {
		t.Fatalf("history[0] = %+v; want %s completed from %s", h, version, image)
	}
	return image
}

// breakCacheEntry empties the release-metadata of image's cache entry, as
// a crash can leave it.
func (c *imageCluster) breakCacheEntry(t *testing.T, image string) {
	t.Helper()
	e, ok := c.op.cfg.Puller.Cached(imageDigest(image), "")
	if !ok {
		t.Fatalf("%s is not cached", image)
	}
	if err := os.WriteFile(filepath.Join(e.Dir, payload.ReleaseManifestDir, payload.ReleaseMetadataFile), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := payload.Load(e.Dir, payload.LoadOptions{}); err == nil {
		t.Fatal("the broken cache entry still loads")
	}
}

// The CVO verifies a release's digest before it downloads anything of it:
// an unsigned image is refused with no manifest or blob read, and nothing
// of it is written to the cache, on the retry either.
func TestAnUnverifiedImageIsRefusedBeforeAnythingOfItIsRead(t *testing.T) {
	c := newImageCluster(t)
	image := c.publish(t, "1.0.1", "unsigned")
	c.registry.Take()
	c.requestImage(t, image, "", false)
	for _, try := range []string{"first", "retry"} {
		out := c.sync(t)
		wantAccepted(t, c.clusterVersion(t), configv1.ConditionFalse, clusterversion.ReasonImageVerificationFailed, "The update cannot be verified: ")
		if out.VerifyErr == nil {
			t.Errorf("%s: the outcome must carry the verification failure", try)
		}
		if got := servedOfImages(c); len(got) > 0 {
			t.Errorf("%s: the registry served %v of a release that fails verification; want nothing", try, got)
		}
		if got := c.cacheEntries(t); len(got) > 0 {
			t.Errorf("%s: the cache holds %v; want nothing of the refused release", try, got)
		}
		c.clock.Step(retrieveBackoff)
	}
	c.wantStillOn100(t, "unsigned")
}

// Force still has the digest verified first, the very digest then read,
// and keeps the failure for the risk the admin accepts.
func TestAForcedImageIsVerifiedBeforeItIsRead(t *testing.T) {
	c := newImageCluster(t)
	image := c.publish(t, "1.0.1", "forced")
	ref, err := releaseimage.ParseRef(c.registry.Host + "/release:1.0.1")
	if err != nil {
		t.Fatal(err)
	}
	c.registry.Take()
	var judged []string
	var servedBefore []string
	unsigned := errors.New("no signature")
	verify := func(_ context.Context, digest string) error {
		judged = append(judged, digest)
		servedBefore = servedOfImages(c)
		return unsigned
	}
	a := c.op.images.retrieve(context.Background(), imageRequest{ref: ref, load: *c.op.cfg.LoadOptions, verify: verify, verifierKey: "test", force: true})
	if len(judged) != 1 || judged[0] != imageDigest(image) {
		t.Errorf("verified %v; want the digest the tag names, %s, once", judged, imageDigest(image))
	}
	if len(servedBefore) != 1 || !strings.HasPrefix(servedBefore[0], "HEAD ") {
		t.Errorf("before verifying, the registry served %v; want the tag's HEAD only", servedBefore)
	}
	if a.err != nil || a.release == nil || a.release.Version != "1.0.1" || !errors.Is(a.verifyErr, unsigned) || a.image != image {
		t.Errorf("answer: release %v, image %s, err %v, verifyErr %v; want 1.0.1 read from %s, its verification failure kept", a.release, a.image, a.err, a.verifyErr, image)
	}
}

// An image refused unforced is taken at once when the admin forces it:
// the refusal's backoff holds back the unforced request only.
func TestForcingARefusedImageTakesItAtOnce(t *testing.T) {
	c := newImageCluster(t)
	image := c.publish(t, "1.0.1", "forcedlater")
	c.requestImage(t, image, "", false)
	c.sync(t)
	wantAccepted(t, c.clusterVersion(t), configv1.ConditionFalse, clusterversion.ReasonImageVerificationFailed, "The update cannot be verified: ")

	c.requestImage(t, image, "", true)
	c.sync(t)
	h := c.clusterVersion(t).Status.History[0]
	if h.Version != "1.0.1" || h.Verified || !strings.Contains(h.AcceptedRisks, "cannot be verified, but continuing anyway because the update was forced: The update cannot be verified: ") {
		t.Errorf("history[0] = %+v; want 1.0.1 unverified with the risk recorded", h)
	}
	if !c.exists("forcedlater") {
		t.Error("the forced release was not applied")
	}
}

// Requests for other images never push the running release out of the
// cache, so that a restart with the registry gone still reconciles it.
func TestTheRunningReleaseStaysCachedWhateverIsRequested(t *testing.T) {
	c := newImageCluster(t)
	c.restart(c.newPuller(t, releaseimage.Config{MaxReleases: 2}))
	running := c.updateByImage(t, "1.0.1", "running")
	// 1.0.1 trusts no key; forced, each is read whole into the cache,
	// then refused for its version.
	for _, v := range []string{"1.0.2", "1.0.3", "1.0.4"} {
		image := c.publish(t, v, "other-"+strings.ReplaceAll(v, ".", "-"))
		c.requestImage(t, image, "9.9.9", true)
		c.sync(t)
		wantAccepted(t, c.clusterVersion(t), configv1.ConditionFalse, clusterversion.ReasonVerifyPayloadVersion, "not the requested 9.9.9")
	}
	if _, ok := c.op.cfg.Puller.Cached(imageDigest(running), ""); !ok {
		t.Fatalf("the running release was evicted; the cache holds %v", c.cacheEntries(t))
	}

	dead := &deadRegistry{}
	c.restart(c.newPuller(t, releaseimage.Config{MaxReleases: 2, Registry: releaseimage.Registry{Transport: dead}}))
	out := c.sync(t)
	if out.CurrentErr != nil || out.Applied != "1.0.1" || out.Mode != graph.ModeReconcile || !out.Result.Complete() {
		t.Errorf("after a restart without the registry: applied %q in mode %s, current release error %v; want 1.0.1 reconciled", out.Applied, out.Mode, out.CurrentErr)
	}
}

// A cached current release that does not load (what a crash leaves) is
// pulled again instead of failing every pass.
func TestABrokenCachedCurrentReleaseIsPulledAgain(t *testing.T) {
	c := newImageCluster(t)
	running := c.updateByImage(t, "1.0.1", "running")
	c.breakCacheEntry(t, running)
	c.restart(c.op.cfg.Puller)
	c.registry.Take()
	out := c.sync(t)
	if out.CurrentErr != nil || out.LoadErr != nil || out.Applied != "1.0.1" || out.Mode != graph.ModeReconcile {
		t.Errorf("applied %q in mode %s, load error %v, current release error %v; want 1.0.1 reconciled", out.Applied, out.Mode, out.LoadErr, out.CurrentErr)
	}
	if got := servedOfImages(c); len(got) == 0 {
		t.Error("the registry served nothing; want the release pulled again")
	}
	if e, ok := c.op.cfg.Puller.Cached(imageDigest(running), ""); !ok {
		t.Error("the release pulled again is not cached")
	} else if _, err := payload.Load(e.Dir, payload.LoadOptions{}); err != nil {
		t.Errorf("the release pulled again does not load: %v", err)
	}
}

// So is a requested release whose cache entry does not load.
func TestABrokenCachedTargetIsPulledAgain(t *testing.T) {
	c := newImageCluster(t)
	image := c.publish(t, "1.0.1", "repulled")
	c.sign(t, image)
	ref, err := releaseimage.ParseRef(image)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.op.cfg.Puller.Fetch(context.Background(), ref, releaseimage.FetchOptions{}); err != nil {
		t.Fatal(err)
	}
	c.breakCacheEntry(t, image)
	c.requestImage(t, image, "", false)
	c.sync(t)
	if h := c.clusterVersion(t).Status.History[0]; h.Version != "1.0.1" || h.State != configv1.CompletedUpdate || !h.Verified || !c.exists("repulled") {
		t.Errorf("history[0] = %+v; want 1.0.1 pulled again and applied", h)
	}
}
