package signature

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/openshift/library-go/pkg/verify/store/sigstore"
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

// httpClientFor returns a client for signature stores that trusts roots
// (nil: the system's), gives up on a request after RequestTimeout, and
// refuses a body over MaxSignatureBytes: library-go's store means to read
// at most 50 KiB but reads the whole body.
func (l Limits) httpClientFor(roots *x509.CertPool) sigstore.HTTPClient {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.TLSClientConfig = &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	client := &http.Client{
		Timeout:   l.RequestTimeout,
		Transport: &sizeLimit{next: transport, max: l.MaxSignatureBytes},
	}
	return func() (*http.Client, error) { return client, nil }
}

// sizeLimit cuts a response body off after max bytes, with an error.
type sizeLimit struct {
	next *http.Transport
	max  int64
}

func (t *sizeLimit) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	tooLarge := fmt.Errorf("the answer of %s is over the %d-byte limit of a signature", req.URL.Redacted(), t.max)
	// Only a success is read as a signature; an error page may be larger.
	if resp.StatusCode/100 == 2 && resp.ContentLength > t.max {
		resp.Body.Close()
		return nil, tooLarge
	}
	resp.Body = &limitedBody{ReadCloser: resp.Body, left: t.max, tooLarge: tooLarge}
	return resp, nil
}

// CloseIdleConnections lets http.Client.CloseIdleConnections reach the transport.
func (t *sizeLimit) CloseIdleConnections() { t.next.CloseIdleConnections() }

type limitedBody struct {
	io.ReadCloser
	left     int64
	tooLarge error
}

// Read passes on up to left bytes, and fails once the body has more.
func (b *limitedBody) Read(p []byte) (int, error) {
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.ReadCloser.Read(p)
	if int64(n) > b.left {
		n = int(b.left)
		b.left = 0
		return n, b.tooLarge
	}
	b.left -= int64(n)
	return n, err
}
