package signature_test

import (
	"context"
	"crypto/sha256"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/payload-applier/payload-applier/pkg/payload"
	"github.com/payload-applier/payload-applier/pkg/payload/payloadtest"
	"github.com/payload-applier/payload-applier/pkg/signature"
	"github.com/payload-applier/payload-applier/pkg/signature/signaturetest"
)

var (
	digestA = fmt.Sprintf("sha256:%x", sha256.Sum256([]byte("release A")))
	digestB = fmt.Sprintf("sha256:%x", sha256.Sum256([]byte("release B")))
)

// signedBy returns k's signature that the image with digest is a release,
// made as `release sign` makes it.
func signedBy(t testing.TB, k *signaturetest.Key, digest string) []byte {
	t.Helper()
	return k.Sign(t, signature.Claim{Identity: "quay.io/example/release", Digest: digest, Creator: "test", Time: time.Now()})
}

// trace records, in order, what the signature sources were asked.
type trace struct {
	mu     sync.Mutex
	events []string
}

func (tr *trace) add(e string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.events = append(tr.events, e)
}

func (tr *trace) get() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return append([]string(nil), tr.events...)
}

// sigStore is a signature store served over HTTP from a directory, as any
// static server would serve the one `release sign --store` writes.
type sigStore struct {
	*httptest.Server
	dir   string
	trace *trace
	name  string
}

func newSigStore(t *testing.T, name string, tr *trace) *sigStore {
	t.Helper()
	s := &sigStore{dir: t.TempDir(), trace: tr, name: name}
	files := http.FileServer(http.Dir(s.dir))
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.trace.add(s.name + " GET " + r.URL.Path)
		files.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *sigStore) add(t *testing.T, digest string, sig []byte) {
	t.Helper()
	if _, err := signature.WriteToStore(s.dir, digest, sig); err != nil {
		t.Fatal(err)
	}
}

// requests returns what the store was asked, in order.
func (s *sigStore) requests() []string {
	var out []string
	for _, e := range s.trace.get() {
		if strings.HasPrefix(e, s.name+" GET ") {
			out = append(out, e)
		}
	}
	return out
}

// cluster is a fake cluster holding signature ConfigMaps, recording each
// List of them in tr. Objects are added with add.
func cluster(t testing.TB, tr *trace, objs ...runtime.Object) *fake.Clientset {
	t.Helper()
	client := fake.NewSimpleClientset(objs...)
	client.PrependReactor("list", "configmaps", func(a clienttesting.Action) (bool, runtime.Object, error) {
		tr.add("list configmaps in " + a.GetNamespace())
		return false, nil, nil
	})
	return client
}

// signatureConfigMap is the ConfigMap `release sign --configmap` writes.
func signatureConfigMap(t testing.TB, digest string, sigs ...[]byte) *corev1.ConfigMap {
	t.Helper()
	var cm *corev1.ConfigMap
	for _, sig := range sigs {
		var err error
		if cm, err = signature.AddToConfigMap(cm, digest, sig); err != nil {
			t.Fatal(err)
		}
	}
	return cm
}

func newVerifier(t *testing.T, release *payload.Release, opts signature.Options) *signature.Verifier {
	t.Helper()
	v, err := signature.FromRelease(release, opts)
	if err != nil {
		t.Fatal(err)
	}
	if v == nil {
		t.Fatal("FromRelease found no verification ConfigMap")
	}
	return v
}

// refused checks that err is a verification failure whose message holds want.
func refused(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil {
		t.Fatalf("Verify accepted the digest; want a refusal saying %q", want)
	}
	var verr *signature.Error
	if !errors.As(err, &verr) {
		t.Fatalf("Verify returned %T (%v), not a *signature.Error", err, err)
	}
	if verr.Reason() != signature.ReasonImageVerificationFailed || !strings.HasPrefix(verr.Message(), "The update cannot be verified: ") {
		t.Errorf("reason %q, message %q: want ImageVerificationFailed and the CVO's wording", verr.Reason(), verr.Message())
	}
	if !strings.Contains(err.Error(), want) {
		t.Errorf("refusal says %q; want it to say %q", err, want)
	}
}

func TestVerifyLooksInTheClusterConfigMapsFirstThenTheStores(t *testing.T) {
	alice := signaturetest.MakeKey(t, "alice", "")
	sig := signedBy(t, alice, digestA)
	sigPath := "/" + strings.Replace(digestA, ":", "=", 1) + "/signature-1"

	t.Run("a signature in a ConfigMap is found without asking the store", func(t *testing.T) {
		tr := &trace{}
		store := newSigStore(t, "store", tr)
		client := cluster(t, tr, signatureConfigMap(t, digestA, sig))
		v := newVerifier(t, signaturetest.Release(t, signaturetest.VerifierFor(t, []string{store.URL}, alice)),
			signature.Options{ConfigMaps: client.CoreV1()})
		if err := v.Verify(context.Background(), digestA); err != nil {
			t.Fatal(err)
		}
		if got, want := strings.Join(tr.get(), "; "), "list configmaps in openshift-config-managed"; got != want {
			t.Errorf("asked %q, want %q", got, want)
		}
	})

	t.Run("a signature in a store is found after the ConfigMaps were listed", func(t *testing.T) {
		tr := &trace{}
		store := newSigStore(t, "store", tr)
		store.add(t, digestA, sig)
		client := cluster(t, tr)
		v := newVerifier(t, signaturetest.Release(t, signaturetest.VerifierFor(t, []string{store.URL}, alice)),
			signature.Options{ConfigMaps: client.CoreV1()})
		if err := v.Verify(context.Background(), digestA); err != nil {
			t.Fatal(err)
		}
		// The store may be asked for signature-2 while signature-1 is checked.
		want := "list configmaps in openshift-config-managed; store GET " + sigPath
		if got := strings.Join(tr.get(), "; "); !strings.HasPrefix(got, want) {
			t.Errorf("asked %q, want %q first", got, want)
		}
	})

	t.Run("a ConfigMap for another digest is not read as this one's", func(t *testing.T) {
		tr := &trace{}
		store := newSigStore(t, "store", tr)
		client := cluster(t, tr, signatureConfigMap(t, digestB, signedBy(t, alice, digestB)))
		v := newVerifier(t, signaturetest.Release(t, signaturetest.VerifierFor(t, []string{store.URL}, alice)),
			signature.Options{ConfigMaps: client.CoreV1()})
		refused(t, v.Verify(context.Background(), digestA), "no signature found in ConfigMaps in openshift-config-managed")
		if len(store.requests()) == 0 {
			t.Error("the store was not asked after the ConfigMaps had nothing")
		}
	})
}

func TestVerifyRefuses(t *testing.T) {
	alice := signaturetest.MakeKey(t, "alice", "")
	bob := signaturetest.MakeKey(t, "bob", "")

	tests := map[string]struct {
		trusted    []*signaturetest.Key
		configMaps []runtime.Object
		store      map[string][][]byte // digest to signatures
		want       string
	}{
		"an unsigned release": {
			trusted: []*signaturetest.Key{alice},
			want:    "unable to verify " + digestA + " against keyrings: verifier-public-key-alice: no signature found",
		},
		"a release signed by a key the release does not trust": {
			trusted:    []*signaturetest.Key{alice},
			configMaps: []runtime.Object{signatureConfigMap(t, digestA, signedBy(t, bob, digestA))},
			store:      map[string][][]byte{digestA: {signedBy(t, bob, digestA)}},
			want:       "verifier-public-key-alice: invalid signature",
		},
		"a signature of another digest, filed under this one": {
			trusted:    []*signaturetest.Key{alice},
			configMaps: []runtime.Object{signatureConfigMap(t, digestA, signedBy(t, alice, digestB))},
			store:      map[string][][]byte{digestA: {signedBy(t, alice, digestB)}},
			want:       "signature digest does not match",
		},
		"two keyrings, one of which signed": {
			trusted:    []*signaturetest.Key{alice, bob},
			configMaps: []runtime.Object{signatureConfigMap(t, digestA, signedBy(t, alice, digestA))},
			store:      map[string][][]byte{digestA: {signedBy(t, alice, digestA)}},
			want:       "against keyrings: verifier-public-key-bob",
		},
		"a signature that is not OpenPGP": {
			trusted:    []*signaturetest.Key{alice},
			configMaps: []runtime.Object{signatureConfigMap(t, digestA, []byte("not a signature"))},
			want:       "could not read the message",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			tr := &trace{}
			store := newSigStore(t, "store", tr)
			for digest, sigs := range tc.store {
				for _, sig := range sigs {
					store.add(t, digest, sig)
				}
			}
			client := cluster(t, tr, tc.configMaps...)
			v := newVerifier(t, signaturetest.Release(t, signaturetest.VerifierFor(t, []string{store.URL}, tc.trusted...)),
				signature.Options{ConfigMaps: client.CoreV1()})
			refused(t, v.Verify(context.Background(), digestA), tc.want)
		})
	}
}

func TestVerifyAcceptsWhenEveryKeyringSigned(t *testing.T) {
	alice := signaturetest.MakeKey(t, "alice", "")
	bob := signaturetest.MakeKey(t, "bob", "")
	tr := &trace{}
	store := newSigStore(t, "store", tr)
	store.add(t, digestA, signedBy(t, bob, digestA))
	// One signature in the cluster, the other in the store: sources add up.
	client := cluster(t, tr, signatureConfigMap(t, digestA, signedBy(t, alice, digestA)))
	v := newVerifier(t, signaturetest.Release(t, signaturetest.VerifierFor(t, []string{store.URL}, alice, bob)),
		signature.Options{ConfigMaps: client.CoreV1()})
	if err := v.Verify(context.Background(), digestA); err != nil {
		t.Fatal(err)
	}
	refused(t, v.Verify(context.Background(), digestB), "no signature found")
}

func TestSignatureStoresReplaceTheReleaseStores(t *testing.T) {
	alice := signaturetest.MakeKey(t, "alice", "")
	sig := signedBy(t, alice, digestA)

	t.Run("the release's store is not asked, though it holds the signature", func(t *testing.T) {
		tr := &trace{}
		releaseStore := newSigStore(t, "release", tr)
		releaseStore.add(t, digestA, sig)
		custom := newSigStore(t, "custom", tr)
		v := newVerifier(t, signaturetest.Release(t, signaturetest.VerifierFor(t, []string{releaseStore.URL}, alice)),
			signature.Options{SignatureStores: []configv1.SignatureStore{{URL: custom.URL}}})
		refused(t, v.Verify(context.Background(), digestA), "no signature found in spec.signatureStores "+custom.URL)
		if got := releaseStore.requests(); len(got) != 0 {
			t.Errorf("the release's store was asked: %v", got)
		}
		if len(custom.requests()) == 0 {
			t.Error("spec.signatureStores was not asked")
		}
	})

	t.Run("a signature in spec.signatureStores verifies", func(t *testing.T) {
		tr := &trace{}
		releaseStore := newSigStore(t, "release", tr)
		custom := newSigStore(t, "custom", tr)
		custom.add(t, digestA, sig)
		v := newVerifier(t, signaturetest.Release(t, signaturetest.VerifierFor(t, []string{releaseStore.URL}, alice)),
			signature.Options{SignatureStores: []configv1.SignatureStore{{URL: custom.URL}}})
		if err := v.Verify(context.Background(), digestA); err != nil {
			t.Fatal(err)
		}
		if got := releaseStore.requests(); len(got) != 0 {
			t.Errorf("the release's store was asked: %v", got)
		}
	})
}

func TestSignatureStoreCA(t *testing.T) {
	alice := signaturetest.MakeKey(t, "alice", "")
	dir := t.TempDir()
	if _, err := signature.WriteToStore(dir, digestA, signedBy(t, alice, digestA)); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.FileServer(http.Dir(dir)))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes are the point
	srv.StartTLS()
	t.Cleanup(srv.Close)
	caPEM := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))
	release := signaturetest.Release(t, signaturetest.VerifierFor(t, []string{deadStore}, alice))
	caConfigMap := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "openshift-config", Name: "store-ca"}, Data: map[string]string{"ca.crt": caPEM}}

	tests := map[string]struct {
		objs []runtime.Object
		ca   string
		want string // "" to accept
	}{
		"the store's certificate is checked against the CA ConfigMap": {objs: []runtime.Object{caConfigMap}, ca: "store-ca"},
		"a store whose CA ConfigMap is missing is not used": {
			ca: "store-ca", want: `spec.signatureStores[0] ` + srv.URL + ` not used: CA ConfigMap openshift-config/store-ca: configmaps "store-ca" not found`,
		},
		"a store without a CA is checked against the system roots": {want: "certificate signed by unknown authority"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			client := cluster(t, &trace{}, tc.objs...)
			v := newVerifier(t, release, signature.Options{ConfigMaps: client.CoreV1(),
				SignatureStores: []configv1.SignatureStore{{URL: srv.URL, CA: configv1.ConfigMapNameReference{Name: tc.ca}}}})
			err := v.Verify(context.Background(), digestA)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			refused(t, err, tc.want)
		})
	}
}

func TestNoVerificationConfigMap(t *testing.T) {
	dir := payloadtest.WriteRelease(t, t.TempDir(), "1.0.0", nil, map[string]string{
		"0000_50_demo_00_cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: demo\n  annotations:\n    include.release.openshift.io/self-managed-high-availability: \"true\"\n",
	})
	release, err := payload.Load(dir, payload.DefaultLoadOptions())
	if err != nil {
		t.Fatal(err)
	}
	v, err := signature.FromRelease(release, signature.Options{})
	if v != nil || err != nil {
		t.Fatalf("FromRelease = %v, %v; want nil, nil for a release without a verification ConfigMap", v, err)
	}
	err = v.Verify(context.Background(), digestA)
	if !errors.Is(err, signature.ErrNotConfigured) {
		t.Fatalf("Verify on no verifier = %v, want ErrNotConfigured", err)
	}
	refused(t, err, "verification is not possible")
}

func TestFromReleaseRefusesAVerificationConfigMapWithoutKeys(t *testing.T) {
	dir := payloadtest.WriteRelease(t, t.TempDir(), "1.0.0", nil, map[string]string{
		"0000_90_keys_00_cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: release-verification\n  namespace: openshift-config-managed\n  annotations:\n    include.release.openshift.io/self-managed-high-availability: \"true\"\n    release.openshift.io/verification-config-map: \"\"\ndata:\n  store-a: https://example.com/sigs\n",
	})
	release, err := payload.Load(dir, payload.DefaultLoadOptions())
	if err != nil {
		t.Fatal(err)
	}
	v, err := signature.FromRelease(release, signature.Options{})
	if err == nil || v != nil {
		t.Fatalf("FromRelease = %v, %v; want an error", v, err)
	}
	for _, want := range []string{"0000_90_keys_00_cm.yaml:1", "did not provide any GPG public keys"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

// blackHole accepts connections and never answers.
func blackHole(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var held []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	})
	return "http://" + l.Addr().String()
}

// verifyWithin runs Verify and fails t if it outlives bound, a generous
// multiple of the budget it was given.
func verifyWithin(t *testing.T, v *signature.Verifier, digest string, bound time.Duration) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- v.Verify(context.Background(), digest) }()
	select {
	case err := <-done:
		return err
	case <-time.After(bound):
		t.Fatalf("Verify still running after %s", bound)
		return nil
	}
}

func TestAStoreThatNeverAnswers(t *testing.T) {
	alice := signaturetest.MakeKey(t, "alice", "")
	hole := blackHole(t)

	t.Run("fails the verification within its budget", func(t *testing.T) {
		v := newVerifier(t, signaturetest.Release(t, signaturetest.VerifierFor(t, []string{hole}, alice)),
			signature.Options{Limits: signature.Limits{Timeout: time.Second}})
		refused(t, verifyWithin(t, v, digestA, time.Minute), "context deadline exceeded")
	})

	t.Run("does not hold up another store that has the signature", func(t *testing.T) {
		good := newSigStore(t, "good", &trace{})
		good.add(t, digestA, signedBy(t, alice, digestA))
		v := newVerifier(t, signaturetest.Release(t, signaturetest.VerifierFor(t, []string{hole, good.URL}, alice)),
			signature.Options{Limits: signature.Limits{Timeout: time.Hour}})
		if err := verifyWithin(t, v, digestA, time.Minute); err != nil {
			t.Fatal(err)
		}
	})
}

func TestAStoreServingAHugeBodyIsCutOff(t *testing.T) {
	alice := signaturetest.MakeKey(t, "alice", "")
	chunk := make([]byte, 32<<10)
	tests := map[string]http.HandlerFunc{
		"a body without end": func(w http.ResponseWriter, r *http.Request) {
			for {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		},
		"a body that says its size": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", fmt.Sprint(1<<30))
			for i := 0; i < 1<<30/len(chunk); i++ {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		},
	}
	for name, handler := range tests {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(handler)
			t.Cleanup(srv.Close)
			v := newVerifier(t, signaturetest.Release(t, signaturetest.VerifierFor(t, []string{srv.URL}, alice)),
				signature.Options{Limits: signature.Limits{Timeout: time.Hour, MaxSignatureBytes: 4 << 10}})
			refused(t, verifyWithin(t, v, digestA, time.Minute), "is over the 4096-byte limit of a signature")
		})
	}
}

func TestSignedContentIsBounded(t *testing.T) {
	alice := signaturetest.MakeKey(t, "alice", "")
	claim := signature.Claim{Identity: "quay.io/example/release", Digest: digestA}
	body, err := claim.Body()
	if err != nil {
		t.Fatal(err)
	}
	// Valid JSON padded to 1 MiB, which gpg compresses to a few KiB.
	padded := append(body[:len(body)-1:len(body)-1], append([]byte(strings.Repeat(" ", 1<<20)), '}')...)
	sig := alice.GPGSign(t, padded)
	if len(sig) > 64<<10 {
		t.Fatalf("gpg wrote %d bytes; the test needs a small signature of large content", len(sig))
	}
	client := cluster(t, &trace{}, signatureConfigMap(t, digestA, sig))
	release := signaturetest.Release(t, signaturetest.VerifierFor(t, []string{deadStore}, alice))

	v := newVerifier(t, release, signature.Options{ConfigMaps: client.CoreV1(), Limits: signature.Limits{MaxSignatureBytes: 2 << 20}})
	if err := v.Verify(context.Background(), digestA); err != nil {
		t.Fatalf("within a 2 MiB limit the padded signature verifies: %v", err)
	}
	v = newVerifier(t, release, signature.Options{ConfigMaps: client.CoreV1()})
	refused(t, v.Verify(context.Background(), digestA), "a signature signs more than the 65536-byte limit")
}

func TestSignatureCountIsBounded(t *testing.T) {
	alice := signaturetest.MakeKey(t, "alice", "")
	var junk [][]byte
	for i := 0; i < 10; i++ {
		junk = append(junk, []byte(fmt.Sprintf("junk %d", i)))
	}
	client := cluster(t, &trace{}, signatureConfigMap(t, digestA, junk...))
	v := newVerifier(t, signaturetest.Release(t, signaturetest.VerifierFor(t, []string{deadStore}, alice)),
		signature.Options{ConfigMaps: client.CoreV1(), Limits: signature.Limits{MaxSignatures: 5}})
	refused(t, v.Verify(context.Background(), digestA), "too many signatures: stopped after examining 5")
}

// TestOneSourceOverItsBudgetDoesNotHideTheOthers: a ConfigMap stuffed with
// more signatures than one source may bring ends that source only; the
// store is still read, and its good signature verifies.
func TestOneSourceOverItsBudgetDoesNotHideTheOthers(t *testing.T) {
	alice := signaturetest.MakeKey(t, "alice", "")
	bob := signaturetest.MakeKey(t, "bob", "")
	// The release does not trust bob: each of these is examined, and fails.
	untrusted := signedBy(t, bob, digestA)
	stuffing := make([][]byte, 101)
	for i := range stuffing {
		stuffing[i] = untrusted
	}
	client := cluster(t, &trace{}, signatureConfigMap(t, digestA, stuffing...))

	t.Run("a good signature in the store verifies", func(t *testing.T) {
		store := newSigStore(t, "store", &trace{})
		store.add(t, digestA, signedBy(t, alice, digestA))
		v := newVerifier(t, signaturetest.Release(t, signaturetest.VerifierFor(t, []string{store.URL}, alice)),
			signature.Options{ConfigMaps: client.CoreV1()})
		if err := v.Verify(context.Background(), digestA); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("without one, the refusal says the ConfigMaps were cut off", func(t *testing.T) {
		store := newSigStore(t, "store", &trace{})
		v := newVerifier(t, signaturetest.Release(t, signaturetest.VerifierFor(t, []string{store.URL}, alice)),
			signature.Options{ConfigMaps: client.CoreV1()})
		refused(t, v.Verify(context.Background(), digestA),
			"ConfigMaps in openshift-config-managed labelled release.openshift.io/verification-signatures: too many signatures: stopped after examining 100")
		if len(store.requests()) == 0 {
			t.Error("the store was not asked after the ConfigMaps were cut off")
		}
	})

	t.Run("a store over its budget is named, and does not hide another store", func(t *testing.T) {
		stuffed := newSigStore(t, "stuffed", &trace{})
		for i := 0; i < 3; i++ {
			stuffed.add(t, digestA, untrusted)
		}
		good := newSigStore(t, "good", &trace{})
		good.add(t, digestA, signedBy(t, alice, digestA))
		opts := signature.Options{Limits: signature.Limits{MaxSignatures: 2}}
		v := newVerifier(t, signaturetest.Release(t, signaturetest.VerifierFor(t, []string{stuffed.URL, good.URL}, alice)), opts)
		if err := v.Verify(context.Background(), digestA); err != nil {
			t.Fatal(err)
		}
		v = newVerifier(t, signaturetest.Release(t, signaturetest.VerifierFor(t, []string{stuffed.URL}, alice)), opts)
		refused(t, v.Verify(context.Background(), digestA), stuffed.URL+": too many signatures: stopped after examining 2")
	})
}

func TestAListErrorDoesNotStopTheStores(t *testing.T) {
	alice := signaturetest.MakeKey(t, "alice", "")
	store := newSigStore(t, "store", &trace{})
	store.add(t, digestA, signedBy(t, alice, digestA))
	client := fake.NewSimpleClientset()
	client.PrependReactor("list", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("forbidden, say")
	})
	v := newVerifier(t, signaturetest.Release(t, signaturetest.VerifierFor(t, []string{store.URL}, alice)),
		signature.Options{ConfigMaps: client.CoreV1()})
	if err := v.Verify(context.Background(), digestA); err != nil {
		t.Fatal(err)
	}
	refused(t, v.Verify(context.Background(), digestB), "forbidden, say")
}

// TestSignatureFromRealGPGVerifies: a signature gpg made of the atomic
// JSON, compressed as gpg does by default, verifies.
func TestSignatureFromRealGPGVerifies(t *testing.T) {
	alice := signaturetest.MakeKey(t, "alice", "")
	body, err := signature.Claim{Identity: "quay.io/example/release", Digest: digestA}.Body()
	if err != nil {
		t.Fatal(err)
	}
	store := newSigStore(t, "store", &trace{})
	store.add(t, digestA, alice.GPGSign(t, body))
	v := newVerifier(t, signaturetest.Release(t, signaturetest.VerifierFor(t, []string{store.URL}, alice)), signature.Options{})
	if err := v.Verify(context.Background(), digestA); err != nil {
		t.Fatal(err)
	}
	refused(t, v.Verify(context.Background(), digestB), "no signature found")
}

// TestGPGVerifiesWhatSignWrites: gpg, given only the public key, accepts
// a signature Sign wrote, and reads the claim out of it.
func TestGPGVerifiesWhatSignWrites(t *testing.T) {
	alice := signaturetest.MakeKey(t, "alice", "")
	claim := signature.Claim{Identity: "quay.io/example/release", Digest: digestA, Creator: "test", Time: time.Now().Truncate(time.Second)}
	sig := alice.Sign(t, claim)
	verifier := signaturetest.NewHome(t)
	signaturetest.GPG(t, verifier, alice.Public, "--import")
	path := filepath.Join(t.TempDir(), "signature-1")
	if err := os.WriteFile(path, sig, 0o644); err != nil {
		t.Fatal(err)
	}
	status := string(signaturetest.GPG(t, verifier, nil, "--status-fd", "1", "--verify", path))
	if !strings.Contains(status, "[GNUPG:] VALIDSIG "+alice.Fingerprint) {
		t.Errorf("gpg --verify did not report a valid signature by %s:\n%s", alice.Fingerprint, status)
	}
	got := signaturetest.GPG(t, verifier, nil, "--decrypt", path)
	want, _ := claim.Body()
	if string(got) != string(want) {
		t.Errorf("gpg read the claim %s, want %s", got, want)
	}
	if !strings.Contains(string(got), `"type":"atomic container signature"`) || !strings.Contains(string(got), fmt.Sprintf(`"timestamp":%d`, claim.Time.Unix())) {
		t.Errorf("the claim is not an atomic container signature: %s", got)
	}

	// A byte changed in the signed content: gpg refuses it.
	tampered := []byte(strings.Replace(string(sig), digestA[len(digestA)-8:], "00000000", 1))
	if string(tampered) == string(sig) {
		t.Fatal("the signed content is not where the test looks for it")
	}
	if _, errOut, err := signaturetest.Run(verifier, tampered, "--verify"); err == nil {
		t.Errorf("gpg accepted a tampered signature:\n%s", errOut)
	}
}

// deadStore is a store URL nothing listens on, for verifiers whose
// signatures are all in the cluster.
const deadStore = "http://127.0.0.1:1"
