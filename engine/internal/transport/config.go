package transport

import (
	"time"

	"github.com/ferrydrop/ferry/engine/internal/transport/spread"
	"github.com/ferrydrop/ferry/internal/clock"
)

// Config tunes the transports of one engine. The zero value of every field
// is usable and means the default written next to it; tests and the lab set
// fields (ferry-cli and ferry-bench map their FERRY_* variables onto them).
// Numbers measured in the lab that led to the defaults are in
// docs/transport-choice.md and docs/benchmarks/.
type Config struct {
	// HandshakeTimeout bounds a new connection's TLS handshake plus its join
	// header. Zero means 10 s.
	HandshakeTimeout time.Duration
	// LocalIP is the address dialled connections come from; empty lets the
	// system choose. (ferry-bench hostile floods from other loopback
	// addresses than the real sender's.)
	LocalIP string

	// StallTimeout fails a TCP stream whose Read or Write makes no progress
	// for this long (the effective limit lies between 15/16 of it and all of
	// it). A session's first stream is exempt when reading: it may wait for
	// a user to answer; its liveness comes from KeepAlive and UserTimeout.
	// Zero means 30 s.
	StallTimeout time.Duration
	// UnclaimedTimeout drops a joined TCP stream that AcceptStream has not
	// returned within this time, so a peer cannot pile up idle connections.
	// Zero means 10 s.
	UnclaimedTimeout time.Duration
	// KeepAlive is the idle time and probe interval of TCP keepalive. Zero means 5 s.
	KeepAlive time.Duration
	// UserTimeout (TCP_USER_TIMEOUT, Linux) fails a TCP connection whose sent
	// data stays unacknowledged this long. Zero means 30 s.
	UserTimeout time.Duration
	// TCPCongestion is the congestion control set on every TCP socket
	// (TCP_CONGESTION on Linux: "reno", "cubic", "bbr"... as allowed by
	// net.ipv4.tcp_allowed_congestion_control); a socket that cannot have it
	// fails. Empty asks for BBR, best effort, and keeps the kernel's default
	// where BBR is not allowed. (FERRY_TCP_CC)
	TCPCongestion string

	// QUICIdleTimeout is how long a silent QUIC peer is given before the
	// connection counts as lost (a killed process sends no goodbye). Short,
	// because a lost connection is cheap: the sender reconnects and resumes.
	// Zero means 10 s. (FERRY_QUIC_IDLE_TIMEOUT)
	QUICIdleTimeout time.Duration
	// QUICConns is how many QUIC connections a session uses on a clean local
	// path, where one connection's goroutine in quic-go, not the wire, caps a
	// transfer. Zero means 2; 1 turns the extra connections off; at most
	// MaxQUICConns. (FERRY_QUIC_CONNS)
	QUICConns int
	// JoinTimeout bounds an extra QUIC connection's handshake and join
	// answer. Zero means 2 s.
	JoinTimeout time.Duration
	// MaxFlows bounds the parallel congestion-controlled flows (QUIC
	// connections, TCP connections carrying data) a dialled session grows
	// to when its path shows random loss and its congestion control is
	// loss-based (package spread). Zero means MaxSpreadFlows; 1 turns the
	// growth off. (FERRY_MAX_FLOWS)
	MaxFlows int

	// Clock drives the dial race's head start, auto's wait for TCP's
	// check of a short path and the time a QUIC listener gives a
	// connection to open a stream after its handshake before it ranks as
	// silent; nil means the system clock (the engine passes its own,
	// Options.Clock).
	Clock clock.Clock
	// HeadStart is the head start each priority bucket of a dial race gets
	// before the next bucket dials too (QUIC's over TCP, Happy Eyeballs):
	// UDP blocked or dropped costs at most this much. Zero means 200 ms.
	HeadStart time.Duration
	// CleanRTT is the round trip under which a path counts as a clean local
	// link, where kernel TCP's offloads beat QUIC. Zero means 5 ms; negative
	// means no path is clean.
	CleanRTT time.Duration
	// SpreadRTT is the minimum round trip from which a session may spread
	// over more flows on random loss (package spread): under it (loopback,
	// a wired LAN) the losses a session sees are mostly a host's socket
	// buffers, and one loss-limited flow carries a lot (1.22/sqrt(p)
	// packets per round trip: at 0.5 % loss and 0.5 ms, 400 Mbit/s). It is
	// not CleanRTT: a 2 ms Wi-Fi link with 0.5 % loss is short enough for
	// TCP to beat QUIC, yet one Cubic flow carries 70 Mbit/s of its
	// 1 Gbit/s. Zero means 1 ms; negative means every path may spread.
	SpreadRTT time.Duration
	// SwitchRTT is the round trip from which auto starts on QUIC and moves
	// the rest of a batch to TCP on random loss, rather than picking one
	// transport before it starts. Zero means 50 ms; negative means every path.
	SwitchRTT time.Duration
	// NoAutoSwitch turns that off: auto always picks one transport before
	// the transfer starts. (FERRY_AUTO_SWITCH=0)
	NoAutoSwitch bool
	// UpgradeWait is how long auto waits for TCP after QUIC connected before
	// it settles for QUIC, plus four round trips: long enough for one lost
	// SYN (retried after 1 s) and a lost handshake flight. Zero means 2.5 s.
	UpgradeWait time.Duration
	// SwitchDialWait bounds how long auto keeps dialling TCP beside a
	// transfer that started on QUIC. Zero means 10 s.
	SwitchDialWait time.Duration
	// PathSilence is how long the path a dialled QUIC connection uses may
	// stay silent (packets sent, nothing received) before the connection
	// tries a path from another local address. Zero means three smoothed
	// round trips, at least 300 ms; negative turns the search off (the
	// system's own choice of source address still applies).
	PathSilence time.Duration
	// LossRTTSlack is the scheduling noise allowed on top of the minimum RTT
	// when telling random loss from a queue. Zero means spread.DefaultSlack.
	LossRTTSlack time.Duration
}

// SpreadRule is the rule a dialled session of c grows its flows by on
// random loss, whichever transport carries it. c has its defaults.
func (c Config) SpreadRule() spread.Rule {
	return spread.Rule{Max: c.MaxFlows, Slack: c.LossRTTSlack, Local: c.SpreadRTT}
}

// MaxSpreadFlows is the default and the largest Config.MaxFlows. A TCP
// session grows that far only to a receiver that takes that many data
// streams and the sender's reserve (its hello says; package engine bounds
// the session by it, StreamLimiter). The lab figures behind it are in
// docs/benchmarks/lab-fastlossy.md.
const MaxSpreadFlows = 32

// MaxQUICConns bounds the connections of one QUIC session.
const MaxQUICConns = 16

// WithDefaults returns c with every zero field set to its default.
func (c Config) WithDefaults() Config {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	c.Clock = clock.Or(c.Clock)
	def(&c.HandshakeTimeout, 10*time.Second)
	def(&c.StallTimeout, 30*time.Second)
	def(&c.UnclaimedTimeout, 10*time.Second)
	def(&c.KeepAlive, 5*time.Second)
	def(&c.UserTimeout, 30*time.Second)
	def(&c.QUICIdleTimeout, 10*time.Second)
	def(&c.JoinTimeout, 2*time.Second)
	def(&c.HeadStart, 200*time.Millisecond)
	def(&c.CleanRTT, 5*time.Millisecond)
	def(&c.SpreadRTT, time.Millisecond)
	def(&c.SwitchRTT, 50*time.Millisecond)
	def(&c.UpgradeWait, 2500*time.Millisecond)
	def(&c.SwitchDialWait, 10*time.Second)
	def(&c.LossRTTSlack, spread.DefaultSlack)
	c.CleanRTT = max(c.CleanRTT, 0)
	c.SpreadRTT = max(c.SpreadRTT, 0)
	c.SwitchRTT = max(c.SwitchRTT, 0)
	if c.QUICConns <= 0 {
		c.QUICConns = 2
	}
	c.QUICConns = min(c.QUICConns, MaxQUICConns)
	if c.MaxFlows <= 0 {
		c.MaxFlows = MaxSpreadFlows
	}
	c.MaxFlows = min(c.MaxFlows, MaxSpreadFlows)
	return c
}
