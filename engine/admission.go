package engine

import (
	"github.com/ferrydrop/ferry/engine/internal/core"
	"github.com/ferrydrop/ferry/engine/internal/transport"
	"github.com/ferrydrop/ferry/engine/wire"
)

// The admission (what incoming sessions may hold before a decision, and
// whom the user muted) is the core's (package core); these are the Ferry
// wire session's ends of it.

// refuseEarly refuses a session right after the peer's hello, before
// anything is asked or written: a muted device or address, or an untrusted
// device using the name of a paired one.
func (e *Engine) refuseEarly(tk *core.Ticket, h *wire.Hello, c Conn) *wire.RemoteError {
	_, known := e.trust.Get(c.PeerID().Peer())
	if refused := tk.CheckMuted(e.isTrusted(c.PeerID().Peer()), known); refused != nil {
		return refused
	}
	return e.checkImpersonation(c.PeerID().Peer(), h.Name, c.RemoteAddr())
}

// admitted tells the transport that c's hello passed and its session
// holds its place among those waiting for a decision: from now on it may
// buffer what a transfer needs (transport.Admitter).
func admitted(c Conn) {
	if a, ok := c.(transport.Admitter); ok {
		a.Admitted()
	}
}
