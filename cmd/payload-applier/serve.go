package main

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/cert"
)

// delegatedAuth builds the apiserver-delegating authenticator and
// authorizer, with the short caches and retries controllers use.
func delegatedAuth(kube kubernetes.Interface) (func(http.Handler) http.Handler, error) {
	backoff := &wait.Backoff{Duration: 500 * time.Millisecond, Factor: 1.5, Jitter: 0.2, Steps: 5}
	authn, _, err := authenticatorfactory.DelegatingAuthenticatorConfig{
		TokenAccessReviewClient:  kube.AuthenticationV1(),
		TokenAccessReviewTimeout: 10 * time.Second,
		WebhookRetryBackoff:      backoff,
		CacheTTL:                 10 * time.Second,
	}.New()
	if err != nil {
		return nil, fmt.Errorf("metrics authentication: %w", err)
	}
	authz, err := authorizerfactory.DelegatingAuthorizerConfig{
		SubjectAccessReviewClient: kube.AuthorizationV1(),
		AllowCacheTTL:             10 * time.Second,
		DenyCacheTTL:              10 * time.Second,
		WebhookRetryBackoff:       backoff,
	}.New()
	if err != nil {
		return nil, fmt.Errorf("metrics authorization: %w", err)
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			resp, ok, err := authn.AuthenticateRequest(r)
			if err != nil || !ok {
				http.Error(w, "Unauthorized: a bearer token the cluster accepts is required", http.StatusUnauthorized)
				return
			}
			decision, reason, err := authz.Authorize(r.Context(), authorizer.AttributesRecord{
				User: resp.User, Verb: "get", Path: r.URL.Path, ResourceRequest: false,
			})
			if err != nil || decision != authorizer.DecisionAllow {
				http.Error(w, fmt.Sprintf("Forbidden: %s may not get %s %s", resp.User.GetName(), r.URL.Path, reason), http.StatusForbidden)
				return
			}
			next.ServeHTTP(w, r)
		})
	}, nil
}

// isLoopback reports whether a listener bound to addr is reachable from
// this host only.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// servingCert loads the certificate and key files, or, when none is
// given, makes a self-signed one for this process, as controllers do
// before a serving-cert signer provides one.
func servingCert(certFile, keyFile string) (tls.Certificate, error) {
	if certFile != "" || keyFile != "" {
		if certFile == "" || keyFile == "" {
			return tls.Certificate{}, errors.New("--tls-cert-file and --tls-private-key-file go together")
		}
		return tls.LoadX509KeyPair(certFile, keyFile)
	}
	certPEM, keyPEM, err := cert.GenerateSelfSignedCertKey("payload-applier", nil, nil)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.X509KeyPair(certPEM, keyPEM)
}
