package anywhere

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/pion/ice/v4"

	"github.com/ferrydrop/ferry/engine/identity"
	"github.com/ferrydrop/ferry/engine/internal/rendezvous"
	"github.com/ferrydrop/ferry/engine/internal/transport"
	"github.com/ferrydrop/ferry/engine/internal/transport/quic"
)

// ErrNotFound marks a paired device that has no presence at the relay: it
// is not receiving from anywhere through it (or not running at all).
var ErrNotFound = errors.New("device not found through the relay")

// ErrRelayGone: a session whose path went through the relay's TURN server
// (the peer's end of the pair is the relay's port) found that port closed
// once the path fell silent: the relay stopped or restarted, not the
// device.
var ErrRelayGone = errors.New("the port that carried the connection is closed")

// ErrPeerRestarted: a session's path fell silent, and the device's
// presence at the relay is now another run's than the one that answered
// the call: it was killed (or crashed) and started again, and the session
// to the one before will never answer.
var ErrPeerRestarted = errors.New("the other device restarted (it announced itself again through the relay)")

// restartLookEvery bounds how often a silent session asks the relay
// whether its device restarted.
const restartLookEvery = time.Second

// restartLookWait bounds one such look.
const restartLookWait = 2 * time.Second

// ErrNoAnswer marks a device whose presence is there but which did not
// answer the call in time.
var ErrNoAnswer = errors.New("the device did not answer through the relay")

// ErrStillUnanswered marks a device whose presence at the relay is the
// one a call of this device found before and that did not answer it:
// the run that put it was not put again since (a presence is put every
// presenceEvery while its run lives), so it is not called again, which
// would cost answerWait each time. A presence put again (a run that is
// alive), or a new run's, is called.
var ErrStillUnanswered = errors.New("the device did not answer its last call through the relay, and has not announced itself there since")

// ErrNotLooking marks a device whose presence is at the relay but which
// has not looked for calls there for NotLookingAfter (the relay says so,
// HeaderUnwatched): it is not running (killed, crashed, asleep) or cut
// off, and its presence stays until it expires (2 minutes). The call is
// not made, which would wait answerWait for nothing. NotLookingError
// says for how long.
var ErrNotLooking = errors.New("the device has not looked for calls at the relay")

// NotLookingError is ErrNotLooking: the relay saw no look at the call
// box for at least For.
type NotLookingError struct {
	Relay string
	For   time.Duration
}

func (e *NotLookingError) Error() string {
	return fmt.Sprintf("%v %s for %s", ErrNotLooking, e.Relay, e.For.Round(time.Second))
}

func (e *NotLookingError) Unwrap() error { return ErrNotLooking }

// NotLookingAfter is how long a device's call box may go without a look
// at the relay before a caller takes the device for gone: twice WaitFor.
// A receiver alive always has a wait held there (the relay says 0 then)
// but for the moment between two, a round trip and its round's few
// requests; an older receiver, or one with more paired devices than a
// wait takes names, looks every PollInterval.
const NotLookingAfter = 2 * WaitFor

// DroppedLookingAfter is NotLookingAfter for a call box whose last look
// was a wait its client dropped (Unwatched.Dropped): a receiver alive
// drops one only to wait again at once (its paired devices changed, or
// its request timed out on a slow path), a killed one's system closes
// the connection of the wait it held and no look comes after.
const DroppedLookingAfter = 2 * time.Second

// answerWait bounds the wait for an answer: the receiver polls every
// PollInterval, then gathers its candidates (a TURN allocation).
const answerWait = 10 * time.Second

// Unanswered remembers, per relay and device, the presence whose call went
// unanswered (DialRequest.Unanswered). The zero value is ready; it is safe
// for concurrent use.
type Unanswered struct {
	mu   sync.Mutex                // guards runs
	runs map[unansweredKey]Message // the presence a call found and that did not answer
}

type unansweredKey struct {
	relay string
	peer  identity.DeviceID
}

// silent reports whether p is the presence noted for relay and peer, or
// one put before it by the same run: nothing was put since its call went
// unanswered.
func (u *Unanswered) silent(relay string, peer identity.DeviceID, p Message) bool {
	if u == nil {
		return false
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	was, ok := u.runs[unansweredKey{relay, peer}]
	return ok && p.Instance == was.Instance && p.At <= was.At
}

// note records p as the presence whose call went unanswered (answered
// false), or forgets what was noted (answered true).
func (u *Unanswered) note(relay string, peer identity.DeviceID, p Message, answered bool) {
	if u == nil {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	k := unansweredKey{relay, peer}
	if answered {
		delete(u.runs, k)
		return
	}
	if u.runs == nil {
		u.runs = map[unansweredKey]Message{}
	}
	u.runs[k] = p
}

// answerPoll is how often a caller looks for the answer.
const answerPoll = 100 * time.Millisecond

// DialRequest is what a call needs.
type DialRequest struct {
	// Relay is the relay's "host:port" (mailbox on TCP, STUN/TURN on UDP).
	Relay string
	// RelaySecret is the secret the relay was started with ("": none).
	RelaySecret string
	// Secret is the rendezvous secret shared with Peer.
	Secret rendezvous.Secret
	// Self and Peer are this device's ID and the callee's.
	Self, Peer identity.DeviceID
	// TLS is the QUIC dial's configuration: it must refuse any device but Peer.
	TLS *tls.Config
	// Transport tunes the QUIC session.
	Transport transport.Config
	// Network, when set, tells the session when this device's addresses
	// change: a direct path whose address went away is then declared lost
	// (the Conn's PathLost) within a second or so, not after the idle
	// timeout, or it moves to another address that reaches the peer.
	Network transport.Network
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Loopback offers loopback addresses only (tests).
	Loopback bool
	// RelayOnly offers the relay's TURN candidates only (tests: a relayed
	// path on loopback).
	RelayOnly bool
	// Log gets what ICE and TURN say on the way (nil: discarded).
	Log *slog.Logger
	// Unanswered, when set, keeps the presence whose call went
	// unanswered: a call finding it again, not put since, ends at once
	// with ErrStillUnanswered (the engine keeps one for all its calls).
	Unanswered *Unanswered
	// AnswerWait bounds the wait for the callee's answer (0: 10 s).
	AnswerWait time.Duration
	// NotLookingAfter is how long the callee's call box may go without
	// a look before it is not called (ErrNotLooking; 0: NotLookingAfter).
	NotLookingAfter time.Duration
}

// Conn is a QUIC session over an ICE path.
type Conn struct {
	transport.Conn
	path   Path
	bridge *bridge
	setup  Setup
}

// Setup is how long each step of a call took.
type Setup struct {
	// Lookup is reading the presence and gathering this side's candidates
	// (a STUN answer and a TURN allocation from the relay).
	Lookup time.Duration
	// Answer is from the call to its answer: the callee's poll interval
	// and its own gathering.
	Answer time.Duration
	// Checks is ICE's connectivity checks.
	Checks time.Duration
	// Handshake is QUIC's handshake over the chosen pair.
	Handshake time.Duration
}

// Setup says how long the call's steps took.
func (c *Conn) Setup() Setup { return c.setup }

// Path is the ICE path under the session.
func (c *Conn) Path() Path { return c.path }

// Route says which way the session goes, in the words of the engine's
// transport event: "internet" (a direct path through the NATs) or
// "relayed", and the relay's "host:port".
func (c *Conn) Route() (route, relay string) { return c.path.Route() }

// RemoteAddr is the peer's end of the ICE path (its candidate).
func (c *Conn) RemoteAddr() string { return c.path.Remote }

// PathLost is closed when the session's path went away with this
// device's address and no other path reaches the peer
// (transport.PathLoser; never, for a path through a loopback bridge).
func (c *Conn) PathLost() <-chan struct{} {
	if pl, ok := c.Conn.(transport.PathLoser); ok {
		return pl.PathLost()
	}
	return nil
}

// PathChanges delivers the session's moves (transport.PathReporter).
func (c *Conn) PathChanges() <-chan transport.PathChange {
	if pr, ok := c.Conn.(transport.PathReporter); ok {
		return pr.PathChanges()
	}
	return nil
}

// Close ends the session, then the path, once the session's goodbye went
// through it (closeSoon).
func (c *Conn) Close(err error) error {
	cerr := c.Conn.Close(err)
	c.bridge.closeSoon()
	return cerr
}

// Dial calls a paired device through the relay and runs a QUIC session to
// it over the path ICE finds; the session's handshake proves the device
// (req.TLS), exactly as on the LAN.
func Dial(ctx context.Context, req DialRequest) (*Conn, error) {
	now := req.Now
	if now == nil {
		now = time.Now
	}
	mb := NewMailbox(req.Relay, req.RelaySecret)
	defer mb.Close()
	t := now()
	var st Setup
	mark := time.Now()
	lap := func(d *time.Duration) { n := time.Now(); *d = n.Sub(mark); mark = n }
	presence, err := lookup(ctx, mb, req, t)
	if err != nil {
		return nil, err
	}
	if req.Unanswered.silent(req.Relay, req.Peer, presence) {
		return nil, fmt.Errorf("%w %s", ErrStillUnanswered, req.Relay)
	}
	// The look-up is the mailbox's first request: a TCP handshake and the
	// request, two round trips to the relay.
	relayRTT := max(time.Since(mark)/2, time.Millisecond)
	// ICE gathers and checks on the socket QUIC will use (quic.Shared), so
	// that a direct pair costs what QUIC costs on the LAN.
	local := sourceFor(req.Relay)
	if req.Loopback {
		local = "127.0.0.1:0"
	}
	sock, err := quic.ListenShared(local)
	if err != nil {
		return nil, err
	}
	mux := newMux(sock.NonQUIC(), req.Log)
	g, err := newAgent(ctx, req.Relay, req.RelaySecret, TestNet{Loopback: req.Loopback, RelayOnly: req.RelayOnly}, mux, relayRTT, req.Log)
	if err != nil {
		mux.Close()
		sock.Close()
		return nil, fmt.Errorf("gather candidates: %w", err)
	}
	g.ownMux = mux
	lap(&st.Lookup) // the presence, the socket and gathering
	ok := false
	defer func() {
		if !ok {
			g.close()
			sock.Close()
		}
	}()
	call := Message{Kind: KindCall, From: req.Self.String(), To: req.Peer.String(), At: t.Unix(), Call: NewCall()}
	g.fill(&call)
	box := CallName(req.Secret, req.Peer, t)
	blob, err := Seal(req.Secret, box, call)
	if err != nil {
		return nil, err
	}
	if err := mb.Push(ctx, box, blob); err != nil {
		return nil, err
	}
	answer, err := waitAnswer(ctx, mb, req, call.Call, box, now)
	lap(&st.Answer)
	if err != nil {
		if errors.Is(err, ErrNoAnswer) || errors.Is(err, ErrNotLooking) {
			req.Unanswered.note(req.Relay, req.Peer, presence, false)
		}
		return nil, err
	}
	req.Unanswered.note(req.Relay, req.Peer, presence, true)
	ic, err := g.connect(ctx, answer, true)
	if err != nil {
		return nil, err
	}
	lap(&st.Checks)
	var b *bridge
	var qs *quic.Session
	if !g.localRelayed() {
		// Direct from the shared socket to the peer's end of the pair (a
		// host, its NAT's mapping, or its TURN relay).
		if qs, err = sock.Dial(ctx, g.remoteAddr(), req.TLS, req.Transport, g.follow(req, answer.Instance)); err != nil {
			return nil, err
		}
		b, _ = newBridge(g, nil, nil, nil)
	} else {
		// This side's end is a TURN allocation, which pion's TURN client
		// holds: QUIC goes through ICE's connection, by the bridge.
		if b, err = newBridge(g, ic, nil, nil); err != nil {
			return nil, &transport.LocalError{Err: err}
		}
		cfg := req.Transport
		cfg.MaxFlows = 1 // one QUIC connection: the bridge carries one
		// The relay is asked whether the device restarted when the path
		// falls silent, as on the shared socket (follow).
		f := g.follow(req, answer.Instance)
		if qs, err = quic.DialBridged(ctx, b.Addr().String(), req.TLS, cfg, quic.SharedDial{PeerGone: f.PeerGone}); err != nil {
			b.Close()
			b.Wait()
			return nil, err
		}
	}
	b.extra = sock.Close // a no-op once a session owns it
	ok = true
	go func() {
		select {
		case <-qs.Done():
			b.closeSoon()
		case <-b.Done():
			qs.Close(nil)
		}
	}()
	lap(&st.Handshake)
	path := g.path()
	path.Relay = req.Relay
	return &Conn{Conn: qs, path: path, bridge: b, setup: st}, nil
}

// follow is what a session from the shared socket to the pair's remote
// end follows: the network; when that end is a relay's port (a TURN
// allocation of the peer's), that a closed port there is the relay's;
// and, while the path is silent, what the relay says of the device
// (goneAtRelay): a presence of another run than the one that answered
// (instance) says the device restarted, a wait for calls it dropped and
// did not follow with a look that it was killed. A device killed beyond
// the LAN tells nothing else: its TURN allocation (the remote of a
// relayed pair) outlives it by minutes, and a new port of its own is
// behind its NAT, so the session waited for QUIC's idle timeout (10 s)
// although the device was back within a second, or gone for good.
func (g *agent) follow(req DialRequest, instance string) quic.SharedDial {
	f := quic.SharedDial{Network: req.Network}
	if pair, err := g.a.GetSelectedCandidatePair(); err == nil && pair != nil && pair.Remote.Type() == ice.CandidateTypeRelay {
		f.PortClosed = fmt.Errorf("the relay %s stopped or restarted: %w", req.Relay, ErrRelayGone)
	}
	var last time.Time // guarded by the migrator: one look at a time
	f.PeerGone = func(ctx context.Context) error {
		if time.Since(last) < restartLookEvery {
			return nil
		}
		last = time.Now()
		ctx, cancel := context.WithTimeout(ctx, restartLookWait)
		defer cancel()
		return goneAtRelay(ctx, req, instance)
	}
	return f
}

// goneAtRelay is what the relay says of the device whose run instance
// answered the call ("": an older device, which names none), asked when
// the session's path falls silent: ErrPeerRestarted when its freshest
// presence is another run's (a presence is put again under the same name,
// PUT replacing it, so a device that restarted replaced the one of its
// run before at once); a NotLookingError when the relay saw its wait for
// calls dropped and no look since for DroppedLookingAfter (a process
// killed: its system closes the connection of the wait it held; a network
// that stalls drops nothing, so the session rides that out as before);
// nil otherwise, or when the relay does not answer.
func goneAtRelay(ctx context.Context, req DialRequest, instance string) error {
	now := time.Now
	if req.Now != nil {
		now = req.Now
	}
	t := now()
	mb := NewMailbox(req.Relay, req.RelaySecret)
	defer mb.Close()
	names := PresenceNames(req.Secret, req.Peer, t)
	box := len(names)
	got, unwatched, err := mb.GetUnwatched(ctx, append(names, CallName(req.Secret, req.Peer, t)))
	if err != nil {
		return nil
	}
	var freshest Message
	for i, blobs := range got[:box] {
		for _, b := range blobs {
			if m, err := Open(req.Secret, names[i], b, KindPresence, req.Peer, req.Self, t); err == nil && m.At >= freshest.At {
				freshest = m
			}
		}
	}
	if instance != "" && freshest.Instance != "" && freshest.Instance != instance {
		return ErrPeerRestarted
	}
	if u := unwatched; u != nil && u[box].Dropped && u[box].For >= DroppedLookingAfter {
		return &NotLookingError{Relay: req.Relay, For: u[box].For}
	}
	return nil
}

// Lookup checks that the device keeps a presence at the relay for this
// one and looks for calls there: ErrRelayUnreachable, ErrNotFound,
// ErrNotLooking or nil.
func Lookup(ctx context.Context, req DialRequest) error {
	mb := NewMailbox(req.Relay, req.RelaySecret)
	defer mb.Close()
	now := time.Now
	if req.Now != nil {
		now = req.Now
	}
	_, err := lookup(ctx, mb, req, now())
	return err
}

// lookup reads the device's presence for this one at the relay: the
// freshest, or ErrNotFound (or the clocks too far apart), or, when the
// relay says no one looked at the device's call box for
// req.NotLookingAfter, a NotLookingError.
func lookup(ctx context.Context, mb *Mailbox, req DialRequest, t time.Time) (Message, error) {
	// The call box this device's call would go to is asked with the
	// presence's names (it holds no presence: nothing comes back for it);
	// a relay that notes looks says how long no one looked at each.
	names := PresenceNames(req.Secret, req.Peer, t)
	box := len(names)
	got, unwatched, err := mb.GetUnwatched(ctx, append(names, CallName(req.Secret, req.Peer, t)))
	if err != nil {
		return Message{}, err
	}
	var skew *SkewError
	var freshest Message
	found := false
	for i, blobs := range got[:box] {
		for _, b := range blobs {
			m, err := Open(req.Secret, names[i], b, KindPresence, req.Peer, req.Self, t)
			if err == nil {
				if !found || m.At > freshest.At {
					freshest = m
				}
				found = true
				continue
			}
			if skew == nil {
				errors.As(err, &skew)
			}
		}
	}
	if found {
		// A relay's word can only make a call be skipped (as dropping
		// it would), never a gone device called.
		if unwatched != nil && req.notLooking(unwatched[box]) {
			return Message{}, &NotLookingError{Relay: req.Relay, For: unwatched[box].For}
		}
		return freshest, nil
	}
	if skew != nil {
		// The device is there, but its clock and this one's are too far
		// apart for any call between them to be taken.
		return Message{}, clocksApart(skew.Off)
	}
	return Message{}, fmt.Errorf("%w %s", ErrNotFound, req.Relay)
}

// clocksApart says that the other device's clock is off this one's by
// off (positive: ahead), and what to do.
func clocksApart(off time.Duration) error {
	way := "ahead of"
	if off < 0 {
		way = "behind"
	}
	return fmt.Errorf("%w: the device's clock is %s %s this device's, and calls are refused between clocks over %d minutes apart (so that a copied one cannot be played again): set the time right on the device that is wrong (automatic time)",
		ErrClockSkew, roughly(off.Abs()), way, int(MaxSkew/time.Minute))
}

// roughly says a duration in whole minutes ("about 7 minutes"), or in
// hours beyond two.
func roughly(d time.Duration) string {
	switch m := int(d.Round(time.Minute) / time.Minute); {
	case m == 1:
		return "about 1 minute"
	case m >= 120:
		return fmt.Sprintf("about %d hours", int(d.Round(time.Hour)/time.Hour))
	default:
		return fmt.Sprintf("about %d minutes", m)
	}
}

// sourceFor is the local address the system routes to the relay from, as
// "ip:0": the shared socket binds there, so that its host candidate is that
// interface's address (a socket on 0.0.0.0 offers loopback too, which ICE
// then shows as this side's end of the pair).
func sourceFor(relay string) string {
	c, err := net.Dial("udp4", relay) // a connected UDP socket sends nothing
	if err != nil {
		return "0.0.0.0:0"
	}
	defer c.Close()
	return net.JoinHostPort(c.LocalAddr().(*net.UDPAddr).IP.String(), "0")
}

// waitAnswer waits for the call's answer: in waits the relay holds until
// the answer comes (Mailbox.Wait), or, from a relay without them, by
// looking every answerPoll. Meanwhile, every notLookingEvery, it asks the
// relay how long no one looked at callBox, the box the call went to ("":
// it does not): a device killed just before the call, or as it came,
// ends the wait with a NotLookingError once its box went
// NotLookingAfter without a look, not at answerWait.
func waitAnswer(ctx context.Context, mb *Mailbox, req DialRequest, call, callBox string, now func() time.Time) (Message, error) {
	box := AnswerName(req.Secret, call)
	wait := req.AnswerWait
	if wait <= 0 {
		wait = answerWait
	}
	tctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	dctx, gone := context.WithCancelCause(tctx)
	defer gone(nil)
	if callBox != "" {
		var wg sync.WaitGroup
		defer wg.Wait()
		defer gone(nil) // ends the watch before the wait for it
		wg.Go(func() { watchLooks(dctx, mb, req, callBox, gone) })
	}
	noAnswer := func() error {
		var nl *NotLookingError
		if errors.As(context.Cause(dctx), &nl) {
			return nl
		}
		return fmt.Errorf("%w %s within %s", ErrNoAnswer, req.Relay, wait)
	}
	tick := time.NewTicker(answerPoll)
	defer tick.Stop()
	waits := true
	for {
		began := time.Now()
		var got [][][]byte
		var err error
		if waits {
			got, err = mb.Wait(dctx, []string{box})
			if errors.Is(err, ErrNoWait) {
				waits = false
				got, err = mb.Take(dctx, []string{box})
			}
		} else {
			got, err = mb.Take(dctx, []string{box})
		}
		if err != nil && ctx.Err() == nil && dctx.Err() != nil {
			return Message{}, noAnswer()
		}
		var ne net.Error
		if waits && errors.As(err, &ne) && ne.Timeout() {
			// A wait the relay held past this side's request timeout (a
			// slow path): no answer yet, not a relay gone.
			err, got = nil, [][][]byte{nil}
		}
		if err != nil {
			return Message{}, err
		}
		for _, b := range got[0] {
			m, err := Open(req.Secret, box, b, KindAnswer, req.Peer, req.Self, now())
			if err == nil && m.Call == call {
				return m, nil
			}
		}
		if waits && time.Since(began) >= answerPoll {
			continue // the relay held the wait: ask again at once
		}
		// At most one look an answerPoll.
		select {
		case <-ctx.Done():
			return Message{}, ctx.Err()
		case <-dctx.Done():
			return Message{}, noAnswer()
		case <-tick.C:
		}
	}
}

// watchLooks asks the relay every notLookingEvery how long no one looked
// at callBox, until ctx ends, and ends it with a NotLookingError (gone)
// once that is req's NotLookingAfter or more.
func watchLooks(ctx context.Context, mb *Mailbox, req DialRequest, callBox string, gone context.CancelCauseFunc) {
	tick := time.NewTicker(notLookingEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if err := notLooking(ctx, mb, req, callBox); err != nil {
			gone(err)
			return
		}
	}
}

// notLookingEvery is how often a caller waiting for its answer asks
// whether the callee still looks at its call box.
const notLookingEvery = time.Second

// notLooking is a NotLookingError when the relay says no one looked at
// callBox for req's NotLookingAfter; nil when it says otherwise, says
// nothing (an older relay), or does not answer.
func notLooking(ctx context.Context, mb *Mailbox, req DialRequest, callBox string) error {
	_, unwatched, err := mb.GetUnwatched(ctx, []string{callBox})
	if err != nil || unwatched == nil || !req.notLooking(unwatched[0]) {
		return nil
	}
	return &NotLookingError{Relay: req.Relay, For: unwatched[0].For}
}

// notLooking reports whether a call box the relay says u of has gone
// without a look for long enough: req's NotLookingAfter (default
// NotLookingAfter), or DroppedLookingAfter (at most that) after a wait
// its client dropped.
func (req DialRequest) notLooking(u Unwatched) bool {
	limit := NotLookingAfter
	if req.NotLookingAfter > 0 {
		limit = req.NotLookingAfter
	}
	if u.Dropped {
		limit = min(limit, DroppedLookingAfter)
	}
	return u.For >= limit
}

// Peer is a paired device a Server answers.
type Peer struct {
	ID     identity.DeviceID
	Secret rendezvous.Secret
}

// Server keeps this device reachable from anywhere for its paired
// devices: it keeps a presence at the relay for each, answers their calls
// and bridges each ICE path to the local QUIC listener.
type Server struct {
	// Relay is the relay's "host:port".
	Relay string
	// RelaySecret is the secret the relay was started with ("": none).
	RelaySecret string
	// Self is this device's ID.
	Self identity.DeviceID
	// Instance names this run of the device (NewInstance; "": none): its
	// presences and answers carry it, so that a caller whose session went
	// silent learns from a presence of another run that the device
	// restarted. One per process, not per Run: a device that stops and
	// starts serving keeps its sessions.
	Instance string
	// Peers lists the paired devices with a rendezvous secret, now.
	Peers func() []Peer
	// Listener is the local QUIC listener's address, now (nil: none).
	Listener func() *net.UDPAddr
	// Poll is how often the call boxes are looked at; 0 means PollInterval.
	Poll time.Duration
	// Log gets what goes wrong on the way (nil: discarded).
	Log *slog.Logger
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Started, if set, is called once the relay took the first presence.
	Started func()
	// Loopback offers loopback addresses only (tests).
	Loopback bool
	// RelayOnly offers the relay's TURN candidates only (tests).
	RelayOnly bool
	// NonQUIC, if set, is the QUIC listener's socket as ICE shares it
	// (transport.PacketSharer): a direct pair then reaches the listener
	// itself, with no bridge.
	NonQUIC func() net.PacketConn
	// Reach, if set, is told when the relay has failed every request for
	// Grace (false, with the last failure), and when it answers again
	// after that (true, nil): once each way, not per failed request.
	Reach func(reachable bool, err error)
	// Grace is how long the relay may fail before Reach hears it; 0
	// means ReachGrace.
	Grace time.Duration

	mu       sync.Mutex         // guards answered
	answered map[string]*bridge // the calls answered and up, by the address the listener sees them from

	changeMu  sync.Mutex         // guards the fields below
	changed   bool               // PeersChanged since the loop last read Peers
	interrupt context.CancelFunc // ends the loop's wait for calls (nil: none under way)
}

// PeersChanged tells a running Server that Peers changed (a device paired,
// its rendezvous secret replaced, a device forgotten): it ends its wait for
// calls and puts its presence for a new device at once, and takes back
// the one of a device no longer there, instead of at the next
// presenceEvery. Without it a change is seen within one wait (WaitFor) or
// poll: the loop compares Peers with what it announced at every round,
// which also catches a pairing made by another process of the same
// config folder.
func (s *Server) PeersChanged() {
	s.changeMu.Lock()
	defer s.changeMu.Unlock()
	s.changed = true
	if s.interrupt != nil {
		s.interrupt()
	}
}

// waitCtx is the context of one round's wait for calls: it ends with ctx,
// or at once when PeersChanged is called (or was, since the round read
// Peers). done ends it.
func (s *Server) waitCtx(ctx context.Context) (wctx context.Context, done func()) {
	wctx, cancel := context.WithCancel(ctx)
	s.changeMu.Lock()
	defer s.changeMu.Unlock()
	if s.changed {
		cancel()
	} else {
		s.interrupt = cancel
	}
	return wctx, func() {
		s.changeMu.Lock()
		s.interrupt = nil
		s.changeMu.Unlock()
		cancel()
	}
}

// peers reads Peers, and clears the change PeersChanged said.
func (s *Server) peers() []Peer {
	s.changeMu.Lock()
	s.changed = false
	s.changeMu.Unlock()
	return s.Peers()
}

// PathOf is the path of an answered call whose QUIC packets reach the
// listener from remote ("host:port"): the peer's end of a direct pair, or
// a bridge's loopback socket. False when no call of this server's comes
// from there (a session on the LAN).
func (s *Server) PathOf(remote string) (Path, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.answered[addrKey(remote)]
	if !ok {
		return Path{}, false
	}
	return b.path, true
}

// EndOf returns what ends the answered call whose QUIC packets reach the
// listener from remote, for the session that came by it to run when it
// ends: the call's ICE session closes, and with it its TURN allocation at
// the relay, once the session's own goodbye went through (closeSoon). Without it the call lived on until ICE saw the peer gone,
// about 30 s (pion's disconnected and failed timeouts), holding a place
// in the relay's bound on allocations per address for each call. The
// call is the one there now: a later call heard from the same address is
// not ended by it. False when no call of this server's comes from there.
func (s *Server) EndOf(remote string) (end func(), ok bool) {
	s.mu.Lock()
	b, ok := s.answered[addrKey(remote)]
	s.mu.Unlock()
	if !ok {
		return nil, false
	}
	return b.closeSoon, true
}

// track records (or, with on false, forgets) a bridge's call.
func (s *Server) track(b *bridge, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.answered == nil {
		s.answered = map[string]*bridge{}
	}
	if on {
		s.answered[b.seenAs] = b
	} else if s.answered[b.seenAs] == b {
		delete(s.answered, b.seenAs)
	}
}

// addrKey is "ip:port" with an IPv4-mapped address as IPv4, so that two
// spellings of one address meet.
func addrKey(hostport string) string {
	ap, err := netip.ParseAddrPort(hostport)
	if err != nil {
		return hostport
	}
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()).String()
}

// ErrLooksFail marks a relay that takes this device's presence but fails
// its looks for calls with an answer (a status of another server's, a
// refusal): no call reaches the device through it. A proxy before the
// relay that cuts requests held for seconds does so (Mailbox.Wait).
var ErrLooksFail = errors.New("the relay takes this device's presence but fails its looks for calls")

// LooksError is ErrLooksFail with the relay's answer to the last look.
type LooksError struct{ Answer error }

func (e *LooksError) Error() string   { return ErrLooksFail.Error() + ": " + e.Answer.Error() }
func (e *LooksError) Unwrap() []error { return []error{ErrLooksFail, e.Answer} }

// PollInterval is how often a receiver looks for calls by default: a
// sender waits up to that long before the receiver starts gathering.
const PollInterval = 500 * time.Millisecond

// ReachGrace is how long a relay may fail a server's requests before
// Server.Reach is told: a restart, or a moment without network, passes
// unsaid.
const ReachGrace = 5 * time.Second

// presenceEvery is how often the presence is put again; the relay keeps
// it for twice as long (relay.SlotTTL).
const presenceEvery = 30 * time.Second

// maxAnswering bounds the calls answered at once.
const maxAnswering = 4

// seenTTL is how long a call's name is remembered (a replayed call within
// MaxSkew is not answered twice).
const seenTTL = 2 * MaxSkew

// Run serves until ctx ends. It returns at once with an error when the
// relay cannot be reached at the start; later failures are logged and
// retried.
func (s *Server) Run(ctx context.Context) error {
	now := s.Now
	if now == nil {
		now = time.Now
	}
	log := s.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	poll := s.Poll
	if poll <= 0 {
		poll = PollInterval
	}
	mb := NewMailbox(s.Relay, s.RelaySecret)
	defer mb.Close()
	// A look at a name no one uses: the relay answers, or the user hears now.
	if _, err := mb.Get(ctx, []string{randomHex(NameLen / 2)}); err != nil {
		return err
	}
	// announced are the devices whose presence is at the relay, each with
	// the secret it is sealed under (a device's new secret is a new one).
	announced := map[Peer]bool{}
	peers := s.peers()
	if err := s.announce(ctx, mb, peers, now()); err != nil {
		return err
	}
	for _, p := range peers {
		announced[p] = true
	}
	lastPresence := now()
	// Last, once every call answered here is over: the presence is
	// taken back (the relay would keep it for minutes, and a device
	// calling meanwhile would wait for an answer on every try).
	defer func() { s.leave(mb, slices.Collect(maps.Keys(announced)), lastPresence, now(), log) }()
	if s.Started != nil {
		s.Started()
	}
	var mux *ice.UniversalUDPMuxDefault
	if s.NonQUIC != nil {
		if pc := s.NonQUIC(); pc != nil {
			mux = newMux(pc, s.Log)
			defer mux.Close()
		}
	}
	// Each bridge is closed by its own goroutine (below), which the end
	// of ctx lets linger for the sessions' last word.
	var wg sync.WaitGroup
	defer wg.Wait()
	var mu sync.Mutex
	bridges := map[*bridge]bool{}
	slots := make(chan struct{}, maxAnswering)
	seen := map[string]time.Time{}
	waits := true // the relay holds waits, until it says it does not (ErrNoWait)
	// stale: the relay failed a request since the presence was put; it
	// may have restarted, with nothing kept, so the presence is put again
	// as soon as it answers, not at the next presenceEvery (paired devices
	// heard "not receiving through relay" for up to 30 s after it came
	// back).
	stale := false
	grace := s.Grace
	if grace <= 0 {
		grace = ReachGrace
	}
	var failingSince time.Time // zero: the last request was answered
	// lookRefused: the relay answered the last look for calls, with a
	// failure (a status of some other server's, a refusal), where a look
	// lost on the way is the network's. The presence going up says nothing
	// of the looks then: a relay (or a proxy before it) that takes the
	// presence and fails every look was never said to be unreachable, and
	// nobody's call reached this device.
	var lookRefused bool
	said := false // Reach heard that the relay cannot be reached
	reach := func(err error) {
		switch {
		case err == nil:
			failingSince = time.Time{}
			if said && s.Reach != nil {
				s.Reach(true, nil)
			}
			said = false
		case ctx.Err() != nil:
		default:
			if failingSince.IsZero() {
				failingSince = time.Now()
			}
			if !said && time.Since(failingSince) >= grace {
				said = true
				if s.Reach != nil {
					s.Reach(false, err)
				}
			}
		}
	}
	for {
		if ctx.Err() != nil {
			return nil
		}
		began := time.Now()
		t := now()
		var failure error
		peers := s.peers()
		added, gone := changes(peers, announced)
		if stale || t.Sub(lastPresence) >= presenceEvery {
			added = peers
		}
		if len(added) > 0 {
			if err := s.announce(ctx, mb, added, t); err != nil {
				log.Warn("rendezvous: presence", "relay", s.Relay, "err", err)
				stale, failure = true, err
			} else {
				for _, p := range added {
					announced[p] = true
				}
				if len(added) == len(peers) {
					lastPresence, stale = t, false
				}
				// The relay answers: said now, not once the wait for
				// calls below ends (up to WaitFor later when none come).
				if !lookRefused {
					reach(nil)
				}
			}
		}
		if len(gone) > 0 {
			// A device forgotten (or its secret replaced) hears at once
			// that this one is not receiving for it.
			s.leave(mb, gone, lastPresence, t, log)
			for _, p := range gone {
				delete(announced, p)
			}
		}
		for k, at := range seen {
			if t.Sub(at) > seenTTL {
				delete(seen, k)
			}
		}
		wctx, waited := s.waitCtx(ctx)
		// A presence that could not be put this round is put again at the
		// next, not after a wait for calls the relay may hold: a relay
		// back between the two requests held that wait (up to WaitFor)
		// before the presence and the word that it answers again.
		in, noWait, failed := s.calls(wctx, mb, peers, t, log, waits && !stale)
		if failed != nil {
			stale, failure = true, failed
		}
		if lookRefused = failed != nil && !errors.Is(failed, ErrRelayUnreachable); lookRefused {
			failure = &LooksError{Answer: failed}
		}
		reach(failure)
		if noWait {
			waits = false
			log.Info("rendezvous: the relay holds no waits (an older relay): looking for calls every interval", "relay", s.Relay, "interval", poll)
		}
		if len(in) == 0 {
			// At most one look an interval: a wait the relay held took
			// longer; a relay that answered at once (one without waits,
			// or a failure) is asked again after the interval.
			if rest := poll - time.Since(began); rest > 0 {
				select {
				case <-ctx.Done():
					waited()
					return nil
				case <-wctx.Done(): // Peers changed
				case <-time.After(rest):
				}
			}
		}
		waited()
		for _, c := range in {
			if _, dup := seen[c.msg.Call]; dup {
				continue
			}
			seen[c.msg.Call] = t
			select {
			case slots <- struct{}{}:
			default:
				log.Warn("rendezvous: too many calls at once; one is not answered", "peer", c.peer.ID.Short())
				continue
			}
			wg.Go(func() {
				defer func() { <-slots }()
				b, err := s.answer(ctx, mb, mux, c.peer, c.msg, now)
				if err != nil {
					log.Warn("rendezvous: answer", "peer", c.peer.ID.Short(), "err", err)
					return
				}
				mu.Lock()
				bridges[b] = true
				mu.Unlock()
				wg.Go(func() {
					select {
					case <-b.Done():
					case <-ctx.Done():
						// The engine's sessions end with the same
						// cancellation and tell their peers so (QUIC's
						// CONNECTION_CLOSE), through this bridge when it
						// carries one: it stays that long.
						select {
						case <-b.Done():
						case <-time.After(bridgeLinger):
						}
						b.Close()
					}
					b.Wait()
					s.track(b, false)
					mu.Lock()
					delete(bridges, b)
					mu.Unlock()
				})
			})
		}
	}
}

// bridgeLinger is how long a bridge outlives the end of its Server's
// context: the time for the sessions over it, ended by the same
// cancellation, to send their goodbye through it.
const bridgeLinger = 250 * time.Millisecond

// leaveWait bounds the taking back of the presence when a receiver stops
// (a relay gone meanwhile must not hold up the stop).
const leaveWait = time.Second

// leave replaces this device's presence for each of peers, put last at
// last, with word that it left (KindLeft), under that period's name and
// now's.
func (s *Server) leave(mb *Mailbox, peers []Peer, last, t time.Time, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), leaveWait)
	defer cancel()
	for _, p := range peers {
		names := []string{PresenceName(p.Secret, s.Self, last)}
		if n := PresenceName(p.Secret, s.Self, t); n != names[0] {
			names = append(names, n)
		}
		for _, name := range names {
			blob, err := Seal(p.Secret, name, Message{Kind: KindLeft, From: s.Self.String(), To: p.ID.String(), At: t.Unix()})
			if err == nil {
				err = mb.Put(ctx, name, blob)
			}
			if err != nil {
				log.Info("rendezvous: the presence stays at the relay until it expires", "relay", s.Relay, "err", err)
				return
			}
		}
	}
}

// changes are the devices of peers whose presence is not at the relay
// (added: paired, or given a new secret, since it was put) and those whose
// presence is there but which are no longer among peers (gone).
func changes(peers []Peer, announced map[Peer]bool) (added, gone []Peer) {
	now := make(map[Peer]bool, len(peers))
	for _, p := range peers {
		now[p] = true
		if !announced[p] {
			added = append(added, p)
		}
	}
	for p := range announced {
		if !now[p] {
			gone = append(gone, p)
		}
	}
	return added, gone
}

// announce puts this device's presence for each of peers.
func (s *Server) announce(ctx context.Context, mb *Mailbox, peers []Peer, t time.Time) error {
	for _, p := range peers {
		name := PresenceName(p.Secret, s.Self, t)
		blob, err := Seal(p.Secret, name, Message{Kind: KindPresence, From: s.Self.String(), To: p.ID.String(), At: t.Unix(), Instance: s.Instance})
		if err != nil {
			return err
		}
		if err := mb.Put(ctx, name, blob); err != nil {
			return err
		}
	}
	return nil
}

type incoming struct {
	peer Peer
	msg  Message
}

// calls takes the calls waiting in the call boxes of peers.
// With wait, and names for one request, the relay holds it until a call
// comes or WaitFor passed (Mailbox.Wait); noWait reports a relay that
// holds none, which was then asked with Take; failed, the error of a request the relay
// did not answer (it may have restarted).
func (s *Server) calls(ctx context.Context, mb *Mailbox, peers []Peer, t time.Time, log *slog.Logger, wait bool) (out []incoming, noWait bool, failed error) {
	type ref struct {
		peer Peer
		box  string
	}
	var refs []ref
	for _, p := range peers {
		for _, n := range CallNames(p.Secret, s.Self, t) {
			refs = append(refs, ref{p, n})
		}
	}
	wait = wait && len(refs) <= MaxNames
	for len(refs) > 0 {
		batch := refs[:min(len(refs), MaxNames)]
		refs = refs[len(batch):]
		names := make([]string, len(batch))
		for i, r := range batch {
			names[i] = r.box
		}
		var got [][][]byte
		var err error
		if wait {
			got, err = mb.Wait(ctx, names)
			if errors.Is(err, ErrNoWait) {
				noWait = true
				got, err = mb.Take(ctx, names)
			}
		} else {
			got, err = mb.Take(ctx, names)
		}
		if err != nil {
			var ne net.Error
			if wait && errors.As(err, &ne) && ne.Timeout() {
				return out, noWait, nil // a wait held past the request timeout (a slow path): no call yet
			}
			if ctx.Err() == nil {
				log.Warn("rendezvous: calls", "relay", s.Relay, "err", err)
			}
			if ctx.Err() != nil {
				return out, noWait, nil
			}
			return out, noWait, err
		}
		for i, blobs := range got {
			for _, b := range blobs {
				m, err := Open(batch[i].peer.Secret, batch[i].box, b, KindCall, batch[i].peer.ID, s.Self, t)
				if err != nil {
					log.Warn("rendezvous: a call that does not open", "err", err)
					continue
				}
				out = append(out, incoming{batch[i].peer, m})
			}
		}
	}
	return out, noWait, nil
}

// answer gathers, answers the call and bridges the path to the listener.
func (s *Server) answer(ctx context.Context, mb *Mailbox, mux *ice.UniversalUDPMuxDefault, p Peer, call Message, now func() time.Time) (*bridge, error) {
	target := s.Listener()
	if target == nil {
		return nil, errors.New("not receiving on QUIC here")
	}
	g, err := newAgent(ctx, s.Relay, s.RelaySecret, TestNet{Loopback: s.Loopback, RelayOnly: s.RelayOnly}, mux, 0, s.Log)
	if err != nil {
		return nil, fmt.Errorf("gather candidates: %w", err)
	}
	ans := Message{Kind: KindAnswer, From: s.Self.String(), To: p.ID.String(), At: now().Unix(), Call: call.Call, Instance: s.Instance}
	g.fill(&ans)
	box := AnswerName(p.Secret, call.Call)
	blob, err := Seal(p.Secret, box, ans)
	if err == nil {
		err = mb.Push(ctx, box, blob)
	}
	if err != nil {
		g.close()
		return nil, err
	}
	ic, err := g.connect(ctx, call, false)
	if err != nil {
		g.close()
		return nil, err
	}
	if mux != nil && !g.localRelayed() {
		ic = nil // the peer's QUIC reaches the listener's own socket
	}
	// The path is known (PathOf) before the peer's QUIC can reach the
	// listener through the bridge.
	b, err := newBridge(g, ic, target, func(b *bridge) {
		b.path = g.path()
		b.path.Relay = s.Relay
		if ic != nil {
			b.seenAs = addrKey(b.Addr().String()) // the listener hears the bridge
		} else {
			b.seenAs = addrKey(g.remoteAddr()) // the peer's QUIC, from its end of the pair
		}
		s.track(b, true)
	})
	if err != nil {
		g.close()
		return nil, err
	}
	if s.Log != nil {
		s.Log.Info("rendezvous: connected", "peer", p.ID.Short(), "path", b.path.String())
	}
	return b, nil
}
