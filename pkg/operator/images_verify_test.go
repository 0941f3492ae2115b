package operator

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"

	"github.com/payload-applier/payload-applier/pkg/releaseimage"
)

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
		wantAccepted(t, c.clusterVersion(t), configv1.ConditionFalse, ReasonImageVerificationFailed, "The update cannot be verified: ")
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
	wantAccepted(t, c.clusterVersion(t), configv1.ConditionFalse, ReasonImageVerificationFailed, "The update cannot be verified: ")

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
