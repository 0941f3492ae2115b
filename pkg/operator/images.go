package operator

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/payload-applier/payload-applier/pkg/clusterversion"
	"github.com/payload-applier/payload-applier/pkg/payload"
	"github.com/payload-applier/payload-applier/pkg/releaseimage"
	"github.com/payload-applier/payload-applier/pkg/signature"
)

const (
	// retrieveBackoff and maxRetrieveBackoff space the retries of a
	// release image that failed: a registry that refuses, or a signature
	// that is not there yet.
	retrieveBackoff    = 10 * time.Second
	maxRetrieveBackoff = 5 * time.Minute
	// maxImageJobs bounds the retrievals remembered: the target, the
	// current release and a few withdrawn targets.
	maxImageJobs = 4
)

// imageRequest is one release image to retrieve, and how to judge it.
type imageRequest struct {
	ref  releaseimage.Ref
	load payload.LoadOptions
	// verify, when set, checks the digest; verifierKey tells verifiers
	// apart, so that a new verifier judges the image again.
	verify      func(ctx context.Context, digest string) error
	verifierKey string
	// force reads the release even when verify refuses it, the failure
	// kept in the answer as the risk the admin accepts.
	force bool
}

func (r imageRequest) key() string {
	if r.verify == nil {
		return r.ref.String()
	}
	k := r.ref.String() + " verified by " + r.verifierKey
	if r.force {
		// Forcing an image that was refused must not wait out the
		// refusal's backoff: the forced request reads what it skipped.
		k += " forced"
	}
	return k
}

// imageAnswer is how one retrieval ended.
type imageAnswer struct {
	// image is the release's pull spec by digest, repo@sha256:<hex>.
	image string
	// release is loaded, unfiltered; nil when err is set, or when
	// verifyErr is and the request was not forced.
	release *payload.Release
	// stage is the ReleaseAccepted reason of err: ReasonRetrievePayload
	// or ReasonLoadPayload.
	stage string
	err   error
	// verifyErr is set when verification was asked for and failed.
	verifyErr error
	at        time.Time
}

// failed says whether the answer is worth another try later.
func (a *imageAnswer) failed() bool { return a.err != nil || a.verifyErr != nil }

// imageJob is the state of one request.
type imageJob struct {
	req      imageRequest
	answer   *imageAnswer
	failures int
	// cancel gives up the retrieval in flight; nil when none is.
	cancel context.CancelFunc
	added  time.Time
}

// imageRetriever reads releases by image: verify the digest, then pull
// into the cache and load. Started by Run, it works in goroutines of its
// own, so that no sync waits on a registry or a signature store, and
// wakes the loop when an answer comes; not started (apply, unit tests), a
// sync retrieves inline, bounded by the puller's timeout and the
// verifier's limits.
type imageRetriever struct {
	clock    clock.Clock
	puller   *releaseimage.Puller
	platform string
	bg       *background

	mu   sync.Mutex
	jobs map[string]*imageJob
}

func newImageRetriever(clk clock.Clock, puller *releaseimage.Puller, platform string) *imageRetriever {
	return &imageRetriever{clock: clk, puller: puller, platform: platform, bg: newBackground(clk), jobs: map[string]*imageJob{}}
}

// start retrieves in the background until ctx ends, calling wake with
// every answer.
func (r *imageRetriever) start(ctx context.Context, wake func()) {
	r.bg.start(ctx, wake, nil)
}

// lookup returns the last answer to req, nil when there is none yet. A
// request never asked, or whose answer failed and is due another try, is
// retrieved: in the background when started, else before returning.
func (r *imageRetriever) lookup(ctx context.Context, req imageRequest) *imageAnswer {
	r.mu.Lock()
	defer r.mu.Unlock()
	key := req.key()
	j, ok := r.jobs[key]
	if !ok {
		r.evictFor(key)
		j = &imageJob{req: req, added: r.clock.Now()}
		r.jobs[key] = j
	}
	if j.cancel != nil || !r.due(j) {
		return j.answer
	}
	bctx := r.bg.started()
	if bctx == nil {
		r.mu.Unlock()
		a := r.retrieve(ctx, req)
		r.mu.Lock()
		r.store(j, a)
		return j.answer
	}
	jctx, cancel := context.WithCancel(bctx)
	j.cancel = cancel
	go func() {
		a := r.retrieve(jctx, req)
		r.mu.Lock()
		stale := jctx.Err() != nil
		if !stale {
			r.store(j, a)
		}
		j.cancel = nil
		r.mu.Unlock()
		cancel()
		if stale {
			return
		}
		r.bg.wake()
		if a.failed() {
			// Wake the sync again when the retry is due, rather than at
			// the next resync.
			t := r.clock.NewTimer(backoffAfter(j.failures))
			defer t.Stop()
			select {
			case <-t.C():
				r.bg.wake()
			case <-bctx.Done():
			}
		}
	}()
	return j.answer
}

// due says whether j should be retrieved now; the caller holds mu.
func (r *imageRetriever) due(j *imageJob) bool {
	a := j.answer
	return a == nil || (a.failed() && r.clock.Since(a.at) >= backoffAfter(j.failures))
}

func (r *imageRetriever) store(j *imageJob, a *imageAnswer) {
	j.answer = a
	if a.failed() {
		j.failures++
	} else {
		j.failures = 0
	}
}

// evictFor makes room for a new job, giving up the oldest; the caller
// holds mu.
func (r *imageRetriever) evictFor(key string) {
	for len(r.jobs) >= maxImageJobs {
		var oldest string
		for k, j := range r.jobs {
			if oldest == "" || j.added.Before(r.jobs[oldest].added) {
				oldest = k
			}
		}
		if j := r.jobs[oldest]; j.cancel != nil {
			j.cancel()
		}
		delete(r.jobs, oldest)
	}
}

// backoffAfter is the wait before the next try after failures failed tries.
func backoffAfter(failures int) time.Duration {
	d := retrieveBackoff
	for i := 1; i < failures && d < maxRetrieveBackoff; i++ {
		d *= 2
	}
	return min(d, maxRetrieveBackoff)
}

// retrieve reads req's release in the CVO's order: resolve the digest,
// verify it, and only then fetch the blobs, extract and load. An image
// that fails verification is not read at all unless req.force lets it
// through.
func (r *imageRetriever) retrieve(ctx context.Context, req imageRequest) *imageAnswer {
	a := &imageAnswer{}
	defer func() { a.at = r.clock.Now() }()
	opts := releaseimage.FetchOptions{Platform: r.platform}
	if req.verify != nil {
		// The puller's gate, so that a forced request is verified against
		// the very digest it then reads, a tag resolved once.
		opts.Verify = func(ctx context.Context, digest string) error {
			a.verifyErr = req.verify(ctx, digest)
			if req.force {
				return nil
			}
			return a.verifyErr
		}
	}
	e, err := r.puller.Fetch(ctx, req.ref, opts)
	var refused *releaseimage.VerificationError
	if errors.As(err, &refused) {
		a.image, a.verifyErr = req.ref.Repository()+"@"+refused.Digest, refused.Err
		return a
	}
	if err != nil {
		r.fetchFailed(ctx, a, req.ref, err)
		return a
	}
	a.image = req.ref.Repository() + "@" + e.Digest
	rel, err := payload.Load(e.Dir, req.load)
	if err != nil && e.FromCache {
		// What a crash or a full disk left in the cache: read the release
		// again rather than refuse it for good.
		klog.FromContext(ctx).Info("A cached release does not load; pulling it again", "image", a.image, "err", err)
		if e, err = r.pullAgain(ctx, req.ref, e.Digest); err != nil {
			r.fetchFailed(ctx, a, req.ref, err)
			return a
		}
		rel, err = payload.Load(e.Dir, req.load)
	}
	if err != nil {
		a.stage, a.err = clusterversion.ReasonLoadPayload, err
		return a
	}
	a.release = rel
	return a
}

// fetchFailed records a fetch that failed under the reason of the step
// that failed.
func (r *imageRetriever) fetchFailed(ctx context.Context, a *imageAnswer, ref releaseimage.Ref, err error) {
	a.stage, a.err = clusterversion.ReasonRetrievePayload, err
	var content *releaseimage.ContentError
	if errors.As(err, &content) {
		// The registry served it; what it holds is refused.
		a.stage = clusterversion.ReasonLoadPayload
	}
	if ctx.Err() == nil {
		klog.FromContext(ctx).Info("Retrieving a release image failed", "image", ref.String(), "err", err)
	}
}

// pullAgain drops digest's cache entry and pulls it anew. By digest and
// without the gate: that digest was judged by this retrieval already.
func (r *imageRetriever) pullAgain(ctx context.Context, ref releaseimage.Ref, digest string) (*releaseimage.Extracted, error) {
	if err := r.puller.Drop(digest); err != nil {
		return nil, err
	}
	byDigest, err := ref.WithDigest(digest)
	if err != nil {
		return nil, err
	}
	return r.puller.Fetch(ctx, byDigest, releaseimage.FetchOptions{Platform: r.platform})
}

// verifyMessage is the ReleaseAccepted message of a failed verification.
func verifyMessage(err error) string {
	var se *signature.Error
	if errors.As(err, &se) {
		return se.Message()
	}
	return "The update cannot be verified: " + err.Error()
}

// imageDigest is the digest an image pull spec names, "" for a tag, a
// directory's file:// or an invalid one.
func imageDigest(image string) string {
	ref, err := releaseimage.ParseRef(image)
	if err != nil {
		return ""
	}
	return ref.Digest()
}

// sameImage says whether a and b name one image by the same digest.
func sameImage(a, b string) bool {
	if a == b {
		return a != ""
	}
	d := imageDigest(a)
	return d != "" && d == imageDigest(b)
}

// errNoPuller is why a release named by image cannot be read by an
// operator built without a release cache.
var errNoPuller = fmt.Errorf("this operator reads no release images: it has no release cache (start --release-cache)")
