package quic

import (
	"context"
	"errors"
	"net"
	"syscall"
	"time"

	"github.com/ferrydrop/ferry/engine/internal/transport"
	"github.com/ferrydrop/ferry/internal/clock"
)

// deadPortEvery paces the port checks of a dial. A host tells of a closed
// port with an ICMP "port unreachable", which Linux sends to one address
// about once a second once a short burst is spent (icmp_ratelimit, not on
// loopback), and every datagram to the port spends it, quic-go's resent
// first packets too: checks this often hear most of the answers there are.
const deadPortEvery = 200 * time.Millisecond

// errDeadPort ends a dial whose peer's host said twice,
// transport.DeadPortGrace or more apart, that nothing listens at its port.
var errDeadPort = errors.New("nothing is listening there: the host refused datagrams at that port (ICMP port unreachable) " +
	"for a second")

// portWord is what one port check heard.
type portWord int

const (
	portSilent   portWord = iota // nothing: a listener that drops the byte, a firewall, a rate-limited refusal
	portRefused                  // the host refused the port
	portAnswered                 // something there answered: the port is open
)

// watchDeadPort ends a dial (cancel) whose peer's host refuses its port
// twice, transport.DeadPortGrace or more apart, as check (one port check,
// see portCheck) hears it every deadPortEvery while the dial runs. quic-go's
// socket is not connected, so it never hears the host's "port unreachable"
// and resends its first packet until the handshake's timeout (5 s). A port
// that answers ends the checks; silence tells nothing (a firewall that
// drops, or Windows, where Go's UDP sockets are not told of ICMP errors),
// and the dial runs as before.
func watchDeadPort(ctx context.Context, clk clock.Clock, check func(context.Context) portWord, cancel context.CancelCauseFunc) {
	var first time.Time // the first refusal
	for ctx.Err() == nil {
		start := clk.Now()
		switch check(ctx) {
		case portAnswered:
			return
		case portRefused:
			if first.IsZero() {
				first = start
			} else if start.Sub(first) >= transport.DeadPortGrace {
				cancel(errDeadPort)
				return
			}
		}
		t, fired := clk.NewTimer(deadPortEvery - clk.Now().Sub(start))
		select {
		case <-ctx.Done():
		case <-fired:
		}
		t.Stop()
	}
}

// portCheck returns the port check of ra for watchDeadPort, and what
// closes its socket: a datagram of one byte (which a QUIC listener drops,
// as peerGone's) from a connected socket, which the host's refusal reaches
// as an error.
func portCheck(ra *net.UDPAddr) (check func(context.Context) portWord, done func()) {
	c, err := net.DialUDP("udp", nil, ra)
	if err != nil {
		return func(context.Context) portWord { return portAnswered }, func() {} // no check: the dial runs as before
	}
	buf := make([]byte, 64)
	return func(ctx context.Context) portWord {
		stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) })
		defer stop()
		if _, err := c.Write([]byte{0}); err != nil {
			if errors.Is(err, syscall.ECONNREFUSED) {
				return portRefused
			}
			return portSilent
		}
		c.SetReadDeadline(time.Now().Add(deadPortEvery))
		_, err := c.Read(buf)
		switch {
		case err == nil:
			return portAnswered
		case errors.Is(err, syscall.ECONNREFUSED):
			return portRefused
		}
		return portSilent
	}, func() { c.Close() }
}
