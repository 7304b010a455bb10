package engine

import (
	"context"
	"errors"
	"fmt"
	"github.com/ferrydrop/ferry/internal/deviceid"
	"slices"
	"sync/atomic"
	"time"

	"github.com/ferrydrop/ferry/engine/identity"
	"github.com/ferrydrop/ferry/engine/internal/core"
	"github.com/ferrydrop/ferry/engine/internal/pairing"
	"github.com/ferrydrop/ferry/engine/internal/rendezvous"
	"github.com/ferrydrop/ferry/engine/peer"
	"github.com/ferrydrop/ferry/engine/wire"
)

// Pairing (issue #14): every session between two Ferry devices runs a
// commit-then-reveal exchange inside its hellos (package pairing), so both
// ends know the same six-digit verification code. With a device this one
// does not trust yet, the code is shown (EventPair, OfferInfo.PairCode); the
// user compares it with the other screen and says so with ConfirmPair: a
// match trusts the device, a mismatch ends the transfer. Pair runs the
// exchange alone, with no files (ferry-cli pair): then both users must
// confirm, and each side tells the other (PairConfirm).

// featurePair is the hello feature of the pairing step.
const featurePair = "pair"

var (
	// ErrNoPairCode is returned by ConfirmPair for a transfer without a
	// verification code (its peer does not pair, or it is already trusted).
	ErrNoPairCode = errors.New("this transfer has no verification code to confirm")
	// ErrCodeNotShown is returned by ConfirmPair for a code the receiver
	// did not show its user (PairInfo.Shown is CodeShownNo): there is
	// nothing to compare it with; pairing (Pair) shows a code on both.
	ErrCodeNotShown = errors.New("the other device accepted without showing this verification code, so it cannot be compared: pair with it instead")
	// ErrCodeNotShownYet is returned by ConfirmPair for a code the
	// receiver says its screen does not show (PairInfo.Shown is
	// CodeShownWaiting or CodeShownQueued: its client has not shown the
	// offer, or keeps it behind another device's): its user could not have
	// compared it. A receiver that never shows the offer (declined or
	// expired unseen) leaves it so.
	ErrCodeNotShownYet = errors.New("the other device's screen does not show this verification code yet: compare the codes once it shows your offer")
	// errCannotPair: the peer runs a Ferry without pairing.
	errCannotPair = errors.New("the other device did not pair: it runs an older Ferry (update it), or it is not pairing with " +
		"new devices for a while because many pairing attempts were abandoned halfway (try again later)")
)

// pairState is a transfer's verification code and what the user said of it.
type pairState struct {
	code string
	peer peer.ID
	name string
	addr string // where we dialled it (sender side), remembered with it
	only bool   // a pairing-only session
	// rv is the rendezvous secret of this session's pairing step, kept
	// with the trust the user gives (zero when the peer does not settle
	// one).
	rv rendezvous.Secret
	// answers carries the user's verdicts on a pairing-only session.
	answers   chan bool
	confirmed atomic.Bool
	// shown, on the receiving side: the user was asked about the offer
	// with this code (Decision.CodeShown tells the sender).
	shown atomic.Bool
	// peerShown, on the sending side, is what the receiver said of the
	// code (a CodeShown): where its offer stands on the receiver's screen
	// (CodeShownWaiting, CodeShownQueued, CodeShownPending) until its
	// decision, then what the decision said.
	peerShown atomic.Value
	// peerAhead, with peerShown CodeShownQueued, is how many offers the
	// receiver said wait before this one in its own queue (wire.Prompt).
	peerAhead atomic.Int64
}

// offersPair reports whether a hello opens the pairing step.
func offersPair(h *wire.Hello) bool {
	return h.Pair != "" && slices.Contains(h.Features, featurePair)
}

// helloPair is our hello to peer carrying the pairing step's opening move,
// and the fingerprint of the rendezvous secret we hold for peer.
func (e *Engine) helloPair(move string, peer peer.ID) *wire.Hello {
	h := e.hello()
	h.Features = append(h.Features, featurePair, wire.FeatureRendezvous)
	h.Pair = move
	h.Rendezvous = e.rendezvousOf(peer).Fingerprint()
	return h
}

// pairDone is what a session's pairing step settled: the verification
// code, and the rendezvous secret both sides derive from the same nonces
// (zero when the peer does not settle one).
type pairDone struct {
	code string
	rv   rendezvous.Secret
}

// pairDialer is the dialer's side of the exchange: its nonce, and the
// rendezvous fingerprint its hello carried.
type pairDialer struct {
	nonce pairing.Nonce
	sent  string
}

func newPairDialer() *pairDialer { return &pairDialer{nonce: pairing.NewNonce()} }

// hello is the dialer's hello to peer, committing to its nonce.
func (p *pairDialer) hello(e *Engine, peer peer.ID) *wire.Hello {
	h := e.helloPair(pairing.Commit(p.nonce), peer)
	p.sent = h.Rendezvous
	return h
}

// finish reveals the dialer's nonce once the listener's hello arrived, and
// returns the code and secret; a zero pairDone when the listener does not
// pair.
func (p *pairDialer) finish(e *Engine, ctl *control, h *wire.Hello, peer identity.DeviceID, only bool) (pairDone, error) {
	if !offersPair(h) {
		return pairDone{}, nil
	}
	theirs, err := pairing.ParseNonce(h.Pair)
	if err != nil {
		return pairDone{}, fmt.Errorf("%w: hello: %w", wire.ErrProtocol, err)
	}
	if err := ctl.send(&wire.PairReveal{Nonce: p.nonce.String(), Only: only}); err != nil {
		return pairDone{}, err
	}
	self := e.ident.ID
	d := pairDone{code: pairing.Code(self, peer, p.nonce, theirs)}
	if slices.Contains(h.Features, wire.FeatureRendezvous) {
		d.rv = rendezvous.Derive(self, peer, p.nonce[:], theirs[:])
		e.settleRendezvous(peer.Peer(), p.sent, h.Rendezvous, d.rv)
	}
	return d, nil
}

// answerHello is the listener's answer to the dialer's hello: its own
// hello, and when the dialer pairs, its nonce and then the dialer's reveal.
// It returns the code ("" without pairing) and whether the dialer asks for
// pairing alone. An untrusted dialer's commitment is answered only while
// few answered ones were abandoned (pairTries, pairbudget.go); otherwise
// the session goes on without a code, as with a Ferry that does not pair.
func (e *Engine) answerHello(ctl *control, h *wire.Hello, c Conn) (done pairDone, only bool, err error) {
	if !offersPair(h) {
		return pairDone{}, false, ctl.send(e.hello())
	}
	peer := c.PeerID()
	// An untrusted dialer's commitment is a try at the code until revealed.
	trusted := e.isTrusted(peer.Peer())
	var tried time.Time
	if !trusted {
		var ok bool
		if tried, ok = e.pairs.try(c.RemoteAddr(), h.Name); !ok {
			if e.admit.WarnDue("pair-tries") {
				e.log.Warn("not pairing with new devices for a while: many pairing attempts were abandoned halfway (someone may be trying to guess a verification code)",
					"peer", c.RemoteAddr())
			}
			return pairDone{}, false, ctl.send(e.hello())
		}
	}
	mine := pairing.NewNonce()
	ours := e.helloPair(mine.String(), peer.Peer())
	if err := ctl.send(ours); err != nil {
		return pairDone{}, false, err
	}
	defer func() {
		if err == nil && !trusted {
			e.pairs.revealed(c.RemoteAddr(), h.Name, tried)
		}
	}()
	rv, err := expect[*wire.PairReveal](ctl.recvTimeout(handshakeTimeout))
	if err != nil {
		return pairDone{}, false, err
	}
	theirs, err := pairing.CheckReveal(h.Pair, rv.Nonce)
	if err != nil {
		return pairDone{}, false, fmt.Errorf("%w: %w", wire.ErrProtocol, err)
	}
	done = pairDone{code: pairing.Code(peer, e.ident.ID, theirs, mine)}
	if slices.Contains(h.Features, wire.FeatureRendezvous) {
		done.rv = rendezvous.Derive(peer, e.ident.ID, theirs[:], mine[:])
		e.settleRendezvous(peer.Peer(), ours.Rendezvous, h.Rendezvous, done.rv)
	}
	return done, rv.Only, nil
}

// setPair keeps a transfer's code, for ConfirmPair and the prompt.
func (e *Engine) setPair(t *Transfer, done pairDone, peer peer.ID, name, addr string, only bool) *pairState {
	if done.code == "" {
		return nil
	}
	ps := &pairState{code: done.code, rv: done.rv, peer: peer, name: name, addr: addr, only: only, answers: make(chan bool, 1)}
	t.pair.Store(ps)
	return ps
}

// announcePair shows the code of a transfer with a device not trusted yet
// (EventPair), saying shown of it (CodeShownPending, or on the sending side
// CodeShownWaiting for a receiver that will say when its screen shows it).
// A transfer must be registered first, for ConfirmPair.
func (e *Engine) announcePair(t *Transfer, shown CodeShown) {
	ps := t.pair.Load()
	if ps == nil || !ps.only && e.isTrusted(ps.peer) {
		return
	}
	if !ps.only {
		ps.peerShown.Store(shown)
	}
	e.publish(t, Event{Kind: EventPair, Pair: &PairInfo{Code: ps.code, Only: ps.only, Shown: shown}})
}

// maxPromptMessages bounds the wire.Prompt messages a receiver may send about
// one offer: its client queues it, then shows it; a few more are spared
// for a client that queues a shown offer again. Not counted are those that
// say the offer moved up the receiving Ferry's own queue (an Ahead lower
// than any before), which are as many as the place first said at most
// (wire.MaxPromptAhead).
const maxPromptMessages = 8

// receiverPrompt takes what the receiver said of where the offer stands on
// its screen (wire.Prompt) and shows the code again with it (EventPair):
// CodeShownQueued while it waits behind another device's offer (ahead:
// behind that many, the receiver's own queue), CodeShownPending once its
// user is shown it, when the code may be compared. Only a change is
// published.
func (e *Engine) receiverPrompt(t *Transfer, shown bool, ahead int) {
	ps := t.pair.Load()
	if ps == nil || ps.only {
		return
	}
	s := CodeShownQueued
	if shown {
		s = CodeShownPending
	}
	oldAhead := ps.peerAhead.Swap(int64(ahead))
	if old, _ := ps.peerShown.Swap(s).(CodeShown); old == s && oldAhead == int64(ahead) || e.isTrusted(ps.peer) {
		return
	}
	e.publish(t, Event{Kind: EventPair, Pair: &PairInfo{Code: ps.code, Shown: s, Ahead: ahead}})
}

// untrustedCode is the code to show with an offer: none for a trusted
// sender. It records that the user is shown the code (with the offer's
// question), for the decision to say so.
//
// Recorded as the offer is published, not as a client draws it, which the
// engine cannot see: the mark is read only by an accepting decision
// (codeShown), and every accept follows a display of the code. The app's
// prompt shows it, and an offer queued behind another can be accepted
// before its turn only from its notification, which carries the code;
// ferry-cli receive prints it with its question, and asks one at a time,
// so a queued offer is answered only once printed. A declined, expired or
// withdrawn offer says nothing of the code (refuse), so a prompt queued and
// never shown tells the sender nothing (TestQueuedThenDeclinedOfferSaysNoCodeShown).
// A client that accepts without showing the code must say so by not
// asking: an accept policy, not Decide. Before the decision, the sender's
// user is asked to compare the code only once the client says its prompt
// is on screen (OfferOnScreen, wire.Prompt), not while it is queued.
func (e *Engine) untrustedCode(t *Transfer) string {
	ps := t.pair.Load()
	if ps == nil || e.isTrusted(ps.peer) && !ps.confirmed.Load() { // trusted since its code was confirmed: shown
		return ""
	}
	ps.shown.Store(true)
	return ps.code
}

// codeShown is the accepting decision's word on the code: whether the
// user was asked with it.
func codeShown(t *Transfer) bool {
	ps := t.pair.Load()
	return ps != nil && ps.shown.Load()
}

// receiverShowed takes what the receiver's decision said of the session's
// code (said: its hello lists FeatureCodeShown) and shows the code again
// with it (EventPair): the sender's user is asked to compare only a code
// the other screen showed. A receiver that accepted without asking showed
// none (a Retry it accepted before, "accept all"): the Retry's new code was
// offered for comparison while the other screen never had it.
func (e *Engine) receiverShowed(t *Transfer, said, shown bool) {
	ps := t.pair.Load()
	if ps == nil || ps.only {
		return
	}
	s := CodeShownUnknown
	switch {
	case said && shown:
		s = CodeShownYes
	case said:
		s = CodeShownNo
	}
	ps.peerShown.Store(s)
	if e.isTrusted(ps.peer) {
		return
	}
	e.publish(t, Event{Kind: EventPair, Pair: &PairInfo{Code: ps.code, Shown: s}})
}

// ConfirmPair records the user's verdict on a transfer's verification code
// (EventPair): match means both screens show the same code, and the peer
// becomes a trusted device; a mismatch ends the transfer, and the peer is
// told. On a pairing-only session (Pair), the devices are paired once both
// users confirmed. A code the receiver did not show its user is refused
// (ErrCodeNotShown), and so is one it does not show yet (ErrCodeNotShownYet).
func (e *Engine) ConfirmPair(transferID string, match bool) error {
	t, err := e.transfer(transferID)
	if err != nil {
		return err
	}
	ps := t.pair.Load()
	if ps == nil {
		return fmt.Errorf("transfer %s: %w", transferID, ErrNoPairCode)
	}
	switch s, _ := ps.peerShown.Load().(CodeShown); s {
	case CodeShownNo:
		return fmt.Errorf("transfer %s: %w", transferID, ErrCodeNotShown)
	case CodeShownWaiting, CodeShownQueued:
		// The app's row and ferry-cli send --pair ask only once it is
		// shown; an answer through the API before then compared nothing.
		// An older receiver says nothing before its decision (Pending).
		return fmt.Errorf("transfer %s: %w", transferID, ErrCodeNotShownYet)
	}
	if ps.only {
		select {
		case ps.answers <- match:
			return nil
		default:
			return fmt.Errorf("transfer %s: the verification code was answered already", transferID)
		}
	}
	if !match {
		t.cancel(errPairMismatch)
		return nil
	}
	if ps.confirmed.Swap(true) {
		return nil
	}
	if err := e.trust.Pair(ps.peer, ps.name, ps.addr, e.now()); err != nil {
		return err
	}
	e.keepRendezvous(ps.peer, ps.rv)
	return nil
}

// alwaysAccept applies a decision's AlwaysAccept: a device becomes trusted
// only through its verification code (ConfirmPair), so without one
// confirmed it changes nothing.
func (e *Engine) alwaysAccept(t *Transfer, peer peer.ID) {
	if ps := t.pair.Load(); e.isTrusted(peer) || ps != nil && ps.confirmed.Load() {
		return
	}
	e.log.Warn("\"always accept\" ignored: the sender's verification code was not confirmed", "peer", peer.Short())
}

// Pair connects to the device at to and runs the pairing step alone: both
// screens show the same code (EventPair with Only set), and once both users
// confirmed it (ConfirmPair), each device trusts the other. The returned
// transfer ends done when they are paired.
func (e *Engine) Pair(ctx context.Context, to Target) (*Transfer, error) {
	if len(to.Addrs) == 0 {
		return nil, errors.New("no address to pair with")
	}
	want, err := to.want()
	if err != nil {
		return nil, err
	}
	t := &Transfer{id: newTransferID(), dir: Sending, done: make(chan struct{}), started: e.now(), state: StateConnecting,
		resume: make(chan struct{}), pauseNow: make(chan struct{}, 1), target: to}
	tctx, cancel := context.WithCancelCause(e.ctx)
	t.cancel = cancel
	if err := e.register(t); err != nil {
		cancel(nil)
		return nil, err
	}
	stopLink := context.AfterFunc(ctx, func() { cancel(errCancelledByUser) })
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		defer stopLink()
		defer cancel(nil)
		err := e.runPair(tctx, t, to, want)
		if cause := context.Cause(tctx); err != nil && errors.Is(cause, errCancelledByUser) {
			err = cause
		}
		e.warnKeyChange(t, err)
		var r Result
		core.EndOf(err, t.peerName(), false).Apply(&r)
		e.finish(t, r)
	}()
	return t, nil
}

// runPair is the dialer's side of a pairing-only session.
func (e *Engine) runPair(ctx context.Context, t *Transfer, to Target, want identity.DeviceID) (err error) {
	e.publish(t, Event{Kind: EventState, State: StateConnecting})
	d, err := e.dial(ctx, to.Addrs, candidateStagger, want, "")
	if err != nil {
		return err
	}
	conn, reason := d.Conn, d.Why
	t.mu.Lock()
	t.conn = conn
	t.mu.Unlock()
	e.publish(t, Event{Kind: EventTransport, Transport: transportInfo(conn, reason)})
	var ctl *control
	defer func() { closeWith(conn, ctl, err) }()
	stopEarly := context.AfterFunc(ctx, func() { conn.Close(closeReason(context.Cause(ctx))) })
	defer stopEarly()
	s, err := conn.OpenStream(ctx)
	if err != nil {
		return fmt.Errorf("open control stream: %w", err)
	}
	if _, err = s.Write([]byte{wire.KindControl}); err != nil {
		return fmt.Errorf("control stream: %w", err)
	}
	ctl = newControl(s)
	if stopEarly() {
		// From now on a cancel tells the peer why on the control stream,
		// as a send's does (TCP has no close reason of its own): without
		// it, the peer read a cancelled pairing as a lost connection.
		c := ctl
		stop := context.AfterFunc(ctx, func() { closeWith(conn, c, context.Cause(ctx)) })
		defer stop()
	}
	pd := newPairDialer()
	if err = ctl.send(pd.hello(e, conn.PeerID().Peer())); err != nil {
		return err
	}
	h, err := expect[*wire.Hello](ctl.recvTimeout(handshakeTimeout))
	if err != nil {
		return fmt.Errorf("hello: %w", err)
	}
	if err = checkHello(h, conn); err != nil {
		return err
	}
	done, err := pd.finish(e, ctl, h, conn.PeerID(), true)
	if err != nil {
		return err
	}
	if done.code == "" {
		return errCannotPair
	}
	addr := d.At.HostPort()
	t.mu.Lock()
	t.peer = e.peerInfo(conn.PeerID().Peer(), h.Name, conn.RemoteAddr())
	t.mu.Unlock()
	ps := e.setPair(t, done, conn.PeerID().Peer(), h.Name, addr, true)
	e.setState(t, StateWaiting)
	e.announcePair(t, CodeShownPending)
	return e.pairExchange(ctx, conn, ctl, ps, false)
}

// servePair is the listener's side of a pairing-only session, whose hellos
// were exchanged: it is a prompt like an offer, bounded the same way.
func (e *Engine) servePair(ctx context.Context, c Conn, ctl *control, tk *core.Ticket, t *Transfer) {
	tk.Decided()
	err := func() error {
		place, refused := tk.Prompt(ctx, nil)
		if refused != nil {
			return core.Refusal(refused).Err() // ours to tell the peer
		}
		defer place.Release()
		if err := e.register(t); err != nil {
			return err
		}
		e.announcePair(t, CodeShownPending)
		err := e.pairExchange(ctx, c, ctl, t.pair.Load(), true)
		if errors.Is(err, errPairMismatch) {
			tk.Declined()
		}
		return err
	}()
	if err != nil {
		closeWith(c, ctl, err)
	}
	if _, err := e.transfer(t.id); err != nil {
		return // refused before it was registered: no trace
	}
	var r Result
	core.EndOf(err, t.peerName(), false).Apply(&r)
	e.finish(t, r)
}

// pairExchange waits for this side's user (ConfirmPair) and the peer's
// (PairConfirm), then trusts the peer. The listener then says so (Result)
// and waits for the dialer to hang up; the dialer waits for that word, so
// that its own confirmation is not lost by closing early.
func (e *Engine) pairExchange(ctx context.Context, c Conn, ctl *control, ps *pairState, listener bool) error {
	err := e.pairExchangeOf(ctx, c, ctl, ps, listener)
	if errors.Is(err, errPairMismatch) || errors.Is(err, errPeerRejectedCode) {
		if p, ok := e.trust.Get(ps.peer); ok && p.Paired {
			// Nothing changed: the refusal does not undo the pairing
			// before, which the session's key proved.
			return fmt.Errorf("%w (%w)", err, core.ErrPairedBefore)
		}
	}
	return err
}

// pairExchangeOf is pairExchange, before a refusal between devices paired
// before is said as one that changed nothing.
func (e *Engine) pairExchangeOf(ctx context.Context, c Conn, ctl *control, ps *pairState, listener bool) error {
	msgs := make(chan wire.Message, 4)
	readErr := make(chan error, 1)
	go func() { // ends when the session is closed, which our caller does
		for {
			m, err := ctl.recv()
			if err != nil {
				readErr <- err
				return
			}
			select {
			case msgs <- m:
			case <-ctx.Done():
				return
			}
		}
	}()
	timer, expired := e.opts.Clock.NewTimer(e.opts.PromptTimeout)
	defer timer.Stop()
	var mine, theirs bool
	for !mine || !theirs {
		select {
		case ok := <-ps.answers:
			if err := ctl.send(&wire.PairConfirm{OK: ok}); err != nil {
				return err
			}
			if !ok {
				// Closing at once could reset the connection before the
				// refusal arrives (a TCP close with unread data is a
				// reset), and the peer would read a hang-up: wait for it
				// to hang up on the refusal, for a moment at most.
				linger, lingered := e.opts.Clock.NewTimer(2 * time.Second)
				defer linger.Stop()
				for hungUp := false; !hungUp; {
					select {
					case <-msgs:
					case <-readErr:
						hungUp = true
					case <-lingered:
						hungUp = true
					case <-ctx.Done():
						hungUp = true
					}
				}
				return errPairMismatch
			}
			mine = true
		case m := <-msgs:
			switch m := m.(type) {
			case *wire.PairConfirm:
				if !m.OK {
					return errPeerRejectedCode
				}
				theirs = true
			case *wire.Cancel:
				return pairCancelled(m)
			default:
				return fmt.Errorf("%w: unexpected %v message while pairing", wire.ErrProtocol, m.Type())
			}
		case err := <-readErr:
			// The peer's last word may wait behind its hang-up (the
			// reader queued it just before): a cancel says why it ended.
			select {
			case m := <-msgs:
				if c, ok := m.(*wire.Cancel); ok {
					return pairCancelled(c)
				}
			default:
			}
			return fmt.Errorf("the other device hung up before the code was confirmed: %w", unexpectedEOF(err))
		case <-expired:
			return fmt.Errorf("%w: the verification code was not confirmed within %v", wire.ErrTimeout, e.opts.PromptTimeout)
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	ps.confirmed.Store(true)
	if err := e.trust.Pair(ps.peer, ps.name, ps.addr, e.now()); err != nil {
		e.log.Warn("trust store", "err", err)
	} else {
		e.keepRendezvous(ps.peer, ps.rv)
	}
	wait := time.NewTimer(lingerAfterDone)
	defer wait.Stop()
	if listener {
		if err := ctl.send(&wire.Result{OK: true}); err != nil {
			return err
		}
		select {
		case <-c.Done():
		case <-readErr:
		case <-wait.C:
		case <-ctx.Done():
		}
		return nil
	}
	select {
	case <-msgs: // the listener's word: our confirmation arrived
	case <-readErr:
	case <-wait.C:
	case <-ctx.Done():
	}
	return nil
}

// pairCancelled is the error of a pairing the peer ended with m.
func pairCancelled(m *wire.Cancel) error {
	if m.Code == wire.CodeUntrusted {
		// The peer's user said the codes differ (closeCode): not its
		// trust policy, which the offer already passed.
		return fmt.Errorf("%w (%w)", errPeerRejectedCode, &wire.RemoteError{Code: m.Code, Reason: m.Reason})
	}
	return &wire.RemoteError{Code: m.Code, Reason: m.Reason}
}

// checkImpersonation refuses a device that is not trusted but calls itself
// by the name of a device the user paired with: the same device with a new
// key (reinstalled, or someone pretending). It is a hard failure with a
// clear warning (EventKeyChanged); the user forgets the old device to pair
// the new one.
func (e *Engine) checkImpersonation(peer peer.ID, name, addr string) *wire.RemoteError {
	if e.isTrusted(peer) {
		return nil
	}
	known, ok := e.trust.PairedNamed(name, peer)
	if !ok {
		return nil
	}
	refusal := &wire.RemoteError{Code: wire.CodeUntrusted,
		Reason: "it has paired with another device named like this one (rename this device, or have its owner forget the old one)"}
	if !e.admit.WarnDue(known.ID + "/" + peer.String()) {
		return refusal
	}
	warning := fmt.Sprintf("A device calling itself %q tried to connect with a key that is not the one of the %q you paired with (%s). "+
		"If that device was reinstalled, forget the old one here and pair again; otherwise someone may be pretending to be it.",
		name, known.Name, shortOf(known.ID))
	e.bus.Publish(Event{Kind: EventKeyChanged, Time: e.now(), Direction: Receiving,
		Peer:      PeerInfo{Name: name, ID: peer.String(), Addr: addr},
		KeyChange: &KeyChange{Known: PeerInfo{Name: known.Name, ID: known.ID, Trusted: true}, PresentedID: peer.String(), Warning: warning}})
	return refusal
}

// warnKeyChange publishes EventKeyChanged when a send or a pairing failed
// because a known device presented another key.
func (e *Engine) warnKeyChange(t *Transfer, err error) {
	var kc *identity.KeyChangedError
	var mm *identity.MismatchError
	var change *KeyChange
	switch {
	case errors.As(err, &kc):
		change = &KeyChange{Known: PeerInfo{Name: kc.Known.Name, ID: kc.Known.ID, Trusted: kc.Known.AlwaysAccept, Addr: kc.Addr},
			PresentedID: kc.Presented.String(), Warning: core.Sentence(kc)}
	case errors.As(err, &mm):
		known, ok := e.trust.Get(mm.Expected)
		if !ok {
			return // an ID the user typed, not a device known here
		}
		change = &KeyChange{Known: PeerInfo{Name: known.Name, ID: known.ID, Trusted: known.AlwaysAccept},
			PresentedID: mm.Presented.String(),
			Warning: core.Sentence(fmt.Errorf("%q (%s) answered with another key (%s): if it was reinstalled, forget it here and pair again; "+
				"otherwise someone may be pretending to be it", known.Name, shortOf(known.ID), mm.Presented.Short()))}
	default:
		return
	}
	e.publish(t, Event{Kind: EventKeyChanged, KeyChange: change})
}

func shortOf(id string) string { return deviceid.Short(id) }
