// Package addr says how a device can be reached. An address is a kind and
// a URI-like string the kind interprets, in the shape of syncthing's
// scheme URIs: Ferry over QUIC is quic://host:port, Ferry over TLS over TCP
// is tcp://host:port; a later kind (LocalSend's https://host:port with its
// pinned fingerprint, a rendezvous name for a device beyond the LAN) is one
// more kind with its own URI, not one more field. A device is an identity
// plus a list of addresses, best first.
//
// The package is plain data with no dependencies, so that every layer
// (discovery, the engine and its transports, the app, the UI, the CLI)
// speaks of addresses without importing a transport.
package addr

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
)

// Kind names a way to reach a device: for Ferry's own protocol, the
// transport that carries it.
type Kind string

// The kinds Ferry knows.
const (
	// QUIC is Ferry's protocol over QUIC (UDP): quic://host:port.
	QUIC Kind = "quic"
	// TCP is Ferry's protocol over TLS over TCP: tcp://host:port.
	TCP Kind = "tcp"
	// LocalSend is a LocalSend device's HTTPS (or HTTP) server, with the
	// fingerprint its certificate must have as the URI's fragment:
	// localsend+https://host:port#FINGERPRINT (see NewLocalSend).
	LocalSend Kind = "localsend"
	// Rendezvous is a paired device beyond the LAN, called through a
	// relay: rendezvous://relay-host:port (see NewRendezvous). The URI
	// names the relay only; the device is the target's ID, and what is
	// published there goes under names only the paired devices compute.
	Rendezvous Kind = "rendezvous"
)

// labels are how a user reads the known kinds.
var labels = map[Kind]string{QUIC: "QUIC", TCP: "TCP", LocalSend: "LocalSend", Rendezvous: "the internet"}

// Label is the kind as a user reads it ("QUIC", "TCP"); an unknown kind
// reads as its name.
func (k Kind) Label() string {
	if l, ok := labels[k]; ok {
		return l
	}
	return string(k)
}

// Addr is one way to reach a device: its Kind and a URI the kind
// interprets. The zero Addr is no address.
type Addr struct {
	Kind Kind   `json:"kind"`
	URI  string `json:"uri"`
}

// MaxLen bounds the text form of an address that Parse accepts.
const MaxLen = 1024

// maxKindLen bounds a kind's name.
const maxKindLen = 32

// ErrBad reports text that is not an address.
var ErrBad = errors.New("not an address")

// New returns the address of kind at hostport ("host:port", an IPv6 host in
// brackets, a zone kept as it is) for a kind whose URI scheme is its own
// name, as Ferry's transports' are: New(QUIC, "192.0.2.7:47800") is
// quic://192.0.2.7:47800.
func New(kind Kind, hostport string) Addr {
	return Addr{Kind: kind, URI: string(kind) + "://" + hostport}
}

// NewLocalSend returns the address of a LocalSend device's server at
// hostport: scheme is "https" (anything else but "http" reads as https)
// and fingerprint the one its certificate must have (HTTPS), or its
// announced random string (HTTP, which pins nothing).
// NewLocalSend("https", "192.0.2.9:53317", "AB12...") is
// localsend+https://192.0.2.9:53317#AB12....
func NewLocalSend(scheme, hostport, fingerprint string) Addr {
	if scheme != "http" {
		scheme = "https"
	}
	u := scheme + "://" + hostport
	if fingerprint != "" {
		u += "#" + fingerprint
	}
	return Addr{Kind: LocalSend, URI: u}
}

// NewRendezvous returns the address of a paired device reached through
// the relay at hostport: NewRendezvous("relay.example:3478") is
// rendezvous://relay.example:3478.
func NewRendezvous(hostport string) Addr { return New(Rendezvous, hostport) }

// Pin is the fingerprint a LocalSend address pins (its URI's fragment);
// "" for other kinds, or none.
func (a Addr) Pin() string {
	if a.Kind != LocalSend {
		return ""
	}
	_, frag, _ := strings.Cut(a.URI, "#")
	return frag
}

// Scheme is the URI's scheme ("https" for a LocalSend address over TLS).
func (a Addr) Scheme() string { return a.scheme() }

// Parse reads the text form of an address (String's): "quic://host:port",
// or "kind+scheme://..." for a kind whose URI has a scheme of its own.
func Parse(s string) (Addr, error) {
	if len(s) > MaxLen {
		return Addr{}, fmt.Errorf("%w: %d bytes", ErrBad, len(s))
	}
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		return Addr{}, fmt.Errorf("%w: %q has no scheme", ErrBad, s)
	}
	kind, uriScheme, plus := strings.Cut(scheme, "+")
	if !plus {
		uriScheme = kind
	}
	if !isToken(kind) || !isToken(uriScheme) {
		return Addr{}, fmt.Errorf("%w: bad scheme in %q", ErrBad, s)
	}
	a := Addr{Kind: Kind(kind), URI: uriScheme + "://" + rest}
	if a.HostPort() == "" || strings.ContainsFunc(rest, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return Addr{}, fmt.Errorf("%w: %q names no host", ErrBad, s)
	}
	return a, nil
}

// String is the address as text: its URI when the URI's scheme is the
// kind's name, else kind+URI ("localsend+https://...").
func (a Addr) String() string {
	if a.IsZero() {
		return ""
	}
	if a.scheme() == string(a.Kind) {
		return a.URI
	}
	return string(a.Kind) + "+" + a.URI
}

// IsZero reports whether a is no address.
func (a Addr) IsZero() bool { return a.Kind == "" && a.URI == "" }

func (a Addr) scheme() string {
	s, _, _ := strings.Cut(a.URI, "://")
	return s
}

// HostPort is the URI's authority: "host:port" for Ferry's kinds (an IPv6
// host in brackets), "" when the URI has none.
func (a Addr) HostPort() string {
	_, rest, ok := strings.Cut(a.URI, "://")
	if !ok {
		return ""
	}
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		rest = rest[:i]
	}
	if i := strings.LastIndexByte(rest, '@'); i >= 0 {
		rest = rest[i+1:]
	}
	return rest
}

// Host is the host of the URI's authority, without brackets or port.
func (a Addr) Host() string {
	hp := a.HostPort()
	if h, _, err := net.SplitHostPort(hp); err == nil {
		return h
	}
	return strings.TrimSuffix(strings.TrimPrefix(hp, "["), "]")
}

// Kinds lists the kinds of as, each once, in order of first appearance.
func Kinds(as []Addr) []Kind {
	var out []Kind
	for _, a := range as {
		if !slices.Contains(out, a.Kind) {
			out = append(out, a.Kind)
		}
	}
	return out
}

// First returns the first address of kind in as.
func First(as []Addr, kind Kind) (Addr, bool) {
	for _, a := range as {
		if a.Kind == kind {
			return a, true
		}
	}
	return Addr{}, false
}

// Shared reports whether as and bs have an address in common.
func Shared(as, bs []Addr) bool {
	for _, a := range as {
		if slices.Contains(bs, a) {
			return true
		}
	}
	return false
}

func isToken(s string) bool {
	if s == "" || len(s) > maxKindLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}
