package quic

import (
	"context"
	"errors"
	"maps"
	"net"
	"net/netip"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/ferrydrop/ferry/engine/internal/transport"
)

// How a dialled connection follows the network (connection migration).
//
// Its first socket is unbound, so the system picks the source address of
// every datagram: when an address goes away or a better route appears
// (Ethernet plugged in beside Wi-Fi), the datagrams leave from the new
// address and the listener follows by itself (quic-go validates the new
// address). That first socket, and its quic.Transport, stay open for the
// connection's whole life (closing it would end the connection). A
// session dialled from a shared socket (Shared.Dial: the socket ICE
// checked its path on, beyond the LAN) is the exception: that socket is
// bound to one address (pinned), so when the address goes it does not
// move; it leaves for a standby at once, or its path is lost.
//
// On top of it, the migrator of each dialled connection keeps standby
// paths: one from each other local address (AddPath on a Transport bound
// to it), probed once the peer first answered, or when the address
// appears. They must be validated before they are needed: quic-go
// sends a path probe only when its congestion window lets it send, and on a
// dead path the window stays full of packets nobody acknowledges. Switching
// needs no packet: it declares the old path's packets lost and starts the
// new path with a fresh window. So the migrator
//
//   - notes each change of the system's choice after the network changed,
//     and reports it once the peer answers on the new path;
//   - when the path in use stays silent (datagrams sent, nothing back for
//     Config.PathSilence), switches to a validated standby (a Wi-Fi link
//     that is up but dead, which no system event reveals), and asks the
//     peer's host whether its port is still open (see peerGone), and,
//     for a session beyond the LAN, the relay whether the peer restarted
//     (SharedDial.PeerGone);
//   - leaves a bound path at once for a validated standby when its address
//     is removed.
//
// It never switches to a path that did not answer a probe, and it keeps
// every socket it opened until the connection ends. Once on a bound path
// it probes nothing more: with quic-go v0.65 a probe nobody answers while
// the connection runs on a path other than its first one ended the
// connection in our tests.
//
// When the address in use went away and, once the connection sent
// something since, the peer has not answered on any path for lostGrace
// (no standby reached it, nor the system's new choice of source), the
// migrator says the path is lost (Session.PathLost): the sender ends the
// attempt and reconnects another way (through the relay, beyond the LAN)
// instead of waiting for the idle timeout.

// migrateSample is how often the migrator looks at the connection's counters.
const migrateSample = 25 * time.Millisecond

// probeTimeout bounds one path probe: quic-go repeats its PATH_CHALLENGE
// after 200, 400 and 800 ms.
const probeTimeout = 2 * time.Second

// lostGrace is the least time the peer has to answer on another path once
// the address in use went away, before the path is declared lost; on a
// long path it is lostGraceRTTs smoothed round trips. A standby already
// validated is switched to after a silence of 3 RTTs at most (sample), and
// a probe still under way is waited for (probeTimeout). A peer that still
// answers lostWatch after the address went away is reached for good.
const (
	lostGrace     = time.Second
	lostGraceRTTs = 4
	lostWatch     = 5 * time.Second
)

// maxStandbys bounds the standby paths of a connection: each holds one of
// the peer's connection IDs (quic-go keeps 4), and a quic-go listener
// tracks 3 paths per connection besides the active one.
const maxStandbys = 2

// Reasons of path changes, as reported.
const (
	reasonAddrGone  = "address removed"
	reasonRoute     = "route changed"
	reasonSilent    = "path silent"
	reasonPeerMoved = "peer address changed"
)

// altSocket is a socket, and its Transport, that a migrated path uses.
type altSocket struct {
	udp *countingUDP
	tr  *quic.Transport
}

// standby is a path the connection may switch to.
type standby struct {
	local     netip.Addr // the address its socket is bound to
	sock      *altSocket
	path      *quic.Path
	probing   bool
	validated time.Time     // when it last answered a probe (zero: not since it was probed again)
	took      time.Duration // how long that probe took
}

// migrator follows the network for one dialled connection. Its fields are
// owned by its run goroutine.
type migrator struct {
	c      *conn
	nw     transport.Network
	remote *net.UDPAddr
	cfg    transport.Config
	report func(transport.PathChange) // nil: the session reports another connection's changes

	socks    map[netip.Addr]*altSocket // bound sockets, by local address
	onSystem bool                      // the path in use is the first one (unless pinned, the system picks its source address)
	pinned   bool                      // the first path's socket is bound to local (a shared socket, beyond the LAN): it never moves
	local    netip.Addr                // the source address in use (the system's choice when last asked)
	active   *standby                  // the standby switched to last (nil: the first path)
	standbys map[netip.Addr]*standby
	results  chan probeResult
	started  bool // the peer answered once: standbys may be probed

	lastRecv, sentAtRecv, errsAtRecv uint64
	lastRecvAt, silentSince          time.Time
	ep                               *episode

	ctx    context.Context // the connection's
	probes sync.WaitGroup  // probes running

	standbyOnce sync.Once
	standbyUp   chan struct{} // closed when a standby first answered (tests wait for it)

	checking   bool       // a peerGone check runs
	gone       chan error // its answer: non-nil when the peer's port is closed
	portClosed error      // what the connection ends with then (nil: errPeerGone)
	// peerGone, if set, is asked as well (SharedDial.PeerGone): its error
	// ends the connection as it is.
	peerGone func(context.Context) error

	// The address in use went away at addrGone (zero: it did not, or the
	// peer kept answering since); the connection had sent sentAtGone
	// packets then or at the peer's last answer, and sent more by
	// sendingSince. lost is closed once the path is declared lost.
	addrGone, sendingSince time.Time
	sentAtGone             uint64
	lost                   chan struct{}
}

// episode is one change of path being carried out.
type episode struct {
	change transport.PathChange
	maxGap time.Duration     // longest time without a packet from the peer so far
	tried  map[*standby]bool // standbys switched to during it
}

type probeResult struct {
	sb   *standby
	path *quic.Path
	took time.Duration
	err  error
}

func newMigrator(c *conn, nw transport.Network, remote *net.UDPAddr, cfg transport.Config, report func(transport.PathChange)) *migrator {
	return &migrator{c: c, nw: nw, remote: remote, cfg: cfg, report: report,
		socks: map[netip.Addr]*altSocket{}, standbys: map[netip.Addr]*standby{}, onSystem: true,
		local: preferredSource(remote), results: make(chan probeResult, 2*maxStandbys+2), standbyUp: make(chan struct{}),
		gone: make(chan error, 1), lost: make(chan struct{})}
}

// run follows the network until the connection ends, then closes the
// sockets it opened.
func (m *migrator) run() {
	m.ctx = m.c.c.Context()
	defer func() {
		m.probes.Wait()
		for s := range maps.Values(m.socks) {
			s.tr.Close()
			s.udp.Close()
		}
	}()
	m.c.setLocal(m.local)
	t := time.NewTicker(migrateSample)
	defer t.Stop()
	changed := m.nw.Changed()
	m.lastRecvAt = time.Now()
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-changed:
			changed = m.nw.Changed()
			m.networkChanged(time.Now())
		case r := <-m.results:
			m.probed(r, time.Now())
		case err := <-m.gone:
			m.checking = false
			if err != nil {
				// Nobody listens there any more (the peer stopped, or
				// restarted elsewhere; the relay, when the remote is its
				// port): end the connection now rather than after the
				// idle timeout, so the sender looks again.
				if m.portClosed != nil && errors.Is(err, errPeerGone) {
					err = m.portClosed
				}
				m.c.lose(err)
			}
		case now := <-t.C:
			m.sample(now)
		}
	}
}

// sample watches for the peer's packets: the first one on a new path ends
// an episode; none for a while after we sent some means the path is silent.
func (m *migrator) sample(now time.Time) {
	st := m.c.c.ConnectionStats()
	errs := m.sendErrors()
	if st.PacketsReceived != m.lastRecv {
		gap := now.Sub(m.lastRecvAt)
		m.lastRecv, m.lastRecvAt, m.sentAtRecv, m.errsAtRecv = st.PacketsReceived, now, st.PacketsSent, errs
		m.silentSince = time.Time{}
		if !m.addrGone.IsZero() {
			// The peer answers: a path still reaches it (or packets sent
			// before the change were still arriving). It must keep
			// answering what is sent from now on, until lostWatch.
			m.sentAtGone, m.sendingSince = st.PacketsSent, time.Time{}
			if now.Sub(m.addrGone) > lostWatch {
				m.addrGone = time.Time{}
			}
		}
		if !m.started {
			m.started = true
			m.refresh()
		}
		if ep := m.ep; ep != nil {
			ep.maxGap = max(ep.maxGap, gap)
			m.finish()
		}
		return
	}
	m.checkLost(now, st)
	if st.PacketsSent == m.sentAtRecv && errs == m.errsAtRecv {
		return // nothing asked of the peer since it last answered
	}
	if m.silentSince.IsZero() {
		m.silentSince = now
		return
	}
	limit := m.cfg.PathSilence
	if limit == 0 {
		limit = max(300*time.Millisecond, 3*st.SmoothedRTT)
	}
	if limit > 0 && now.Sub(m.silentSince) >= limit {
		m.silentSince = now // another silent period before the next try
		m.leave(now, reasonSilent, nil)
		if !m.checking {
			m.checking = true
			m.probes.Go(func() {
				err := peerGone(m.ctx, m.remote)
				if err == nil && m.peerGone != nil {
					err = m.peerGone(m.ctx)
				}
				m.gone <- err
			})
		}
	}
}

// checkLost declares the path lost when the address in use went away and
// the peer has not answered since, though the connection sent packets for
// lostGrace (or lostGraceRTTs round trips) and no standby probe is under
// way. A connection that sent nothing since tells nothing: it is left to
// its keep-alive, which sends.
func (m *migrator) checkLost(now time.Time, st quic.ConnectionStats) {
	if m.addrGone.IsZero() || isClosed(m.lost) {
		return
	}
	if m.sendingSince.IsZero() {
		if st.PacketsSent > m.sentAtGone {
			m.sendingSince = now
		}
		return
	}
	for _, sb := range m.standbys {
		if sb.probing {
			return // it may reach the peer: wait for its answer (probeTimeout)
		}
	}
	if now.Sub(m.sendingSince) >= max(lostGrace, lostGraceRTTs*st.SmoothedRTT) {
		close(m.lost)
	}
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// errPeerGone ends a connection whose peer's port turned out closed.
var errPeerGone = errors.New("the other device's port is closed: it stopped, or restarted elsewhere")

// peerGone asks the peer's host whether anything still listens on the
// peer's port: a datagram from a connected socket that the host refuses
// (ICMP port unreachable) comes back as an error on that socket, which
// quic-go's unconnected socket never sees. A QUIC listener drops the
// one-byte datagram; no answer at all (filtered, or a dead path) tells
// nothing.
func peerGone(ctx context.Context, remote *net.UDPAddr) error {
	c, err := net.DialUDP("udp", nil, remote)
	if err != nil {
		return nil
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	c.SetDeadline(time.Now().Add(500 * time.Millisecond))
	for range 2 { // the first refusal may be reported on the second send
		if _, err := c.Write([]byte{0}); err != nil {
			if errors.Is(err, syscall.ECONNREFUSED) {
				return errPeerGone
			}
			return nil
		}
		if _, err := c.Read(make([]byte, 1)); errors.Is(err, syscall.ECONNREFUSED) {
			return errPeerGone
		}
	}
	return nil
}

// sendErrors counts the datagrams the system refused on every socket of
// the connection.
func (m *migrator) sendErrors() uint64 {
	n := m.c.udp.sendErrors.Load()
	for s := range maps.Values(m.socks) {
		n += s.udp.sendErrors.Load()
	}
	return uint64(n)
}

// networkChanged re-reads where the system would send from now, and probes
// the standbys again.
func (m *migrator) networkChanged(now time.Time) {
	pref := preferredSource(m.remote)
	reason := reasonRoute
	if !slices.Contains(m.nw.Addrs(), m.local) {
		reason = reasonAddrGone
		if m.addrGone.IsZero() {
			m.addrGone, m.sendingSince = now, time.Time{}
			m.sentAtGone = m.c.c.ConnectionStats().PacketsSent
		}
	}
	follows := m.onSystem && !m.pinned // the path in use goes where the system sends from
	switch {
	case follows && pref.IsValid() && pref != m.local:
		// The system sends from pref from now on and the peer follows:
		// report once the peer answers there.
		m.begin(now, transport.PathChange{Local: true, From: m.local.String(), To: pref.String(), Reason: reason})
		m.local = pref
		m.c.setLocal(pref)
	case follows && !pref.IsValid():
		m.leave(now, reasonAddrGone, nil) // no route at all: do not wait for the silence
	case !follows && reason == reasonAddrGone:
		m.leave(now, reason, nil)
	}
	m.refresh()
}

// refresh makes the standbys match the local addresses: a path from each
// other address, probed when new or when its last probe failed. A standby
// that answered is not probed again: quic-go takes its validation back
// while a new probe is out, and a network change is just when the
// connection may need it. Only while the connection runs on its first path
// (see the comment at the top).
func (m *migrator) refresh() {
	if !m.started || !m.onSystem {
		return
	}
	want := map[netip.Addr]bool{}
	for _, a := range m.nw.Addrs() {
		if len(want) < maxStandbys && a != m.local && m.canReach(a) {
			want[a] = true
		}
	}
	for a, sb := range m.standbys {
		if !want[a] && sb != m.active && !sb.probing {
			if sb.path != nil {
				sb.path.Close()
			}
			delete(m.standbys, a)
		}
	}
	for a := range want {
		sb := m.standbys[a]
		if sb == nil {
			sb = &standby{local: a}
			m.standbys[a] = sb
		} else if !sb.validated.IsZero() || sb.probing || sb == m.active {
			continue
		}
		m.probe(sb)
	}
}

// canReach reports whether a path from local may reach the peer: the same
// address family, and loopback only towards loopback (a peer on this
// machine needs no standby on the network, nor the reverse).
func (m *migrator) canReach(local netip.Addr) bool {
	return local.Is4() == (m.remote.IP.To4() != nil) && local.IsLoopback() == m.remote.IP.IsLoopback()
}

// probe (re)validates a standby path in the background; the result comes
// back to run.
func (m *migrator) probe(sb *standby) {
	if sb.path == nil {
		// The address may be gone already (the network moves on while we
		// look): forget the standby; the next change brings it back.
		s, err := m.socket(sb.local)
		if err != nil {
			delete(m.standbys, sb.local)
			return
		}
		p, err := m.c.c.AddPath(s.tr)
		if err != nil {
			delete(m.standbys, sb.local)
			return
		}
		sb.sock, sb.path = s, p
	}
	sb.probing, sb.validated = true, time.Time{}
	p := sb.path
	m.probes.Go(func() {
		pctx, cancel := context.WithTimeout(m.ctx, probeTimeout)
		defer cancel()
		start := time.Now()
		err := p.Probe(pctx)
		m.results <- probeResult{sb: sb, path: p, took: time.Since(start), err: err}
	})
}

// probed records a probe's answer, and goes back to the system's choice
// when that was waited for.
func (m *migrator) probed(r probeResult, now time.Time) {
	sb := r.sb
	sb.probing = false
	if r.err != nil || r.path != sb.path {
		return
	}
	sb.validated, sb.took = now, r.took
	m.standbyOnce.Do(func() { close(m.standbyUp) })
	if m.ep != nil && m.ep.change.To == "" && m.ep.change.Reason != reasonRoute {
		m.leave(now, m.ep.change.Reason, sb) // waiting to leave: this one answers
	}
}

// leave switches to a validated standby (prefer first, else any) that this
// episode did not try yet.
func (m *migrator) leave(now time.Time, reason string, prefer *standby) {
	m.begin(now, transport.PathChange{Local: true, From: m.local.String(), Reason: reason})
	usable := func(sb *standby) bool {
		return sb != nil && sb != m.active && !sb.validated.IsZero() && !m.ep.tried[sb]
	}
	cands := []*standby{prefer}
	keys := slices.SortedFunc(maps.Keys(m.standbys), netip.Addr.Compare)
	for _, a := range keys {
		cands = append(cands, m.standbys[a])
	}
	for _, sb := range cands {
		if usable(sb) {
			m.switchTo(sb)
			return
		}
	}
}

// switchTo moves the connection to a validated standby.
func (m *migrator) switchTo(sb *standby) {
	if err := sb.path.Switch(); err != nil {
		sb.validated = time.Time{}
		return
	}
	if m.ep.tried == nil {
		m.ep.tried = map[*standby]bool{}
	}
	m.ep.tried[sb] = true
	if prev := m.active; prev != nil {
		prev.validated = time.Time{} // it fell silent, or the network changed: probe it before use
	}
	m.active = sb
	m.onSystem = false
	m.local = sb.local
	m.c.setLocal(m.local)
	m.ep.change.To = m.local.String()
	m.ep.change.Probe = sb.took
	m.silentSince = time.Time{}
}

// begin starts an episode; one under way goes on (its start stands).
func (m *migrator) begin(now time.Time, c transport.PathChange) {
	if m.ep != nil {
		return
	}
	m.ep = &episode{change: c, maxGap: now.Sub(m.lastRecvAt)}
}

// finish reports the episode: the peer answered on the path in use.
func (m *migrator) finish() {
	ep := m.ep
	m.ep = nil
	if ep.change.To == "" || ep.change.From == ep.change.To {
		return // the path in use answered again: no change after all
	}
	ep.change.Stall = ep.maxGap
	if m.report != nil {
		m.report(ep.change)
	}
}

// socket returns the socket bound to local, opening it on first use.
func (m *migrator) socket(local netip.Addr) (*altSocket, error) {
	if s := m.socks[local]; s != nil {
		return s, nil
	}
	udp, err := listenUDP(netip.AddrPortFrom(local, 0).String())
	if err != nil {
		return nil, err
	}
	s := &altSocket{udp: udp, tr: &quic.Transport{Conn: udp}}
	m.socks[local] = s
	m.c.addSocket(udp)
	return s, nil
}

// preferredSource is the source address the system picks for datagrams to
// remote now (the invalid Addr when it has no route): a connected UDP
// socket learns it without sending anything.
func preferredSource(remote *net.UDPAddr) netip.Addr {
	c, err := net.DialUDP("udp", nil, remote)
	if err != nil {
		return netip.Addr{}
	}
	defer c.Close()
	ap := c.LocalAddr().(*net.UDPAddr).AddrPort()
	return ap.Addr().Unmap()
}

// peerWatcher reports the peer's address changes on a listener's
// connection: the peer moved, or a NAT gave it another port. quic-go
// validates the new address and moves the connection by itself.
type peerWatcher struct {
	c      *conn
	report func(transport.PathChange)
}

// run watches until the connection ends.
func (w *peerWatcher) run() {
	ctx := w.c.c.Context()
	t := time.NewTicker(migrateSample)
	defer t.Stop()
	last := w.c.remoteAddr()
	var lastRecv uint64
	lastRecvAt := time.Now()
	// gaps remembers the recent waits for the peer's packets: the stall of
	// a move ends before quic-go switches to the new address.
	type gap struct {
		at  time.Time
		len time.Duration
	}
	var gaps []gap
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			if n := w.c.c.ConnectionStats().PacketsReceived; n != lastRecv {
				gaps = append(gaps, gap{now, now.Sub(lastRecvAt)})
				lastRecv, lastRecvAt = n, now
			}
			for len(gaps) > 0 && now.Sub(gaps[0].at) > 2*time.Second {
				gaps = gaps[1:]
			}
			ra := w.c.remoteAddr()
			if ra == last {
				continue
			}
			var stall time.Duration
			for _, g := range gaps {
				stall = max(stall, g.len)
			}
			w.report(transport.PathChange{From: last, To: ra, Reason: reasonPeerMoved, Stall: stall})
			last = ra
		}
	}
}
