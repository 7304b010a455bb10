package app

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"sync"
	"sync/atomic"

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

// lsHub runs the LocalSend row of the engine's receiver table and the
// multicast announcements.
type lsHub struct {
	// isolated keeps LocalSend off the network (tests, FERRY_SMOKE_ISOLATED):
	// loopback only, any free port, no multicast.
	isolated bool
	// interfaces lists the interfaces to announce on (nil: every multicast one).
	interfaces func() ([]net.Interface, error)
	// onDevice hears the LocalSend devices seen (discovery's table; nil: none).
	onDevice func(localsend.Device)

	// scanSubnets and scanPort replace the own /24s and LocalSend's port
	// in ScanLocalSend (tests; nil and 0: the real ones).
	scanSubnets []netip.Prefix
	scanPort    int

	mu   sync.Mutex // guards the fields below
	cfg  lsConfig
	row  *engine.LocalSendReceiver
	eng  *engine.Engine
	disc atomic.Pointer[localsend.Discoverer] // answers registers (OnRegister)
	stop func()                               // ends the announcements
}

// apply adds, replaces or removes the row so that it runs as cfg says.
func (h *lsHub) apply(eng *engine.Engine, cfg lsConfig, log *slog.Logger) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if cfg == h.cfg && (h.row != nil) == cfg.on {
		return nil
	}
	h.closeLocked()
	h.cfg = cfg
	if !cfg.on {
		return nil
	}
	opts := engine.LocalSendOptions{PIN: cfg.pin, Port: cfg.port, DeviceModel: "Ferry",
		OnRegister: func(in localsend.Info, ip netip.Addr, c *x509.Certificate) {
			if d := h.disc.Load(); d != nil {
				d.HandleRegister(in, ip, c)
			}
		}}
	if h.isolated {
		opts.Host, opts.Port = "127.0.0.1", -1
	}
	row, err := eng.AddLocalSend(opts)
	if row != nil {
		h.row, h.eng = row, eng
	}
	if err != nil {
		return fmt.Errorf("LocalSend devices cannot send here: %w", err)
	}
	for _, st := range eng.Listeners() {
		if st.Transport == row.Name() && st.Note != "" && log != nil {
			log.Warn("LocalSend", "port", row.Port(), "note", st.Note)
		}
	}
	if h.isolated {
		return nil
	}
	cert, err := eng.LocalSendCert()
	if err != nil {
		return nil // the server runs; only the announcements are missing
	}
	cl := localsend.NewClient(localsend.ClientConfig{Info: row.Info(), Cert: cert})
	d, err := localsend.NewDiscoverer(h.discoveryConfig(row, cl))
	if err != nil {
		if log != nil {
			log.Warn("LocalSend devices will not see this one announced", "err", err)
		}
		return nil
	}
	h.disc.Store(d)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = d.Run(ctx) }()
	h.stop = func() { cancel(); <-done }
	return nil
}

// discoveryConfig is what the announcements say of row: its info, and the
// download API while a share link is open (download: true, so a LocalSend
// app offers to fetch the share), asked at each announcement.
func (h *lsHub) discoveryConfig(row *engine.LocalSendReceiver, cl *localsend.Client) localsend.DiscoveryConfig {
	return localsend.DiscoveryConfig{Info: row.Info(), Client: cl, OnDevice: h.onDevice, Interfaces: h.interfaces,
		Download: func() bool { return row.Info().Download }}
}

// status says how LocalSend devices reach this one (port 0 while off).
func (h *lsHub) status() (port int, fingerprint string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.row == nil || h.row.Port() == 0 {
		return 0, ""
	}
	return h.row.Port(), h.row.Fingerprint()
}

// LocalSendStatus says how LocalSend devices reach this one (Settings).
func (b *backend) LocalSendStatus() (port int, fingerprint, note string) {
	port, fingerprint = b.ls.status()
	if port != 0 {
		for _, st := range b.eng.Listeners() {
			if st.Transport == engine.ProtocolLocalSend {
				note = st.Note
			}
		}
	}
	return port, fingerprint, note
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
	h.disc.Store(nil)
	if h.row != nil {
		_ = h.eng.RemoveReceiver(h.row)
		h.row = nil
	}
}

// errLocalSendOff: a scan needs this device's LocalSend server, which
// registers tell the devices asked about.
var errLocalSendOff = errors.New("LocalSend is off on this device: turn on receiving and \"Let LocalSend devices see and send to this device\" in Settings first")

// ScanLocalSend looks for LocalSend devices by registering with every host
// of this device's own /24 networks, as LocalSend does where multicast does
// not pass (bounded: 30 s, 32 hosts at once, 1 s each). The devices that
// answer join the device list; it reports how many did.
func (b *backend) ScanLocalSend(ctx context.Context) (int, error) {
	h := &b.ls
	h.mu.Lock()
	row := h.row
	h.mu.Unlock()
	if row == nil || row.Port() == 0 {
		return 0, errLocalSendOff
	}
	cert, err := b.eng.LocalSendCert()
	if err != nil {
		return 0, err
	}
	var mu sync.Mutex
	found := map[string]bool{}
	cfg := localsend.ScanConfig{
		Client:  localsend.NewClient(localsend.ClientConfig{Info: row.Info(), Cert: cert}),
		Subnets: h.scanSubnets, Port: h.scanPort,
		OnDevice: func(d localsend.Device) {
			mu.Lock()
			found[d.Fingerprint] = true
			mu.Unlock()
			if h.onDevice != nil {
				h.onDevice(d)
			}
		},
	}
	if cfg.Subnets == nil {
		if cfg.Subnets, err = localsend.OwnSubnets(); err != nil {
			return 0, err
		}
		if len(cfg.Subnets) == 0 {
			return 0, errors.New("this device has no network to look on (no IPv4 address on an interface that is up)")
		}
	}
	if err := localsend.Scan(ctx, cfg); err != nil {
		return 0, err
	}
	mu.Lock()
	defer mu.Unlock()
	return len(found), ctx.Err()
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
const lsAddrKind = addr.LocalSend

// sendLocalSend sends items to a LocalSend device; a receiver that asks
// for a PIN gets the one the user types (askPIN).
func (b *backend) sendLocalSend(dev ui.Device, to engine.LocalSendTarget, items ui.Items) {
	peer := ui.Peer{ID: dev.ID, Name: dev.Name, Trusted: dev.Trusted, LocalSend: true}
	opts := engine.LocalSendSendOptions{}
	if ask := b.askPIN; ask != nil {
		opts.AskPIN = func(ctx context.Context, wrong bool) (string, error) { return ask(ctx, dev.Name, wrong) }
	}
	b.start(peer, items.Paths, "", func() (*engine.Transfer, error) {
		return b.eng.SendLocalSend(b.ctx, to, engine.Items{Paths: items.Paths, Text: items.Text}, opts)
	})
}
