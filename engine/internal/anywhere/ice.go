package anywhere

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/pion/ice/v4"
	"github.com/pion/stun/v4"
	"github.com/pion/transport/v5/stdnet"
)

// TestNet narrows what a call offers, for tests on one machine.
type TestNet struct {
	// Loopback offers loopback addresses only (tests send nothing beyond
	// loopback).
	Loopback bool
	// RelayOnly offers the relay's TURN candidates only: the path is then
	// relayed, even on loopback.
	RelayOnly bool
	// UnderTURN, if set, wraps the socket of each TURN client, under
	// Ferry's wait for its release (tests: a lossy socket).
	UnderTURN func(net.PacketConn) net.PacketConn
}

// gatherTimeout bounds gathering candidates: a STUN or TURN server that
// does not answer costs at most this.
const gatherTimeout = 5 * time.Second

// iceTimeout bounds the connectivity checks.
const iceTimeout = 15 * time.Second

// How ICE checks and picks a pair. pion's defaults check every 200 ms (7
// checks a pair) and accept a pair with a relay candidate only 2 s after
// the checks began, so that a direct pair found meanwhile wins: at 80 ms
// round trip that wait was half of a relayed call's set-up. A direct pair
// answers one round trip after the caller's first check (the callee,
// which answered the call, checks already and so has opened its NAT), and
// a relayed pair no sooner (its checks go through the relay, after a TURN
// permission): so the caller waits relayWaitRTTs round trips to the relay,
// and at least minRelayWait, for a direct pair to win. Checks go out
// twice as often, as many times over the same span.
const (
	checkInterval      = 100 * time.Millisecond
	maxBindingRequests = 14
	minRelayWait       = 500 * time.Millisecond
	relayWaitRTTs      = 4
)

// relayWait is how long the caller lets direct pairs win over relayed
// ones, given its round trip to the relay.
func relayWait(rtt time.Duration) time.Duration {
	return max(minRelayWait, relayWaitRTTs*rtt)
}

// ErrNoPath marks ICE checks that found no pair that works.
var ErrNoPath = errors.New("no network path to the device: neither a direct one nor through the relay")

// agent is one side of an ICE session and the candidates it gathered.
type agent struct {
	a          *ice.Agent
	ownMux     *ice.UniversalUDPMuxDefault // a mux only this agent uses: closed with it
	releases   *releases                   // its TURN clients' releases, waited for by close
	ufrag, pwd string
	candidates []string
	failed     chan struct{} // closed when the agent failed or closed
	failOnce   sync.Once
}

// newAgent gathers this device's candidates: host, server-reflexive (the
// relay's STUN) and relayed (its TURN).
// secret is the relay secret ("" for a relay without one).
// tn.Loopback gathers host candidates on loopback only (tests, which send
// nothing beyond loopback); tn.RelayOnly gathers relayed ones only.
// mux, when set, is a socket the agent shares with QUIC: its host and
// server-reflexive candidates are that socket's. relayRTT is the round
// trip to the relay, for a caller (controlling: it picks the pair; see
// relayWait); zero for the callee. log gets what pion says (nil: nothing).
func newAgent(ctx context.Context, relay, secret string, tn TestNet, mux *ice.UniversalUDPMuxDefault, relayRTT time.Duration, log *slog.Logger) (*agent, error) {
	cfg, err := agentConfig(relay, secret, tn, mux, relayRTT, log)
	if err != nil {
		return nil, err
	}
	return startAgent(ctx, cfg, tn.Loopback)
}

// agentConfig is newAgent's ICE configuration.
func agentConfig(relay, secret string, tn TestNet, mux *ice.UniversalUDPMuxDefault, relayRTT time.Duration, log *slog.Logger) (*ice.AgentConfig, error) {
	loopback := tn.Loopback
	stunURI, err := stun.ParseURI("stun:" + relay)
	if err != nil {
		return nil, fmt.Errorf("relay address %q: %w", relay, err)
	}
	turnURI, err := stun.ParseURI("turn:" + relay + "?transport=udp")
	if err != nil {
		return nil, fmt.Errorf("relay address %q: %w", relay, err)
	}
	turnURI.Username, turnURI.Password = turnCredentials(secret)
	sys, err := stdnet.NewNet()
	if err != nil {
		return nil, err
	}
	cfg := &ice.AgentConfig{
		// The system's network, but a TURN allocation's release is
		// answered before its socket closes (release.go).
		Net:          turnNet{Net: sys, password: turnURI.Password, releases: newReleases(), under: tn.UnderTURN},
		Urls:         []*stun.URI{stunURI, turnURI},
		NetworkTypes: []ice.NetworkType{ice.NetworkTypeUDP4},
		CandidateTypes: []ice.CandidateType{
			ice.CandidateTypeHost, ice.CandidateTypeServerReflexive, ice.CandidateTypeRelay,
		},
		// No mDNS: it would announce on every interface's multicast group,
		// and host candidates by address are what the peer needs anyway.
		MulticastDNSMode: ice.MulticastDNSModeDisabled,
		LoggerFactory:    pionLogs(log),
		IncludeLoopback:  loopback,
		InterfaceFilter:  func(name string) bool { return !loopback || name == "lo" },
		// A peer's loopback or unspecified address is this device's own:
		// no check goes there (a hostile peer would aim them at local services).
		RemoteIPFilter:     func(ip net.IP) bool { return loopback || !ip.IsLoopback() && !ip.IsUnspecified() },
		CheckInterval:      ptr(checkInterval),
		MaxBindingRequests: ptr(uint16(maxBindingRequests)),
	}
	if mux != nil {
		cfg.UDPMux, cfg.UDPMuxSrflx = mux, mux
	}
	if relayRTT > 0 {
		cfg.RelayAcceptanceMinWait = ptr(relayWait(relayRTT))
	}
	if tn.RelayOnly {
		// No direct pair to wait for (pion then waits for none either).
		cfg.CandidateTypes = []ice.CandidateType{ice.CandidateTypeRelay}
		cfg.RelayAcceptanceMinWait = nil
	}
	return cfg, nil
}

// startAgent makes an agent of cfg and gathers its candidates.
func startAgent(ctx context.Context, cfg *ice.AgentConfig, loopback bool) (*agent, error) {
	a, err := ice.NewAgent(cfg)
	if err != nil {
		return nil, err
	}
	g := &agent{a: a, failed: make(chan struct{})}
	if tn, ok := cfg.Net.(turnNet); ok {
		g.releases = tn.releases
	}
	a.OnConnectionStateChange(func(s ice.ConnectionState) {
		if s == ice.ConnectionStateFailed || s == ice.ConnectionStateClosed {
			g.failOnce.Do(func() { close(g.failed) })
		}
	})
	var mu sync.Mutex
	done := make(chan struct{})
	a.OnCandidate(func(c ice.Candidate) {
		mu.Lock()
		defer mu.Unlock()
		if c == nil {
			close(done)
			return
		}
		// A mux on an unspecified socket offers loopback too: no use to the
		// peer, and not to be published.
		if ip := net.ParseIP(c.Address()); !loopback && ip != nil && ip.IsLoopback() {
			return
		}
		if len(g.candidates) < MaxCandidates {
			g.candidates = append(g.candidates, c.Marshal())
		}
	})
	if err := a.GatherCandidates(); err != nil {
		g.close()
		return nil, err
	}
	t := time.NewTimer(gatherTimeout)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	case <-ctx.Done():
		g.close()
		return nil, ctx.Err()
	}
	if g.ufrag, g.pwd, err = a.GetLocalUserCredentials(); err != nil {
		g.close()
		return nil, err
	}
	mu.Lock()
	defer mu.Unlock()
	if len(g.candidates) == 0 {
		g.close()
		return nil, errors.New("no network address to offer (no interface is up?)")
	}
	return g, nil
}

// newMux is a mux on a socket shared with QUIC; log gets what it says.
func newMux(pc net.PacketConn, log *slog.Logger) *ice.UniversalUDPMuxDefault {
	return ice.NewUniversalUDPMuxDefault(ice.UniversalUDPMuxParams{UDPConn: pc, Logger: pionLogs(log).NewLogger("ice")})
}

// close ends the agent (and its own mux). Its TURN allocations are given
// back on the way: their releases, sent as ICE closes its candidates one
// by one, are waited for together (releases.wait).
func (g *agent) close() {
	g.a.Close()
	if g.releases != nil {
		g.releases.wait()
	}
	if g.ownMux != nil {
		g.ownMux.Close()
	}
}

// localRelayed reports whether this side's end of the chosen pair is a
// TURN relay candidate: its packets then go through pion's TURN client,
// not through a socket QUIC could share.
func (g *agent) localRelayed() bool {
	pair, err := g.a.GetSelectedCandidatePair()
	return err != nil || pair == nil || pair.Local.Type() == ice.CandidateTypeRelay
}

// remoteAddr is the peer's end of the chosen pair.
func (g *agent) remoteAddr() string {
	pair, err := g.a.GetSelectedCandidatePair()
	if err != nil || pair == nil {
		return ""
	}
	return net.JoinHostPort(pair.Remote.Address(), fmt.Sprint(pair.Remote.Port()))
}

// fill puts this side's ICE fields into m.
func (g *agent) fill(m *Message) {
	m.Ufrag, m.Pwd = g.ufrag, g.pwd
	m.Candidates = append([]string(nil), g.candidates...)
}

// connect adds the peer's candidates and runs the checks: controlling
// (the caller) dials, the other side accepts.
func (g *agent) connect(ctx context.Context, peer Message, controlling bool) (*ice.Conn, error) {
	added := 0
	for _, s := range peer.Candidates {
		c, err := ice.UnmarshalCandidate(s)
		if err != nil {
			continue // one bad candidate costs only itself
		}
		if err := g.a.AddRemoteCandidate(c); err == nil {
			added++
		}
	}
	if added == 0 {
		return nil, fmt.Errorf("%w: the device offered no usable candidate", ErrBadMessage)
	}
	ctx, cancel := context.WithTimeout(ctx, iceTimeout)
	defer cancel()
	var c *ice.Conn
	var err error
	if controlling {
		c, err = g.a.Dial(ctx, peer.Ufrag, peer.Pwd)
	} else {
		c, err = g.a.Accept(ctx, peer.Ufrag, peer.Pwd)
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w (%v)", ErrNoPath, err)
		}
		return nil, fmt.Errorf("ice: %w", err)
	}
	return c, nil
}

// Path says which path ICE chose: "direct" or "relayed", with the addresses.
type Path struct {
	Relayed bool
	// Relay is the relay's "host:port" the call went through (its TURN
	// server carries a relayed path).
	Relay  string
	Local  string // this side's candidate: type and address
	Remote string // the peer's
}

// Route says which way a session on the path goes, in the words of the
// engine's transport event: "internet" (a direct path through the NATs)
// or "relayed", and the relay's "host:port".
func (p Path) Route() (route, relay string) {
	if p.Relayed {
		return "relayed", p.Relay
	}
	return "internet", p.Relay
}

func (p Path) String() string {
	if p.Relayed {
		return "relayed (" + p.Local + " <-> " + p.Remote + ")"
	}
	return "direct (" + p.Local + " <-> " + p.Remote + ")"
}

func (g *agent) path() Path {
	pair, err := g.a.GetSelectedCandidatePair()
	if err != nil || pair == nil {
		return Path{}
	}
	return Path{
		Relayed: pair.Local.Type() == ice.CandidateTypeRelay || pair.Remote.Type() == ice.CandidateTypeRelay,
		Local:   fmt.Sprintf("%s %s:%d", pair.Local.Type(), pair.Local.Address(), pair.Local.Port()),
		Remote:  fmt.Sprintf("%s %s:%d", pair.Remote.Type(), pair.Remote.Address(), pair.Remote.Port()),
	}
}

// bridge carries datagrams between an ICE connection and a UDP socket on
// loopback, so that Ferry's QUIC transport, which owns real UDP sockets,
// runs unchanged over the path ICE chose: the dialling side's QUIC dials
// the bridge's socket, the receiving side's bridge writes to the local
// QUIC listener. It costs two loopback hops per packet (the shared
// socket of docs/beyond-the-lan.md is the way to avoid them).
type bridge struct {
	ice   *ice.Conn
	agent *agent
	udp   *net.UDPConn
	mu    sync.Mutex
	peer  *net.UDPAddr // the local QUIC socket: fixed, or learned from its first datagram
	extra func()       // also run at Close
	// path and seenAs: on the receiving side, the path ICE chose and the
	// address the QUIC listener hears the peer from (Server.PathOf).
	path   Path
	seenAs string
	once   sync.Once
	done   chan struct{}
	wg     sync.WaitGroup
}

// newBridge starts a bridge; peer is the local QUIC listener, or nil to
// learn the local QUIC dialler's address from its first datagram. ready,
// if set, sees the bridge before anything goes through it.
func newBridge(g *agent, c *ice.Conn, peer *net.UDPAddr, ready func(*bridge)) (*bridge, error) {
	if c == nil {
		// QUIC shares the socket ICE chose: nothing to carry, only the ICE
		// session to keep until it fails (the peer left) or is closed.
		b := &bridge{agent: g, done: make(chan struct{})}
		if ready != nil {
			ready(b)
		}
		b.wg.Go(func() {
			select {
			case <-g.failed:
				b.Close()
			case <-b.done:
			}
		})
		return b, nil
	}
	udp, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, err
	}
	udp.SetReadBuffer(4 << 20)
	udp.SetWriteBuffer(4 << 20)
	b := &bridge{ice: c, agent: g, udp: udp, peer: peer, done: make(chan struct{})}
	if ready != nil {
		ready(b)
	}
	b.wg.Go(b.fromPeer)
	b.wg.Go(b.toPeer)
	b.wg.Go(func() {
		select {
		case <-g.failed:
			b.Close()
		case <-b.done:
		}
	})
	return b, nil
}

// Addr is the bridge's loopback socket (nil when it carries nothing).
func (b *bridge) Addr() *net.UDPAddr { return b.udp.LocalAddr().(*net.UDPAddr) }

// Done is closed once the bridge closed.
func (b *bridge) Done() <-chan struct{} { return b.done }

func (b *bridge) fromPeer() {
	buf := make([]byte, 65536)
	for {
		n, err := b.ice.Read(buf)
		if err != nil {
			b.Close()
			return
		}
		b.mu.Lock()
		to := b.peer
		b.mu.Unlock()
		if to == nil {
			continue // no local QUIC socket yet: QUIC retransmits
		}
		b.udp.WriteToUDP(buf[:n], to)
	}
}

func (b *bridge) toPeer() {
	buf := make([]byte, 65536)
	for {
		n, from, err := b.udp.ReadFromUDP(buf)
		if err != nil {
			b.Close()
			return
		}
		b.mu.Lock()
		if b.peer == nil {
			b.peer = from
		}
		ok := b.peer.IP.Equal(from.IP) && b.peer.Port == from.Port
		b.mu.Unlock()
		if !ok {
			continue // only the one local QUIC socket speaks through a bridge
		}
		if _, err := b.ice.Write(buf[:n]); err != nil && errors.Is(err, net.ErrClosed) {
			b.Close()
			return
		}
	}
}

// Close ends the bridge and the ICE session under it.
func (b *bridge) Close() {
	b.once.Do(func() {
		close(b.done)
		if b.udp != nil {
			b.udp.Close()
			b.ice.Close()
		}
		b.agent.close()
		if b.extra != nil {
			b.extra()
		}
	})
}

// closeSoon closes the bridge once what the local QUIC socket sent last,
// its session's goodbye (CONNECTION_CLOSE), went through: a bridge that
// carries datagrams forwards what its socket holds for goodbyeLinger,
// then closes (its read times out); one that carries nothing (QUIC on
// ICE's socket, whose goodbye went out by itself) closes at once. Closed
// at once, a bridge dropped the goodbye, and the peer's session waited
// seconds to hear its end (and held its TURN allocation meanwhile).
func (b *bridge) closeSoon() {
	if b.udp == nil {
		b.Close()
		return
	}
	if b.udp.SetReadDeadline(time.Now().Add(goodbyeLinger)) != nil {
		b.Close()
	}
}

// goodbyeLinger is how long a bridge outlives its session (closeSoon).
const goodbyeLinger = 250 * time.Millisecond

// Wait waits for the bridge's goroutines once it closed.
func (b *bridge) Wait() { b.wg.Wait() }

func ptr[T any](v T) *T { return &v }
