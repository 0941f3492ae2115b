// Package signaturetest makes keys with the real gpg, and releases that
// carry a verification ConfigMap, for tests.
package signaturetest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/payload-applier/payload-applier/pkg/payload"
	"github.com/payload-applier/payload-applier/pkg/payload/payloadtest"
	"github.com/payload-applier/payload-applier/pkg/signature"
)

// Key is a key made by the real gpg in a throw-away GNUPGHOME.
type Key struct {
	Name        string
	Home        string
	Fingerprint string
	// Public is the armored public key, as gpg --export writes it.
	Public []byte
	// Secret is the armored secret key, as gpg --export-secret-keys writes it.
	Secret []byte
}

// RequireGPG fails, never skips, without gpg: the tests that call it exist
// to check signatures against it.
func RequireGPG(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("gpg"); err != nil {
		t.Fatalf("this test needs the real gpg on PATH (Debian package gnupg): %v", err)
	}
}

// NewHome makes an empty GNUPGHOME, removed with its agent when t ends. It
// is not under t.TempDir, as the agent's socket path must stay short.
func NewHome(t testing.TB) string {
	t.Helper()
	RequireGPG(t)
	dir, err := os.MkdirTemp("", "gpg")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		kill := exec.Command("gpgconf", "--kill", "all")
		kill.Env = append(os.Environ(), "GNUPGHOME="+dir)
		_ = kill.Run()
		os.RemoveAll(dir)
	})
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}

// GPG runs gpg in batch mode in home with stdin, and returns its stdout.
func GPG(t testing.TB, home string, stdin []byte, args ...string) []byte {
	t.Helper()
	out, errOut, err := Run(home, stdin, args...)
	if err != nil {
		t.Fatalf("gpg %s: %v\n%s", strings.Join(args, " "), err, errOut)
	}
	return out
}

// Run runs gpg in batch mode in home, for a test that expects it to fail.
func Run(home string, stdin []byte, args ...string) (stdout, stderr []byte, err error) {
	cmd := exec.Command("gpg", append([]string{"--batch", "--no-tty", "--pinentry-mode", "loopback"}, args...)...)
	cmd.Env = append(os.Environ(), "GNUPGHOME="+home)
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.Bytes(), errOut.Bytes(), err
}

// MakeKey has gpg make an RSA signing key for name, protected by
// passphrase unless it is empty. RSA, because x/crypto/openpgp, which
// library-go verifies with, cannot read EdDSA keys.
func MakeKey(t testing.TB, name, passphrase string) *Key {
	t.Helper()
	return makeKey(t, name, passphrase, KeyOptions{})
}

// KeyOptions shape a key MakeKeyWith makes.
type KeyOptions struct {
	// Created is when gpg makes the key (--faked-system-time); zero: now.
	Created time.Time
	// Expires is the key's lifetime as gpg reads it, "1d" say; "" never.
	Expires string
	// SigningSubkey makes a primary key that only certifies and never
	// expires, and a subkey, created with it, that signs and expires as
	// Expires says.
	SigningSubkey bool
}

// MakeKeyWith has gpg make an RSA key for name, without passphrase, as
// opts say.
func MakeKeyWith(t testing.TB, name string, opts KeyOptions) *Key {
	t.Helper()
	return makeKey(t, name, "", opts)
}

func makeKey(t testing.TB, name, passphrase string, opts KeyOptions) *Key {
	t.Helper()
	home := NewHome(t)
	uid := fmt.Sprintf("%s <%s@example.com>", name, name)
	var at []string
	if !opts.Created.IsZero() {
		at = []string{"--faked-system-time", fmt.Sprint(opts.Created.Unix())}
	}
	expires := opts.Expires
	if expires == "" {
		expires = "never"
	}
	usage, primaryExpires := "sign", expires
	if opts.SigningSubkey {
		usage, primaryExpires = "cert", "never"
	}
	GPG(t, home, nil, append(at, "--passphrase", passphrase, "--quick-gen-key", uid, "rsa2048", usage, primaryExpires)...)
	k := &Key{Name: name, Home: home}
	for _, line := range strings.Split(string(GPG(t, home, nil, "--with-colons", "--list-secret-keys", uid)), "\n") {
		if fields := strings.Split(line, ":"); len(fields) > 9 && fields[0] == "fpr" {
			k.Fingerprint = fields[9]
			break
		}
	}
	if k.Fingerprint == "" {
		t.Fatalf("gpg listed no fingerprint for %s", uid)
	}
	if opts.SigningSubkey {
		GPG(t, home, nil, append(at, "--passphrase", passphrase, "--quick-add-key", k.Fingerprint, "rsa2048", "sign", expires)...)
	}
	k.Public = GPG(t, home, nil, "--armor", "--export", k.Fingerprint)
	k.Secret = GPG(t, home, nil, "--passphrase", passphrase, "--armor", "--export-secret-keys", k.Fingerprint)
	return k
}

// GPGSign has gpg sign body with k as an inline binary OpenPGP message,
// compressed as gpg does by default. k must have no passphrase.
func (k *Key) GPGSign(t testing.TB, body []byte) []byte {
	t.Helper()
	return GPG(t, k.Home, body, "--passphrase", "", "--local-user", k.Fingerprint, "--sign", "--output", "-")
}

// Sign signs claim with k as `release sign` does. k must have no
// passphrase.
func (k *Key) Sign(t testing.TB, claim signature.Claim) []byte {
	t.Helper()
	key, err := signature.ReadSigningKey(k.Secret, nil)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := signature.Sign(key, claim)
	if err != nil {
		t.Fatal(err)
	}
	return sig
}

// SignIgnoringExpiry signs claim with k as a tool that ignores k's expiry
// would, at claim.Time: x/crypto/openpgp passes over an expired subkey.
// Only the signer's copy of k forgets its expiry; k.Public keeps it.
func (k *Key) SignIgnoringExpiry(t testing.TB, claim signature.Claim) []byte {
	t.Helper()
	key, err := signature.ReadSigningKey(k.Secret, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range key.Identities {
		id.SelfSignature.KeyLifetimeSecs = nil
	}
	for _, sub := range key.Subkeys {
		sub.Sig.KeyLifetimeSecs = nil
	}
	sig, err := signature.Sign(key, claim)
	if err != nil {
		t.Fatal(err)
	}
	return sig
}

// Release loads a release whose only manifest is cm, the way the
// operator loads one, and fails t when that does not work.
func Release(t testing.TB, cm *corev1.ConfigMap) *payload.Release {
	t.Helper()
	yaml, err := signature.Manifest(cm)
	if err != nil {
		t.Fatal(err)
	}
	dir := payloadtest.WriteRelease(t, t.TempDir(), "1.0.0", nil, map[string]string{
		"0000_90_release-verification_00_configmap.yaml": string(yaml),
	})
	release, err := payload.Load(dir, payload.DefaultLoadOptions())
	if err != nil {
		t.Fatal(err)
	}
	return release
}

// VerifierFor returns the verification ConfigMap that trusts keys, each
// under its name, and names stores.
func VerifierFor(t testing.TB, stores []string, keys ...*Key) *corev1.ConfigMap {
	t.Helper()
	var cm *corev1.ConfigMap
	for _, k := range keys {
		var err error
		if cm, err = signature.AddToVerifierConfigMap(cm, k.Name, k.Public, stores); err != nil {
			t.Fatal(err)
		}
	}
	return cm
}
