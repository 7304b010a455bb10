package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/ferrydrop/ferry/internal/deviceid"
	"io"
	"net"
	"net/netip"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ferrydrop/ferry/discovery"
	"github.com/ferrydrop/ferry/engine"
	"github.com/ferrydrop/ferry/engine/addr"
	"github.com/ferrydrop/ferry/internal/peerresolve"
)

// This file connects the CLI to the discovery package: receive advertises
// the engine, send resolves device names and IDs, peers lists devices.

func init() {
	advertise = advertiseEngine
	resolveTarget = resolveByDiscovery
	resolveTargets = resolveAllByDiscovery
	follow = followByDiscovery
}

// followByDiscovery runs discovery beside a send to a device named by name
// or ID, so that each attempt finds it where it is now.
func followByDiscovery(ctx context.Context, e *engine.Engine, resolver *peerresolve.Resolver) (stop func()) {
	d, err := newDiscovery(e)
	if err != nil {
		return func() {}
	}
	resolver.Use(d)
	return runDiscovery(ctx, d)
}

// discoveryInterfaces lists the network interfaces mDNS may use. Tests
// replace it (with none) so that nothing is multicast from a test run.
var discoveryInterfaces = net.Interfaces

// resolveWait bounds how long send --to NAME looks for the device (a
// variable for tests).
var resolveWait = 3 * time.Second

// resolveSettle is how long send keeps listening after a name or ID prefix
// first matched, so that a second device answering to it is noticed
// instead of picking whichever answered first.
const resolveSettle = 500 * time.Millisecond

// advertiseEngine announces a receiving engine on the local network until
// the returned function is called; that function sends the goodbye.
func advertiseEngine(ctx context.Context, e *engine.Engine, errOut io.Writer) (func(), error) {
	svc := discovery.Service{Name: e.Name(), ID: e.ID(), Addrs: e.Addrs(), OS: runtime.GOOS}
	a, err := discovery.Advertise(svc, discovery.WithInterfaceLister(discoveryInterfaces))
	if err != nil {
		return nil, err
	}
	switch err := a.Err(); {
	case errors.Is(err, discovery.ErrNotListening):
		// --listen 127.0.0.1:PORT: no other device could reach it.
		hp := e.Addrs()[0].HostPort()
		fmt.Fprintf(errOut, "ferry-cli receive: not advertised on the local network, where no device could reach %s; senders on this device can use --to %s\n", hp, hp)
	case err != nil:
		// Advertise keeps trying as interfaces come up; say why it is not visible yet.
		fmt.Fprintf(errOut, "ferry-cli receive: not visible on the local network yet (%v); senders can use --to %s\n", err, hostPortHint(e.Addrs()))
	}
	return func() { a.Close() }, nil
}

// portOf returns the port of a "host:port" listener address, 0 when there is none.
func portOf(addr string) int {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		return 0
	}
	n, err := strconv.Atoi(p)
	if err != nil || n <= 0 || n > 65535 {
		return 0
	}
	return n
}

func hostPortHint(addrs []addr.Addr) string {
	if len(addrs) == 0 {
		return "HOST:PORT"
	}
	if p := portOf(addrs[0].HostPort()); p > 0 {
		return "HOST:" + strconv.Itoa(p)
	}
	return "HOST:PORT"
}

// isHostPort reports whether s is "host:port" with a numeric port (an
// address, not a device name).
func isHostPort(s string) bool {
	h, _, err := net.SplitHostPort(s)
	return err == nil && h != "" && portOf(s) > 0
}

// newDiscovery returns a Discovery that hides e itself and probes the devices
// e remembers, so that they are found where multicast does not work.
func newDiscovery(e *engine.Engine) (*discovery.Discovery, error) {
	return discovery.New(discovery.Options{
		SelfID:     e.ID(),
		Interfaces: discoveryInterfaces,
		Remembered: func() []discovery.Remembered { return remembered(e.Trusted()) },
		Prober: func(ctx context.Context, addr string) (string, string, error) {
			info, err := e.Probe(ctx, addr)
			return info.ID, info.Name, err
		},
	})
}

// remembered turns the trust store into probe targets for discovery.
func remembered(trusted []engine.TrustedPeer) []discovery.Remembered {
	var out []discovery.Remembered
	for _, p := range trusted {
		if p.LastAddr == "" {
			continue
		}
		out = append(out, discovery.Remembered{ID: p.ID, Name: p.Name, Addrs: []string{p.LastAddr}})
	}
	return out
}

// runDiscovery starts d in the background until ctx ends; the returned
// function cancels it and waits for it to stop.
func runDiscovery(ctx context.Context, d *discovery.Discovery) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = d.Run(ctx) // it only returns ctx's error; d.Err tells what is wrong meanwhile
	}()
	return func() { cancel(); <-done }
}

// candidate is a device that --to may mean.
type candidate struct {
	Name, ID, Addr string
}

func (c candidate) String() string {
	s := fmt.Sprintf("%s (%s", c.Name, short(c.ID))
	if c.Addr != "" {
		s += " at " + c.Addr
	}
	return s + ")"
}

// normalizeQueryID turns a typed ID or ID prefix (the short form with its
// dash too) into the stored form.
func normalizeQueryID(q string) string { return deviceid.Compact(q) }

// match picks the candidates a query means, with discovery.Resolve's rules:
// an exact device ID, else an ID prefix of at least 4 characters, else the
// device name ignoring case.
func match(query string, cs []candidate) []candidate {
	q := strings.TrimSpace(query)
	if q == "" {
		return nil
	}
	idq := normalizeQueryID(q)
	var byPrefix, byName []candidate
	for _, c := range cs {
		if c.ID == idq {
			return []candidate{c}
		}
		if len(idq) >= 4 && strings.HasPrefix(c.ID, idq) {
			byPrefix = append(byPrefix, c)
		}
		if strings.EqualFold(c.Name, q) {
			byName = append(byName, c)
		}
	}
	if len(byPrefix) > 0 {
		return byPrefix
	}
	return byName
}

func peerCandidates(ps []discovery.Peer) []candidate {
	out := make([]candidate, 0, len(ps))
	for _, p := range ps {
		c := candidate{Name: p.Name, ID: p.ID}
		if !p.SpeaksFerry() && p.SpeaksLocalSend() {
			c.ID = p.LocalSend.Fingerprint // a LocalSend device is named by its fingerprint
		}
		if a := p.HostPorts(); len(a) > 0 {
			c.Addr = a[0]
		}
		out = append(out, c)
	}
	return out
}

func trustedCandidates(ps []engine.TrustedPeer) []candidate {
	out := make([]candidate, 0, len(ps))
	for _, p := range ps {
		out = append(out, candidate{Name: p.Name, ID: p.ID, Addr: p.LastAddr})
	}
	return out
}

func listCandidates(cs []candidate) string {
	s := make([]string, len(cs))
	for i, c := range cs {
		s[i] = c.String()
	}
	return strings.Join(s, ", ")
}

// Errors of send --to NAME, wrapped in a resolveError that says what to do.
var (
	errNoDevice        = errors.New("no such device")
	errAmbiguousDevice = errors.New("more than one device matches")
)

// resolveError is a sentence for the user that wraps one of the errors above.
type resolveError struct {
	kind error
	msg  string
}

func (e *resolveError) Error() string { return e.msg }
func (e *resolveError) Unwrap() error { return e.kind }

func ambiguous(to string, cs []candidate) error {
	return &resolveError{errAmbiguousDevice, fmt.Sprintf("%q could be %s; pass --to with the device ID", to, listCandidates(cs))}
}

// resolveByDiscovery turns --to into a target: "host:port" as given, or a
// device name, ID or ID prefix looked up on the local network (mDNS and
// direct probes of remembered devices) and then in the trust store. A
// target found by name carries the device ID, so the TLS handshake must
// prove it.
func resolveByDiscovery(ctx context.Context, to, cfg string, lsScan bool, errOut io.Writer) (engine.Target, error) {
	r := resolveAllByDiscovery(ctx, []string{to}, cfg, lsScan)[0]
	io.WriteString(errOut, r.said)
	return r.target, r.err
}

// resolveAllByDiscovery resolves every --to as resolveByDiscovery does
// one, the names all in one discovery window: each name nobody answers
// to waited for a window of its own.
func resolveAllByDiscovery(ctx context.Context, tos []string, cfg string, lsScan bool) []resolved {
	out := make([]resolved, len(tos))
	var names []string // what only discovery can resolve
	at := map[string][]int{}
	for i, to := range tos {
		t, ok, err := resolveAddress(to)
		if errors.Is(err, errUsage) {
			// The send ends on it: no name is looked up, each is refused as it.
			for j := range out {
				out[j] = resolved{err: err}
			}
			return out
		}
		if ok || err != nil {
			out[i] = resolved{target: t, err: err}
			continue
		}
		if at[to] == nil {
			names = append(names, to)
		}
		at[to] = append(at[to], i)
	}
	if len(names) == 0 {
		return out
	}
	fail := func(err error) []resolved {
		for _, n := range names {
			for _, i := range at[n] {
				out[i].err = err
			}
		}
		return out
	}
	err := finding(ctx, cfg, lsScan, func(e *engine.Engine, f *finder) {
		for j, r := range resolveEach(names, func(to string) resolved { return resolveName(ctx, e, f, to) }) {
			for _, i := range at[names[j]] {
				out[i] = r
			}
		}
	})
	if err != nil {
		return fail(err)
	}
	return out
}

// resolveAddress resolves a --to that is an address ("host:port", or an
// IP address: Ferry's default port); ok is false for a name (and err nil).
func resolveAddress(to string) (t engine.Target, ok bool, err error) {
	if isHostPort(to) {
		return engine.Target{Addrs: engine.AddrsAt(to)}, true, nil
	}
	// An IP address is no device's name: without a port it is Ferry's
	// default one; with a port out of range it is a mistake to say, not a
	// name to look for.
	if ip, err := netip.ParseAddr(strings.Trim(to, "[]")); err == nil {
		return engine.Target{Addrs: engine.AddrsAt(net.JoinHostPort(ip.String(), defaultPort))}, true, nil
	}
	if h, p, err := net.SplitHostPort(to); err == nil {
		if _, herr := netip.ParseAddr(h); herr == nil || h == "" {
			return engine.Target{}, false, fmt.Errorf("%w: --to %q: the port %q is not a number from 1 to 65535", errUsage, to, p)
		}
	}
	if strings.TrimSpace(to) == "" {
		return engine.Target{}, false, fmt.Errorf("%w: --to is empty", errUsage)
	}
	return engine.Target{}, false, nil
}

// resolveName looks the device name (ID, ID prefix) to up in f's window,
// then among the devices e remembers.
func resolveName(ctx context.Context, e *engine.Engine, f *finder, to string) resolved {
	p, err := f.find(ctx, to)
	d := f.d
	switch {
	case err == nil:
		return resolved{target: peerTarget(p)}
	case errors.Is(err, discovery.ErrAmbiguous):
		return resolved{err: ambiguous(to, match(to, peerCandidates(d.Peers())))}
	case errors.Is(err, discovery.ErrRefused):
		return resolved{err: fmt.Errorf("%q answered with a different identity than it advertises, so Ferry will not send to it: %w", to, err)}
	case !errors.Is(err, discovery.ErrNotFound):
		return resolved{err: err}
	}
	if ctx.Err() != nil {
		return resolved{err: ctx.Err()}
	}

	// Not seen on the network: fall back to the address we last reached it at.
	cs := match(to, trustedCandidates(e.Trusted()))
	switch {
	case len(cs) == 1 && cs[0].Addr != "":
		return resolved{
			target: engine.Target{Addrs: engine.AddrsAt(cs[0].Addr), ID: cs[0].ID},
			said:   fmt.Sprintf("ferry-cli send: %s was not seen on the local network; trying its last known address %s\n", cs[0], cs[0].Addr),
		}
	case len(cs) > 1:
		return resolved{err: ambiguous(to, cs)}
	}
	why := ""
	if derr := d.Err(); derr != nil {
		why = fmt.Sprintf(" (local network discovery is not working: %v; run \"ferry-cli doctor\")", derr)
	}
	return resolved{err: &resolveError{errNoDevice, fmt.Sprintf(
		"no device called %q answered within %v and none is remembered%s; run \"ferry-cli peers\" to list devices, or pass --to HOST:PORT",
		to, resolveWait, why)}}
}

// findPeer looks to up on the local network for up to resolveWait: mDNS,
// direct probes of the devices e remembers, and LocalSend's discovery
// (with lsScan, its /24 register scan too). A
// name or prefix that matched gets resolveSettle more, so that a second
// device answering to it is noticed. d is nil when discovery could not
// start; stop ends it.
func findPeer(ctx context.Context, e *engine.Engine, to string, lsScan bool) (p discovery.Peer, d *discovery.Discovery, stop func(), err error) {
	f, err := startFind(ctx, e, lsScan)
	if err != nil {
		return discovery.Peer{}, nil, nil, err
	}
	p, err = f.find(ctx, to)
	return p, f.d, f.stop, err
}

// finder is a discovery window of resolveWait, in which any number of
// names may be looked up at once (find).
type finder struct {
	d    *discovery.Discovery
	rctx context.Context // ends with the window
	stop func()
}

// startFind opens a window: mDNS, direct probes of the devices e
// remembers, and LocalSend's discovery (with lsScan, its /24 register
// scan too). stop ends it.
func startFind(ctx context.Context, e *engine.Engine, lsScan bool) (*finder, error) {
	d, err := newDiscovery(e)
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithTimeout(ctx, resolveWait)
	stopMDNS := runDiscovery(rctx, d)
	stopLS := func() {}
	if s, err := watchLocalSend(e, d, lsScan); err == nil {
		stopLS = s
	}
	return &finder{d: d, rctx: rctx, stop: func() { stopLS(); stopMDNS(); cancel() }}, nil
}

// find looks to up until the window ends; a name or prefix that matched
// gets resolveSettle more, so that a second device answering to it is
// noticed.
func (f *finder) find(ctx context.Context, to string) (discovery.Peer, error) {
	p, err := f.d.Resolve(f.rctx, to)
	if err == nil && normalizeQueryID(to) != p.ID {
		settle, cancelSettle := context.WithTimeout(f.rctx, resolveSettle)
		<-settle.Done()
		cancelSettle()
		if ctx.Err() != nil {
			return discovery.Peer{}, ctx.Err()
		}
		done, cancelDone := context.WithCancel(ctx)
		cancelDone() // Resolve with an ended context only looks at the table
		p, err = f.d.Resolve(done, to)
	}
	return p, err
}

// resolvePeers looks the names up at once, in one discovery window of
// one engine on the config dir cfg (findPeer's): peers[i] and errs[i] are
// names[i]'s, errs in words.
func resolvePeers(ctx context.Context, names []string, cfg string, lsScan bool) (peers []discovery.Peer, errs []error) {
	peers, errs = make([]discovery.Peer, len(names)), make([]error, len(names))
	fail := func(err error) ([]discovery.Peer, []error) {
		for i := range errs {
			errs[i] = err
		}
		return peers, errs
	}
	err := finding(ctx, cfg, lsScan, func(_ *engine.Engine, f *finder) {
		var wg sync.WaitGroup
		for i, to := range names {
			wg.Go(func() {
				p, err := f.find(ctx, to)
				switch {
				case errors.Is(err, discovery.ErrAmbiguous):
					err = ambiguous(to, match(to, peerCandidates(f.d.Peers())))
				case errors.Is(err, discovery.ErrNotFound):
					err = &resolveError{errNoDevice, fmt.Sprintf("no device called %q answered within %v; run \"ferry-cli peers\" to list devices, or pass --to HOST:PORT", to, resolveWait)}
				}
				peers[i], errs[i] = p, err
			})
		}
		wg.Wait()
	})
	if err != nil {
		return fail(err)
	}
	return peers, errs
}

// finding runs fn with one engine on the config dir cfg and a search for
// devices started on it (both gone when fn returns); its error is theirs.
func finding(ctx context.Context, cfg string, lsScan bool, fn func(*engine.Engine, *finder)) error {
	dir, err := configDir(cfg)
	if err != nil {
		return err
	}
	e, err := engine.New(envOptions(engine.Options{ConfigDir: dir}))
	if err != nil {
		return err
	}
	defer e.Close()
	f, err := startFind(ctx, e, lsScan)
	if err != nil {
		return err
	}
	defer f.stop()
	fn(e, f)
	return nil
}

// peerTarget is where to send to a discovered peer: its addresses, and
// its ID, which the TLS handshake must prove. A device that speaks only
// LocalSend has its LocalSend address alone (lsTargetIn).
func peerTarget(p discovery.Peer) engine.Target {
	return engine.Target{Addrs: peerresolve.Addrs(p), ID: p.ID}
}
