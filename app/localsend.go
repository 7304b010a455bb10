package app

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"sync"

	"github.com/ferrydrop/ferry/engine"
	"github.com/ferrydrop/ferry/engine/addr"
	"github.com/ferrydrop/ferry/engine/localsend"
	"github.com/ferrydrop/ferry/ui"
)

// LocalSend in the app (issue 24): while receiving is on and the setting
// allows it, the engine's LocalSend server runs (its offers go through the
// same inbox and prompt as Ferry's) and this device is announced on
// LocalSend's multicast groups, answering the devices that announce
// themselves.

// lsConfig is what the LocalSend server runs with; a change restarts it.
type lsConfig struct {
	on   bool
	pin  string
	port int
	name string
}

// lsHub runs the LocalSend server and its announcements.
type lsHub struct {
	// isolated keeps LocalSend off the network (tests, FERRY_SMOKE_ISOLATED):
	// loopback only, any free port, no multicast.
	isolated bool
	// interfaces lists the interfaces to announce on (nil: every multicast one).
	interfaces func() ([]net.Interface, error)
	// onDevice hears the LocalSend devices seen (nil: none).
	onDevice func(localsend.Device)

	mu   sync.Mutex // guards the fields below
	cfg  lsConfig
	srv  *engine.LocalSendServer
	stop func() // ends the announcements
}

// apply starts, restarts or stops the server so that it runs as cfg says.
func (h *lsHub) apply(eng *engine.Engine, cfg lsConfig, log *slog.Logger) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if cfg == h.cfg && (h.srv != nil) == cfg.on {
		return nil
	}
	h.closeLocked()
	h.cfg = cfg
	if !cfg.on {
		return nil
	}
	opts := engine.LocalSendOptions{PIN: cfg.pin, Port: cfg.port, DeviceModel: "Ferry"}
	if h.isolated {
		opts.Host, opts.Port = "127.0.0.1", -1
	}
	srv, err := eng.ServeLocalSend(opts)
	if err != nil {
		h.cfg = lsConfig{}
		return fmt.Errorf("LocalSend devices cannot send here: %w", err)
	}
	h.srv = srv
	if srv.Moved && log != nil {
		log.Warn("LocalSend port taken; devices that only scan the network will not find this one", "port", srv.Port())
	}
	if h.isolated {
		return nil
	}
	cert, err := eng.LocalSendCert()
	if err != nil {
		return nil // the server runs; only the announcements are missing
	}
	info := srv.Info()
	cl := localsend.NewClient(localsend.ClientConfig{Info: info, Cert: cert})
	d, err := localsend.NewDiscoverer(localsend.DiscoveryConfig{Info: info, Client: cl, OnDevice: h.onDevice, Interfaces: h.interfaces})
	if err != nil {
		if log != nil {
			log.Warn("LocalSend devices will not see this one announced", "err", err)
		}
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = d.Run(ctx) }()
	h.stop = func() { cancel(); <-done }
	return nil
}

// status says how LocalSend devices reach this one ("" while off).
func (h *lsHub) status() (port int, fingerprint string, moved bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.srv == nil {
		return 0, "", false
	}
	return h.srv.Port(), h.srv.Fingerprint(), h.srv.Moved
}

func (h *lsHub) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closeLocked()
	h.cfg = lsConfig{}
}

func (h *lsHub) closeLocked() {
	if h.stop != nil {
		h.stop()
		h.stop = nil
	}
	if h.srv != nil {
		h.srv.Close()
		h.srv = nil
	}
}

// localSendConfig is what the settings ask of LocalSend.
func localSendConfig(s ui.Settings, name string) lsConfig {
	return lsConfig{on: s.Policy != ui.PolicyOff && !s.LocalSendOff, pin: s.LocalSendPIN, port: s.LocalSendPort, name: name}
}

// applyLocalSend runs LocalSend as the settings say.
func (b *backend) applyLocalSend(s ui.Settings) error {
	return b.ls.apply(b.eng, localSendConfig(s, b.eng.Name()), slog.Default())
}

// lsTarget is where a send to dev goes over LocalSend: a device with a
// LocalSend address and none of Ferry's (a device that speaks both gets
// Ferry's protocol: resume, migration, per-chunk verification).
func lsTarget(dev ui.Device) (engine.LocalSendTarget, bool) {
	var ls *addr.Addr
	for i, a := range dev.Addrs {
		switch a.Kind {
		case addr.QUIC, addr.TCP:
			return engine.LocalSendTarget{}, false
		case lsAddrKind:
			if ls == nil {
				ls = &dev.Addrs[i]
			}
		}
	}
	if ls == nil {
		return engine.LocalSendTarget{}, false
	}
	// scheme://host:port#FINGERPRINT: the fingerprint its certificate
	// must have (discovery pins the one it proved or announced).
	u, err := url.Parse(ls.URI)
	if err != nil || u.Host == "" {
		return engine.LocalSendTarget{}, false
	}
	fp := u.Fragment
	if dev.LocalSend != nil && fp == "" {
		fp = dev.LocalSend.Fingerprint
	}
	scheme := "https"
	if u.Scheme == "http" {
		scheme = "http"
	}
	return engine.LocalSendTarget{Addr: u.Host, Fingerprint: fp, Scheme: scheme, Alias: dev.Name}, true
}

// lsAddrKind is the kind of a LocalSend device's address.
const lsAddrKind addr.Kind = "localsend"

// sendLocalSend sends items to a LocalSend device; a receiver that asks
// for a PIN gets the one the user types (askPIN).
func (b *backend) sendLocalSend(dev ui.Device, to engine.LocalSendTarget, items ui.Items) {
	peer := ui.Peer{ID: dev.ID, Name: dev.Name, Trusted: dev.Trusted, LocalSend: true}
	opts := engine.LocalSendSendOptions{}
	if ask := b.askPIN; ask != nil {
		opts.AskPIN = func(ctx context.Context, wrong bool) (string, error) { return ask(ctx, dev.Name, wrong) }
	}
	b.start(peer, items.Paths, func() (*engine.Transfer, error) {
		return b.eng.SendLocalSend(b.ctx, to, engine.Items{Paths: items.Paths, Text: items.Text}, opts)
	})
}
