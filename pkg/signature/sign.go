package signature

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"golang.org/x/crypto/openpgp"
	"golang.org/x/crypto/openpgp/armor"
	"golang.org/x/crypto/openpgp/packet"
)

// Claim is what a signature asserts: the image with Digest is the release
// known as Identity.
type Claim struct {
	// Identity is the image reference without its digest, for example
	// "quay.io/example/release" (critical.identity.docker-reference).
	Identity string
	// Digest is "sha256:<hex>" (critical.image.docker-manifest-digest).
	Digest string
	// Creator names the tool that signed (optional.creator).
	Creator string
	// Time is when it was signed (optional.timestamp and the signature's
	// creation time).
	Time time.Time
}

// atomicSignature is the containers/image "atomic container signature"
// format. library-go refuses unknown fields, so optional holds only the two
// fields it knows.
type atomicSignature struct {
	Critical struct {
		Identity struct {
			DockerReference string `json:"docker-reference"`
		} `json:"identity"`
		Image struct {
			DockerManifestDigest string `json:"docker-manifest-digest"`
		} `json:"image"`
		Type string `json:"type"`
	} `json:"critical"`
	Optional struct {
		Creator   string `json:"creator,omitempty"`
		Timestamp int64  `json:"timestamp,omitempty"`
	} `json:"optional"`
}

// AtomicSignatureType is critical.type of every release signature.
const AtomicSignatureType = "atomic container signature"

// Body returns the JSON document the claim is signed as.
func (c Claim) Body() ([]byte, error) {
	if c.Identity == "" {
		return nil, errors.New("a signature needs an identity (the image reference it vouches for)")
	}
	if err := checkDigest(c.Digest); err != nil {
		return nil, err
	}
	var s atomicSignature
	s.Critical.Type = AtomicSignatureType
	s.Critical.Identity.DockerReference = c.Identity
	s.Critical.Image.DockerManifestDigest = c.Digest
	s.Optional.Creator = c.Creator
	if !c.Time.IsZero() {
		s.Optional.Timestamp = c.Time.Unix()
	}
	return json.Marshal(s)
}

// Sign returns the claim signed by key as a binary OpenPGP message, the
// form library-go verifies and gpg --verify reads. key's signing key must
// be decrypted (ReadSigningKey does that).
func Sign(key *openpgp.Entity, c Claim) ([]byte, error) {
	body, err := c.Body()
	if err != nil {
		return nil, err
	}
	config := &packet.Config{}
	if !c.Time.IsZero() {
		config.Time = func() time.Time { return c.Time }
	}
	var out bytes.Buffer
	w, err := openpgp.Sign(&out, key, nil, config)
	if err != nil {
		return nil, fmt.Errorf("sign with key %s: %w", Fingerprint(key), err)
	}
	if _, err := w.Write(body); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("sign with key %s: %w", Fingerprint(key), err)
	}
	return out.Bytes(), nil
}

// ReadSigningKey reads a secret key, armored or not, as
// `gpg --export-secret-keys` writes it. The keyring must hold exactly one
// secret key, so that which one signs is never a guess; passphrase
// decrypts it when it is protected.
func ReadSigningKey(data, passphrase []byte) (*openpgp.Entity, error) {
	keyring, err := readKeyRing(data)
	if err != nil {
		return nil, err
	}
	var secret openpgp.EntityList
	for _, e := range keyring {
		if e.PrivateKey != nil {
			secret = append(secret, e)
		}
	}
	switch len(secret) {
	case 0:
		return nil, errors.New("the keyring holds no secret key; export one with gpg --export-secret-keys")
	case 1:
	default:
		return nil, fmt.Errorf("the keyring holds %d secret keys; export only the one to sign with", len(secret))
	}
	key := secret[0]
	private := []*packet.PrivateKey{key.PrivateKey}
	for _, sub := range key.Subkeys {
		if sub.PrivateKey != nil {
			private = append(private, sub.PrivateKey)
		}
	}
	for _, p := range private {
		if !p.Encrypted {
			continue
		}
		if len(passphrase) == 0 {
			return nil, fmt.Errorf("secret key %s is protected by a passphrase, and none was given", Fingerprint(key))
		}
		if err := p.Decrypt(passphrase); err != nil {
			return nil, fmt.Errorf("secret key %s: %w", Fingerprint(key), err)
		}
	}
	return key, nil
}

// readKeyRing reads an armored or a binary keyring. x/crypto/openpgp, which
// library-go verifies with, reads RSA, DSA and ECDSA keys, not EdDSA.
func readKeyRing(data []byte) (openpgp.EntityList, error) {
	// x/crypto reads the first armored block only; the others would be lost.
	if n := bytes.Count(data, []byte("-----BEGIN PGP ")); n > 1 {
		return nil, fmt.Errorf("the keyring holds %d armored keys; export only the one to sign with", n)
	}
	keyring, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(data))
	if err == nil {
		return keyring, nil
	}
	keyring, err2 := openpgp.ReadKeyRing(bytes.NewReader(data))
	if err2 == nil {
		return keyring, nil
	}
	return nil, fmt.Errorf("not an OpenPGP keyring (armored: %v; binary: %v); RSA, DSA and ECDSA keys are supported, EdDSA is not", err, err2)
}

// PublicKey returns the armored public key of key, the value of a
// verifier-public-key-* entry.
func PublicKey(key *openpgp.Entity) ([]byte, error) {
	var out bytes.Buffer
	w, err := armor.Encode(&out, openpgp.PublicKeyType, nil)
	if err != nil {
		return nil, err
	}
	if err := key.Serialize(w); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// Fingerprint renders key's primary fingerprint as gpg prints it.
func Fingerprint(key *openpgp.Entity) string {
	return fingerprint(key.PrimaryKey)
}

var sha256Digest = regexp.MustCompile(`^sha256:[a-f0-9]{64}$`)

func checkDigest(digest string) error {
	if !sha256Digest.MatchString(digest) {
		return fmt.Errorf("%q is not a digest: want sha256: and 64 lowercase hex digits", digest)
	}
	return nil
}

// ParseReference splits "repo@sha256:<hex>" into the identity a signature
// names ("repo") and the digest; a bare "sha256:<hex>" has no identity.
func ParseReference(ref string) (identity, digest string, err error) {
	identity, digest, found := strings.Cut(ref, "@")
	if !found {
		identity, digest = "", ref
	} else if identity == "" || strings.ContainsAny(identity, " \t\n") {
		return "", "", fmt.Errorf("%q is not an image reference", ref)
	}
	if err := checkDigest(digest); err != nil {
		return "", "", fmt.Errorf("%s: %w", ref, err)
	}
	return identity, digest, nil
}
