package signature_test

import (
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/openshift/library-go/pkg/verify/util"
	corev1 "k8s.io/api/core/v1"

	"github.com/payload-applier/payload-applier/pkg/payload"
	"github.com/payload-applier/payload-applier/pkg/signature"
	"github.com/payload-applier/payload-applier/pkg/signature/signaturetest"
)

func TestParseReference(t *testing.T) {
	hex := strings.TrimPrefix(digestA, "sha256:")
	tests := map[string]struct {
		ref, identity, digest, err string
	}{
		"a reference by digest":              {ref: "quay.io/example/release@" + digestA, identity: "quay.io/example/release", digest: digestA},
		"a reference with a tag and digest":  {ref: "registry:5000/r:1.0@" + digestA, identity: "registry:5000/r:1.0", digest: digestA},
		"a bare digest has no identity":      {ref: digestA, digest: digestA},
		"a tag alone is not a digest":        {ref: "quay.io/example/release:1.0", err: "is not a digest"},
		"a short digest":                     {ref: "r@sha256:abc", err: "64 lowercase hex digits"},
		"another algorithm":                  {ref: "r@sha512:" + hex, err: "is not a digest"},
		"upper-case hex":                     {ref: "r@sha256:" + strings.ToUpper(hex), err: "is not a digest"},
		"a digest with nothing before the @": {ref: "@" + digestA, err: "is not an image reference"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			identity, digest, err := signature.ParseReference(tc.ref)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("ParseReference(%q) = %q, %q, %v; want an error saying %q", tc.ref, identity, digest, err, tc.err)
				}
				return
			}
			if err != nil || identity != tc.identity || digest != tc.digest {
				t.Fatalf("ParseReference(%q) = %q, %q, %v; want %q, %q", tc.ref, identity, digest, err, tc.identity, tc.digest)
			}
		})
	}
}

func TestClaimNeedsAnIdentityAndADigest(t *testing.T) {
	if _, err := (signature.Claim{Digest: digestA}).Body(); err == nil || !strings.Contains(err.Error(), "identity") {
		t.Errorf("a claim without identity: %v", err)
	}
	if _, err := (signature.Claim{Identity: "r", Digest: "sha256:x"}).Body(); err == nil {
		t.Error("a claim with a bad digest was accepted")
	}
}

func TestAddToConfigMapAddsTheNextSignature(t *testing.T) {
	prefix, _ := util.DigestToKeyPrefix(digestA, "-")
	first, err := signature.AddToConfigMap(nil, digestA, []byte("one"))
	if err != nil {
		t.Fatal(err)
	}
	if first.Namespace != signature.SignaturesNamespace || first.Name != prefix {
		t.Errorf("ConfigMap %s/%s, want %s/%s", first.Namespace, first.Name, signature.SignaturesNamespace, prefix)
	}
	if _, ok := first.Labels[signature.SignaturesLabel]; !ok {
		t.Errorf("labels %v lack %s", first.Labels, signature.SignaturesLabel)
	}
	second, err := signature.AddToConfigMap(first, digestA, []byte("two"))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(second.BinaryData[prefix+"-1"]) + "," + string(second.BinaryData[prefix+"-2"]); got != "one,two" {
		t.Errorf("signatures %q, want one,two", got)
	}
	if len(first.BinaryData) != 1 {
		t.Error("AddToConfigMap changed its argument")
	}

	elsewhere := first.DeepCopy()
	elsewhere.Namespace = "default"
	if _, err := signature.AddToConfigMap(elsewhere, digestA, []byte("x")); err == nil || !strings.Contains(err.Error(), "not in openshift-config-managed") {
		t.Errorf("a ConfigMap outside openshift-config-managed: %v", err)
	}
	unlabelled := first.DeepCopy()
	unlabelled.Labels = nil
	if _, err := signature.AddToConfigMap(unlabelled, digestA, []byte("x")); err == nil || !strings.Contains(err.Error(), "lacks the label") {
		t.Errorf("a ConfigMap without the label: %v", err)
	}
}

func TestWriteToStoreNumbersSignatures(t *testing.T) {
	dir := t.TempDir()
	segment, _ := util.DigestToKeyPrefix(digestA, "=")
	for i, want := range []string{"signature-1", "signature-2"} {
		path, err := signature.WriteToStore(dir, digestA, []byte{byte(i)})
		if err != nil {
			t.Fatal(err)
		}
		if path != filepath.Join(dir, segment, want) {
			t.Errorf("wrote %s, want %s", path, filepath.Join(dir, segment, want))
		}
	}
	if _, err := signature.WriteToStore(dir, "sha256:../../x", []byte("x")); err == nil {
		t.Error("a digest that is not one was written")
	}
}

func TestAddToVerifierConfigMap(t *testing.T) {
	alice := signaturetest.MakeKey(t, "alice", "")
	bob := signaturetest.MakeKey(t, "bob", "")
	cm, err := signature.AddToVerifierConfigMap(nil, "alice", alice.Public, []string{"https://a.example/sigs"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := cm.Annotations[payload.VerificationConfigMapAnnotation]; !ok {
		t.Errorf("annotations %v lack %s", cm.Annotations, payload.VerificationConfigMapAnnotation)
	}
	for _, profile := range payload.KnownProfiles {
		if cm.Annotations[payload.IncludePrefix+profile] != "true" {
			t.Errorf("not included in profile %s", profile)
		}
	}
	cm2, err := signature.AddToVerifierConfigMap(cm, "bob", bob.Public, []string{"https://a.example/sigs", "https://b.example/sigs"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"verifier-public-key-alice": string(alice.Public),
		"verifier-public-key-bob":   string(bob.Public),
		"store-1":                   "https://a.example/sigs",
		"store-2":                   "https://b.example/sigs",
	}
	if len(cm2.Data) != len(want) {
		t.Errorf("data keys %v, want %d", keysOf(cm2.Data), len(want))
	}
	for k, v := range want {
		if cm2.Data[k] != v {
			t.Errorf("%s = %.40q, want %.40q", k, cm2.Data[k], v)
		}
	}
	if len(cm.Data) != 2 {
		t.Error("AddToVerifierConfigMap changed its argument")
	}

	// What it writes loads as a release, and the verifier holds both keys.
	v, err := signature.FromRelease(signaturetest.Release(t, cm2), signature.Options{})
	if err != nil || v == nil {
		t.Fatalf("FromRelease = %v, %v", v, err)
	}
	for _, fpr := range []string{alice.Fingerprint, bob.Fingerprint} {
		if !strings.Contains(v.String(), fpr) {
			t.Errorf("verifier %s does not name key %s", v, fpr)
		}
	}

	for name, tc := range map[string]struct {
		cm     *corev1.ConfigMap
		key    string
		public []byte
		stores []string
		want   string
	}{
		"no store":                 {key: "alice", public: alice.Public, want: "did not provide any signature stores"},
		"a store that is not http": {key: "alice", public: alice.Public, stores: []string{"ftp://x/y"}, want: "not an http(s) URL"},
		"a key that is not a key":  {key: "alice", public: []byte("no"), stores: []string{"https://a/"}, want: "must be a GPG public key"},
		"a name no key can carry":  {key: "a/b", public: alice.Public, stores: []string{"https://a/"}, want: "cannot name a ConfigMap key"},
		"another ConfigMap":        {cm: &corev1.ConfigMap{}, key: "alice", public: alice.Public, stores: []string{"https://a/"}, want: "lacks the annotation"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := signature.AddToVerifierConfigMap(tc.cm, tc.key, tc.public, tc.stores)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}

func keysOf(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestReadSigningKey(t *testing.T) {
	alice := signaturetest.MakeKey(t, "alice", "")
	carol := signaturetest.MakeKey(t, "carol", "correct horse")

	t.Run("a key with a passphrase signs once it is given", func(t *testing.T) {
		if _, err := signature.ReadSigningKey(carol.Secret, nil); err == nil || !strings.Contains(err.Error(), "protected by a passphrase") {
			t.Errorf("without the passphrase: %v", err)
		}
		if _, err := signature.ReadSigningKey(carol.Secret, []byte("wrong")); err == nil {
			t.Error("a wrong passphrase was accepted")
		}
		key, err := signature.ReadSigningKey(carol.Secret, []byte("correct horse"))
		if err != nil {
			t.Fatal(err)
		}
		sig, err := signature.Sign(key, signature.Claim{Identity: "r", Digest: digestA})
		if err != nil {
			t.Fatal(err)
		}
		client := cluster(t, &trace{}, signatureConfigMap(t, digestA, sig))
		v := newVerifier(t, signaturetest.Release(t, signaturetest.VerifierFor(t, []string{deadStore}, carol)),
			signature.Options{ConfigMaps: client.CoreV1()})
		if err := v.Verify(context.Background(), digestA); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("a binary keyring reads as an armored one", func(t *testing.T) {
		binary := signaturetest.GPG(t, alice.Home, nil, "--passphrase", "", "--export-secret-keys", alice.Fingerprint)
		key, err := signature.ReadSigningKey(binary, nil)
		if err != nil || signature.Fingerprint(key) != alice.Fingerprint {
			t.Fatalf("ReadSigningKey = %v, %v; want %s", key, err, alice.Fingerprint)
		}
	})

	t.Run("refused", func(t *testing.T) {
		binary := func(k *signaturetest.Key, passphrase string) []byte {
			return signaturetest.GPG(t, k.Home, nil, "--passphrase", passphrase, "--export-secret-keys", k.Fingerprint)
		}
		armoredBoth := append(append([]byte(nil), alice.Secret...), carol.Secret...)
		binaryBoth := append(binary(alice, ""), binary(carol, "correct horse")...)
		for name, tc := range map[string]struct {
			keyring []byte
			want    string
		}{
			"a public key":            {alice.Public, "holds no secret key"},
			"two armored secret keys": {armoredBoth, "holds 2 armored keys"},
			"two binary secret keys":  {binaryBoth, "holds 2 secret keys"},
			"something else":          {[]byte("hello"), "not an OpenPGP keyring"},
			"an EdDSA key gpg made":   {eddsaKey(t), "EdDSA is not"},
			"an empty file":           {nil, "holds no secret key"},
		} {
			t.Run(name, func(t *testing.T) {
				_, err := signature.ReadSigningKey(tc.keyring, nil)
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("error %v, want one saying %q", err, tc.want)
				}
			})
		}
	})
}

// eddsaKey is a secret ed25519 key made by gpg, which x/crypto/openpgp
// cannot read.
func eddsaKey(t *testing.T) []byte {
	home := signaturetest.NewHome(t)
	signaturetest.GPG(t, home, nil, "--passphrase", "", "--quick-gen-key", "ed <ed@example.com>", "ed25519", "sign", "never")
	return signaturetest.GPG(t, home, nil, "--passphrase", "", "--armor", "--export-secret-keys", "ed@example.com")
}

// TestManifestRoundTrips: the YAML Manifest writes reads back as the same
// ConfigMap, binary signatures included, without server-set fields.
func TestManifestRoundTrips(t *testing.T) {
	cm, err := signature.AddToConfigMap(nil, digestA, []byte{0, 1, 2, 0xff})
	if err != nil {
		t.Fatal(err)
	}
	yaml, err := signature.Manifest(cm)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(yaml), "creationTimestamp") {
		t.Errorf("manifest carries creationTimestamp:\n%s", yaml)
	}
	back, err := util.ReadConfigMap(yaml)
	if err != nil {
		t.Fatal(err)
	}
	if back.Name != cm.Name || back.Namespace != cm.Namespace || !reflect.DeepEqual(back.Labels, cm.Labels) || !reflect.DeepEqual(back.BinaryData, cm.BinaryData) {
		t.Errorf("read back %+v, want %+v", back, cm)
	}
}
