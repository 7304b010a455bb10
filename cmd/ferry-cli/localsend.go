package main

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferrydrop/ferry/discovery"
	"github.com/ferrydrop/ferry/engine"
	"github.com/ferrydrop/ferry/engine/addr"
	"github.com/ferrydrop/ferry/engine/localsend"
	"github.com/ferrydrop/ferry/internal/safetext"
)

// lsFlags are the LocalSend flags of receive.
type lsFlags struct {
	on   *bool
	pin  *string
	port *int
}

func addLocalSendFlags(fs interface {
	Bool(string, bool, string) *bool
	String(string, string, string) *string
	Int(string, int, string) *int
}) lsFlags {
	return lsFlags{
		on:   fs.Bool("localsend", true, "also receive from LocalSend devices (phones, desktops running LocalSend)"),
		pin:  fs.String("localsend-pin", "", "`PIN` LocalSend senders must give (default: none)"),
		port: fs.Int("localsend-port", localsend.DefaultPort, "LocalSend HTTPS `PORT` (taken: the last used, else a free one; 0: any free one)"),
	}
}

// startLocalSend adds LocalSend's row to e's receiver table (e receives),
// on host (empty: every address),
// and, with announce, announces this device on LocalSend's multicast
// groups and answers the others. It returns what stops the announcing.
func startLocalSend(ctx context.Context, e *engine.Engine, f lsFlags, host string, announce bool, errOut io.Writer) (func(), error) {
	var disc atomic.Pointer[localsend.Discoverer]
	port := *f.port
	if port == 0 {
		port = -1 // the engine's "any free port"
	}
	row, err := e.AddLocalSend(engine.LocalSendOptions{PIN: *f.pin, Port: port, Host: host, DeviceModel: "Ferry",
		OnRegister: func(in localsend.Info, addr netip.Addr, cert *x509.Certificate) {
			if d := disc.Load(); d != nil {
				d.HandleRegister(in, addr, cert)
			}
		}})
	if err != nil {
		return nil, err
	}
	note := ""
	for _, st := range e.Listeners() {
		if st.Transport == row.Name() && st.Note != "" {
			note = " (" + st.Note + ")"
		}
	}
	fmt.Fprintf(errOut, "ferry-cli receive: LocalSend devices can send here on port %d%s, fingerprint %s\n", row.Port(), note, row.Fingerprint())
	cfg := localsend.DiscoveryConfig{Info: row.Info(), Interfaces: localsendInterfaces,
		Download: func() bool { return row.Info().Download }}
	if announce && !everyAddress(host) {
		// Announced from every interface, devices would come to addresses
		// where nothing listens (as Ferry's own mDNS did): announce from
		// the interfaces that hold host alone, from none for loopback, and
		// over IPv6 only for an IPv6 host.
		on, err := interfacesHolding(host, cfg.Interfaces)
		if err != nil || len(on) == 0 {
			fmt.Fprintf(errOut, "ferry-cli receive: not announced to LocalSend devices, which could not reach %s\n", host)
			return func() {}, nil
		}
		cfg.Interfaces = func() ([]net.Interface, error) { return on, nil }
		cfg.NoIPv6 = netip.MustParseAddr(host).Unmap().Is4()
	}
	if !announce {
		return func() {}, nil
	}
	d, err := newLocalSendDiscoverer(e, cfg)
	if err != nil {
		fmt.Fprintf(errOut, "ferry-cli receive: LocalSend devices will not see this one announced: %v\n", err)
		return func() {}, nil
	}
	disc.Store(d)
	dctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = d.Run(dctx) }()
	return func() { cancel(); <-done }, nil
}

// everyAddress reports whether host, a --listen host, stands for every
// address of this device ("", "::", "0.0.0.0").
func everyAddress(host string) bool {
	ip, err := netip.ParseAddr(host)
	return host == "" || err == nil && ip.IsUnspecified()
}

// interfacesHolding lists the interfaces of list (nil: every multicast
// one) that hold the address host: the ones a LocalSend server listening
// there is reached through. None for a loopback address, which no other
// device reaches, or for a name.
func interfacesHolding(host string, list func() ([]net.Interface, error)) ([]net.Interface, error) {
	if list == nil {
		list = localsend.MulticastInterfaces
	}
	ifs, err := list()
	if err != nil {
		return nil, err
	}
	return holding(host, ifs, func(i net.Interface) []net.Addr { a, _ := i.Addrs(); return a }), nil
}

// holding keeps of ifs those whose addresses (addrs) include host.
func holding(host string, ifs []net.Interface, addrs func(net.Interface) []net.Addr) []net.Interface {
	want, err := netip.ParseAddr(host)
	if err != nil || want.IsLoopback() {
		return nil
	}
	want = want.Unmap().WithZone("")
	var out []net.Interface
	for _, i := range ifs {
		for _, a := range addrs(i) {
			if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr().Unmap().WithZone("") == want {
				out = append(out, i)
				break
			}
		}
	}
	return out
}

// localsendInterfaces lists the interfaces LocalSend discovery joins and
// announces on (nil: every multicast one); tests turn it off.
var localsendInterfaces func() ([]net.Interface, error)

// lsWatchHost is where the register-only LocalSend server of peers and
// send listens (empty: every address; tests: loopback).
var lsWatchHost = ""

// newLocalSendDiscoverer makes the multicast discoverer of cfg (its Info
// announced; nil OnDevice: answer only; nil Interfaces: every multicast
// one), with e's LocalSend certificate. With no interface it opens nothing
// (LocalSend's UDP port stays free) and says so.
func newLocalSendDiscoverer(e *engine.Engine, cfg localsend.DiscoveryConfig) (*localsend.Discoverer, error) {
	if cfg.Interfaces != nil {
		if ifs, err := cfg.Interfaces(); err != nil || len(ifs) == 0 {
			return nil, errors.New("no network interface can carry LocalSend's multicast")
		}
	}
	cert, err := e.LocalSendCert()
	if err != nil {
		return nil, err
	}
	cfg.Client = localsend.NewClient(localsend.ClientConfig{Info: cfg.Info, Cert: cert})
	return localsend.NewDiscoverer(cfg)
}

// notReceiving is the Receiver of the register-only server: it takes no
// offers (this process does not receive).
type notReceiving struct{}

func (notReceiving) Offer(context.Context, *localsend.Offer) (localsend.Session, error) {
	return nil, fmt.Errorf("%w: this is not a receiving Ferry (ferry-cli peers or send)", localsend.ErrDeclined)
}

// watchLocalSend feeds d's table with the LocalSend devices of the network
// until stop: it announces this device and answers the others and, with
// scan, registers with every host of this device's own /24 networks
// (localsend.Scan: bounded in time and concurrency), for networks where
// multicast does not pass. A LocalSend app since 1.18 answers an
// announcement only with a register to the announced port, so a
// register-only server of its own (offers refused) listens on a free
// port, and the announcement names it.
func watchLocalSend(e *engine.Engine, d *discovery.Discovery, scan bool) (stop func(), err error) {
	cert, err := e.LocalSendCert()
	if err != nil {
		return nil, err
	}
	var disc atomic.Pointer[localsend.Discoverer]
	srv, err := localsend.NewServer(localsend.ServerConfig{
		Info: localsend.Info{Alias: e.Name(), DeviceModel: localsend.ModelNotReceiving, DeviceType: localsend.TypeHeadless},
		Cert: cert, Receiver: notReceiving{},
		OnRegister: func(in localsend.Info, addr netip.Addr, c *x509.Certificate) {
			if ds := disc.Load(); ds != nil {
				ds.HandleRegister(in, addr, c)
			}
		},
	})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(lsWatchHost, "0"))
	if err != nil {
		return nil, fmt.Errorf("localsend: listen: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = srv.Serve(ln) }()
	stop = func() {
		cancel()
		srv.Close()
		wg.Wait()
	}
	info := srv.Info()
	info.Port = ln.Addr().(*net.TCPAddr).Port
	ds, derr := newLocalSendDiscoverer(e, localsend.DiscoveryConfig{Info: info, OnDevice: d.SeeLocalSend, Interfaces: localsendInterfaces})
	if derr == nil {
		disc.Store(ds)
		wg.Add(1)
		go func() { defer wg.Done(); _ = ds.Run(ctx) }()
	}
	if scan {
		cl := localsend.NewClient(localsend.ClientConfig{Info: info, Cert: cert})
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = localsend.Scan(ctx, localsend.ScanConfig{Client: cl, OnDevice: d.SeeLocalSend})
		}()
	}
	if derr != nil && !scan {
		stop()
		return nil, derr
	}
	return stop, nil
}

// lsPeer is a device that speaks only LocalSend, as peers --json prints it.
type lsPeer struct {
	Protocol    string `json:"protocol"`
	Alias       string `json:"alias"`
	Fingerprint string `json:"fingerprint"`
	Model       string `json:"model,omitempty"`
	Type        string `json:"type,omitempty"`
	Address     string `json:"address"`
	Verified    bool   `json:"verified"`
}

// lsPeerOf is p's LocalSend side as peers prints it.
func lsPeerOf(p discovery.Peer) lsPeer {
	ls := p.LocalSend
	return lsPeer{Protocol: engine.ProtocolLocalSend, Alias: ls.Alias, Fingerprint: ls.Fingerprint, Model: ls.DeviceModel,
		Type: ls.DeviceType, Address: ls.Addr.HostPort(), Verified: ls.Verified}
}

// localSendTarget is where to send to p over LocalSend (false: p does not
// speak it).
func localSendTarget(p discovery.Peer) (engine.LocalSendTarget, bool) {
	if p.LocalSend == nil {
		return engine.LocalSendTarget{}, false
	}
	a := p.LocalSend.Addr
	return engine.LocalSendTarget{Addr: a.HostPort(), Fingerprint: a.Pin(), Scheme: a.Scheme(), Alias: p.LocalSend.Alias}, true
}

// lsTargetIn is a target that resolution found to speak only LocalSend:
// its one address is of the localsend kind.
func lsTargetIn(t engine.Target) (engine.LocalSendTarget, bool) {
	for _, a := range t.Addrs {
		if a.Kind != addr.LocalSend {
			return engine.LocalSendTarget{}, false
		}
	}
	if len(t.Addrs) == 0 {
		return engine.LocalSendTarget{}, false
	}
	a := t.Addrs[0]
	return engine.LocalSendTarget{Addr: a.HostPort(), Fingerprint: a.Pin(), Scheme: a.Scheme()}, true
}

// askPIN asks the user for the PIN a LocalSend receiver wants.
func askPIN(answers *prompter) func(ctx context.Context, wrong bool) (string, error) {
	return func(ctx context.Context, wrong bool) (string, error) {
		q := "The receiver asks for a PIN: "
		if wrong {
			q = "Wrong PIN. PIN: "
		}
		pin, ok := answers.line(ctx, q)
		if !ok || pin == "" {
			return "", errors.New("no PIN given")
		}
		return pin, nil
	}
}

// sendLocalSend runs a send to one LocalSend device and waits for it.
func sendLocalSend(ctx context.Context, e *engine.Engine, to engine.LocalSendTarget, items engine.Items, pin string, p *printer, answers *prompter) error {
	ask := askPIN(answers)
	events, unsub := e.Subscribe(1024)
	defer unsub()
	tr, err := e.SendLocalSend(ctx, to, items, engine.LocalSendSendOptions{PIN: pin, AskPIN: ask})
	if err != nil {
		return err
	}
	for ev := range events {
		if ev.TransferID != tr.ID() {
			continue
		}
		p.event(ev)
		if ev.Kind == engine.EventResult {
			break
		}
	}
	<-tr.Done()
	r := tr.Result()
	switch {
	case r.State != engine.StateDone || r.Verified != r.Files:
		return exitError{code: 1, err: errors.New(r.Err)}
	case r.Refused > 0:
		return notTaken(r.Refused)
	}
	return nil
}

// localSendTargetsOf is each --to for --protocol localsend: HOST:PORT, or
// HOST (LocalSend's port), or a device's name or fingerprint found on the
// network (a device that speaks both is sent to over LocalSend). The
// names are looked up at once, by one call of lookup (resolvePeers: one
// discovery window), not one after another (each name nobody answered to
// cost a window of its own); targets[i] and errs[i] are tos[i]'s.
func localSendTargetsOf(tos []string, fingerprint string, lookup func(names []string) ([]discovery.Peer, []error)) (targets []engine.LocalSendTarget, errs []error) {
	targets, errs = make([]engine.LocalSendTarget, len(tos)), make([]error, len(tos))
	var names []string
	var at []int
	for i, to := range tos {
		if host, port, err := net.SplitHostPort(to); err == nil {
			targets[i] = engine.LocalSendTarget{Addr: net.JoinHostPort(host, port), Fingerprint: fingerprint}
			continue
		}
		if _, err := netip.ParseAddr(to); err == nil {
			targets[i] = engine.LocalSendTarget{Addr: net.JoinHostPort(to, fmt.Sprint(localsend.DefaultPort)), Fingerprint: fingerprint}
			continue
		}
		names, at = append(names, to), append(at, i)
	}
	if len(names) == 0 {
		return targets, errs
	}
	peers, perrs := lookup(names)
	for j, i := range at {
		switch t, ok := localSendTarget(peers[j]); {
		case perrs[j] != nil:
			errs[i] = perrs[j]
		case ok:
			targets[i] = t
		default:
			errs[i] = fmt.Errorf("%s was found, but not as a LocalSend device: leave out --protocol localsend to send with Ferry", safetext.Name(tos[i]))
		}
	}
	return targets, errs
}

// printLocalSendPeer prints a device that speaks only LocalSend.
func printLocalSendPeer(out io.Writer, p discovery.Peer, asJSON bool) error {
	lp := lsPeerOf(p)
	if asJSON {
		return json.NewEncoder(out).Encode(lp)
	}
	_, err := fmt.Fprintf(out, "%s\t%s\t%s\t%s\tLocalSend %s%s\n", strings.ReplaceAll(safetext.Name(lp.Alias), "\t", " "), short(lp.Fingerprint), lp.Address, safetext.Name(lp.Model), safetext.Name(lp.Type), map[bool]string{false: " (unverified)"}[lp.Verified])
	return err
}

// line asks a question and returns the answer's line (false when there is
// no answer: end of input, or ctx ended first).
func (p *prompter) line(ctx context.Context, question string) (string, bool) {
	select {
	case p.sem <- struct{}{}:
	case <-ctx.Done():
		return "", false
	}
	defer func() { <-p.sem }()
	fmt.Fprint(p.out, question)
	l, err := p.readLine(ctx)
	if err != nil {
		return "", false
	}
	return strings.TrimSpace(l), true
}

// runSendLocalSend is send --protocol localsend: the --to looked up at
// once, then one recipient at a time.
func runSendLocalSend(ctx context.Context, dir, cfg, name string, tos []string, items engine.Items, pin, fingerprint string, lsScan, asJSON bool, retryFor time.Duration, out, errOut io.Writer) error {
	e, err := engine.New(envOptions(engine.Options{ConfigDir: dir, Name: name, RetryFor: retryFor}))
	if err != nil {
		return err
	}
	defer e.Close()
	p := newPrinter(out, asJSON)
	answers := newPrompter(stdin, errOut)
	targets, errs := localSendTargetsOf(tos, fingerprint, func(names []string) ([]discovery.Peer, []error) {
		return resolvePeers(ctx, names, cfg, lsScan)
	})
	var last error
	for i, to := range tos {
		tg, err := targets[i], errs[i]
		if err != nil {
			return err
		}
		if err := sendLocalSend(ctx, e, tg, items, pin, p, answers); err != nil {
			if len(tos) == 1 {
				return err
			}
			fmt.Fprintf(errOut, "ferry-cli send: %s: %s\n", safetext.Name(to), shown(err.Error()))
			last = err
		}
	}
	return last
}

// localSendWho describes a LocalSend sender for a prompt: the protocol, its
// model, its fingerprint, and whether it proved it.
func localSendWho(p engine.PeerInfo, trust string) string {
	s := "LocalSend"
	if p.Model != "" {
		s += " " + safetext.Name(p.Model)
	}
	if p.Fingerprint != "" {
		s += ", fingerprint " + short(strings.ToUpper(p.Fingerprint))
	}
	if p.Unverified {
		return s + ", unverified: it proved no identity"
	}
	return s + ", " + trust
}

// pinLine says what an EventLocalSendPIN counts: LocalSend offers refused
// for their PIN ("LocalSend: 192.168.1.5 gave 3 wrong PINs since
// 14:02:11"), the first from an address at once, the rest at most once a
// minute.
func pinLine(ev engine.Event) string {
	n := ev.PIN
	who := "devices at other addresses"
	if ev.Peer.Addr != "" {
		who = ev.Peer.Addr
	}
	times := func(k int, one, many string) string {
		if k == 1 {
			return one
		}
		return fmt.Sprintf(many, k)
	}
	var parts []string
	if n.Wrong > 0 {
		parts = append(parts, times(n.Wrong, "gave a wrong PIN", "gave %d wrong PINs"))
	}
	if n.Missing > 0 {
		parts = append(parts, times(n.Missing, "sent an offer without the PIN (its app asks for it)", "sent %d offers without the PIN"))
	}
	if n.Locked > 0 {
		parts = append(parts, times(n.Locked, "was turned away once", "was turned away %d times")+
			" (3 wrong PINs lock an address out for 5 minutes)")
	}
	line := "LocalSend: " + who + " "
	for i, part := range parts {
		switch {
		case i == 0:
		case i == len(parts)-1:
			line += " and "
		default:
			line += ", "
		}
		line += part
	}
	if n.Wrong+n.Missing+n.Locked > 1 {
		line += " since " + n.Since.Local().Format("15:04:05")
	}
	return line
}
