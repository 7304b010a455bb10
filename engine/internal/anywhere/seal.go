// Package anywhere reaches a paired device beyond the LAN (issue #29):
// ICE (pion/ice) finds a path through the NATs between the two devices,
// directly when the NATs let a hole be punched and through a TURN relay
// otherwise, and Ferry's own QUIC runs over that path, with the pinned
// identities exactly as on the LAN.
//
// The two devices swap their ICE candidates through a mailbox on a relay
// server (engine/relay) the user runs. The mailbox holds only opaque
// blobs under rotating names: every name is derived from the rendezvous
// secret two devices agreed at pairing (package rendezvous), and every blob
// is sealed with a key derived from that secret, so the server learns
// neither who is talking nor what they say, and cannot forge a blob.
//
// The exchange:
//
//   - a device that receives "from anywhere" keeps a presence blob under
//     its rendezvous name for each paired device (PresenceName), and polls
//     the call box each paired device may call it in (CallName);
//   - a sender reads the presence (none: the device is not reachable
//     through this relay), gathers its candidates, puts a call in the
//     receiver's call box and waits for the answer in a box named after the
//     call (AnswerName);
//   - both then run ICE's connectivity checks on the sockets Ferry's QUIC
//     uses, and QUIC runs over the chosen pair (ice.go, peer.go).
package anywhere

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/ferrydrop/ferry/engine/identity"
	"github.com/ferrydrop/ferry/engine/internal/rendezvous"
)

// The kinds of message two devices swap through the mailbox.
const (
	KindPresence = "presence" // "I receive from anywhere through this relay"
	KindCall     = "call"     // a sender's ICE offer
	KindAnswer   = "answer"   // the receiver's ICE answer to one call
	// KindLeft takes a presence's place when its receiver stops: "I no
	// longer receive through this relay". It is no presence, so a device
	// that looks (an older one too) finds none at once.
	KindLeft = "left"
)

// Bounds on what a message may hold. A real one holds a dozen candidates
// of under 150 bytes each.
const (
	// MaxBlob bounds a sealed blob (the mailbox refuses larger ones).
	MaxBlob = 4096
	// MaxCandidates bounds the candidates of one message.
	MaxCandidates = 32
	// maxCandidateLen bounds one candidate's text.
	maxCandidateLen = 512
	// maxCredLen bounds an ICE username fragment or password (RFC 8839:
	// 4-256 and 22-256 ice-chars).
	maxCredLen = 256
)

// MaxSkew is how far a message's time may be from this device's clock:
// it bounds how long a copied blob can be replayed.
const MaxSkew = 5 * time.Minute

// ErrBadMessage marks a blob that does not open with the secret, or whose
// content is not a message this device expects.
var ErrBadMessage = errors.New("bad rendezvous message")

// ErrClockSkew marks a message that opened, but was sealed more than
// MaxSkew from this device's clock: the two devices' clocks are apart
// (SkewError says by how much). It is an ErrBadMessage too.
var ErrClockSkew = errors.New("the two devices' clocks are too far apart")

// SkewError is a message sealed too far from this device's clock.
type SkewError struct {
	// Off is the message's time less this device's clock: positive when
	// the other device's clock is ahead.
	Off time.Duration
}

func (e *SkewError) Error() string {
	return fmt.Sprintf("%v: sealed %s from this device's clock, more than %s", ErrBadMessage, e.Off.Abs().Round(time.Second), MaxSkew)
}

// Is makes a SkewError ErrBadMessage and ErrClockSkew.
func (e *SkewError) Is(target error) bool { return target == ErrBadMessage || target == ErrClockSkew }

// Message is what a blob carries once opened.
type Message struct {
	// Kind is KindPresence, KindCall, KindAnswer or KindLeft.
	Kind string `json:"kind"`
	// From and To are the device IDs of the sender and the recipient.
	From string `json:"from"`
	To   string `json:"to"`
	// At is when it was sealed (Unix seconds).
	At int64 `json:"at"`
	// Call names the call a call or answer belongs to (32 hex digits).
	Call string `json:"call,omitempty"`
	// Ufrag, Pwd and Candidates are the sender's ICE credentials and
	// candidates (calls and answers).
	Ufrag      string   `json:"ufrag,omitempty"`
	Pwd        string   `json:"pwd,omitempty"`
	Candidates []string `json:"candidates,omitempty"`
	// Instance names the run of the receiving device that put a presence
	// or an answer (InstanceLen hex digits, new at each start; "" from a
	// device from before it): a presence of another instance than the
	// one that answered a session's call says the device restarted.
	Instance string `json:"instance,omitempty"`
}

// InstanceLen is the length of Message.Instance.
const InstanceLen = 16

// NewInstance names a run of this device (Server.Instance).
func NewInstance() string { return randomHex(InstanceLen / 2) }

// PresenceName is the name receiver's presence for the device sharing s
// goes under at t: the rendezvous name itself.
func PresenceName(s rendezvous.Secret, receiver identity.DeviceID, t time.Time) string {
	return rendezvous.Name(s, receiver, t)
}

// PresenceNames are the names to look receiver's presence up under at t
// (this period's, the previous and the next one's).
func PresenceNames(s rendezvous.Secret, receiver identity.DeviceID, t time.Time) []string {
	return rendezvous.Names(s, receiver, t)
}

// CallName is the box the device sharing s calls receiver in at t.
func CallName(s rendezvous.Secret, receiver identity.DeviceID, t time.Time) string {
	return rendezvous.Name(subSecret(s, "call box"), receiver, t)
}

// CallNames are the call boxes receiver polls at t.
func CallNames(s rendezvous.Secret, receiver identity.DeviceID, t time.Time) []string {
	return rendezvous.Names(subSecret(s, "call box"), receiver, t)
}

// AnswerName is the box the answer to call goes in.
func AnswerName(s rendezvous.Secret, call string) string {
	m := hmac.New(sha256.New, s[:])
	m.Write([]byte("ferry rendezvous answer box v1\x00"))
	m.Write([]byte(call))
	return hex.EncodeToString(m.Sum(nil)[:16])
}

// NewCall returns a fresh call name.
func NewCall() string { return randomHex(16) }

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func subSecret(s rendezvous.Secret, label string) rendezvous.Secret {
	m := hmac.New(sha256.New, s[:])
	m.Write([]byte("ferry rendezvous " + label + " v1"))
	var out rendezvous.Secret
	copy(out[:], m.Sum(nil))
	return out
}

// sealVersion is the first byte of a sealed blob.
const sealVersion = 1

// seal overhead: version, nonce, GCM tag.
const sealOverhead = 1 + 12 + 16

func aead(s rendezvous.Secret) cipher.AEAD {
	key, err := hkdf.Key(sha256.New, s[:], nil, "ferry rendezvous seal v1", 32)
	if err != nil {
		panic(err)
	}
	b, err := aes.NewCipher(key)
	if err != nil {
		panic(err)
	}
	g, err := cipher.NewGCM(b)
	if err != nil {
		panic(err)
	}
	return g
}

// additional binds a blob to the box it was put in: a blob moved to
// another box (another device's, another kind, another period) does not open.
func additional(box string) []byte { return []byte("ferry rendezvous v1\x00" + box) }

// Seal encodes m for box with the secret s.
func Seal(s rendezvous.Secret, box string, m Message) ([]byte, error) {
	var nonce [12]byte
	rand.Read(nonce[:])
	return sealNonce(s, box, m, nonce)
}

// sealNonce is Seal with a given nonce (deterministic test seeds).
func sealNonce(s rendezvous.Secret, box string, m Message, nonce [12]byte) ([]byte, error) {
	plain, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	if len(plain)+sealOverhead > MaxBlob {
		return nil, fmt.Errorf("rendezvous message of %d bytes is over %d", len(plain)+sealOverhead, MaxBlob)
	}
	out := make([]byte, 1+12, len(plain)+sealOverhead)
	out[0] = sealVersion
	copy(out[1:13], nonce[:])
	return aead(s).Seal(out, out[1:13], plain, additional(box)), nil
}

// Open opens a blob found in box and checks it is a message of kind from
// `from` to `to`, sealed within MaxSkew of now.
func Open(s rendezvous.Secret, box string, blob []byte, kind string, from, to identity.DeviceID, now time.Time) (Message, error) {
	if len(blob) < sealOverhead || len(blob) > MaxBlob || blob[0] != sealVersion {
		return Message{}, fmt.Errorf("%w: %d bytes", ErrBadMessage, len(blob))
	}
	plain, err := aead(s).Open(nil, blob[1:13], blob[13:], additional(box))
	if err != nil {
		return Message{}, fmt.Errorf("%w: it does not open with the shared secret", ErrBadMessage)
	}
	m, err := ParseMessage(plain)
	if err != nil {
		return Message{}, err
	}
	switch {
	case m.Kind != kind:
		return Message{}, fmt.Errorf("%w: a %s where a %s belongs", ErrBadMessage, m.Kind, kind)
	case m.From != from.String() || m.To != to.String():
		return Message{}, fmt.Errorf("%w: not from the paired device to this one", ErrBadMessage)
	case m.At < now.Add(-MaxSkew).Unix() || m.At > now.Add(MaxSkew).Unix():
		return Message{}, &SkewError{Off: time.Unix(m.At, 0).Sub(now)}
	}
	return m, nil
}

// ParseMessage reads and checks an opened message: its kind, its IDs and
// the bounds of its ICE fields. It is the parser of what a paired device
// sealed, so it trusts nothing beyond the seal.
func ParseMessage(plain []byte) (Message, error) {
	var m Message
	d := json.NewDecoder(bytes.NewReader(plain))
	if err := d.Decode(&m); err != nil {
		return Message{}, fmt.Errorf("%w: %v", ErrBadMessage, err)
	}
	// Not d.More, which takes a ']' or '}' after the message for the end
	// of an array or object holding it.
	if _, err := d.Token(); !errors.Is(err, io.EOF) {
		return Message{}, fmt.Errorf("%w: trailing data", ErrBadMessage)
	}
	switch m.Kind {
	case KindPresence, KindCall, KindAnswer, KindLeft:
	default:
		return Message{}, fmt.Errorf("%w: unknown kind %.32q", ErrBadMessage, m.Kind)
	}
	for _, id := range []string{m.From, m.To} {
		if _, err := identity.ParseID(id); err != nil {
			return Message{}, fmt.Errorf("%w: device ID: %v", ErrBadMessage, err)
		}
	}
	if m.Instance != "" && (len(m.Instance) != InstanceLen || !isHex(m.Instance)) {
		return Message{}, fmt.Errorf("%w: bad instance", ErrBadMessage)
	}
	if m.Kind == KindCall && m.Instance != "" {
		return Message{}, fmt.Errorf("%w: a call names no instance", ErrBadMessage)
	}
	if m.Kind == KindPresence || m.Kind == KindLeft {
		if m.Call != "" || m.Ufrag != "" || m.Pwd != "" || len(m.Candidates) > 0 {
			return Message{}, fmt.Errorf("%w: a %s carries no call", ErrBadMessage, m.Kind)
		}
		return m, nil
	}
	if len(m.Call) != 32 || !isHex(m.Call) {
		return Message{}, fmt.Errorf("%w: bad call name", ErrBadMessage)
	}
	if !iceChars(m.Ufrag, 4) || !iceChars(m.Pwd, 22) {
		return Message{}, fmt.Errorf("%w: bad ICE credentials", ErrBadMessage)
	}
	if len(m.Candidates) == 0 || len(m.Candidates) > MaxCandidates {
		return Message{}, fmt.Errorf("%w: %d candidates (1 to %d)", ErrBadMessage, len(m.Candidates), MaxCandidates)
	}
	for _, c := range m.Candidates {
		if len(c) == 0 || len(c) > maxCandidateLen || !printable(c) {
			return Message{}, fmt.Errorf("%w: bad candidate", ErrBadMessage)
		}
	}
	return m, nil
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// iceChars: RFC 8839 ice-char (ALPHA / DIGIT / "+" / "/"), min to maxCredLen long.
func iceChars(s string, min int) bool {
	if len(s) < min || len(s) > maxCredLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '+' || c == '/') {
			return false
		}
	}
	return true
}

func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}
