package engine

import (
	"context"
	"errors"
	"fmt"
	"github.com/ferrydrop/ferry/internal/deviceid"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ferrydrop/ferry/engine/addr"
	"github.com/ferrydrop/ferry/engine/identity"
	"github.com/ferrydrop/ferry/engine/internal/anywhere"
	"github.com/ferrydrop/ferry/engine/internal/transport"
	"github.com/ferrydrop/ferry/engine/internal/transport/auto"
	"github.com/ferrydrop/ferry/engine/peer"
	"github.com/ferrydrop/ferry/internal/filelock"
)

// Reaching a paired device beyond the LAN (issue #29): a rendezvous
// address (rendezvous://relay-host:port) names the relay through which the
// device is called; package anywhere does the rest (the mailbox, ICE, and
// Ferry's QUIC over the path ICE chose).

// Errors of reaching a device from anywhere, for callers that branch.
var (
	// ErrRelayUnreachable: the relay does not answer at its address.
	ErrRelayUnreachable = anywhere.ErrRelayUnreachable
	// ErrNotPaired: the device is not paired with this one, or the two
	// hold no rendezvous secret yet.
	ErrNotPaired = errors.New("not paired")
	// ErrDeviceNotFound: the device is not receiving from anywhere through
	// the relay (or not running).
	ErrDeviceNotFound = anywhere.ErrNotFound
	// ErrDeviceNotLooking: the device's presence is at the relay, but it
	// has not looked for calls there for a while (anywhere.NotLookingAfter):
	// it was killed, or sleeps, or is cut off.
	ErrDeviceNotLooking = anywhere.ErrNotLooking
	// ErrRelaySecret: the relay refused this device's relay secret (wrong,
	// missing, or given to a relay that has none); SetRelaySecret.
	ErrRelaySecret = anywhere.ErrRelaySecret
	// ErrServingElsewhere: another process on the same config folder (the
	// app, another ferry-cli receive) serves this device from anywhere
	// already; ServeAnywhere.
	ErrServingElsewhere = errors.New("this device is reachable from anywhere through another Ferry already")
)

// servingLock is the file in the config folder whose lock a process holds
// while it serves the device from anywhere (ServeAnywhere).
const servingLock = "anywhere.lock"

// relayState is what the engine knows of relays.
type relayState struct {
	mu      sync.Mutex                    // guards the fields below
	secrets map[string]string             // relay "host:port" -> its secret
	serving map[*anywhere.Server]struct{} // the relays served through now
	claims  int                           // ServeAnywhere calls holding the config folder's servingLock
	unlock  func()                        // lets go of servingLock (nil: not held)
}

// claimServing takes the config folder's servingLock for a ServeAnywhere,
// or says that another process holds it: two processes of one device
// (one identity) serving through a relay would put their presence under
// the same name, each replacing the other's (a sender read the one put
// last, and a restart of the device in every change of it), and the one
// that stops first would take back the presence of the one still
// serving. release lets go once the last claim of this engine does.
func (e *Engine) claimServing() (release func(), err error) {
	e.relays.mu.Lock()
	defer e.relays.mu.Unlock()
	if e.relays.claims == 0 {
		unlock, ok, err := filelock.TryLock(filepath.Join(e.opts.ConfigDir, servingLock))
		if err != nil {
			return nil, fmt.Errorf("the config folder's lock %s: %w", servingLock, err)
		}
		if !ok {
			return nil, &wordedError{err: ErrServingElsewhere, text: fmt.Sprintf("another Ferry on the config folder %s (the app, or another ferry-cli receive) serves this device from anywhere already: through a relay the two would keep replacing each other's presence. Stop the other one, or give this one a config folder of its own (a device of its own, paired on its own)", e.opts.ConfigDir)}
		}
		e.relays.unlock = unlock
	}
	e.relays.claims++
	var once sync.Once
	return func() {
		once.Do(func() {
			e.relays.mu.Lock()
			defer e.relays.mu.Unlock()
			if e.relays.claims--; e.relays.claims == 0 {
				e.relays.unlock()
				e.relays.unlock = nil
			}
		})
	}, nil
}

// SetRelaySecret gives the engine the secret the relay at hostport was
// started with (ferry-cli relay --secret-file), for its calls and its
// serving through that relay from now on; "" forgets it (a relay without
// a secret). A secret that is too short or not one line is refused.
func (e *Engine) SetRelaySecret(relay, secret string) error {
	if secret != "" {
		var err error
		if secret, err = anywhere.CleanSecret(secret); err != nil {
			return err
		}
	}
	e.relays.mu.Lock()
	defer e.relays.mu.Unlock()
	if e.relays.secrets == nil {
		e.relays.secrets = map[string]string{}
	}
	if secret == "" {
		delete(e.relays.secrets, relay)
	} else {
		e.relays.secrets[relay] = secret
	}
	return nil
}

// relaySecret is the secret set for relay ("" when none).
func (e *Engine) relaySecret(relay string) string {
	e.relays.mu.Lock()
	defer e.relays.mu.Unlock()
	return e.relays.secrets[relay]
}

// anywhereHeadStart is how long the LAN addresses of a device are tried
// alone before it is also called through the relay (none right after the
// session lost its path with this device's address: the LAN address it
// would dial first is the one that just failed; none either when the
// Resolver knows the device is away from the LAN, AbsenceReporter).
const anywhereHeadStart = 1500 * time.Millisecond

// dialWithRendezvous is dialTarget for a target with a rendezvous
// address: its other addresses first (the LAN), then, after headStart or
// at once when they all failed, the relay; the first session that proves
// the device wins.
func (e *Engine) dialWithRendezvous(ctx context.Context, rv addr.Addr, lan func(context.Context) (auto.Dialled, error), want identity.DeviceID, headStart time.Duration) (auto.Dialled, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type result struct {
		d   auto.Dialled
		err error
		lan bool
	}
	results := make(chan result, 2)
	lanFailed := make(chan struct{})
	go func() {
		d, err := lan(ctx)
		if err != nil {
			close(lanFailed)
		}
		results <- result{d, err, true}
	}()
	go func() {
		t := time.NewTimer(headStart)
		defer t.Stop()
		select {
		case <-t.C:
		case <-lanFailed:
		case <-ctx.Done():
			results <- result{err: ctx.Err()}
			return
		}
		d, err := e.dialAnywhere(ctx, rv.HostPort(), want)
		results <- result{d, err, false}
	}()
	var errs [2]error
	for i := range 2 {
		r := <-results
		if r.err == nil {
			cancel()
			if i == 0 {
				go func() { // the other one may still connect: close it
					if o := <-results; o.err == nil {
						o.d.Conn.Close(nil)
					}
				}()
			}
			return r.d, nil
		}
		if r.lan {
			errs[0] = r.err
		} else {
			errs[1] = r.err
		}
	}
	// The relay's error says more than "no LAN address answered".
	return auto.Dialled{}, errs[1]
}

// dialAnywhere calls a paired device through the relay at hostport.
func (e *Engine) dialAnywhere(ctx context.Context, relay string, want identity.DeviceID) (auto.Dialled, error) {
	s := e.rendezvousOf(want.Peer())
	if s.IsZero() {
		return auto.Dialled{}, notPaired(e.deviceNamed(want))
	}
	tlsConf := e.ident.TLSConfig(false, func(got identity.DeviceID) error {
		if got != want {
			return &identity.MismatchError{Expected: want.Peer(), Presented: got.Peer()}
		}
		return nil
	})
	req := anywhere.DialRequest{
		Relay: relay, Secret: s, Self: e.ident.ID, Peer: want, TLS: tlsConf, Transport: e.opts.Transport,
		Loopback: e.anywhereLoopback, RelaySecret: e.relaySecret(relay), RelayOnly: e.anywhereRelayOnly, Log: e.log,
		Unanswered: &e.unanswered,
	}
	if e.netw != nil {
		// A direct path whose address goes away is declared lost, and
		// the send calls again at once (watchPath), as on the LAN.
		req.Network = e.netw
	}
	c, err := anywhere.Dial(ctx, req)
	if err != nil {
		return auto.Dialled{}, anywhereError(err, relay, e.deviceNamed(want))
	}
	why := "through the internet, " + c.Path().String()
	st := c.Setup()
	e.log.Info("device reached from anywhere", "id", want.Short(), "relay", relay, "path", c.Path().String(),
		"lookup_and_gather", st.Lookup, "answer", st.Answer, "ice_checks", st.Checks, "quic_handshake", st.Handshake)
	return auto.Dialled{Conn: c, Why: why}, nil
}

// routed is a session that knows which way it goes beyond the LAN (one
// reached through a relay, anywhere.Conn).
type routed interface{ Route() (route, relay string) }

// transportInfo is the transport event's content for a session: its
// transport, why, and its route (the LAN unless it says otherwise).
func transportInfo(conn Conn, reason string) *TransportInfo {
	info := &TransportInfo{Name: string(conn.Transport()), Reason: reason, Route: RouteLAN}
	if r, ok := conn.(routed); ok {
		info.Route, info.Relay = r.Route()
	}
	return info
}

// receivedTransport is the transport event of a session this device
// accepted: its transport, and its route as this side sees it: through a
// relay served here when the session came by a call answered there (its
// path: direct or relayed), the LAN otherwise.
func (e *Engine) receivedTransport(conn Conn) *TransportInfo {
	info := transportInfo(conn, "chosen by the sender")
	e.relays.mu.Lock()
	defer e.relays.mu.Unlock()
	for srv := range e.relays.serving {
		if p, ok := srv.PathOf(conn.RemoteAddr()); ok {
			info.Route, info.Relay = p.Route()
			break
		}
	}
	return info
}

// endOfCall returns what ends the call through a relay served here that
// the session from remote came by (anywhere.Server.EndOf), for serve to
// run once the session closed; false and a no-op for a session on the LAN,
// or one whose call this side has not named yet.
func (e *Engine) endOfCall(remote string) (end func(), ok bool) {
	e.relays.mu.Lock()
	defer e.relays.mu.Unlock()
	for srv := range e.relays.serving {
		if end, ok := srv.EndOf(remote); ok {
			return end, true
		}
	}
	return func() {}, false
}

// FindAnywhere checks, before a send, that the paired device id keeps a
// presence at the relay for this device: ErrNotPaired, ErrRelayUnreachable
// and ErrDeviceNotFound come back at once, in a sentence, instead of
// after the retries of a send.
func (e *Engine) FindAnywhere(ctx context.Context, relay, id string) error {
	want, err := identity.ParseID(id)
	if err != nil {
		return err
	}
	s := e.rendezvousOf(want.Peer())
	if s.IsZero() {
		return notPaired(e.deviceNamed(want))
	}
	err = anywhere.Lookup(ctx, anywhere.DialRequest{Relay: relay, Secret: s, Self: e.ident.ID, Peer: want, RelaySecret: e.relaySecret(relay)})
	if err != nil {
		return anywhereError(err, relay, e.deviceNamed(want))
	}
	return nil
}

// deviceNamed is a device as its errors name it: its name as the trust
// store knows it and its short ID ("Desktop (3YEFXSUB)": the name the user
// typed, and which of two of that name), or "device 3YEFXSUB" when it has
// no name here.
func (e *Engine) deviceNamed(id identity.DeviceID) string {
	if p, ok := e.trust.Get(id.Peer()); ok && p.Name != "" {
		return p.Name + " (" + id.Short() + ")"
	}
	return "device " + id.Short()
}

func notPaired(who string) error {
	return fmt.Errorf("cannot reach %s from anywhere: %w with this device, or paired before Ferry could reach devices beyond the LAN (pair again, or let the two meet once on the same network)", who, ErrNotPaired)
}

// anywhereError says what failed in a call through a relay to who
// (deviceNamed), and what to do: always a sentence that names the relay as
// the user gave it, and the cause in plain words, never the Go error
// chain behind it (kept for errors.Is and the log).
func anywhereError(err error, relay, who string) error {
	var mismatch *identity.MismatchError
	var notLooking *anywhere.NotLookingError
	switch {
	case errors.Is(err, context.Canceled):
		return err
	case errors.As(err, &mismatch):
		return &wordedError{err: err, text: fmt.Sprintf("cannot reach %s from anywhere: the device that answered through relay %s is another one (it presented the ID %s)", who, relay, mismatch.Presented.Short())}
	case errors.Is(err, anywhere.ErrRelaySecret), errors.Is(err, anywhere.ErrClockSkew):
		return fmt.Errorf("cannot reach %s from anywhere: %w", who, err)
	case errors.Is(err, anywhere.ErrNotFound), errors.Is(err, anywhere.ErrNoAnswer):
		// The sentence says it all: not "...: device not found through the relay HOST" again.
		return &wordedError{err: err, text: fmt.Sprintf("cannot reach %s from anywhere: it is not receiving through relay %s (run `ferry-cli receive --anywhere --relay %s` there, or turn on \"Reach my paired devices from anywhere\")", who, relay, relay)}
	case errors.As(err, &notLooking):
		return &wordedError{err: err, text: fmt.Sprintf("cannot reach %s from anywhere: it has not looked for calls at relay %s for %s, so Ferry is probably not running there (was it killed, or is the device asleep or cut off from the network?)", who, relay, roundSeconds(notLooking.For))}
	case errors.Is(err, anywhere.ErrStillUnanswered):
		return &wordedError{err: err, text: fmt.Sprintf("cannot reach %s from anywhere: it did not answer its last call through relay %s and has not announced itself there since (was Ferry killed there, or is the device cut off from the network?)", who, relay)}
	case errors.Is(err, anywhere.ErrNoPath):
		return &wordedError{err: err, text: fmt.Sprintf("cannot reach %s from anywhere: the two devices found each other through relay %s but no network path between them, neither direct nor through the relay's UDP port (does a firewall let the relay's TCP through and not its UDP?)", who, relay)}
	case errors.Is(err, anywhere.ErrBadMessage):
		return &wordedError{err: err, text: fmt.Sprintf("cannot reach %s from anywhere: its answer through relay %s could not be read (is Ferry there up to date?)", who, relay)}
	}
	return &wordedError{err: err, text: fmt.Sprintf("cannot reach %s from anywhere: %s", who, relayProblem(relay, err).Error())}
}

// sessionEndError says in a sentence why a session beyond the LAN with
// who (deviceNamed) ended on the relay's word, asked while its path was
// silent (anywhere's follow: quic's migrator ends the connection with
// it, and whichever stream reads that first returns it, wrapped or not):
// the device stopped looking for calls, or restarted. Other errors are
// returned as they are.
func sessionEndError(err error, who string) error {
	var notLooking *anywhere.NotLookingError
	switch {
	case errors.As(err, &notLooking):
		return &wordedError{err: err, text: fmt.Sprintf("%s has not looked for calls at relay %s for %s: Ferry is probably not running there (was it killed, or is the device asleep or cut off from the network?)", who, notLooking.Relay, roundSeconds(notLooking.For))}
	case errors.Is(err, anywhere.ErrPeerRestarted):
		return &wordedError{err: err, text: who + " restarted: it announced itself again through the relay"}
	}
	return err
}

// roundSeconds says d in whole seconds ("42 s"), at least 1.
func roundSeconds(d time.Duration) string {
	return fmt.Sprintf("%d s", max(int(d.Round(time.Second)/time.Second), 1))
}

// relayProblem says in a sentence what went wrong with the relay (as the
// user gave it) in a call through it or a presence kept there: it does not
// answer, it is no Ferry relay, it refused the request, or another cause
// in plain words.
func relayProblem(relay string, err error) error {
	var refused *anywhere.RefusedError
	var looks *anywhere.LooksError
	switch {
	case errors.Is(err, anywhere.ErrRelaySecret):
		return err // its sentence names the relay and the secret
	case errors.As(err, &looks):
		// "it answered "504 Gateway Timeout"", not "not a Ferry relay": it
		// is one, by its answers to the presence.
		why := strings.TrimPrefix(looks.Answer.Error(), anywhere.ErrNotRelay.Error()+": ")
		return &wordedError{err: err, text: fmt.Sprintf("the relay %s takes this device's presence but fails each of its looks for calls (%s), so no call reaches this device through it: a proxy before the relay must let a request wait %v for its answer", relay, why, anywhere.WaitFor)}
	case errors.Is(err, anywhere.ErrRelayUnreachable):
		return relayUnreachable(relay, err)
	case errors.Is(err, anywhere.ErrNotRelay):
		return notRelay(relay, err)
	case errors.As(err, &refused):
		return relayRefused(relay, refused, err)
	}
	why := plainCause(err)
	if why == "" {
		why = rootCause(err)
	}
	return &wordedError{err: err, text: fmt.Sprintf("the call through relay %s failed: %s", relay, why)}
}

// relayUnreachable says that the relay does not answer, what to check,
// and why in the system's words ("connection refused"), not the dial's
// ("relay unreachable: 7.0.0.1:3478: dial tcp 7.0.0.1:3478: connect:
// connection refused"); err stays behind it for errors.Is and the log. A
// relay that took the connection and closed it did answer, in a way: that
// is said as it is.
func relayUnreachable(relay string, err error) error {
	const check = "is `ferry-cli relay` running there, and is the address right?"
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF):
		return &wordedError{err: err, text: fmt.Sprintf("the relay %s closed the connection in the middle of its answer: try again (a relay that keeps doing so is overloaded, or not a Ferry relay)", relay)}
	case errors.Is(err, io.EOF), isReset(err):
		// Taken, then closed (at once, or as the request came: a reset).
		return &wordedError{err: err, text: fmt.Sprintf("the relay %s closed the connection without answering (%s)", relay, check)}
	}
	text := fmt.Sprintf("the relay %s does not answer (%s)", relay, check)
	if why := plainCause(err); why != "" {
		text += ": " + why
	}
	return &wordedError{text: text, err: err}
}

// wsaeconnreset is Windows' WSAECONNRESET, its errno of a connection
// reset: there syscall.ECONNRESET is a value Go made up, which no system
// call returns, so errors.Is(err, syscall.ECONNRESET) misses a reset. No
// Unix has an errno this high, so it is matched on every system, not in a
// Windows file, and its match is tested everywhere.
const wsaeconnreset = syscall.Errno(10054)

// isReset reports whether err is a connection reset by the other end.
func isReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, wsaeconnreset)
}

// relayRefused says why the relay refused a request, by its status, and
// its own reason (its words: escaped where they are shown).
func relayRefused(relay string, r *anywhere.RefusedError, err error) error {
	var text string
	switch r.Status {
	case http.StatusTooManyRequests:
		text = fmt.Sprintf("the relay %s is busy and turned this device away for now: try again in a minute", relay)
	case http.StatusRequestEntityTooLarge:
		text = fmt.Sprintf("the relay %s refused a request as too large (is it a much older or newer Ferry relay than this device?)", relay)
	default:
		text = fmt.Sprintf("the relay %s refused a request it could not read (is it a much older or newer Ferry relay than this device?)", relay)
	}
	if r.Reason != "" {
		text += fmt.Sprintf("; it said %q", r.Reason)
	}
	return &wordedError{text: text, err: err}
}

// rootCause is the innermost error of err's chain, in its own words
// ("all retransmissions failed"), without the wrappers' ("ice: turn: ...").
func rootCause(err error) string {
	for {
		var next error
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			next = u.Unwrap()
		case interface{ Unwrap() []error }:
			if errs := u.Unwrap(); len(errs) > 0 {
				next = errs[len(errs)-1]
			}
		}
		if next == nil {
			return err.Error()
		}
		err = next
	}
}

// plainCause is why a connection could not be made, in the words the
// user reads elsewhere ("connection refused", "there is no host named
// relay.example"), "" when err holds none of those.
func plainCause(err error) string {
	var dns *net.DNSError
	var errno syscall.Errno
	var ne net.Error
	switch {
	case errors.As(err, &dns) && dns.IsNotFound:
		return "there is no host named " + dns.Name
	case errors.As(err, &dns):
		return "its name could not be looked up (" + dns.Err + ")"
	case errors.As(err, &errno):
		return errno.Error()
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "no answer in time"
	}
	return ""
}

// wordedError is an error said in a sentence of its own (text), with the
// error behind it kept for errors.Is and errors.As.
type wordedError struct {
	text string
	err  error
}

func (e *wordedError) Error() string { return e.text }
func (e *wordedError) Unwrap() error { return e.err }

// notRelay says that what answers at relay is no Ferry relay, and what
// to check.
func notRelay(relay string, err error) error {
	return fmt.Errorf("%s is %w (is that the address and port of `ferry-cli relay`? 3478 unless it was given another)", relay, err)
}

// RelayListener is ListenerStatus.Transport of the relay a device serves
// through (EventListener).
const RelayListener = "relay"

// ServeAnywhere keeps this device reachable by its paired devices through
// the relay at hostport until stop is called or the engine closes: it
// publishes its presence there, under names only each paired device can
// compute, and answers their calls. The engine must be receiving (Start)
// on QUIC. It returns an error at once when the relay does not answer.
func (e *Engine) ServeAnywhere(relay string) (stop func(), err error) {
	if _, _, err := net.SplitHostPort(relay); err != nil {
		return nil, fmt.Errorf("relay address %q: %w", relay, err)
	}
	release, err := e.claimServing()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(e.ctx)
	started := make(chan struct{})
	srv := &anywhere.Server{
		Relay:    relay,
		Self:     e.ident.ID,
		Instance: e.instance,
		Peers:    e.anywherePeers,
		Listener: e.quicListenAddr,
		Log:      e.log,
		Now:      e.now,
		Started:  func() { close(started) },
		Loopback: e.anywhereLoopback,
		NonQUIC:  e.quicNonQUIC,

		RelaySecret: e.relaySecret(relay),
		RelayOnly:   e.anywhereRelayOnly,
		Grace:       e.anywhereGrace,
		Reach: func(ok bool, err error) {
			st := ListenerStatus{Transport: RelayListener, Addr: relay}
			if !ok {
				st.Err = relayProblem(relay, err).Error()
			}
			e.bus.Publish(Event{Kind: EventListener, Time: e.now(), Listener: &st})
		},
	}
	done := make(chan error, 1)
	e.wg.Go(func() {
		err := srv.Run(ctx)
		release() // its presence taken back: another process may serve now
		done <- err
	})
	select {
	case <-started:
		e.relays.mu.Lock()
		if e.relays.serving == nil {
			e.relays.serving = map[*anywhere.Server]struct{}{}
		}
		e.relays.serving[srv] = struct{}{}
		e.relays.mu.Unlock()
		return func() {
			e.relays.mu.Lock()
			delete(e.relays.serving, srv)
			e.relays.mu.Unlock()
			cancel()
			<-done
		}, nil
	case err := <-done:
		cancel()
		if err == nil || errors.Is(err, context.Canceled) {
			return nil, ErrClosed
		}
		return nil, relayProblem(relay, err)
	}
}

// pairedDevice is a paired Ferry device of the trust store.
type pairedDevice struct {
	name string
	id   identity.DeviceID
	peer peer.ID
}

// pairedDevices lists the paired Ferry devices.
func (e *Engine) pairedDevices() []pairedDevice {
	var out []pairedDevice
	for _, p := range e.trust.List() {
		if !p.Paired {
			continue
		}
		pid, err := peer.Parse(p.ID)
		if err != nil {
			continue
		}
		if id, ok := identity.DeviceOf(pid); ok {
			out = append(out, pairedDevice{name: p.Name, id: id, peer: pid})
		}
	}
	return out
}

// anywherePeers are the paired devices holding a rendezvous secret.
func (e *Engine) anywherePeers() []anywhere.Peer {
	var out []anywhere.Peer
	for _, d := range e.pairedDevices() {
		if s := e.rendezvousOf(d.peer); !s.IsZero() {
			out = append(out, anywhere.Peer{ID: d.id, Secret: s})
		}
	}
	return out
}

// quicListenAddr is where this device's QUIC listener takes packets from
// loopback (nil when it is not listening).
func (e *Engine) quicListenAddr() *net.UDPAddr {
	a, ok := addr.First(e.Addrs(), addr.QUIC)
	if !ok {
		return nil
	}
	ua, err := net.ResolveUDPAddr("udp", a.HostPort())
	if err != nil {
		return nil
	}
	if ua.IP == nil || ua.IP.IsUnspecified() {
		ua.IP = net.IPv4(127, 0, 0, 1)
	}
	return ua
}

// quicNonQUIC is the QUIC listener's socket as ICE shares it, nil when
// there is none.
func (e *Engine) quicNonQUIC() net.PacketConn {
	e.listenMu.Lock()
	defer e.listenMu.Unlock()
	for _, r := range e.receivers.open {
		fr, ok := r.(*ferryReceiver)
		if !ok || fr.kind != addr.QUIC {
			continue
		}
		fr.mu.Lock()
		ln := fr.ln
		fr.mu.Unlock()
		if ps, ok := ln.(transport.PacketSharer); ok {
			return ps.NonQUIC()
		}
	}
	return nil
}

// PairedDevice finds a paired device by name or device ID and returns
// its ID; a clear error when there is none (or the name is ambiguous).
func (e *Engine) PairedDevice(nameOrID string) (string, error) {
	var found []identity.DeviceID
	for _, d := range e.pairedDevices() {
		// An ID is taken as shown (grouped, "PT27-TYCL") or as stored.
		if d.name == nameOrID || d.id.String() == deviceid.Compact(nameOrID) || deviceid.Compact(d.id.Short()) == deviceid.Compact(nameOrID) {
			found = append(found, d.id)
		}
	}
	switch len(found) {
	case 0:
		return "", fmt.Errorf("no paired device is called %q: %w (pair the two devices first, on the same network)", nameOrID, ErrNotPaired)
	case 1:
		return found[0].String(), nil
	}
	// Which ones, in the words that name one: out of reach, nothing else
	// shows a paired device's ID.
	ids := make([]string, len(found))
	for i, id := range found {
		ids[i] = id.Short()
	}
	return "", fmt.Errorf("%d paired devices are called %q, with the IDs %s: name one by its device ID (its first %d characters are enough)",
		len(found), nameOrID, strings.Join(ids, ", "), len(deviceid.Compact(ids[0])))
}
