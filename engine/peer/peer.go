// Package peer names the device at the other end of an exchange, whatever
// protocol proved who it is: a Ferry device by the hash of its key, a
// LocalSend device by its certificate's fingerprint, and a peer that proved
// nothing (a LocalSend client without a certificate, a browser) by where it
// came from. The trust store, prompts, pairing, history and events name
// peers by ID, so the kinds never collide and only the ones that proved a
// key can be trusted.
//
// The package is plain data with no dependencies beyond the standard
// library, so that every protocol package (Ferry's wire session, LocalSend,
// a web link) and the stores can import it.
package peer

import (
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Kind says which protocol proved a peer's identity, and so how its key is
// written.
type Kind string

// The kinds of peer identity.
const (
	// Ferry: Key is a Ferry device ID, the SHA-256 of the certificate's
	// SubjectPublicKeyInfo in 52 upper-case base32 characters (what
	// identity.DeviceID.String writes), proven by Ferry's mutual TLS.
	Ferry Kind = "ferry"
	// LocalSend: Key is the LocalSend fingerprint, the upper-case hex
	// SHA-256 of the certificate's DER (64 characters), proven by the TLS
	// handshake that presented that certificate.
	LocalSend Kind = "localsend"
	// Anon: the peer proved no key (a LocalSend client without a client
	// certificate, a browser); Key is where it came from ("host:port" or
	// a name the protocol gives it). Such a peer is never trusted: the
	// trust store refuses to record it.
	Anon Kind = "anon"
)

// Known reports whether k is one of the kinds above: a newer Ferry may
// write others, whose devices the trust store keeps as they are.
func (k Kind) Known() bool { return k == Ferry || k == LocalSend || k == Anon }

// ID is a peer's identity: a kind and a key written the kind's way. The
// zero ID is "unknown". IDs compare with ==.
type ID struct {
	Kind Kind
	Key  string
}

// ErrBadID is returned by Parse and the constructors for text that is not
// a peer ID of the kind it claims.
var ErrBadID = errors.New("not a device ID")

// FerryKeyLen is the length of a Ferry key as written (base32 of 32 bytes).
const FerryKeyLen = 52

var ferryEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// FerryKey writes the 32-byte hash of a Ferry device's key the way a Ferry
// ID holds it.
func FerryKey(sum [32]byte) string { return ferryEncoding.EncodeToString(sum[:]) }

// ParseFerryKey reads a Ferry key in its full or human form (dashes,
// spaces and case are ignored). Anything that is not ASCII is refused
// before case is folded: strings.ToUpper makes "ı" (a dotless i) an I and
// "ſ" (a long s) an S, so a key typed or pasted with them read as another
// string. Of the strings that decode to the same 32 bytes only the one
// FerryKey writes is accepted, so a key has one spelling (dashes, spaces
// and case aside).
func ParseFerryKey(s string) ([32]byte, error) {
	var sum [32]byte
	for i := range len(s) {
		if s[i] >= utf8.RuneSelf {
			return sum, fmt.Errorf("parse id %q: not ASCII: %w", s, ErrBadID)
		}
	}
	s = strings.ToUpper(strings.NewReplacer("-", "", " ", "").Replace(strings.TrimSpace(s)))
	if len(s) != FerryKeyLen {
		return sum, fmt.Errorf("parse id %q: %w", s, ErrBadID)
	}
	b, err := ferryEncoding.DecodeString(s)
	if err != nil || len(b) != len(sum) {
		return sum, fmt.Errorf("parse id %q: %w", s, ErrBadID)
	}
	copy(sum[:], b)
	// 52 characters hold 260 bits and a key has 256: the decoder ignores
	// the last character's four low bits, so sixteen strings would name
	// each key. Only the one FerryKey writes is a key (it ends in A or Q).
	if FerryKey(sum) != s {
		return [32]byte{}, fmt.Errorf("parse id %q: last character %q has bits no key sets (a key ends in A or Q): %w", s, s[len(s)-1:], ErrBadID)
	}
	return sum, nil
}

// FromFerry is the ID of a Ferry device whose key hashes to sum.
func FromFerry(sum [32]byte) ID { return ID{Kind: Ferry, Key: FerryKey(sum)} }

// FromCertificate is the LocalSend ID of a certificate, given its DER:
// the fingerprint LocalSend announces and pins.
func FromCertificate(der []byte) ID {
	sum := sha256.Sum256(der)
	return ID{Kind: LocalSend, Key: strings.ToUpper(hex.EncodeToString(sum[:]))}
}

// Fingerprint is the LocalSend ID of a fingerprint as a peer announced it
// (compared case-insensitively, so it is kept upper-case).
func Fingerprint(s string) (ID, error) {
	s = strings.ToUpper(strings.TrimSpace(s))
	if len(s) != 2*sha256.Size {
		return ID{}, fmt.Errorf("parse fingerprint %q: %w", s, ErrBadID)
	}
	if _, err := hex.DecodeString(s); err != nil {
		return ID{}, fmt.Errorf("parse fingerprint %q: %w", s, ErrBadID)
	}
	return ID{Kind: LocalSend, Key: s}, nil
}

// maxAnonKey bounds what an anonymous ID keeps of where the peer came from.
const maxAnonKey = 256

// Anonymous is the ID of a peer that proved no key, named by where it came
// from (its "host:port", or a name its protocol gives it).
func Anonymous(from string) ID {
	if len(from) > maxAnonKey {
		from = from[:maxAnonKey]
	}
	return ID{Kind: Anon, Key: from}
}

// String is the ID as stored and shown: a Ferry ID is its bare key (as
// trust.json, history and resume state have always written it; base32 has
// no colon, so it never reads as another kind), the others are "kind:key".
func (id ID) String() string {
	switch id.Kind {
	case "":
		return ""
	case Ferry:
		return id.Key
	}
	return string(id.Kind) + ":" + id.Key
}

// Parse reads an ID as String writes it. A bare key, or "ferry:" and a key,
// is a Ferry ID in its full or human form; "localsend:" takes a
// fingerprint in either case; "anon:" takes anything after it.
func Parse(s string) (ID, error) {
	s = strings.TrimSpace(s)
	kind, key, found := strings.Cut(s, ":")
	if !found {
		kind, key = string(Ferry), s
	}
	switch Kind(strings.ToLower(kind)) {
	case Ferry:
		sum, err := ParseFerryKey(key)
		if err != nil {
			return ID{}, err
		}
		return FromFerry(sum), nil
	case LocalSend:
		return Fingerprint(key)
	case Anon:
		if key == "" || len(key) > maxAnonKey {
			return ID{}, fmt.Errorf("parse id %q: %w", s, ErrBadID)
		}
		return Anonymous(key), nil
	}
	return ID{}, fmt.Errorf("parse id %q: unknown kind %q: %w", s, kind, ErrBadID)
}

// IsZero reports whether id is unset.
func (id ID) IsZero() bool { return id == ID{} }

// Proven reports whether the peer proved a key (Ferry or LocalSend): only
// such a peer can be trusted, paired or remembered.
func (id ID) Proven() bool { return id.Kind == Ferry || id.Kind == LocalSend }

// Short is the first eight characters of the key, enough to tell devices
// apart in a list, as every screen shows them: "PT27-TYCL" (an anonymous
// peer's key is shown whole). It is internal/deviceid.Short's form, written
// out here because peer imports nothing of the module; a test there keeps
// the two the same.
func (id ID) Short() string {
	if id.Kind == Anon || len(id.Key) < 8 {
		return id.Key
	}
	return id.Key[:4] + "-" + id.Key[4:8]
}

// Human is the key in groups of four, for reading aloud and comparing (an
// anonymous peer's key is shown as it is).
func (id ID) Human() string {
	if !id.Proven() {
		return id.Key
	}
	var b strings.Builder
	for i := 0; i < len(id.Key); i += 4 {
		if i > 0 {
			b.WriteByte('-')
		}
		b.WriteString(id.Key[i:min(i+4, len(id.Key))])
	}
	return b.String()
}

// MarshalText writes String, so an ID is a plain string in JSON.
func (id ID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }

// UnmarshalText reads what MarshalText wrote; "" is the zero ID.
func (id *ID) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*id = ID{}
		return nil
	}
	p, err := Parse(string(b))
	if err != nil {
		return err
	}
	*id = p
	return nil
}
