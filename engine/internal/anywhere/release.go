package anywhere

import (
	"bytes"
	"encoding/binary"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pion/stun/v4"
	"github.com/pion/transport/v5"
)

// A TURN allocation is given back by a Refresh of lifetime 0. pion's TURN
// client sends it once and does not wait (its relayed conn's Close), and
// pion's ICE then closes the client and its socket at once: a lost
// datagram left the allocation at the relay for its lifetime, holding its
// place in the relay's per-source bound (relay.Limits). Neither pion's ICE
// nor its TURN client lets a caller wait for the answer (ICE makes the
// client itself; the client's release never waits), so the socket ICE
// gives its TURN client is Ferry's (ice.AgentConfig.Net, turnNet): it
// notes the release as it goes out and, when ICE closes it, hands it to
// its agent's releases, which the agent's close waits for: each release
// is sent again every releaseRTO until the relay answers it, all of them
// together, for releaseWait at most. ICE closes its candidates one after
// another, so a socket that waited for its own answer in its Close made a
// close with N relay candidates (one per local address) and the relay
// gone cost N times releaseWait.
//
// A relay that answers the release 438 (Stale Nonce: the nonce the
// client signed with has expired, which pion's TURN client handles for
// its refreshes but not for its release) gives a new nonce in that
// answer: the release is signed again with it and sent at once, as a
// refresh would be, rather than taken as answered while the allocation
// stays.

// releaseWait bounds how long closing an agent waits for the relay's
// answers to its releases: a relay gone costs that much once per close.
const releaseWait = time.Second

// releaseRTO is how often a release is sent again while no answer came
// (pion's TURN client's retransmission interval).
const releaseRTO = 200 * time.Millisecond

// maxStaleNonces bounds how many times one release is signed again with a
// new nonce (a relay that answers every one 438 gets no more).
const maxStaleNonces = 3

// turnNet is the network ICE gathers on: the system's, but the socket of
// a TURN client (the only one ICE opens with ListenPacket) leaves its
// release's answer to be waited for by releases.
type turnNet struct {
	transport.Net
	// password is the TURN credentials' password: a release answered with
	// a stale nonce is signed again with it.
	password string
	// releases are the agent's releases, waited for by its close.
	releases *releases
	// under, if set, wraps the socket under the release's retransmission
	// (tests: a lossy socket).
	under func(net.PacketConn) net.PacketConn
}

func (n turnNet) ListenPacket(network, address string) (net.PacketConn, error) {
	pc, err := n.Net.ListenPacket(network, address)
	if err != nil {
		return nil, err
	}
	if n.under != nil {
		pc = n.under(pc)
	}
	return &releaseConn{PacketConn: pc, password: n.password, group: n.releases, answered: make(chan struct{})}, nil
}

// releases are the TURN releases of one agent whose sockets ICE closed,
// waiting for their answers.
type releases struct {
	mu      sync.Mutex // guards pending
	pending []*releaseConn
	// answer is signalled when one of them was answered.
	answer chan struct{}
}

func newReleases() *releases { return &releases{answer: make(chan struct{}, 1)} }

// add hands a closed socket's release to the wait.
func (r *releases) add(c *releaseConn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pending = append(r.pending, c)
}

// answered tells the wait that a release was answered.
func (r *releases) answered() {
	select {
	case r.answer <- struct{}{}:
	default:
	}
}

// wait sends the pending releases again every releaseRTO until the relay
// answered them all, for releaseWait at most, all together; then it
// closes their sockets.
func (r *releases) wait() {
	r.mu.Lock()
	cs := r.pending
	r.pending = nil
	r.mu.Unlock()
	if len(cs) == 0 {
		return
	}
	defer func() {
		for _, c := range cs {
			c.PacketConn.Close()
		}
	}()
	again := time.NewTicker(releaseRTO)
	defer again.Stop()
	giveUp := time.NewTimer(releaseWait)
	defer giveUp.Stop()
	for {
		waiting := cs[:0:0]
		for _, c := range cs {
			if !c.done() {
				waiting = append(waiting, c)
			}
		}
		if len(waiting) == 0 {
			return
		}
		select {
		case <-r.answer:
		case <-giveUp.C:
			return
		case <-again.C:
			for _, c := range waiting {
				c.resend()
			}
		}
	}
}

// releaseConn is a TURN client's socket that sees its allocation's release
// answered before it closes.
type releaseConn struct {
	net.PacketConn
	password string
	group    *releases
	pending  atomic.Bool   // a release went out
	answered chan struct{} // closed when the relay answered it
	answer   sync.Once
	closing  sync.Once

	mu      sync.Mutex // guards the fields below
	release []byte     // the release as sent (nil: none yet)
	id      [stun.TransactionIDSize]byte
	to      net.Addr
	stale   int // times it was signed again with a new nonce
}

func (c *releaseConn) WriteTo(p []byte, to net.Addr) (int, error) {
	if id, ok := isRelease(p); ok {
		c.mu.Lock()
		if c.release == nil {
			c.release, c.id, c.to = bytes.Clone(p), id, to
		}
		c.mu.Unlock()
		c.pending.Store(true)
	}
	return c.PacketConn.WriteTo(p, to)
}

func (c *releaseConn) ReadFrom(p []byte) (int, net.Addr, error) {
	n, from, err := c.PacketConn.ReadFrom(p)
	if err == nil && c.pending.Load() {
		c.mu.Lock()
		id := c.id
		c.mu.Unlock()
		if answers(p[:n], id) {
			if nonce, ok := staleNonce(p[:n]); !ok || !c.signAgain(nonce) {
				c.answer.Do(func() { close(c.answered) })
				if c.group != nil {
					c.group.answered()
				}
			}
		}
	}
	return n, from, err
}

// signAgain makes the release anew under nonce (the relay said the one it
// was signed with is stale) and sends it at once; false when it cannot
// (maxStaleNonces reached, or the release cannot be read).
func (c *releaseConn) signAgain(nonce []byte) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stale >= maxStaleNonces {
		return false
	}
	m := &stun.Message{Raw: bytes.Clone(c.release)}
	if err := m.Decode(); err != nil {
		return false
	}
	var user stun.Username
	var realm stun.Realm
	if user.GetFrom(m) != nil || realm.GetFrom(m) != nil {
		return false
	}
	again, err := stun.Build(stun.TransactionID, refreshRequest,
		stun.RawAttribute{Type: stun.AttrLifetime, Value: []byte{0, 0, 0, 0}},
		user, realm, stun.NewNonce(string(nonce)),
		stun.NewLongTermIntegrity(user.String(), realm.String(), c.password),
		stun.Fingerprint)
	if err != nil {
		return false
	}
	c.stale++
	c.release, c.id = again.Raw, again.TransactionID
	c.PacketConn.WriteTo(c.release, c.to)
	return true
}

// done reports whether the relay answered the release.
func (c *releaseConn) done() bool {
	select {
	case <-c.answered:
		return true
	default:
		return false
	}
}

// resend sends the release again.
func (c *releaseConn) resend() {
	c.mu.Lock()
	release, to := c.release, c.to
	c.mu.Unlock()
	c.PacketConn.WriteTo(release, to)
}

// Close hands a release that went out to the agent's releases, which
// close the socket once the relay answered it (or releaseWait passed);
// a socket without one closes at once. The TURN client, closed already,
// no longer reads its answers, but its read loop still runs on this
// socket until it closes, and ReadFrom sees them go by.
func (c *releaseConn) Close() error {
	var err error
	c.closing.Do(func() {
		c.mu.Lock()
		release := c.release
		c.mu.Unlock()
		if release != nil && c.group != nil {
			c.group.add(c)
			return
		}
		err = c.PacketConn.Close()
	})
	return err
}

// refreshRequest is the STUN type of a TURN Refresh request.
var refreshRequest = stun.NewType(stun.MethodRefresh, stun.ClassRequest)

// isRelease reports whether p is a TURN Refresh request of lifetime 0 (an
// allocation given back), and its transaction ID.
func isRelease(p []byte) (id [stun.TransactionIDSize]byte, ok bool) {
	// ChannelData and Send indications (the relayed traffic) fail the
	// first two checks without decoding.
	if !stun.IsMessage(p) || binary.BigEndian.Uint16(p[0:2]) != refreshRequest.Value() {
		return id, false
	}
	m := &stun.Message{Raw: bytes.Clone(p)}
	if err := m.Decode(); err != nil {
		return id, false
	}
	v, err := m.Get(stun.AttrLifetime)
	if err != nil || len(v) != 4 || binary.BigEndian.Uint32(v) != 0 {
		return id, false
	}
	return m.TransactionID, true
}

// staleNonce reports whether p is a STUN error response 438 (Stale Nonce)
// that carries a nonce, and the nonce.
func staleNonce(p []byte) (nonce []byte, ok bool) {
	if !stun.IsMessage(p) {
		return nil, false
	}
	m := &stun.Message{Raw: bytes.Clone(p)}
	if err := m.Decode(); err != nil || m.Type.Class != stun.ClassErrorResponse {
		return nil, false
	}
	var code stun.ErrorCodeAttribute
	if err := code.GetFrom(m); err != nil || code.Code != stun.CodeStaleNonce {
		return nil, false
	}
	var n stun.Nonce
	if err := n.GetFrom(m); err != nil || len(n) == 0 {
		return nil, false
	}
	return []byte(n), true
}

// answers reports whether p is a STUN response (success or error) to the
// transaction id.
func answers(p []byte, id [stun.TransactionIDSize]byte) bool {
	if !stun.IsMessage(p) {
		return false
	}
	var t stun.MessageType
	t.ReadValue(binary.BigEndian.Uint16(p[0:2]))
	return (t.Class == stun.ClassSuccessResponse || t.Class == stun.ClassErrorResponse) &&
		bytes.Equal(p[8:8+stun.TransactionIDSize], id[:])
}
