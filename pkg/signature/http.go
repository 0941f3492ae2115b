package signature

import (
	"crypto/x509"
	"fmt"
	"net/http"
	"net/url"

	"github.com/openshift/library-go/pkg/verify/store/sigstore"

	"github.com/payload-applier/payload-applier/pkg/egress"
)

// parseStoreURL accepts the http and https stores library-go reads. The
// file:// stores it also reads are for its tests, and are not read here.
func parseStoreURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, err
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%q is not an http(s) URL", s)
	}
	return u, nil
}

// StoreClient returns the client signature stores are read with: it
// trusts roots (nil: the system's), gives up on a request after
// RequestTimeout, and refuses a body over MaxSignatureBytes, since
// library-go's store means to read at most 50 KiB but reads the whole
// body. Stores take no credentials.
func (l Limits) StoreClient(roots *x509.CertPool) *http.Client {
	l = l.withDefaults()
	return egress.Policy{
		Timeout: l.RequestTimeout,
		MaxBody: l.MaxSignatureBytes,
		Answer:  "a signature",
		RootCAs: roots,
	}.Client()
}

func (l Limits) httpClientFor(roots *x509.CertPool) sigstore.HTTPClient {
	client := l.StoreClient(roots)
	return func() (*http.Client, error) { return client, nil }
}
