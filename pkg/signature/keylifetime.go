package signature

import (
	"bytes"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"golang.org/x/crypto/openpgp"
	"golang.org/x/crypto/openpgp/packet"
)

// checkKeyLifetime refuses a signature that a key of keyrings made after
// the key expired, or before the key was created. Neither library-go nor
// x/crypto/openpgp looks at the key's lifetime when it verifies. A
// signature made within the lifetime stays valid after the key expires,
// as in OpenPGP. Only a signature that verifies is judged; library-go
// refuses any other with its own reason. A key in several keyrings must be
// valid in each. signature must be within maxBytes (checkSize).
func checkKeyLifetime(signature []byte, keyrings []openpgp.EntityList, maxBytes int64) error {
	for _, keyring := range keyrings {
		md, err := openpgp.ReadMessage(bytes.NewReader(signature), keyring, nil, nil)
		if err != nil || md.SignedBy == nil {
			continue
		}
		// The signature packet follows the content, and is read at its end.
		if _, err := io.Copy(io.Discard, io.LimitReader(md.UnverifiedBody, maxBytes+1)); err != nil || md.SignatureError != nil {
			continue
		}
		var made time.Time
		switch {
		case md.Signature != nil:
			made = md.Signature.CreationTime
		case md.SignatureV3 != nil:
			made = md.SignatureV3.CreationTime
		default:
			continue
		}
		if err := madeWithinLifetime(*md.SignedBy, made); err != nil {
			return err
		}
	}
	return nil
}

// madeWithinLifetime checks that key, and its primary key when it is a
// subkey, had been created and had not expired at made.
func madeWithinLifetime(key openpgp.Key, made time.Time) error {
	primary := key.Entity.PrimaryKey
	signer := fmt.Sprintf("key %s (%s)", fingerprint(primary), primaryIdentity(key.Entity))
	if key.PublicKey != primary {
		signer = fmt.Sprintf("subkey %s of %s", fingerprint(key.PublicKey), signer)
		if err := checkWindow(signer, "subkey", key.PublicKey, key.SelfSignature.KeyLifetimeSecs, made); err != nil {
			return err
		}
	}
	return checkWindow(signer, "key", primary, primaryLifetime(key.Entity), made)
}

func checkWindow(signer, what string, pub *packet.PublicKey, lifetimeSecs *uint32, made time.Time) error {
	if made.Before(pub.CreationTime) {
		return fmt.Errorf("signature by %s was made at %s, before the %s was created at %s", signer, utc(made), what, utc(pub.CreationTime))
	}
	// RFC 4880 5.2.3.6: the lifetime counts from the key's creation, not
	// from the self-signature's (x/crypto's KeyExpired has it so); 0 is none.
	if lifetimeSecs == nil || *lifetimeSecs == 0 {
		return nil
	}
	expired := pub.CreationTime.Add(time.Duration(*lifetimeSecs) * time.Second)
	if made.After(expired) {
		return fmt.Errorf("signature by %s was made at %s, after the %s expired at %s", signer, utc(made), what, utc(expired))
	}
	return nil
}

// primaryLifetime is the shortest lifetime the self-signatures of e's
// user IDs give its primary key: user IDs that disagree are trusted least.
func primaryLifetime(e *openpgp.Entity) *uint32 {
	var shortest *uint32
	for _, id := range e.Identities {
		l := id.SelfSignature.KeyLifetimeSecs
		if l != nil && *l != 0 && (shortest == nil || *l < *shortest) {
			shortest = l
		}
	}
	return shortest
}

// primaryIdentity names e by the user ID marked primary, or else by the
// first in order, so that a message is always the same.
func primaryIdentity(e *openpgp.Entity) string {
	var names []string
	for name, id := range e.Identities {
		if p := id.SelfSignature.IsPrimaryId; p != nil && *p {
			return name
		}
		names = append(names, name)
	}
	if len(names) == 0 {
		return "no user ID"
	}
	sort.Strings(names)
	return names[0]
}

func fingerprint(pub *packet.PublicKey) string {
	return strings.ToUpper(fmt.Sprintf("%x", pub.Fingerprint))
}

func utc(t time.Time) string { return t.UTC().Format(time.RFC3339) }
