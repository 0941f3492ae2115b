package signature

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	"github.com/openshift/library-go/pkg/manifest"
	"github.com/openshift/library-go/pkg/verify"
	"github.com/openshift/library-go/pkg/verify/store"
	"golang.org/x/crypto/openpgp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/payload-applier/payload-applier/pkg/payload"
)

// ReasonImageVerificationFailed is the ReleaseAccepted reason of an update
// whose release cannot be verified, as the CVO names it.
const ReasonImageVerificationFailed = "ImageVerificationFailed"

// ErrNotConfigured is why Verify refuses every digest when the release the
// cluster runs carries no verification ConfigMap: the CVO then holds that
// no release can be verified, and only a forced update goes ahead.
var ErrNotConfigured = errors.New("verification is not possible: the current release carries no ConfigMap annotated " + payload.VerificationConfigMapAnnotation)

// Error is a digest that failed verification.
type Error struct {
	// Digest is the release digest Verify was asked about.
	Digest string
	// Err says why: ErrNotConfigured, or library-go's verdict followed by
	// what the signature sources answered.
	Err error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Reason is the ReleaseAccepted reason for e.
func (e *Error) Reason() string { return ReasonImageVerificationFailed }

// Message is the ReleaseAccepted message for e, worded as the CVO's.
func (e *Error) Message() string { return "The update cannot be verified: " + e.Error() }

// Limits bound what one Verify reads and how long it waits, whatever a
// signature store does. Zero fields take the DefaultLimits values.
type Limits struct {
	// Timeout bounds one Verify, every lookup included. Default 2m: the
	// CVO gives verification half of its 4-minute payload retrieval.
	Timeout time.Duration
	// RequestTimeout bounds one request to a signature store, its body
	// included. Default 30s.
	RequestTimeout time.Duration
	// MaxSignatureBytes bounds one signature as stored, and the content it
	// signs once decompressed. Default 64 KiB; an atomic container
	// signature is a few hundred bytes.
	MaxSignatureBytes int64
	// MaxSignatures bounds the signatures one Verify examines from each
	// source: the cluster's ConfigMaps, and each store. A source that
	// brings more is cut off there and the lookup goes on to the next, so
	// one source cannot hide the others; in all, a Verify examines at most
	// MaxSignatures times the sources. Default 100; library-go reads at most
	// 9 from each store, but a ConfigMap may hold any number.
	MaxSignatures int
}

// DefaultLimits returns the limits a zero Limits stands for.
func DefaultLimits() Limits {
	return Limits{Timeout: 2 * time.Minute, RequestTimeout: 30 * time.Second, MaxSignatureBytes: 64 << 10, MaxSignatures: 100}
}

func (l Limits) withDefaults() Limits {
	def := DefaultLimits()
	if l.Timeout <= 0 {
		l.Timeout = def.Timeout
	}
	if l.RequestTimeout <= 0 {
		l.RequestTimeout = def.RequestTimeout
	}
	if l.MaxSignatureBytes <= 0 {
		l.MaxSignatureBytes = def.MaxSignatureBytes
	}
	if l.MaxSignatures <= 0 {
		l.MaxSignatures = def.MaxSignatures
	}
	return l
}

// Options are where Verify looks beyond the release's own stores.
type Options struct {
	// ConfigMaps reads the signature ConfigMaps in openshift-config-managed
	// and the CA bundles of SignatureStores in openshift-config. nil:
	// Verify reads the stores only, and a SignatureStore naming a CA is
	// not used.
	ConfigMaps corev1client.ConfigMapsGetter
	// SignatureStores is the ClusterVersion's spec.signatureStores. When it
	// holds any, they replace the stores the release names; empty means the
	// release's stores, as the API documents.
	SignatureStores []configv1.SignatureStore
	// Limits bound each Verify.
	Limits Limits
}

// Verifier checks release digests against the keyrings of one release.
type Verifier struct {
	// source names the verification ConfigMap and where it was read.
	source string
	// stores are the release's store-* URLs, by key, in key order.
	stores []releaseStore
	// keyrings are the release's keyrings, in name order.
	keyrings []openpgp.EntityList
	opts     Options
	// verify is library-go's verifier over the keyrings, fed by lookup.
	verify verify.Interface
}

type releaseStore struct {
	key string
	url *url.URL
}

// FromRelease returns the verifier that release configures, and nil, nil
// when it carries no verification ConfigMap: then nothing can be verified
// (Verify on a nil *Verifier returns ErrNotConfigured), which the caller
// should show as such.
//
// Pass the release the cluster runs, not the target of an update. The CVO
// loads its verifier from the payload it is running, at start, and checks
// every update with it: the keys a cluster already trusts decide whether it
// may move on, and a target that changes the keys is checked with the old
// ones; its own take effect once it runs.
//
// FromRelease reads nothing from the cluster. Build a new Verifier when
// spec.signatureStores changes; it only parses the keyrings.
func FromRelease(release *payload.Release, opts Options) (*Verifier, error) {
	m := verificationConfigMap(release)
	if m == nil {
		return nil, nil
	}
	opts.Limits = opts.Limits.withDefaults()
	// Only its keyrings are used: lookup replaces the stores it builds.
	lm, err := m.Library()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", m.Position(), err)
	}
	lib, err := verify.NewFromManifests([]manifest.Manifest{lm}, opts.Limits.httpClientFor(nil))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", m.Position(), err)
	}
	if lib == nil {
		return nil, fmt.Errorf("%s: library-go does not read it as a ConfigMap", m.Position())
	}
	v := &Verifier{
		source: fmt.Sprintf("ConfigMap %s/%s (%s)", m.Obj.GetNamespace(), m.Obj.GetName(), m.Position()),
		opts:   opts,
	}
	// library-go has checked these values; it keeps the parsed stores to itself.
	data, _, _ := unstructured.NestedStringMap(m.Obj.Object, "data")
	for key, value := range data {
		if !strings.HasPrefix(key, "store-") {
			continue
		}
		u, err := url.Parse(strings.TrimSpace(value))
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", m.Position(), key, err)
		}
		v.stores = append(v.stores, releaseStore{key: key, url: u})
	}
	sort.Slice(v.stores, func(i, j int) bool { return v.stores[i].key < v.stores[j].key })
	keyrings := lib.Verifiers()
	names := make([]string, 0, len(keyrings))
	for name := range keyrings {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		v.keyrings = append(v.keyrings, keyrings[name])
	}
	v.verify = verify.NewReleaseVerifier(keyrings, &lookup{v: v})
	return v, nil
}

// verificationConfigMap returns the first ConfigMap the release keeps that
// carries the annotation, as library-go picks it. A delete manifest is
// skipped: it names a ConfigMap to remove, not the release's keys.
func verificationConfigMap(release *payload.Release) *payload.Manifest {
	for _, m := range release.Manifests {
		if m.GVK.Group != "" || m.GVK.Kind != "ConfigMap" || m.Delete() {
			continue
		}
		if _, ok := m.Obj.GetAnnotations()[payload.VerificationConfigMapAnnotation]; ok {
			return m
		}
	}
	return nil
}

// Verify returns nil when every keyring of the release has signed digest
// ("sha256:<hex>"), and an *Error otherwise. It returns within
// Limits.Timeout, or sooner when ctx ends. A nil Verifier returns an
// *Error wrapping ErrNotConfigured.
func (v *Verifier) Verify(ctx context.Context, digest string) error {
	if v == nil {
		return &Error{Digest: digest, Err: ErrNotConfigured}
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(parent, v.opts.Limits.Timeout)
	defer cancel()
	err := v.verify.Verify(ctx, digest)
	if err == nil {
		return nil
	}
	detail := v.causes(err, ctx.Err())
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded) && parent.Err() == nil:
		detail += fmt.Sprintf(" (gave up after %s)", v.opts.Limits.Timeout)
	case ctx.Err() != nil:
		detail += fmt.Sprintf(" (%v)", ctx.Err())
	}
	return &Error{Digest: digest, Err: fmt.Errorf("%w: %s", err, detail)}
}

// String says which keys must sign and where signatures are looked up.
func (v *Verifier) String() string {
	if v == nil {
		return "no release verification configured"
	}
	return fmt.Sprintf("%s: %v", v.source, v.verify)
}

// maxCauses bounds how many of the sources' answers an Error quotes.
const maxCauses = 3

// signatureN tells apart answers that differ only in which signature-N
// failed: library-go goes on to the next N after most failures.
var signatureN = regexp.MustCompile(`signature-[0-9]+`)

// causes summarizes what the sources answered, which library-go keeps in
// the error it wraps but leaves out of its text: the distinct failures and
// where it looked, or that nothing was found there. The bare error of the
// ended context, when there is one, goes without saying.
func (v *Verifier) causes(err, ended error) string {
	where := (&lookup{v: v}).String()
	notFound := "no signature found in " + where
	var agg utilerrors.Aggregate
	if !errors.As(err, &agg) {
		return notFound
	}
	var distinct []string
	seen := map[string]bool{}
	for _, e := range agg.Errors() {
		// library-go prefixes each answer with a timestamp.
		if inner := errors.Unwrap(e); inner != nil {
			e = inner
		}
		key := signatureN.ReplaceAllString(e.Error(), "signature-N")
		if errors.Is(e, store.ErrNotFound) || e == ended || seen[key] {
			continue
		}
		seen[key] = true
		distinct = append(distinct, e.Error())
	}
	if len(distinct) == 0 {
		return notFound
	}
	if len(distinct) > maxCauses {
		distinct = append(distinct[:maxCauses], fmt.Sprintf("and %d more", len(distinct)-maxCauses))
	}
	return strings.Join(distinct, "; ") + " (looked in " + where + ")"
}
