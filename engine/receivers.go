package engine

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"

	"github.com/ferrydrop/ferry/engine/addr"
	"github.com/ferrydrop/ferry/engine/internal/core"
	"github.com/ferrydrop/ferry/engine/internal/errcode"
	"github.com/ferrydrop/ferry/engine/internal/transport"
	"github.com/ferrydrop/ferry/engine/internal/transport/auto"
)

// Receiving is a table of receivers, the way sending is a table of
// transports: each row is one way peers reach this device (Ferry over each
// row of the transport table today; LocalSend's HTTPS API and a web link
// next). Start opens and serves every row, StopReceiving withdraws every
// row, Close closes them. Each row stands on its own: one that cannot open
// its socket, or stops serving, is reported (EventListener, Listeners)
// and the others carry on.

// A Receiver is one row of the receiver table: a server that takes
// sessions from peers on a socket of its own. The engine calls its methods
// one at a time (Addr excepted, which may be called at any time): Listen,
// Serve until its context ends, Withdraw, then Resume and Serve again or
// Close; Listen may follow Close (receiving turned on again). Add one with
// Engine.AddReceiver.
type Receiver interface {
	// Name names the row in ListenerStatus and EventListener ("quic",
	// "tcp", "localsend"...).
	Name() string
	// Listen opens the row's socket; its error is reported to the user.
	Listen() error
	// Serve takes sessions until ctx ends (the row was withdrawn or the
	// engine closes), then returns nil; the sessions it took go on. An
	// error says why the row stopped serving before that (it is reported).
	Serve(ctx context.Context) error
	// Addr is where the row listens; nil while it does not.
	Addr() net.Addr
	// Withdraw stops taking new sessions; the running ones go on to their
	// end, and the row releases its socket after the last of them.
	Withdraw()
	// Resume takes new sessions again after Withdraw; false when the row
	// released its socket meanwhile (the engine then calls Listen again).
	Resume() bool
	// Close ends every session the row took, releases its socket and
	// waits for what the row started.
	Close() error
}

// receiverTable is the engine's receivers and their state, guarded by
// Engine.listenMu (which orders Start, StopReceiving, AddReceiver and Close).
type receiverTable struct {
	rows []Receiver
	// open are the rows serving now; draining are the rows StopReceiving
	// withdrew while the transfers they carry finish (Start takes them
	// back, Close closes them).
	open, draining []Receiver
	ctx            context.Context    // the Serve calls' context, while receiving
	stop           context.CancelFunc // ends it (withdraw)
	serving        sync.WaitGroup     // the Serve calls
	// ferryPort is the port number the Ferry rows share in one Start.
	ferryPort sharedPort
	// links is the row of browser links (links.go), in rows once the
	// first link was opened; set under listenMu and Engine.mu, read under
	// either.
	links *linkRow
	// serves are the running Serve calls by row: what ends one row's
	// Serve alone, and when it returned (RemoveReceiver).
	serves map[Receiver]rowServe
}

// rowServe is one row's running Serve call.
type rowServe struct {
	stop context.CancelFunc
	done chan struct{}
}

// ferryReceivers are the rows of Ferry's own protocol: one per row of the
// transport table (QUIC, TCP), less the ones Options turn off.
func (e *Engine) ferryReceivers() []Receiver {
	var rows []Receiver
	for _, k := range e.transports {
		if slices.Contains(e.opts.NoListen, k.Kind) {
			continue
		}
		rows = append(rows, &ferryReceiver{e: e, kind: k.Kind, port: &e.receivers.ferryPort})
	}
	return rows
}

// AddReceiver adds a row to the receiver table (a LocalSend server, a web
// link). While receiving, it opens and serves at once; a failure to open
// is reported like any row's (EventListener) and returned.
func (e *Engine) AddReceiver(r Receiver) error {
	e.listenMu.Lock()
	defer e.listenMu.Unlock()
	e.mu.Lock()
	closed := e.closed
	e.mu.Unlock()
	if closed {
		return ErrClosed
	}
	rt := &e.receivers
	rt.rows = append(rt.rows, r)
	if rt.ctx == nil {
		return nil // the next Start opens it
	}
	st, err := openRow(r)
	e.mu.Lock()
	e.listenStatus = append(e.listenStatus, st)
	e.mu.Unlock()
	if err != nil {
		e.reportListener(st)
		return fmt.Errorf("receiver %s: %w", r.Name(), err)
	}
	rt.open = append(rt.open, r)
	e.serveRow(rt.ctx, r)
	return nil
}

// RemoveReceiver takes a row added with AddReceiver out of the receiver
// table and closes it: the sessions it took end, its socket is released
// (the app turning LocalSend off, or changing its PIN or port). Rows of
// Ferry's own protocol are not removed this way.
func (e *Engine) RemoveReceiver(r Receiver) error {
	e.listenMu.Lock()
	defer e.listenMu.Unlock()
	rt := &e.receivers
	i := slices.Index(rt.rows, r)
	if i < 0 {
		return nil
	}
	rt.rows = slices.Delete(rt.rows, i, i+1)
	if sv, ok := rt.serves[r]; ok {
		// Its Serve alone ends (not a failure: its context ended), then
		// Close follows it, one call at a time.
		sv.stop()
		<-sv.done
		delete(rt.serves, r)
	}
	is := func(x Receiver) bool { return x == r }
	rt.open = slices.DeleteFunc(rt.open, is)
	rt.draining = slices.DeleteFunc(rt.draining, is)
	e.mu.Lock()
	e.listenStatus = slices.DeleteFunc(e.listenStatus, func(st ListenerStatus) bool { return st.Transport == r.Name() })
	e.mu.Unlock()
	return r.Close()
}

// openRow opens r and says how that went.
func openRow(r Receiver) (ListenerStatus, error) {
	if err := r.Listen(); err != nil {
		return ListenerStatus{Transport: r.Name(), Err: core.Sentence(err)}, err
	}
	return rowListening(r), nil
}

// rowListening is the status of a row that listens.
func rowListening(r Receiver) ListenerStatus {
	st := ListenerStatus{Transport: r.Name(), Addr: r.Addr().String()}
	if n, ok := r.(listenNoter); ok {
		st.Note = n.ListenNote()
	}
	return st
}

// listenNoter is a Receiver that has something to say about where it
// listens (ListenerStatus.Note).
type listenNoter interface {
	ListenNote() string
}

// openReceivers opens every row for Start: rows StopReceiving withdrew
// take up serving again where they can (their sockets are still open, and
// a new one could not have their port), the others listen anew. It fails
// only when no row opens. Called with listenMu held.
func (e *Engine) openReceivers() ([]Receiver, []ListenerStatus, error) {
	rt := &e.receivers
	rt.ferryPort.reset()
	kept := map[Receiver]bool{}
	for _, r := range rt.draining {
		if r.Resume() {
			kept[r] = true
		} else {
			r.Close()
		}
	}
	rt.draining = nil
	var (
		open     []Receiver
		statuses []ListenerStatus
		errs     []error
	)
	for _, r := range rt.rows {
		if kept[r] {
			open = append(open, r)
			statuses = append(statuses, rowListening(r))
			continue
		}
		st, err := openRow(r)
		statuses = append(statuses, st)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		open = append(open, r)
	}
	if len(open) == 0 {
		if len(errs) == 0 {
			return nil, nil, errors.New("every transport is disabled: nothing to listen on")
		}
		return nil, nil, errors.Join(errs...)
	}
	return open, statuses, nil
}

// serveRow runs r's Serve under ctx; a row that stops serving by itself
// is reported, and the others carry on. Called with listenMu held.
func (e *Engine) serveRow(ctx context.Context, r Receiver) {
	e.wg.Add(1)
	e.receivers.serving.Add(1)
	ctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	if e.receivers.serves == nil {
		e.receivers.serves = map[Receiver]rowServe{}
	}
	e.receivers.serves[r] = rowServe{stop: stop, done: done}
	go func() {
		defer e.wg.Done()
		defer e.receivers.serving.Done()
		defer close(done)
		defer stop()
		err := r.Serve(ctx)
		if err == nil || ctx.Err() != nil {
			return
		}
		st := ListenerStatus{Transport: r.Name(), Err: core.Sentence(err)}
		e.mu.Lock()
		for i := range e.listenStatus {
			if e.listenStatus[i].Transport == st.Transport {
				e.listenStatus[i] = st
			}
		}
		e.mu.Unlock()
		e.reportListener(st)
	}()
}

// reportListener tells that a row does not receive, and why.
func (e *Engine) reportListener(st ListenerStatus) {
	e.log.Warn("a receiver is not listening; the others carry on", "receiver", st.Transport, "err", st.Err)
	e.bus.Publish(Event{Kind: EventListener, Time: e.now(), Listener: &st})
}

// Start opens every row of the receiver table: receiving is on until
// StopReceiving or Close. A row that cannot listen is reported
// (EventListener, Listeners) while the others carry on; Start fails only
// when none listens.
func (e *Engine) Start(ctx context.Context) error {
	e.listenMu.Lock()
	defer e.listenMu.Unlock()
	e.mu.Lock()
	closed, receiving := e.closed, e.receiving
	e.mu.Unlock()
	if closed {
		return ErrClosed
	}
	if receiving {
		return nil
	}
	if _, _, err := net.SplitHostPort(e.listenAddr()); err != nil {
		return fmt.Errorf("listen address %q: %w", e.listenAddr(), err)
	}
	open, statuses, err := e.openReceivers()
	if err != nil {
		return err
	}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		for _, r := range open {
			r.Close()
		}
		return ErrClosed
	}
	rt := &e.receivers
	rt.open = open
	rt.ctx, rt.stop = context.WithCancel(e.ctx)
	e.receiving, e.listenStatus = true, statuses
	if !e.trimming {
		e.trimming = true
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			e.trimLoop(e.ctx)
		}()
	}
	if age := e.partialAge(); age >= 0 && !e.ageing {
		// Armed before Start returns: a test's clock moved after it fires it.
		e.ageing = true
		tk, tc := e.opts.Clock.NewTicker(agePartialsEvery)
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			defer tk.Stop()
			e.ageLoop(e.ctx, tc, age)
		}()
	}
	e.mu.Unlock()
	for _, st := range statuses {
		if st.Err != "" {
			e.reportListener(st)
		}
	}
	if age := e.partialAge(); age >= 0 {
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			e.cleanOldPartials(age)
		}()
	}
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		if n := e.cleanLinkUploads(); n > 0 {
			e.log.Info("removed the partial files of browser and LocalSend uploads a crash left", "count", n)
		}
	}()
	for _, r := range open {
		e.serveRow(rt.ctx, r)
	}
	return nil
}

// ListenerStatus says whether one row of the receiver table listens (a
// transport of Ferry's protocol, or another receiver), and if not, why.
type ListenerStatus struct {
	// Transport names the row: "quic", "tcp", or another receiver's Name.
	Transport string `json:"transport"`
	// Addr is where it listens; empty when it does not.
	Addr string `json:"addr,omitempty"`
	// Err says why it does not listen, as a sentence for the user.
	Err string `json:"error,omitempty"`
	// Note says something the user should know about where it listens
	// (LocalSend: the port moved), as a sentence; empty when nothing.
	Note string `json:"note,omitempty"`
}

// Listeners reports each row of the receiver table since the last Start:
// where it listens, or why it could not (the others carry on without it).
// Empty while not receiving.
func (e *Engine) Listeners() []ListenerStatus {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.receiving {
		return nil
	}
	return slices.Clone(e.listenStatus)
}

// StopReceiving stops taking new transfers: every row stops accepting
// sessions (new senders are refused or find nobody), while the transfers
// being received go on to their end; each row releases its socket after
// the last of them. Start takes receiving up again.
func (e *Engine) StopReceiving() error {
	e.listenMu.Lock()
	defer e.listenMu.Unlock()
	e.withdraw()
	return nil
}

// StopReceivingNow stops taking new transfers and ends the ones being
// received as well (each sender is told at once), then closes every row.
func (e *Engine) StopReceivingNow() error {
	e.listenMu.Lock()
	defer e.listenMu.Unlock()
	e.withdraw()
	e.mu.Lock()
	stopRx := e.stopRx
	e.rxCtx, e.stopRx = context.WithCancelCause(e.ctx)
	e.mu.Unlock()
	stopRx(errStoppedReceiving)
	// Sessions end first, while the sockets are still open, so that peers
	// are told (QUIC's CONNECTION_CLOSE) instead of waiting for an idle timeout.
	e.rxWG.Wait()
	return e.closeDraining()
}

// withdraw stops the rows' Serve calls and withdraws every row. Called
// with listenMu held.
func (e *Engine) withdraw() {
	e.mu.Lock()
	e.receiving, e.listenStatus = false, nil
	e.mu.Unlock()
	rt := &e.receivers
	if rt.stop != nil {
		rt.stop()
	}
	rt.ctx, rt.stop = nil, nil
	rt.serving.Wait() // a row's methods are called one at a time
	for _, r := range rt.open {
		r.Withdraw()
	}
	rt.draining = append(rt.draining, rt.open...)
	rt.open = nil
}

// closeDraining closes the withdrawn rows. Called with listenMu held.
func (e *Engine) closeDraining() error {
	rt := &e.receivers
	var errs []error
	for _, r := range rt.draining {
		errs = append(errs, r.Close())
	}
	rt.draining = nil
	return errors.Join(errs...)
}

// Receiving reports whether the receiver table is open.
func (e *Engine) Receiving() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.receiving
}

// NetworkChanged returns a channel closed at the next change of this
// device's addresses or links (take a new one after each change): what
// shows this device's addresses redraws on it, with no polling.
func (e *Engine) NetworkChanged() <-chan struct{} { return e.netw.Changed() }

// Addrs returns where Ferry's rows listen, one address per kind in the
// transport table's order (a kind that is off has none); empty while not
// receiving.
func (e *Engine) Addrs() []addr.Addr {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.receiving {
		return nil
	}
	var out []addr.Addr
	for _, st := range e.listenStatus {
		kind := addr.Kind(st.Transport)
		if _, ferry := auto.Find(e.transports, kind); ferry && st.Addr != "" {
			out = append(out, addr.New(kind, st.Addr))
		}
	}
	return out
}

// listenAddr is Options.Listen, or any port.
func (e *Engine) listenAddr() string {
	if e.opts.Listen == "" {
		return ":0"
	}
	return e.opts.Listen
}

// sharedPort is the port number the Ferry rows share: when the listen
// address asks for any port, the first row to open takes one and the
// others try the same number, so that a device is one port for discovery.
type sharedPort struct{ port int }

func (s *sharedPort) reset() { s.port = 0 }

// note keeps the first port of a Start.
func (s *sharedPort) note(a net.Addr) {
	if s.port == 0 {
		s.port = portOf(a)
	}
}

// ferryReceiver is Ferry's protocol over one row of the transport table.
// Its fields are used one call at a time, as the Receiver contract says.
type ferryReceiver struct {
	e    *Engine
	kind transport.Kind
	port *sharedPort
	mu   sync.Mutex         // guards ln, for Addr
	ln   transport.Listener // nil while closed
}

func (r *ferryReceiver) Name() string { return string(r.kind) }

func (r *ferryReceiver) entry() (auto.Entry, bool) {
	for _, k := range r.e.transports {
		if k.Kind == r.kind {
			return k, true
		}
	}
	return auto.Entry{}, false
}

// Listen opens the row's listener on Options.Listen. When that asks for
// any port, it tries the number the other Ferry rows got, then any free
// one (discovery advertises each).
func (r *ferryReceiver) Listen() error {
	k, ok := r.entry()
	if !ok {
		return fmt.Errorf("listen: no %s transport", r.kind)
	}
	addr := r.e.listenAddr()
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("listen address %q: %w", addr, err)
	}
	anyPort := isAnyPort(addr)
	if anyPort && r.port.port != 0 {
		port = strconv.Itoa(r.port.port)
	}
	tlsConf := r.e.ident.TLSConfig(true, nil) // receivers accept any key (TOFU); the hello is checked against it
	l, err := k.Listen(net.JoinHostPort(host, port), tlsConf, r.e.reg)
	if err != nil && anyPort && port != "0" {
		// The other rows' port number is taken for this one: any free
		// port will do.
		l, err = k.Listen(net.JoinHostPort(host, "0"), tlsConf, r.e.reg)
	}
	if err != nil && !anyPort && r.e.opts.ListenAnyIfTaken {
		// The asked port is taken (another program): the number the other
		// rows got, else any free one, rather than not receiving at all.
		if r.port.port != 0 {
			l, err = k.Listen(net.JoinHostPort(host, strconv.Itoa(r.port.port)), tlsConf, r.e.reg)
		}
		if err != nil {
			l, err = k.Listen(net.JoinHostPort(host, "0"), tlsConf, r.e.reg)
		}
	}
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.ln = l
	r.mu.Unlock()
	r.port.note(l.Addr())
	return nil
}

func (r *ferryReceiver) Serve(ctx context.Context) error { return r.e.acceptLoop(ctx, r.ln) }

func (r *ferryReceiver) Addr() net.Addr {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ln == nil {
		return nil
	}
	return r.ln.Addr()
}

func (r *ferryReceiver) Withdraw() { r.ln.Withdraw() }

func (r *ferryReceiver) Resume() bool {
	if !r.ln.Resume() {
		return false
	}
	r.port.note(r.ln.Addr())
	return true
}

func (r *ferryReceiver) Close() error {
	r.mu.Lock()
	ln := r.ln
	r.ln = nil
	r.mu.Unlock()
	if ln == nil {
		return nil
	}
	return ln.Close()
}

func portOf(a net.Addr) int {
	switch a := a.(type) {
	case *net.UDPAddr:
		return a.Port
	case *net.TCPAddr:
		return a.Port
	}
	return 0
}

func isAnyPort(addr string) bool {
	_, p, _ := net.SplitHostPort(addr)
	return p == "" || p == "0"
}

// acceptLoop serves the sessions ln accepts until ctx ends (nil) or ln
// fails for good (its error).
func (e *Engine) acceptLoop(ctx context.Context, ln transport.Listener) error {
	for {
		c, err := ln.Accept(ctx)
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, net.ErrClosed) {
				e.log.Warn("accept failed", "err", err)
				if !isTemporary(err) {
					return fmt.Errorf("accept: %w", err)
				}
				continue
			}
			return nil
		}
		e.mu.Lock()
		if ctx.Err() != nil { // withdrawn meanwhile: StopReceivingNow may be waiting for rxWG
			e.mu.Unlock()
			c.Close(errcode.ErrNotReceiving)
			return nil
		}
		rxCtx := e.rxCtx
		e.wg.Add(1)
		e.rxWG.Add(1)
		e.serving++
		e.mu.Unlock()
		go func() {
			defer e.wg.Done()
			defer e.rxWG.Done()
			e.serve(rxCtx, c)
			e.mu.Lock()
			e.serving--
			e.mu.Unlock()
		}()
	}
}

func isTemporary(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
