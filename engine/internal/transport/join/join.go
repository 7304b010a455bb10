// Package join is the session-join sub-protocol both transports speak: how
// the connections of one session find each other at the listener.
//
// The dialer starts every connection of a session with a header: the
// session's 16-byte token, then one flag byte. The listener answers one
// status byte (package errcode has the table) where the transport needs an
// answer:
//
//   - FlagNew starts a session; the listener's Accept returns it.
//   - FlagJoin adds a connection to the session with that token.
//   - FlagSpare (TCP) parks a connection the listener may claim for a stream
//     it opens itself (it cannot dial back).
//   - FlagAttach starts a session of this transport that takes over a
//     running session of another transport with the same token (auto moving
//     a batch from QUIC to TCP); Accept never returns it: the other session
//     accepts its streams.
//
// A Registry, shared by the listeners of one engine, knows every session by
// transport and token. A join must present the session's certificate,
// unknown tokens are refused, and each session bounds its connections. A
// Gate is one listener's side: its accept queue, the bound on handshakes in
// flight and their timeout, the sessions it admitted, and the goroutines it
// runs for them.
package join

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"

	"github.com/ferrydrop/ferry/engine/identity"
	"github.com/ferrydrop/ferry/engine/internal/errcode"
	"github.com/ferrydrop/ferry/engine/internal/transport"
)

// TokenLen is the size of a session token.
const TokenLen = 16

// Token names a session; the dialer draws it at random.
type Token [TokenLen]byte

// NewToken draws a random token.
func NewToken() Token {
	var t Token
	rand.Read(t[:])
	return t
}

// Flag says what a connection asks for.
type Flag byte

// Join flags.
const (
	FlagNew    Flag = 1
	FlagJoin   Flag = 2
	FlagSpare  Flag = 3
	FlagAttach Flag = 4
)

// HeaderLen is the size of the join header: token, then flag.
const HeaderLen = TokenLen + 1

// AppendHeader appends the header a dialer sends first on a connection.
func AppendHeader(b []byte, token Token, flag Flag) []byte {
	return append(append(b, token[:]...), byte(flag))
}

// ParseHeader parses a header read from a dialer (peer input).
func ParseHeader(b []byte) (Token, Flag, error) {
	var token Token
	if len(b) != HeaderLen {
		return token, 0, errcode.ErrBadHeader
	}
	copy(token[:], b)
	switch flag := Flag(b[TokenLen]); flag {
	case FlagNew, FlagJoin, FlagSpare, FlagAttach:
		return token, flag, nil
	}
	return token, 0, errcode.ErrBadHeader
}

// ReadHeader reads and parses a header.
func ReadHeader(r io.Reader) (Token, Flag, error) {
	var b [HeaderLen]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return Token{}, 0, fmt.Errorf("%w: %w", errcode.ErrBadHeader, err)
	}
	return ParseHeader(b[:])
}

// WriteStatus answers a header: nil admits, a refusal says why.
func WriteStatus(w io.Writer, refusal error) error {
	_, err := w.Write([]byte{byte(errcode.StatusOf(refusal))})
	return err
}

// ReadStatus reads the listener's answer: nil, or the refusal.
func ReadStatus(r io.Reader) error {
	var b [1]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return err
	}
	return errcode.FromStatus(errcode.Status(b[0]))
}

// CheckPeer refuses a connection whose certificate is not the session's.
func CheckPeer(session, conn identity.DeviceID) error {
	if session != conn {
		return errcode.ErrPeerMismatch
	}
	return nil
}

// CheckRoom refuses one more connection for a session that has n live ones
// and may have at most limit, or that has ended.
func CheckRoom(n, limit int, ended bool) error {
	switch {
	case ended:
		return errcode.ErrUnknownSession
	case n >= limit:
		return errcode.ErrSessionFull
	}
	return nil
}

// TakeOver is a listener's session that can take over the data of a
// session of another transport (FlagAttach).
type TakeOver interface {
	// TakeOver makes the session accept c's streams from now on and end c
	// when it ends; it refuses with a join refusal.
	TakeOver(c transport.Conn) error
}

// Attachable is a dialled session whose batch a session of another
// transport may take over.
type Attachable interface {
	Token() Token
	// Registered is closed once the listener knows the session (the peer
	// answered on its first stream): attaching before that is refused.
	Registered() <-chan struct{}
}

// Attacher is a dialled session that, before its first stream, can take
// over a running session of another transport instead of starting its own
// (FlagAttach). The session then carries only streams it opens.
type Attacher interface {
	Attach(ctx context.Context, token Token) error
}
