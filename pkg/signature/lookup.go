package signature

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/openshift/library-go/pkg/verify/store"
	"github.com/openshift/library-go/pkg/verify/store/configmap"
	"github.com/openshift/library-go/pkg/verify/store/parallel"
	"github.com/openshift/library-go/pkg/verify/store/serial"
	"github.com/openshift/library-go/pkg/verify/store/sigstore"
	"golang.org/x/crypto/openpgp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Where the cluster keeps signatures and the CAs of signature stores.
const (
	// SignaturesNamespace holds ConfigMaps of signatures, labelled SignaturesLabel.
	SignaturesNamespace = configmap.NamespaceLabelConfigMap
	SignaturesLabel     = configmap.ReleaseLabelConfigMap
	// CANamespace holds the ConfigMaps spec.signatureStores[].ca names; the
	// PEM bundle is under CAKey.
	CANamespace = "openshift-config"
	CAKey       = "ca.crt"
)

// lookup finds a digest's signatures where the CVO does: the cluster's
// ConfigMaps first, then the stores, all of them at once. Each source has
// its own budget of Limits.MaxSignatures, so that one stuffed source cannot
// hide the others. It builds its stores on each call, so that a signature
// ConfigMap or a CA created since the last call counts at once.
type lookup struct {
	v *Verifier
}

func (l *lookup) Signatures(ctx context.Context, name, digest string, fn store.Callback) error {
	limits := l.v.opts.Limits
	var sources []store.Store
	if l.v.opts.ConfigMaps != nil {
		configMaps := &bounded{Store: configmap.NewStore(l.v.opts.ConfigMaps, nil), where: l.configMapsWhere(), limits: limits, keyrings: l.v.keyrings}
		sources = append(sources, &errorIsAnAnswer{Store: configMaps})
	}
	remote, clients := l.remoteStores(ctx)
	defer func() {
		for _, c := range clients {
			c.CloseIdleConnections()
		}
	}()
	sources = append(sources, &parallel.Store{Stores: remote})
	return (&serial.Store{Stores: sources}).Signatures(ctx, name, digest, fn)
}

func (l *lookup) configMapsWhere() string {
	return fmt.Sprintf("ConfigMaps in %s labelled %s", SignaturesNamespace, SignaturesLabel)
}

func (l *lookup) String() string {
	var where []string
	if l.v.opts.ConfigMaps != nil {
		where = append(where, l.configMapsWhere())
	}
	var stores []string
	if len(l.v.opts.SignatureStores) > 0 {
		for _, s := range l.v.opts.SignatureStores {
			stores = append(stores, s.URL)
		}
		where = append(where, "spec.signatureStores "+strings.Join(stores, ", "))
	} else {
		for _, s := range l.v.stores {
			stores = append(stores, s.url.String())
		}
		where = append(where, "the release's stores "+strings.Join(stores, ", "))
	}
	return strings.Join(where, ", then ")
}

// remoteStores returns the stores to read, and the HTTP clients to close
// when done. A store that cannot be used is kept as one that says why, so
// that the verdict names it.
func (l *lookup) remoteStores(ctx context.Context) ([]store.Store, []*http.Client) {
	limits := l.v.opts.Limits
	var stores []store.Store
	var clients []*http.Client
	add := func(where string, u string, roots *x509.CertPool) {
		parsed, err := parseStoreURL(u)
		if err != nil {
			stores = append(stores, unusable{where: where, err: err})
			return
		}
		client := limits.httpClientFor(roots)
		c, _ := client()
		clients = append(clients, c)
		stores = append(stores, &bounded{Store: &sigstore.Store{URI: parsed, HTTPClient: client}, where: parsed.Redacted(), limits: limits, keyrings: l.v.keyrings})
	}
	if len(l.v.opts.SignatureStores) == 0 {
		for _, s := range l.v.stores {
			add(s.key, s.url.String(), nil)
		}
		return stores, clients
	}
	for i, s := range l.v.opts.SignatureStores {
		where := fmt.Sprintf("spec.signatureStores[%d] %s", i, s.URL)
		roots, err := l.caBundle(ctx, s.CA.Name)
		if err != nil {
			// The API's rule: a store whose CA cannot be read is not honoured.
			stores = append(stores, unusable{where: where, err: err})
			continue
		}
		add(where, s.URL, roots)
	}
	return stores, clients
}

// caBundle reads the CA bundle of a spec.signatureStores entry; nil, nil
// means the system roots.
func (l *lookup) caBundle(ctx context.Context, name string) (*x509.CertPool, error) {
	if name == "" {
		return nil, nil
	}
	what := fmt.Sprintf("CA ConfigMap %s/%s", CANamespace, name)
	if l.v.opts.ConfigMaps == nil {
		return nil, fmt.Errorf("%s: no cluster client to read it", what)
	}
	cm, err := l.v.opts.ConfigMaps.ConfigMaps(CANamespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	pem, ok := cm.Data[CAKey]
	if !ok {
		return nil, fmt.Errorf("%s has no key %s", what, CAKey)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM([]byte(pem)) {
		return nil, fmt.Errorf("%s: %s holds no PEM certificate", what, CAKey)
	}
	return roots, nil
}

// unusable is a configured store that cannot be read; it answers with why.
type unusable struct {
	where string
	err   error
}

func (s unusable) Signatures(ctx context.Context, _, _ string, fn store.Callback) error {
	why := fmt.Errorf("%s not used: %w", s.where, s.err)
	// Returned as well: library-go's parallel store may finish before it
	// reads an answer given through fn, but it keeps a store's error.
	if _, err := fn(ctx, nil, why); err != nil {
		return err
	}
	return why
}

func (s unusable) String() string { return s.where + " (not used)" }

// errorIsAnAnswer reports the failure of a source, a failed List of the
// signature ConfigMaps or their cut-off, as one more answer instead of an
// error: library-go's serial store would stop there, and the stores may
// still hold the signatures.
type errorIsAnAnswer struct {
	store.Store
}

func (s *errorIsAnAnswer) Signatures(ctx context.Context, name, digest string, fn store.Callback) error {
	var fromCallback error
	err := s.Store.Signatures(ctx, name, digest, func(ctx context.Context, signature []byte, errIn error) (bool, error) {
		done, err := fn(ctx, signature, errIn)
		fromCallback = err
		return done, err
	})
	if err == nil || fromCallback != nil || ctx.Err() != nil {
		return err
	}
	// A cut-off already names its source.
	if !errors.Is(err, errTooMany) {
		err = fmt.Errorf("%s: %w", s.Store, err)
	}
	_, err = fn(ctx, nil, err)
	return err
}

// errTooMany ends a source that has brought Limits.MaxSignatures.
var errTooMany = errors.New("too many signatures")

// bounded passes on only the signatures of one source within the limits:
// at most MaxSignatures of them, each and what it signs at most
// MaxSignatureBytes. Past its budget the source ends with an error naming
// it, where. A signature a key of keyrings made outside the key's lifetime
// is refused here, as library-go would accept it. library-go reads the signed content whole before it checks
// the signature, and OpenPGP content may be compressed, 32 levels deep, so
// a small signature from an unauthenticated store could otherwise expand
// without bound.
type bounded struct {
	store.Store
	where    string
	limits   Limits
	keyrings []openpgp.EntityList
}

func (s *bounded) Signatures(ctx context.Context, name, digest string, fn store.Callback) error {
	// Stores call back from the goroutine that called them, one at a time.
	seen := 0
	return s.Store.Signatures(ctx, name, digest, func(ctx context.Context, signature []byte, errIn error) (bool, error) {
		if errIn != nil || signature == nil {
			return fn(ctx, signature, errIn)
		}
		seen++
		if seen > s.limits.MaxSignatures {
			return false, fmt.Errorf("%s: %w: stopped after examining %d", s.where, errTooMany, s.limits.MaxSignatures)
		}
		if err := checkSize(signature, s.limits.MaxSignatureBytes); err != nil {
			return fn(ctx, nil, err)
		}
		if err := checkKeyLifetime(signature, s.keyrings, s.limits.MaxSignatureBytes); err != nil {
			return fn(ctx, nil, err)
		}
		return fn(ctx, signature, nil)
	})
}

// checkSize refuses a signature larger than max, or one whose signed
// content is, reading no more than max+1 bytes of that content.
func checkSize(signature []byte, max int64) error {
	if int64(len(signature)) > max {
		return fmt.Errorf("a signature of %d bytes is over the %d-byte limit", len(signature), max)
	}
	// An empty keyring: this reads the content, library-go checks who signed it.
	md, err := openpgp.ReadMessage(bytes.NewReader(signature), openpgp.EntityList{}, nil, nil)
	if err != nil {
		return nil // library-go will say why it cannot read it
	}
	n, _ := io.Copy(io.Discard, io.LimitReader(md.UnverifiedBody, max+1))
	if n > max {
		return fmt.Errorf("a signature signs more than the %d-byte limit", max)
	}
	return nil
}
