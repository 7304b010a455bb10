// Package rendezvous holds what two paired devices share to find each
// other beyond the LAN (issue #29) without telling anyone else who they
// are: a secret both derive from a pairing exchange, and the rotating names
// a device's presence is published under. A name is an HMAC of the secret,
// the publishing device's ID and the time period, so only a device holding
// the secret can compute it, names of different periods cannot be linked
// without the secret, and a device ID never appears in the clear.
package rendezvous

import (
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/ferrydrop/ferry/engine/identity"
	"github.com/ferrydrop/ferry/engine/wire"
)

// SecretLen is the size of a secret.
const SecretLen = 32

// Period is how long one rendezvous name lasts before the next replaces it.
const Period = time.Hour

// FingerprintLen is the length of a fingerprint's hex form.
const FingerprintLen = wire.RendezvousFingerprintLen

// Secret is what two paired devices share. The zero Secret is "none".
type Secret [SecretLen]byte

// ErrBadSecret marks a stored or received value that is not a secret or a
// fingerprint.
var ErrBadSecret = errors.New("bad rendezvous secret")

// Derive is the secret of a pairing exchange: both devices' IDs (as their
// TLS sessions proved them) and both nonces, which travelled only inside
// that session. The verification code is computed from the same values
// under another label, so a secret is only as good as the code the users
// compared, or the pinned identities of an exchange between paired
// devices.
func Derive(dialer, listener identity.DeviceID, dialerNonce, listenerNonce []byte) Secret {
	ikm := make([]byte, 0, len(dialerNonce)+len(listenerNonce))
	ikm = append(append(ikm, dialerNonce...), listenerNonce...)
	info := make([]byte, 0, 2*len(dialer))
	info = append(append(info, dialer[:]...), listener[:]...)
	key, err := hkdf.Key(sha256.New, ikm, []byte("ferry rendezvous secret v1"), string(info), SecretLen)
	if err != nil {
		panic(err) // only for lengths over 255 hash blocks
	}
	var s Secret
	copy(s[:], key)
	return s
}

// IsZero reports whether s is "none".
func (s Secret) IsZero() bool { return s == Secret{} }

// String is the hex form the trust store keeps.
func (s Secret) String() string { return hex.EncodeToString(s[:]) }

// Parse reads a secret's hex form ("" is the zero Secret).
func Parse(v string) (Secret, error) {
	var s Secret
	if v == "" {
		return s, nil
	}
	if len(v) != 2*SecretLen {
		return s, fmt.Errorf("%w: %d characters", ErrBadSecret, len(v))
	}
	if _, err := hex.Decode(s[:], []byte(v)); err != nil {
		return s, fmt.Errorf("%w: %v", ErrBadSecret, err)
	}
	return s, nil
}

// Fingerprint names a secret without revealing it, so that two paired
// devices can see (inside their authenticated session) whether they hold
// the same one; "" for the zero Secret.
func (s Secret) Fingerprint() string {
	if s.IsZero() {
		return ""
	}
	h := sha256.New()
	h.Write([]byte("ferry rendezvous fingerprint v1\x00"))
	h.Write(s[:])
	return hex.EncodeToString(h.Sum(nil))[:FingerprintLen]
}

// CheckFingerprint checks a fingerprint from a peer: "" or FingerprintLen
// lowercase hex digits.
func CheckFingerprint(fp string) error {
	if err := wire.CheckRendezvousFingerprint(fp); err != nil {
		return fmt.Errorf("%w: %v", ErrBadSecret, err)
	}
	return nil
}

// SameFingerprint reports whether two fingerprints name the same secret
// (both present and equal).
func SameFingerprint(a, b string) bool {
	return a != "" && len(a) == len(b) && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// Name is the rendezvous name publisher's presence goes under during the
// period that holds t: 32 hex digits, computable only with the secret.
func Name(s Secret, publisher identity.DeviceID, t time.Time) string {
	return nameAt(s, publisher, epoch(t))
}

// Names are the names to look publisher up under at t: the current
// period's first, then the previous and the next one's, for clocks that
// disagree by up to a period.
func Names(s Secret, publisher identity.DeviceID, t time.Time) []string {
	e := epoch(t)
	return []string{nameAt(s, publisher, e), nameAt(s, publisher, e-1), nameAt(s, publisher, e+1)}
}

func epoch(t time.Time) int64 { return t.Unix() / int64(Period/time.Second) }

func nameAt(s Secret, publisher identity.DeviceID, e int64) string {
	m := hmac.New(sha256.New, s[:])
	m.Write([]byte("ferry rendezvous name v1\x00"))
	m.Write(publisher[:])
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(e))
	m.Write(b[:])
	return hex.EncodeToString(m.Sum(nil)[:16])
}
