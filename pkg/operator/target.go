package operator

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/payload-applier/payload-applier/pkg/clusterversion"
	"github.com/payload-applier/payload-applier/pkg/payload"
	"github.com/payload-applier/payload-applier/pkg/releaseimage"
	"github.com/payload-applier/payload-applier/pkg/signature"
)

// target is the release the spec asks for, read whole: loaded, and when
// named by image, retrieved and verified.
type target struct {
	rel *payload.Release
	// image is what status.desired.image says: repo@sha256:<hex> for a
	// release image, file://DIR for a directory of the release store.
	image string
	// current is set when the target is the release already desired.
	current bool
	// verified says that the current release's keys signed it.
	verified bool
	// risk is a verification failure that force let through.
	risk string
}

// errRetrieving is why a release image is not read yet: its retrieval is
// under way.
var errRetrieving = errors.New("retrieving")

// resolveTarget reads the release cv's spec asks for: by image
// (spec.desiredUpdate.image), by version from the release store, or by
// version through the update graph's payload of it. It returns nil when
// the target is refused or still being retrieved, ReleaseAccepted then
// saying which; the current release is reconciled instead.
func (o *Operator) resolveTarget(ctx context.Context, cv *configv1.ClusterVersion, out *Outcome, now metav1.Time) *target {
	status := &cv.Status
	var image string
	force := false
	if du := cv.Spec.DesiredUpdate; du != nil {
		image, force = du.Image, du.Force
	}
	if image == "" {
		if out.Target == status.Desired.Version {
			return o.currentTarget(ctx, cv, out, now)
		}
		rel, err := o.reader.loadRelease(out.Target, cv)
		if err == nil {
			return &target{rel: rel, image: o.reader.imageFor(rel)}
		}
		if image = o.reader.graphPayload(out.Target); image == "" || !errors.Is(err, ErrNotInStore) {
			o.rejectTarget(cv, loadRefusal(cv, out, err), now)
			return nil
		}
	}
	if sameImage(image, status.Desired.Image) {
		return o.currentTarget(ctx, cv, out, now)
	}
	ref, err := releaseimage.ParseRef(image)
	if err != nil {
		o.rejectTarget(cv, retrieveRefusal(out, err), now)
		return nil
	}
	if !ref.ByDigest() && !force {
		// A tag can move to another image after it was checked.
		o.rejectTarget(cv, retrieveRefusal(out, fmt.Errorf("release image %s is named by tag; name it by digest or set force", image)), now)
		return nil
	}
	if o.images == nil {
		o.rejectTarget(cv, retrieveRefusal(out, errNoPuller), now)
		return nil
	}
	req := imageRequest{ref: ref, load: *o.cfg.LoadOptions, force: force}
	// As in the CVO, the release the cluster runs judges its updates; an
	// install has none, and its release is not verified.
	verifying := status.Desired.Version != ""
	if verifying {
		req.verify, req.verifierKey = o.reader.verifierFor(ctx, cv)
	}
	a := o.images.lookup(ctx, req)
	switch {
	case a == nil:
		out.Retrieving = true
		status.Conditions = clusterversion.SetCondition(status.Conditions, configv1.ClusterOperatorStatusCondition{
			Type: clusterversion.ConditionReleaseAccepted, Status: configv1.ConditionUnknown, Reason: clusterversion.ReasonRetrievePayload,
			Message: fmt.Sprintf("Retrieving payload %s", image)}, now)
		return nil
	case a.stage == clusterversion.ReasonRetrievePayload:
		o.rejectTarget(cv, retrieveRefusal(out, a.err), now)
		return nil
	case a.err != nil:
		o.rejectTarget(cv, loadRefusal(cv, out, fmt.Errorf("release image %s: %w", image, a.err)), now)
		return nil
	case a.verifyErr != nil && (!force || a.release == nil):
		// Refused before anything of the image was read.
		out.VerifyErr = a.verifyErr
		msg := verifyMessage(a.verifyErr)
		o.rejectTarget(cv, refusal{clusterversion.ReasonImageVerificationFailed, msg, clusterversion.ReasonImageVerificationFailed, msg}, now)
		return nil
	}
	want := out.Target
	if want != "" && a.release.Version != want {
		out.LoadErr = fmt.Errorf("release image %s declares version %s, not the requested %s", a.image, a.release.Version, want)
		msg := fmt.Sprintf("Release image %s is rejected: %v", image, out.LoadErr)
		o.rejectTarget(cv, refusal{clusterversion.ReasonVerifyPayloadVersion, msg, "VerifyPayloadVersionFailed", msg}, now)
		return nil
	}
	if sameImage(a.image, status.Desired.Image) {
		// A tag that names the release already desired.
		return o.currentTarget(ctx, cv, out, now)
	}
	t := &target{image: a.image, verified: verifying && a.verifyErr == nil}
	if verifying && a.verifyErr != nil {
		// Forced: verified all the same, and the failure is the risk taken.
		out.VerifyErr = a.verifyErr
		msg := verifyMessage(a.verifyErr)
		t.risk = fmt.Sprintf("Target release version=%q image=%q cannot be verified, but continuing anyway because the update was forced: %s",
			a.release.Version, a.image, msg)
	}
	t.rel = o.reader.keepRelease(a.image, a.release, cv).Filter(o.reader.loadOptionsFor(cv, a.release.Version))
	return t
}

// currentTarget is the release already desired, asked for again.
func (o *Operator) currentTarget(ctx context.Context, cv *configv1.ClusterVersion, out *Outcome, now metav1.Time) *target {
	rel, err := o.reader.currentRelease(ctx, cv)
	switch {
	case errors.Is(err, errRetrieving):
		out.Retrieving = true
		cv.Status.Conditions = clusterversion.SetCondition(cv.Status.Conditions, configv1.ClusterOperatorStatusCondition{
			Type: clusterversion.ConditionReleaseAccepted, Status: configv1.ConditionUnknown, Reason: clusterversion.ReasonRetrievePayload,
			Message: fmt.Sprintf("Retrieving payload %s", cv.Status.Desired.Image)}, now)
		return nil
	case err != nil:
		o.rejectTarget(cv, loadRefusal(cv, out, err), now)
		return nil
	}
	return &target{rel: rel, image: cv.Status.Desired.Image, current: true}
}

// loadRefusal refuses a target whose release cannot be loaded.
func loadRefusal(cv *configv1.ClusterVersion, out *Outcome, err error) refusal {
	out.LoadErr = err
	msg := fmt.Sprintf("Release %s is rejected: %v", cmp.Or(out.Target, requestedImage(cv)), err)
	return refusal{clusterversion.ReasonLoadPayload, msg, "PayloadRejected", msg}
}

// retrieveRefusal shows err, the registry's own message when it answered,
// under the CVO's reason.
func retrieveRefusal(out *Outcome, err error) refusal {
	out.RetrieveErr = err
	msg := fmt.Sprintf("Retrieving payload failed: %v", err)
	return refusal{clusterversion.ReasonRetrievePayload, msg, "RetrievePayloadFailed", msg}
}

// requestedImage is spec.desiredUpdate.image, "" when the spec names none.
func requestedImage(cv *configv1.ClusterVersion) string {
	if du := cv.Spec.DesiredUpdate; du != nil {
		return du.Image
	}
	return ""
}

// currentRelease is the release status.desired names, filtered for cv: by
// version from the release store, or by image from the release cache. An
// image missing from the cache (a cache lost with its volume), or whose
// entry does not load, is retrieved again in the background, unverified:
// the cluster already accepted it.
func (r *releaseReader) currentRelease(ctx context.Context, cv *configv1.ClusterVersion) (*payload.Release, error) {
	d := cv.Status.Desired
	digest := imageDigest(d.Image)
	if digest == "" || r.sourceHasImage(d) {
		return r.loadRelease(d.Version, cv)
	}
	all, ok := r.releases[d.Image]
	if !ok {
		if r.images == nil {
			return nil, errNoPuller
		}
		var rel *payload.Release
		if e, hit := r.cfg.Puller.Cached(digest, r.cfg.ReleasePlatform); hit {
			var err error
			if rel, err = payload.Load(e.Dir, *r.cfg.LoadOptions); err != nil {
				// What a crash or a full disk left: retrieve it again
				// rather than fail every pass for good.
				klog.FromContext(ctx).Info("The cached current release does not load; retrieving it again", "image", d.Image, "err", err)
				if err := r.cfg.Puller.Drop(digest); err != nil {
					return nil, err
				}
				rel = nil
			}
		}
		if rel == nil {
			ref, err := releaseimage.ParseRef(d.Image)
			if err != nil {
				return nil, err
			}
			a := r.images.lookup(ctx, imageRequest{ref: ref, load: *r.cfg.LoadOptions})
			switch {
			case a == nil:
				return nil, fmt.Errorf("release image %s is not in the release cache: %w", d.Image, errRetrieving)
			case a.err != nil:
				return nil, a.err
			}
			rel = a.release
		}
		all = r.keepRelease(d.Image, rel, cv)
	}
	if all.Version != d.Version {
		return nil, fmt.Errorf("release image %s declares version %s, not %s", d.Image, all.Version, d.Version)
	}
	return all.Filter(r.loadOptionsFor(cv, all.Version)), nil
}

// sourceHasImage says whether the release source itself holds d, as
// `apply` holds the release image it was given.
func (r *releaseReader) sourceHasImage(d configv1.Release) bool {
	return d.Image != "" && r.sourceImage(d.Version) == d.Image
}

// sourceImage is the image the release source read version from, "" when
// it names none.
func (r *releaseReader) sourceImage(version string) string {
	if src, ok := r.cfg.Releases.(releaseImager); ok {
		return src.ImageOf(version)
	}
	return ""
}

// keepRelease keeps rel, loaded unfiltered, under key: a version or an
// image. It returns rel.
func (r *releaseReader) keepRelease(key string, rel *payload.Release, cv *configv1.ClusterVersion) *payload.Release {
	if abs, err := filepath.Abs(rel.Dir); err == nil {
		rel.Dir = abs
	}
	// Validated: the text was only for findings, and it is about a
	// quarter of what the release holds.
	rel.DropSource()
	r.pruneReleases(cv, key)
	r.releases[key] = rel
	return rel
}

// graphPayload is the image the last update graph read gives for
// version, "" when none does. No read is made: a sync never waits on the
// update service.
func (r *releaseReader) graphPayload(version string) string {
	g := r.graphs.lastGood()
	if g == nil {
		return ""
	}
	if i := g.Find(version); i >= 0 {
		return g.Nodes[i].Payload
	}
	return ""
}

// cachedVerifier is the verifier of the current release, built again when
// the current release or spec.signatureStores change.
type cachedVerifier struct {
	key    string
	verify func(context.Context, string) error
}

// verifierFor returns how targets of cv are verified, and a key that
// changes with it.
func (r *releaseReader) verifierFor(ctx context.Context, cv *configv1.ClusterVersion) (func(context.Context, string) error, string) {
	stores, _ := json.Marshal(cv.Spec.SignatureStores)
	key := fmt.Sprintf("%s %s %s", cv.Status.Desired.Version, cv.Status.Desired.Image, stores)
	if r.verifier.key == key {
		return r.verifier.verify, key
	}
	current, err := r.currentRelease(ctx, cv)
	if err != nil {
		// Not kept: a later sync reads the current release again.
		return func(_ context.Context, digest string) error {
			return &signature.Error{Digest: digest, Err: fmt.Errorf("the keys of the current release %s cannot be read: %w", cv.Status.Desired.Version, err)}
		}, key + " unreadable"
	}
	v, err := signature.FromRelease(current, signature.Options{
		ConfigMaps: r.kube.CoreV1(), SignatureStores: cv.Spec.SignatureStores, Limits: r.cfg.SignatureLimits})
	verify := v.Verify
	if err != nil {
		verify = func(_ context.Context, digest string) error {
			return &signature.Error{Digest: digest, Err: fmt.Errorf("the current release's verification ConfigMap: %w", err)}
		}
	}
	r.verifier = cachedVerifier{key: key, verify: verify}
	return verify, key
}

// pinReleases keeps the releases cv names in the cache whatever else is
// fetched: requests for other images must not push out the release the
// cluster runs, which a restart without the registry reads from there.
func (r *releaseReader) pinReleases(ctx context.Context, cv *configv1.ClusterVersion) {
	if r.cfg.Puller == nil {
		return
	}
	if err := r.cfg.Puller.Pin(namedDigests(cv)); err != nil {
		klog.FromContext(ctx).Error(err, "Pinning the releases history names in the release cache failed")
	}
}

// pruneImageCache drops the cached releases that neither history nor the
// spec names any more; run once an update completed.
func (r *releaseReader) pruneImageCache(ctx context.Context, cv *configv1.ClusterVersion) {
	if r.cfg.Puller == nil {
		return
	}
	dropped, err := r.cfg.Puller.Prune(namedDigests(cv))
	if err != nil {
		klog.FromContext(ctx).Error(err, "Pruning the release cache failed")
	}
	if len(dropped) > 0 {
		klog.FromContext(ctx).Info("Dropped releases history no longer names from the release cache", "digests", dropped)
	}
}

// namedDigests are the digests of the releases cv names: the one desired,
// the one asked for, and history's.
func namedDigests(cv *configv1.ClusterVersion) []string {
	var out []string
	for _, image := range append([]string{cv.Status.Desired.Image, requestedImage(cv)}, historyImages(cv)...) {
		if d := imageDigest(image); d != "" {
			out = append(out, d)
		}
	}
	return out
}

func historyImages(cv *configv1.ClusterVersion) []string {
	out := make([]string, 0, len(cv.Status.History))
	for _, h := range cv.Status.History {
		out = append(out, h.Image)
	}
	return out
}
