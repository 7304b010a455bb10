// Package pairing derives the short verification code both screens show
// when two devices meet, with a commit-then-reveal exchange inside their
// TLS session (the numeric comparison of Bluetooth's Secure Simple Pairing
// and ZRTP's short authentication string).
//
// The dialer draws a nonce and sends only its commitment (in its hello);
// the listener answers with a nonce of its own (in its hello); the dialer
// then reveals its nonce, which must match the commitment. The code is a
// hash of both device IDs (as each side's TLS proved them) and both
// nonces. A man in the middle holds two TLS sessions with two different
// keys; to make the two codes match it must fix its nonce in each session
// before it learns the nonce that decides that session's code (it commits
// before the listener answers; it answers before the dialer reveals), so
// it cannot search for keys or nonces that match: it has one chance in a
// million (Digits), and the users see two different codes otherwise.
package pairing

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/ferrydrop/ferry/engine/identity"
)

// NonceLen is the size of a nonce; its hex form travels in the messages.
const NonceLen = 32

// Digits is the number of decimal digits of a code.
const Digits = 6

// Nonce is one side's random contribution.
type Nonce [NonceLen]byte

// ErrBadPairing marks pairing values from a peer that cannot be used:
// malformed, or a reveal that does not match its commitment.
var ErrBadPairing = errors.New("bad pairing exchange")

// NewNonce draws a nonce.
func NewNonce() Nonce {
	var n Nonce
	rand.Read(n[:])
	return n
}

// Commit is the commitment to n that the dialer sends first.
func Commit(n Nonce) string {
	h := sha256.New()
	h.Write([]byte("ferry pairing commitment v1\x00"))
	h.Write(n[:])
	return hex.EncodeToString(h.Sum(nil))
}

// String is the hex form of n, as it travels.
func (n Nonce) String() string { return hex.EncodeToString(n[:]) }

// ParseNonce reads a nonce in hex (peer input).
func ParseNonce(s string) (Nonce, error) {
	var n Nonce
	if len(s) != 2*NonceLen {
		return n, fmt.Errorf("%w: a nonce of %d characters", ErrBadPairing, len(s))
	}
	if _, err := hex.Decode(n[:], []byte(s)); err != nil {
		return n, fmt.Errorf("%w: %v", ErrBadPairing, err)
	}
	return n, nil
}

// CheckReveal checks that the nonce revealed (hex, peer input) is the one
// committed to, and returns it.
func CheckReveal(commitment, revealed string) (Nonce, error) {
	n, err := ParseNonce(revealed)
	if err != nil {
		return n, err
	}
	if subtle.ConstantTimeCompare([]byte(Commit(n)), []byte(commitment)) != 1 {
		return n, fmt.Errorf("%w: the revealed nonce does not match its commitment", ErrBadPairing)
	}
	return n, nil
}

// Code is the verification code of a session between dialer and listener
// with their nonces, as "123 456".
func Code(dialer, listener identity.DeviceID, dialerNonce, listenerNonce Nonce) string {
	h := sha256.New()
	h.Write([]byte("ferry pairing code v1\x00"))
	h.Write(dialer[:])
	h.Write(listener[:])
	h.Write(dialerNonce[:])
	h.Write(listenerNonce[:])
	v := binary.BigEndian.Uint64(h.Sum(nil)) % 1_000_000
	s := fmt.Sprintf("%06d", v)
	return s[:3] + " " + s[3:]
}
