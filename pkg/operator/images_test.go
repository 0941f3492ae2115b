package operator

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/payload-applier/payload-applier/pkg/clusterversion"
	"github.com/payload-applier/payload-applier/pkg/payload/payloadtest"
	"github.com/payload-applier/payload-applier/pkg/releaseimage"
	"github.com/payload-applier/payload-applier/pkg/releaseimage/releaseimagetest"
	"github.com/payload-applier/payload-applier/pkg/signature"
	"github.com/payload-applier/payload-applier/pkg/signature/signaturetest"
	"github.com/payload-applier/payload-applier/pkg/updategraph"
)

// imageCluster is a fake cluster that runs release 1.0.0, installed from
// the release store and carrying a verification ConfigMap that trusts
// key, with a registry on loopback to publish updates in.
type imageCluster struct {
	*fakeCluster
	key      *signaturetest.Key
	registry *releaseimagetest.Registry
	cacheDir string
}

func newImageCluster(t *testing.T) *imageCluster {
	t.Helper()
	key := signaturetest.MakeKey(t, "release", "")
	// Nothing listens on the store: signatures come from ConfigMaps.
	verifier, err := signature.Manifest(signaturetest.VerifierFor(t, []string{"http://127.0.0.1:1"}, key))
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	payloadtest.WriteRelease(t, root, "1.0.0", nil, map[string]string{
		"0000_50_demo_00_keep.yaml":                      configMapManifest("keep"),
		"0000_90_release-verification_00_configmap.yaml": string(verifier),
	})
	c := &imageCluster{fakeCluster: newFakeCluster(t, &DirStore{Root: root}, "1.0.0"), key: key}
	c.sync(t)
	if cv := c.clusterVersion(t); len(cv.Status.History) != 1 || cv.Status.History[0].State != configv1.CompletedUpdate {
		t.Fatalf("1.0.0 did not install: %+v", cv.Status.History)
	}

	c.registry = releaseimagetest.NewRegistry(t)
	c.cacheDir = t.TempDir()
	puller, err := releaseimage.NewPuller(releaseimage.Config{CacheDir: c.cacheDir, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	c.op.cfg.Puller = puller
	c.op.images = newImageRetriever(c.clock, puller, "")
	c.op.reader.images = c.op.images
	return c
}

// publish packs a release of version holding ConfigMap name and pushes
// it; it returns the image by digest.
func (c *imageCluster) publish(t *testing.T, version, name string) string {
	t.Helper()
	return c.registry.Publish(t, payloadtest.WriteRelease(t, t.TempDir(), version, nil, map[string]string{"0000_50_demo_00_" + name + ".yaml": configMapManifest(name)}))
}

// signatureOf is key's signature of image.
func (c *imageCluster) signatureOf(t *testing.T, image string) []byte {
	t.Helper()
	return c.key.Sign(t, signature.Claim{Identity: image, Digest: imageDigest(image)})
}

// sign stores key's signature of image in a signature ConfigMap.
func (c *imageCluster) sign(t *testing.T, image string) {
	t.Helper()
	cm, err := signature.AddToConfigMap(nil, imageDigest(image), c.signatureOf(t, image))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.op.kube.CoreV1().ConfigMaps(cm.Namespace).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// requestImage points spec.desiredUpdate at image, and version if given.
func (c *imageCluster) requestImage(t *testing.T, image, version string, force bool) {
	t.Helper()
	cv := c.clusterVersion(t)
	cv.Spec.DesiredUpdate = &configv1.Update{Image: image, Version: version, Force: force}
	if _, err := c.config.ConfigV1().ClusterVersions().Update(context.Background(), cv, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// wantAccepted fails unless ReleaseAccepted has status and reason, and
// its message holds text; it returns the condition.
func wantAccepted(t *testing.T, cv *configv1.ClusterVersion, status configv1.ConditionStatus, reason, text string) {
	t.Helper()
	c := clusterversion.FindCondition(cv.Status.Conditions, clusterversion.ConditionReleaseAccepted)
	if c == nil || c.Status != status || c.Reason != reason || !strings.Contains(c.Message, text) {
		t.Fatalf("ReleaseAccepted = %+v, want %s %s saying %q", c, status, reason, text)
	}
}

// wantStillOn fails unless the cluster still runs 1.0.0 only and nothing
// of the refused release named name was applied.
func (c *imageCluster) wantStillOn100(t *testing.T, name string) {
	t.Helper()
	cv := c.clusterVersion(t)
	if cv.Status.Desired.Version != "1.0.0" || len(cv.Status.History) != 1 {
		t.Errorf("desired %+v, history %d entries; want 1.0.0 only", cv.Status.Desired, len(cv.Status.History))
	}
	if c.exists(name) {
		t.Errorf("ConfigMap %s of the refused release was applied", name)
	}
}

func TestAReleaseByTagIsRefusedUnlessForced(t *testing.T) {
	c := newImageCluster(t)
	byDigest := c.publish(t, "1.0.1", "tagged")
	tag := c.registry.Host + "/release:1.0.1"
	c.sign(t, byDigest)

	c.requestImage(t, tag, "", false)
	out := c.sync(t)
	wantAccepted(t, c.clusterVersion(t), configv1.ConditionFalse, clusterversion.ReasonRetrievePayload, "named by tag; name it by digest or set force")
	if out.Applied != "1.0.0" {
		t.Errorf("applied %q, want the current 1.0.0 reconciled", out.Applied)
	}
	c.wantStillOn100(t, "tagged")

	c.requestImage(t, tag, "", true)
	c.sync(t)
	cv := c.clusterVersion(t)
	wantAccepted(t, cv, configv1.ConditionTrue, clusterversion.ReasonPayloadLoaded, `version="1.0.1"`)
	if cv.Status.Desired.Image != byDigest || cv.Status.History[0].Image != byDigest {
		t.Errorf("desired image %q, history image %q; want the digest the tag named, %s", cv.Status.Desired.Image, cv.Status.History[0].Image, byDigest)
	}
	if !c.exists("tagged") || cv.Status.History[0].State != configv1.CompletedUpdate || !cv.Status.History[0].Verified {
		t.Errorf("the forced tag's signed release must be applied and verified: %+v", cv.Status.History[0])
	}
}

func TestAnImageWhoseVersionIsNotTheOneAskedIsRefused(t *testing.T) {
	c := newImageCluster(t)
	image := c.publish(t, "1.0.1", "mismatched")
	c.sign(t, image)
	c.requestImage(t, image, "1.0.2", false)
	c.sync(t)
	wantAccepted(t, c.clusterVersion(t), configv1.ConditionFalse, clusterversion.ReasonVerifyPayloadVersion, "declares version 1.0.1, not the requested 1.0.2")
	c.wantStillOn100(t, "mismatched")
}

func TestAMissingImageIsRefusedWithTheRegistrysMessage(t *testing.T) {
	c := newImageCluster(t)
	image := c.publish(t, "1.0.1", "present")
	missing := strings.Replace(image, imageDigest(image), "sha256:"+strings.Repeat("0", 64), 1)
	// Signed: verification, which comes first, lets it through to the registry.
	c.sign(t, missing)
	c.requestImage(t, missing, "", false)
	out := c.sync(t)
	wantAccepted(t, c.clusterVersion(t), configv1.ConditionFalse, clusterversion.ReasonRetrievePayload, "MANIFEST_UNKNOWN")
	if out.RetrieveErr == nil || out.Applied != "1.0.0" {
		t.Errorf("retrieve error %v, applied %q; want the failure and 1.0.0 reconciled", out.RetrieveErr, out.Applied)
	}
	c.wantStillOn100(t, "present")
}

func TestAnUnverifiedReleaseIsRefusedUntilSignedAndNothingOfItApplied(t *testing.T) {
	c := newImageCluster(t)
	image := c.publish(t, "1.0.1", "unsigned")
	c.requestImage(t, image, "", false)
	out := c.sync(t)
	wantAccepted(t, c.clusterVersion(t), configv1.ConditionFalse, clusterversion.ReasonImageVerificationFailed, "The update cannot be verified: ")
	if out.VerifyErr == nil {
		t.Error("the outcome must carry the verification failure")
	}
	c.wantStillOn100(t, "unsigned")

	// Signed now: the retry waits its backoff, then goes through.
	c.sign(t, image)
	c.sync(t)
	wantAccepted(t, c.clusterVersion(t), configv1.ConditionFalse, clusterversion.ReasonImageVerificationFailed, "The update cannot be verified: ")
	c.clock.Step(retrieveBackoff)
	c.sync(t)
	cv := c.clusterVersion(t)
	if h := cv.Status.History[0]; h.Version != "1.0.1" || h.State != configv1.CompletedUpdate || !h.Verified || h.AcceptedRisks != "" || h.Image != image {
		t.Errorf("history[0] = %+v; want 1.0.1 completed and verified, by digest, with no risk", h)
	}
	if cv.Status.Desired.Image != image || !c.exists("unsigned") {
		t.Errorf("desired image %q; want %s applied", cv.Status.Desired.Image, image)
	}
}

func TestAForcedUnverifiedReleaseRecordsTheRisk(t *testing.T) {
	c := newImageCluster(t)
	image := c.publish(t, "1.0.1", "forced")
	c.requestImage(t, image, "1.0.1", true)
	out := c.sync(t)
	cv := c.clusterVersion(t)
	h := cv.Status.History[0]
	if h.Version != "1.0.1" || h.Verified || !strings.Contains(h.AcceptedRisks, "cannot be verified, but continuing anyway because the update was forced: The update cannot be verified: ") {
		t.Errorf("history[0] = %+v; want 1.0.1 unverified with the risk recorded", h)
	}
	if !c.exists("forced") || out.VerifyErr == nil {
		t.Errorf("the forced release must be applied (applied: %v) and its verification failure kept (%v)", c.exists("forced"), out.VerifyErr)
	}
}

func TestAVersionTheStoreLacksIsReadFromTheGraphsPayload(t *testing.T) {
	c := newImageCluster(t)
	image := c.publish(t, "1.0.1", "fromgraph")
	c.sign(t, image)
	c.op.graphs.store(graphAnswer{key: "test", graph: &updategraph.Graph{Nodes: []updategraph.Node{{Version: "1.0.1", Payload: image}}}, at: c.clock.Now()})
	c.request(t, "1.0.1")
	c.sync(t)
	cv := c.clusterVersion(t)
	if cv.Status.Desired.Image != image || !cv.Status.History[0].Verified || !c.exists("fromgraph") {
		t.Errorf("desired %+v, history[0] %+v; want 1.0.1 from the graph's payload, verified", cv.Status.Desired, cv.Status.History[0])
	}
}

func TestACompletedUpdateDropsReleasesHistoryDoesNotName(t *testing.T) {
	c := newImageCluster(t)
	// Signed but not the version asked: read whole, then refused.
	refused := c.publish(t, "1.0.2", "refused")
	c.sign(t, refused)
	c.requestImage(t, refused, "9.9.9", false)
	c.sync(t)
	if _, ok := c.op.cfg.Puller.Cached(imageDigest(refused), ""); !ok {
		t.Fatal("the refused release must have been pulled into the cache")
	}
	accepted := c.publish(t, "1.0.1", "accepted")
	c.sign(t, accepted)
	c.requestImage(t, accepted, "", false)
	c.sync(t)
	if _, ok := c.op.cfg.Puller.Cached(imageDigest(refused), ""); ok {
		t.Error("the refused release, which history does not name, is still cached after the update completed")
	}
	if _, ok := c.op.cfg.Puller.Cached(imageDigest(accepted), ""); !ok {
		t.Error("the release the cluster runs was dropped from the cache")
	}
}

func TestABlackHoledRegistryNeverStallsASync(t *testing.T) {
	c := newImageCluster(t)
	image := c.publish(t, "1.0.1", "held")
	c.sign(t, image)
	asked, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	c.registry.HoldManifests(func(r *http.Request) {
		once.Do(func() { close(asked) })
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	woke := make(chan struct{}, 16)
	c.op.images.start(ctx, func() { woke <- struct{}{} })

	// The current release is reconciled meanwhile: what went is put back.
	if err := c.dynamic.Tracker().Delete(configMaps, demoNamespace, "keep"); err != nil {
		t.Fatal(err)
	}
	c.requestImage(t, image, "", false)
	c.syncBeside(t)
	waitSignal(t, asked, "request to the registry")
	c.syncBeside(t)
	select {
	case <-woke:
		t.Fatal("the retrieval ended before the registry answered; the sync was not shown to run beside it")
	default:
	}
	cv := c.clusterVersion(t)
	wantAccepted(t, cv, configv1.ConditionUnknown, clusterversion.ReasonRetrievePayload, "Retrieving payload "+image)
	if !c.exists("keep") || c.exists("held") || cv.Status.Desired.Version != "1.0.0" {
		t.Errorf("while retrieving, 1.0.0 must be reconciled and nothing of 1.0.1 applied: keep %v, held %v, desired %s",
			c.exists("keep"), c.exists("held"), cv.Status.Desired.Version)
	}

	// The registry answers at last: the wake-up's sync applies the update.
	close(release)
	waitSignal(t, woke, "wake-up after the registry's answer")
	c.syncBeside(t)
	cv = c.clusterVersion(t)
	if h := cv.Status.History[0]; h.Version != "1.0.1" || !h.Verified || !c.exists("held") {
		t.Errorf("history[0] = %+v; want 1.0.1 applied and verified once the registry answered", h)
	}
}

// spec.signatureStores replaces the running release's stores, and a change
// of it builds the verifier again: an update signed only in an admin's own
// store is refused until the spec names that store.
func TestSpecSignatureStoresReplaceTheReleasesAndRebuildTheVerifier(t *testing.T) {
	c := newImageCluster(t)
	image := c.publish(t, "1.0.1", "custom")
	dir := t.TempDir()
	if _, err := signature.WriteToStore(dir, imageDigest(image), c.signatureOf(t, image)); err != nil {
		t.Fatal(err)
	}
	store := httptest.NewServer(http.FileServer(http.Dir(dir)))
	t.Cleanup(store.Close)

	c.requestImage(t, image, "", false)
	c.sync(t)
	wantAccepted(t, c.clusterVersion(t), configv1.ConditionFalse, clusterversion.ReasonImageVerificationFailed, "the release's stores http://127.0.0.1:1")
	c.wantStillOn100(t, "custom")

	cv := c.clusterVersion(t)
	cv.Spec.SignatureStores = []configv1.SignatureStore{{URL: store.URL}}
	if _, err := c.config.ConfigV1().ClusterVersions().Update(context.Background(), cv, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.clock.Step(retrieveBackoff)
	c.sync(t)
	if h := c.clusterVersion(t).Status.History[0]; h.Version != "1.0.1" || h.State != configv1.CompletedUpdate || !h.Verified {
		t.Errorf("history[0] = %+v; want 1.0.1 completed and verified through spec.signatureStores", h)
	}
}
