package releaseimage

import (
	"context"
	"errors"
	"os"
	"reflect"
	"testing"
)

var errUnsigned = errors.New("no signature")

// refuse is a FetchOptions.Verify that refuses every digest, and counts
// what it was asked.
type refuse struct{ asked []string }

func (r *refuse) verify(_ context.Context, digest string) error {
	r.asked = append(r.asked, digest)
	return errUnsigned
}

// TestAnUnverifiedDigestIsRefusedBeforeAnythingIsRead: the digest is
// judged before the registry is asked for any manifest or blob, and
// nothing of the refused release is written to the cache.
func TestAnUnverifiedDigestIsRefusedBeforeAnythingIsRead(t *testing.T) {
	r := newTestRegistry(t)
	img, _, err := Pack(writeDemo(t, "1.0.0", "a"), PackOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ref := r.push(t, "ocp/release:1.0.0", img)
	cache := t.TempDir()
	p := newTestPuller(t, Config{CacheDir: cache})

	for _, asked := range []Ref{ref, mustRef(t, r.host+"/ocp/release:1.0.0")} {
		r.reset()
		v := &refuse{}
		_, err = p.Fetch(context.Background(), asked, FetchOptions{Verify: v.verify})
		var ve *VerificationError
		if !errors.As(err, &ve) || !errors.Is(err, errUnsigned) || ve.Digest != ref.Digest() {
			t.Fatalf("fetch of %s: %v; want a VerificationError for %s", asked, err, ref.Digest())
		}
		if !reflect.DeepEqual(v.asked, []string{ref.Digest()}) {
			t.Errorf("fetch of %s: Verify was asked about %v, want the digest %s once", asked, v.asked, ref.Digest())
		}
		// A tag is resolved with one HEAD; a digest asks nothing of the
		// image (the API version check, GET /v2/, reads none of it).
		var want, got []string
		if !asked.ByDigest() {
			want = []string{"HEAD /v2/ocp/release/manifests/1.0.0"}
		}
		for _, req := range r.all() {
			if req != "GET /v2/" {
				got = append(got, req)
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("fetch of %s: the registry served %v, want %v", asked, got, want)
		}
		if des, err := os.ReadDir(cache); err != nil || len(des) != 0 {
			t.Errorf("fetch of %s: the cache holds %v (%v), want nothing", asked, des, err)
		}
	}
}

// TestACachedReleaseIsVerifiedToo: a release the cache holds because it
// was once read unverified is refused when verification is asked for.
func TestACachedReleaseIsVerifiedToo(t *testing.T) {
	r := newTestRegistry(t)
	ref := r.push(t, "ocp/release:1.0.0", imageOf(t, rawLayer(t, metadataEntries("1.0.0")...)))
	p := newTestPuller(t, Config{})
	if _, err := fetch(t, p, ref, ""); err != nil {
		t.Fatal(err)
	}
	v := &refuse{}
	var ve *VerificationError
	if _, err := p.Fetch(context.Background(), ref, FetchOptions{Verify: v.verify}); !errors.As(err, &ve) {
		t.Fatalf("a cached release fetched with a refusing verifier: %v, want a VerificationError", err)
	}
	e, err := p.Fetch(context.Background(), ref, FetchOptions{Verify: func(context.Context, string) error { return nil }})
	if err != nil || !e.FromCache {
		t.Errorf("a cached release that verifies: %+v, %v; want it from the cache", e, err)
	}
}

// TestPinnedReleasesAreNeverEvicted: however many other releases are
// fetched, a pinned one stays cached.
func TestPinnedReleasesAreNeverEvicted(t *testing.T) {
	r := newTestRegistry(t)
	p := newTestPuller(t, Config{MaxReleases: 2})
	running := r.push(t, "ocp/release:1.0.0", imageOf(t, rawLayer(t, metadataEntries("1.0.0")...)))
	if _, err := fetch(t, p, running, ""); err != nil {
		t.Fatal(err)
	}
	if err := p.Pin([]string{running.Digest()}); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"1.0.1", "1.0.2", "1.0.3", "1.0.4"} {
		if _, err := fetch(t, p, r.push(t, "ocp/release:"+v, imageOf(t, rawLayer(t, metadataEntries(v)...))), ""); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := p.Cached(running.Digest(), ""); !ok {
		t.Errorf("the pinned release was evicted; the cache holds %v", cacheNames(t, p))
	}
	if got := cacheNames(t, p); len(got) != 2 {
		t.Errorf("the cache holds %v, want the pinned release and the newest", got)
	}
	if err := p.Pin([]string{"latest"}); err == nil {
		t.Error("Pin accepted something that is not a digest")
	}
}

// TestADroppedReleaseIsPulledAgain: Drop takes a release out of the
// cache, and only a digest.
func TestADroppedReleaseIsPulledAgain(t *testing.T) {
	r := newTestRegistry(t)
	ref := r.push(t, "ocp/release:1.0.0", imageOf(t, rawLayer(t, metadataEntries("1.0.0")...)))
	p := newTestPuller(t, Config{})
	if _, err := fetch(t, p, ref, ""); err != nil {
		t.Fatal(err)
	}
	if err := p.Drop(ref.Digest()); err != nil {
		t.Fatal(err)
	}
	if _, ok := p.Cached(ref.Digest(), ""); ok {
		t.Error("a dropped release is still cached")
	}
	if e, err := fetch(t, p, ref, ""); err != nil || e.FromCache {
		t.Errorf("fetch after Drop: %+v, %v; want it pulled again", e, err)
	}
	if err := p.Drop("../" + entryName(ref.Digest())); err == nil {
		t.Error("Drop accepted a path")
	}
}
