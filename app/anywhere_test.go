package app

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine"
	"github.com/ferrydrop/ferry/engine/addr"
	"github.com/ferrydrop/ferry/engine/relay"
	"github.com/ferrydrop/ferry/internal/testutil"
	"github.com/ferrydrop/ferry/ui"
)

// TestAnywhereSetting: the setting serves through the relay while on and
// receiving, stops when turned off, and sends to paired devices (only)
// get the relay after their LAN addresses while it is on, receiving or
// not, serving or not.
func TestAnywhereSetting(t *testing.T) {
	r, e := relayAndEngine(t, "")
	var h anywhereHub
	t.Cleanup(h.close) // and its retries
	on := ui.Settings{Anywhere: true, AnywhereRelay: r.Addr().String(), Policy: ui.PolicyEveryone}
	if err := h.apply(e, on); err != nil {
		t.Fatal(err)
	}
	if h.relayNow() != r.Addr().String() {
		t.Fatalf("serving through %q", h.relayNow())
	}
	lan := addr.New(addr.QUIC, "192.0.2.7:47800")
	to := h.target(engine.Target{ID: "x", Addrs: []addr.Addr{lan}}, ui.Device{Trusted: true})
	if len(to.Addrs) != 2 || to.Addrs[0] != lan || to.Addrs[1] != addr.NewRendezvous(r.Addr().String()) {
		t.Errorf("paired device's addresses: %v", to.Addrs)
	}
	if to := h.target(engine.Target{ID: "x", Addrs: []addr.Addr{lan}}, ui.Device{}); len(to.Addrs) != 1 {
		t.Errorf("a device not paired gets the relay: %v", to.Addrs)
	}
	receivingOff := on
	receivingOff.Policy = ui.PolicyOff
	if err := h.apply(e, receivingOff); err != nil || h.relayNow() != "" {
		t.Fatalf("receiving off: still %q (%v)", h.relayNow(), err)
	}
	// Sends go through the relay all the same: with receiving off, and
	// while serving there fails (they said "Ferry does not know where
	// this device is").
	if to := h.target(engine.Target{ID: "x"}, ui.Device{Trusted: true}); len(to.Addrs) != 1 || to.Addrs[0] != addr.NewRendezvous(r.Addr().String()) {
		t.Errorf("receiving off: a paired device's addresses %v", to.Addrs)
	}
	if err := h.apply(e, ui.Settings{Anywhere: true, AnywhereRelay: "127.0.0.1:1", Policy: ui.PolicyEveryone}); err == nil {
		t.Error("a relay that is down was taken")
	}
	if to := h.target(engine.Target{ID: "x"}, ui.Device{Trusted: true}); len(to.Addrs) != 1 || to.Addrs[0] != addr.NewRendezvous("127.0.0.1:1") {
		t.Errorf("serving failed: a paired device's addresses %v", to.Addrs)
	}
	if err := h.apply(e, ui.Settings{Policy: ui.PolicyEveryone}); err != nil || h.sendVia() != "" {
		t.Errorf("the setting off: sends go via %q (%v)", h.sendVia(), err)
	}
}

// TestAnywhereSettingSecret: a relay with a secret: the setting without it,
// or with another, is refused in a sentence about the relay secret; with
// it the device serves; a new secret alone serves again.
func TestAnywhereSettingSecret(t *testing.T) {
	const secret = "the relay's secret for the app"
	r, e := relayAndEngine(t, secret)
	var h anywhereHub
	t.Cleanup(h.close) // and its retries
	on := ui.Settings{Anywhere: true, AnywhereRelay: r.Addr().String(), Policy: ui.PolicyEveryone}
	for _, s := range []string{"", "not the relay's secret at all"} {
		on.AnywhereSecret = s
		if err := h.apply(e, on); !errors.Is(err, engine.ErrRelaySecret) || !strings.Contains(err.Error(), "relay secret") || h.relayNow() != "" {
			t.Fatalf("secret %q: serving %q, %v", s, h.relayNow(), err)
		}
	}
	on.AnywhereSecret = secret
	if err := h.apply(e, on); err != nil || h.relayNow() != r.Addr().String() {
		t.Fatalf("the right secret: serving %q, %v", h.relayNow(), err)
	}
	on.AnywhereSecret = "a secret the relay does not have"
	if err := h.apply(e, on); !errors.Is(err, engine.ErrRelaySecret) || h.relayNow() != "" {
		t.Fatalf("a new, wrong secret alone: serving %q, %v", h.relayNow(), err)
	}
}

// relayAndEngine starts a relay with secret ("": none) and an engine, both
// on loopback, closed when the test ends.
func relayAndEngine(t *testing.T, secret string) (*relay.Relay, *engine.Engine) {
	t.Helper()
	r, err := relay.Start(relay.Config{Listen: "127.0.0.1:0", AllowLoopbackPeers: true, Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	e, err := engine.New(engine.Options{ConfigDir: t.TempDir(), DownloadDir: t.TempDir(), Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return r, e
}

// TestAnywhereSettingSaidInWords: a relay that does not answer, or refuses
// the relay secret, is said in a sentence when the settings are saved (the
// message was an empty "Could not save the settings" with the engine's
// words behind Details), and the setting is kept.
func TestAnywhereSettingSaidInWords(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	r, err := relay.Start(relay.Config{Listen: "127.0.0.1:0", AllowLoopbackPeers: true, Secret: "the relay's secret for the app"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	b := newTestBackend(t)
	for _, c := range []struct{ relay, secret, want string }{
		{"127.0.0.1:1", "", "The relay 127.0.0.1:1 does not answer: is `ferry-cli relay` running there, and is the address right? The setting is kept"},
		{r.Addr().String(), "not the relay's secret at all", "The relay " + r.Addr().String() + " refused this device's relay secret: give the one the relay was started with"},
	} {
		s := b.Settings()
		s.Anywhere, s.AnywhereRelay, s.AnywhereSecret = true, c.relay, c.secret
		err := b.SaveSettings(s)
		var p *ui.Problem
		if !errors.As(err, &p) || !strings.HasPrefix(p.Text, c.want) || p.Err == nil || !p.Kept {
			t.Errorf("relay %s: %v, want a sentence starting %q", c.relay, err, c.want)
		}
		if got := b.Settings(); !got.Anywhere || got.AnywhereRelay != c.relay {
			t.Errorf("relay %s: the setting is not kept: %+v", c.relay, got)
		}
	}
}

// TestAnywhereRelayTriedAgain: a relay that does not answer when the
// setting is applied (Ferry started at login before the network was up,
// the relay restarting) is tried again by itself, and serves once it
// answers; meanwhile AnywhereStatus says why not, and whoever listens is
// told of each change. It was tried again only at the next start or save
// of the settings, and said only in the log.
func TestAnywhereRelayTriedAgain(t *testing.T) {
	old, oldMax := anywhereRetry, anywhereRetryMax
	anywhereRetry, anywhereRetryMax = 20*time.Millisecond, 100*time.Millisecond
	t.Cleanup(func() { anywhereRetry, anywhereRetryMax = old, oldMax })
	r, e := relayAndEngine(t, "")
	at := r.Addr().String()
	r.Close() // down as the setting is applied
	var h anywhereHub
	t.Cleanup(h.close)
	var told atomic.Int32
	h.setChanged(func() { told.Add(1) })
	if err := h.apply(e, ui.Settings{Anywhere: true, AnywhereRelay: at, Policy: ui.PolicyEveryone}); !errors.Is(err, engine.ErrRelayUnreachable) {
		t.Fatalf("a relay that is down: %v", err)
	}
	relayAt, problem := h.status()
	if relayAt != at || !strings.HasPrefix(problem, "The relay "+at+" does not answer") || h.relayNow() != "" || told.Load() == 0 {
		t.Fatalf("while it is down: status %q, %q; serving %q; told %d times", relayAt, problem, h.relayNow(), told.Load())
	}
	r, err := relay.Start(relay.Config{Listen: at, AllowLoopbackPeers: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	before := told.Load()
	testutil.WaitFor(t, "serving through the relay once it answers", func() bool { return h.relayNow() == at })
	if _, problem := h.status(); problem != "" || told.Load() == before {
		t.Errorf("serving: problem %q, told %d times (%d before)", problem, told.Load(), before)
	}
}

// TestAnywhereRelayGoneIsSaid: the engine's word that the relay served
// through stopped answering, and that it answers again (EventListener),
// reaches AnywhereStatus through the event pump.
func TestAnywhereRelayGoneIsSaid(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	r, err := relay.Start(relay.Config{Listen: "127.0.0.1:0", AllowLoopbackPeers: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	at := r.Addr().String()
	b := newTestBackend(t)
	s := b.Settings()
	s.Anywhere, s.AnywhereRelay = true, at
	if err := b.SaveSettings(s); err != nil {
		t.Fatal(err)
	}
	if relayAt, problem := b.AnywhereStatus(); relayAt != at || problem != "" {
		t.Fatalf("serving: %q, %q", relayAt, problem)
	}
	evs := make(chan engine.Event, 4)
	ctx, cancel := context.WithCancel(context.Background())
	pumped := make(chan error, 1)
	go func() {
		pumped <- pumpEvents(ctx, evs, b, make(chan ui.TransferEvent, 8), make(chan ui.DeviceEvent, 8))
	}()
	t.Cleanup(func() { cancel(); <-pumped })
	gone := "the relay " + at + " does not answer (is `ferry-cli relay` running there, and is the address right?): connection refused"
	evs <- engine.Event{Kind: engine.EventListener, Listener: &engine.ListenerStatus{Transport: engine.RelayListener, Addr: at, Err: gone}}
	want := "The relay " + at + " does not answer (is `ferry-cli relay` running there, and is the address right?): connection refused. Ferry keeps trying."
	testutil.WaitFor(t, "the relay said gone", func() bool { _, p := b.AnywhereStatus(); return p == want })
	evs <- engine.Event{Kind: engine.EventListener, Listener: &engine.ListenerStatus{Transport: engine.RelayListener, Addr: at}}
	testutil.WaitFor(t, "the relay said back", func() bool { _, p := b.AnywhereStatus(); return p == "" })
}

// TestAnywhereSecretOfTheWrongFormIsNotTriedAgain: a relay secret of the
// wrong form (the settings file edited by hand) is said as such, and not
// as something Ferry tries again by itself, which it does not.
func TestAnywhereSecretOfTheWrongFormIsNotTriedAgain(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	b := newTestBackend(t)
	s := b.Settings()
	s.Anywhere, s.AnywhereRelay, s.AnywhereSecret = true, "127.0.0.1:1", "short"
	err := b.SaveSettings(s)
	var p *ui.Problem
	want := "The relay secret given for 127.0.0.1:1 cannot be used: a relay secret has at least 16 characters (this one has 5)"
	if !errors.As(err, &p) || !strings.HasPrefix(p.Text, want) || strings.Contains(p.Text, "tries again") || !p.Kept {
		t.Fatalf("%v, want a sentence starting %q", err, want)
	}
	if _, problem := b.AnywhereStatus(); !strings.HasPrefix(problem, want) {
		t.Errorf("status: %q", problem)
	}
}
