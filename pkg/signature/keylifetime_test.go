package signature_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/payload-applier/payload-applier/pkg/signature"
	"github.com/payload-applier/payload-applier/pkg/signature/signaturetest"
)

// verifyIn checks digestA with sig in a signature ConfigMap against a
// release that trusts k.
func verifyIn(t *testing.T, k *signaturetest.Key, sig []byte) error {
	t.Helper()
	client := cluster(t, &trace{}, signatureConfigMap(t, digestA, sig))
	v := newVerifier(t, signaturetest.Release(t, signaturetest.VerifierFor(t, []string{deadStore}, k)),
		signature.Options{ConfigMaps: client.CoreV1()})
	return v.Verify(context.Background(), digestA)
}

func claimAt(at time.Time) signature.Claim {
	return signature.Claim{Identity: "quay.io/example/release", Digest: digestA, Creator: "test", Time: at}
}

// TestKeyLifetime: a signature counts only if its key had been created and
// had not expired when it was made. One made within the lifetime stays
// valid once the key has expired, as in OpenPGP.
func TestKeyLifetime(t *testing.T) {
	created := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	day := 24 * time.Hour

	k := signaturetest.MakeKeyWith(t, "shortlived", signaturetest.KeyOptions{Created: created, Expires: "1d"})
	signer := "signature by key " + k.Fingerprint + " (shortlived <shortlived@example.com>)"
	t.Run("a signature made after the key expired is refused", func(t *testing.T) {
		refused(t, verifyIn(t, k, k.SignIgnoringExpiry(t, claimAt(created.Add(2*day)))),
			signer+" was made at 2020-01-03T00:00:00Z, after the key expired at 2020-01-02T00:00:00Z")
	})
	t.Run("a signature made before the key was created is refused", func(t *testing.T) {
		refused(t, verifyIn(t, k, k.SignIgnoringExpiry(t, claimAt(created.Add(-day)))),
			signer+" was made at 2019-12-31T00:00:00Z, before the key was created at 2020-01-01T00:00:00Z")
	})
	t.Run("a signature made within the key's lifetime verifies after it expired", func(t *testing.T) {
		if err := verifyIn(t, k, k.Sign(t, claimAt(created.Add(day/2)))); err != nil {
			t.Error(err)
		}
	})

	t.Run("a signing subkey that expires", func(t *testing.T) {
		k := signaturetest.MakeKeyWith(t, "subkey", signaturetest.KeyOptions{Created: created, Expires: "1d", SigningSubkey: true})
		refused(t, verifyIn(t, k, k.SignIgnoringExpiry(t, claimAt(created.Add(2*day)))),
			" of key "+k.Fingerprint+" (subkey <subkey@example.com>) was made at 2020-01-03T00:00:00Z, after the subkey expired at 2020-01-02T00:00:00Z")
		if err := verifyIn(t, k, k.Sign(t, claimAt(created.Add(day/2)))); err != nil {
			t.Errorf("a signature made within the subkey's lifetime: %v", err)
		}
	})

	t.Run("a key whose expiry was put off counts its lifetime from its creation", func(t *testing.T) {
		k := signaturetest.MakeKeyWith(t, "extended", signaturetest.KeyOptions{Created: created, Expires: "1d"})
		// On day 10, the key is given 20 more days: it expires on day 30.
		signaturetest.GPG(t, k.Home, nil, "--faked-system-time", fmt.Sprint(created.Add(10*day).Unix()), "--quick-set-expire", k.Fingerprint, "20d")
		k.Public = signaturetest.GPG(t, k.Home, nil, "--armor", "--export", k.Fingerprint)
		if err := verifyIn(t, k, k.SignIgnoringExpiry(t, claimAt(created.Add(25*day)))); err != nil {
			t.Errorf("a signature made within the extended lifetime: %v", err)
		}
		refused(t, verifyIn(t, k, k.SignIgnoringExpiry(t, claimAt(created.Add(35*day)))),
			"after the key expired at 2020-01-31T00:00:00Z")
	})

	t.Run("a key without expiry", func(t *testing.T) {
		k := signaturetest.MakeKeyWith(t, "forever", signaturetest.KeyOptions{Created: created})
		if err := verifyIn(t, k, k.Sign(t, claimAt(time.Now()))); err != nil {
			t.Error(err)
		}
	})
}
