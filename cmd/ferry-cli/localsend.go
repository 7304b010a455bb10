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

	"github.com/ferrydrop/ferry/engine"
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

// startLocalSend adds LocalSend's row to e's receiver table (e receives)
// and, with announce, announces this device on LocalSend's multicast
// groups and answers the others. It returns what stops the announcing.
func startLocalSend(ctx context.Context, e *engine.Engine, f lsFlags, announce bool, errOut io.Writer) (func(), error) {
	var disc atomic.Pointer[localsend.Discoverer]
	port := *f.port
	if port == 0 {
		port = -1 // the engine's "any free port"
	}
	row, err := e.AddLocalSend(engine.LocalSendOptions{PIN: *f.pin, Port: port, DeviceModel: "Ferry",
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
	if !announce {
		return func() {}, nil
	}
	d, err := newLocalSendDiscoverer(e, row.Info(), nil)
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

// localsendInterfaces lists the interfaces LocalSend discovery joins and
// announces on (nil: every multicast one); tests turn it off.
var localsendInterfaces func() ([]net.Interface, error)

// newLocalSendDiscoverer makes the multicast discoverer: info is announced
// (nil OnDevice: answer only).
func newLocalSendDiscoverer(e *engine.Engine, info localsend.Info, onDevice func(localsend.Device)) (*localsend.Discoverer, error) {
	cert, err := e.LocalSendCert()
	if err != nil {
		return nil, err
	}
	cl := localsend.NewClient(localsend.ClientConfig{Info: info, Cert: cert})
	return localsend.NewDiscoverer(localsend.DiscoveryConfig{Info: info, Client: cl, OnDevice: onDevice, Interfaces: localsendInterfaces})
}

// lsPeer is one LocalSend device as peers prints it.
type lsPeer struct {
	Protocol    string `json:"protocol"`
	Alias       string `json:"alias"`
	Fingerprint string `json:"fingerprint"`
	Model       string `json:"model,omitempty"`
	Type        string `json:"type,omitempty"`
	Address     string `json:"address"`
	Verified    bool   `json:"verified"`
}

// localSendPeers announces for d and collects the LocalSend devices that
// answer (or announce) until ctx ends.
func localSendPeers(ctx context.Context, e *engine.Engine) ([]lsPeer, error) {
	cert, err := e.LocalSendCert()
	if err != nil {
		return nil, err
	}
	// Port 0 in the announcement: no server here to register with, so
	// devices answer over UDP (older apps) or by announcing themselves.
	info := localsend.Info{Alias: e.Name(), DeviceModel: "Ferry", DeviceType: localsend.TypeHeadless, Fingerprint: localsend.CertFingerprint(cert), Port: localsend.DefaultPort, Protocol: "https"}
	var mu sync.Mutex
	byFP := map[string]lsPeer{}
	d, err := newLocalSendDiscoverer(e, info, func(dev localsend.Device) {
		mu.Lock()
		defer mu.Unlock()
		k := strings.ToUpper(dev.Fingerprint)
		if old, ok := byFP[k]; ok && old.Verified && !dev.Verified {
			return
		}
		byFP[k] = lsPeer{Protocol: engine.ProtocolLocalSend, Alias: dev.Alias, Fingerprint: dev.Fingerprint, Model: dev.DeviceModel,
			Type: dev.DeviceType, Address: dev.AddrPort(), Verified: dev.Verified}
	})
	if err != nil {
		return nil, err
	}
	if err := d.Run(ctx); err != nil {
		return nil, err
	}
	mu.Lock()
	defer mu.Unlock()
	out := make([]lsPeer, 0, len(byFP))
	for _, p := range byFP {
		out = append(out, p)
	}
	return out, nil
}

// findLocalSend looks for a LocalSend device called name (alias, or a
// fingerprint prefix) for up to wait.
func findLocalSend(ctx context.Context, e *engine.Engine, name string, wait time.Duration) (engine.LocalSendTarget, error) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	peers, err := localSendPeers(ctx, e)
	if err != nil {
		return engine.LocalSendTarget{}, err
	}
	for _, p := range peers {
		if strings.EqualFold(p.Alias, name) || len(name) >= 8 && strings.HasPrefix(strings.ToUpper(p.Fingerprint), strings.ToUpper(name)) {
			return engine.LocalSendTarget{Addr: p.Address, Fingerprint: p.Fingerprint, Alias: p.Alias}, nil
		}
	}
	return engine.LocalSendTarget{}, fmt.Errorf("no LocalSend device called %q answered within %v (is LocalSend open on it, on this network?)", safetext.Name(name), wait)
}

// sendLocalSend runs a send to one LocalSend device and waits for it.
func sendLocalSend(ctx context.Context, e *engine.Engine, to engine.LocalSendTarget, items engine.Items, pin string, p *printer, answers *prompter) error {
	ask := func(ctx context.Context, wrong bool) (string, error) {
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
	if r := tr.Result(); r.State != engine.StateDone || r.Verified != r.Files {
		return exitError{code: 1, err: errors.New(r.Err)}
	}
	return nil
}

// localSendTargetOf is --to for --protocol localsend: HOST:PORT, or HOST
// (LocalSend's port), or a device's alias found on the network.
func localSendTargetOf(ctx context.Context, e *engine.Engine, to, fingerprint string) (engine.LocalSendTarget, error) {
	if host, port, err := net.SplitHostPort(to); err == nil {
		return engine.LocalSendTarget{Addr: net.JoinHostPort(host, port), Fingerprint: fingerprint}, nil
	}
	if _, err := netip.ParseAddr(to); err == nil {
		return engine.LocalSendTarget{Addr: net.JoinHostPort(to, fmt.Sprint(localsend.DefaultPort)), Fingerprint: fingerprint}, nil
	}
	return findLocalSend(ctx, e, to, 3*time.Second)
}

// printLocalSendPeers prints peers' LocalSend devices.
func printLocalSendPeers(out io.Writer, peers []lsPeer, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(out)
		for _, p := range peers {
			if err := enc.Encode(p); err != nil {
				return err
			}
		}
		return nil
	}
	for _, p := range peers {
		fmt.Fprintf(out, "%s\t%s\t%s\t%s\tLocalSend %s%s\n", strings.ReplaceAll(safetext.Name(p.Alias), "\t", " "), short(p.Fingerprint), p.Address, p.Model, p.Type, map[bool]string{false: " (unverified)"}[p.Verified])
	}
	return nil
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
	l, err := p.in.ReadString('\n')
	if err != nil && l == "" {
		return "", false
	}
	return strings.TrimSpace(l), true
}

// runSendLocalSend is send --protocol localsend: one recipient at a time.
func runSendLocalSend(ctx context.Context, dir, name string, tos []string, items engine.Items, pin, fingerprint string, asJSON bool, out, errOut io.Writer) error {
	e, err := engine.New(envOptions(engine.Options{ConfigDir: dir, Name: name, RetryFor: -1}))
	if err != nil {
		return err
	}
	defer e.Close()
	p := newPrinter(out, asJSON)
	answers := newPrompter(stdin, errOut)
	var last error
	for _, to := range tos {
		tg, err := localSendTargetOf(ctx, e, to, fingerprint)
		if err != nil {
			return err
		}
		if err := sendLocalSend(ctx, e, tg, items, pin, p, answers); err != nil {
			if len(tos) == 1 {
				return err
			}
			fmt.Fprintf(errOut, "ferry-cli send: %s: %v\n", safetext.Name(to), err)
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
