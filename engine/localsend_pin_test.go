package engine

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine/localsend"
	"github.com/ferrydrop/ferry/internal/clock"
)

// nextPIN is the next EventLocalSendPIN of events.
func nextPIN(t *testing.T, events <-chan Event) Event {
	t.Helper()
	for {
		select {
		case ev := <-events:
			if ev.Kind == EventLocalSendPIN {
				return ev
			}
		case <-time.After(30 * time.Second):
			t.Fatal("no localsend_pin event")
		}
	}
}

// TestLocalSendPINRefusalsAreTold: a LocalSend offer refused for its PIN
// (none, a wrong one, or any while its address is locked out) is told as
// EventLocalSendPIN: the first from an address at once, the ones that
// follow summed up at the end of its minute; a quiet minute forgets the
// address. Nothing was told: a guesser went unseen.
func TestLocalSendPINRefusalsAreTold(t *testing.T) {
	clk := clock.NewFake(time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC))
	e, srv, addr := lsEngine(t, Options{Clock: clk}, LocalSendOptions{PIN: "4821"})
	events, unsub := e.Subscribe(1024)
	defer unsub()
	peer := testPeer(t)
	try := func(pin string, status int) {
		t.Helper()
		sr, err := peer.Send(context.Background(), addr, srv.Fingerprint(), true, pin, "", nil, nil)
		if err != nil || sr.PrepareStatus != status {
			t.Fatalf("PIN %q: %+v, %v; want %d", pin, sr, err, status)
		}
	}
	try("", 401)
	ev := nextPIN(t, events)
	if ev.Peer.Addr != "127.0.0.1" || *ev.PIN != (PINRefusals{Missing: 1, Since: clk.Now()}) {
		t.Fatalf("first: %+v %+v", ev.Peer, ev.PIN)
	}
	for _, pin := range []string{"0000", "1111", "2222"} {
		try(pin, 401)
	}
	try("4821", 429) // locked out: the right PIN is not even read
	try("", 429)
	clk.Advance(pinWindow)
	// The next event is the minute's sum: none came between.
	if ev := nextPIN(t, events); ev.Peer.Addr != "127.0.0.1" || *ev.PIN != (PINRefusals{Wrong: 3, Locked: 2, Since: clk.Now().Add(-pinWindow)}) {
		t.Fatalf("the minute's sum: %+v %+v", ev.Peer, ev.PIN)
	}
	clk.Advance(pinWindow) // a quiet minute: nothing to tell, the address is forgotten
	clk.Advance(pinWindow)
	try("", 429)
	if ev := nextPIN(t, events); *ev.PIN != (PINRefusals{Locked: 1, Since: clk.Now()}) {
		t.Fatalf("after a quiet minute: %+v", ev.PIN)
	}
}

// TestLocalSendPINRefusalsBounded: refusals from many addresses make at
// most one event a minute for each of maxPINWatch addresses and one for
// all the others together, however many come, and every refusal is counted
// in one of them.
func TestLocalSendPINRefusalsBounded(t *testing.T) {
	clk := clock.NewFake(time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC))
	e := testEngine(t, Options{Clock: clk})
	events, unsub := e.Subscribe(4096)
	defer unsub()
	const addrs, tries = 3 * maxPINWatch, 10 * 3 * maxPINWatch
	flood := func() {
		for i := range tries {
			e.lsPINs.refused(netip.AddrFrom4([4]byte{10, 0, byte(i % addrs / 256), byte(i % addrs)}), localsend.ErrWrongPIN)
		}
	}
	// told reads the events of one minute: one per address counted apart
	// and one for the others.
	told := func(what string) (wrong int) {
		t.Helper()
		seen := map[string]bool{}
		for range maxPINWatch + 1 {
			ev := nextPIN(t, events)
			if seen[ev.Peer.Addr] {
				t.Fatalf("%s: %q told twice", what, ev.Peer.Addr)
			}
			seen[ev.Peer.Addr] = true
			wrong += ev.PIN.Wrong
		}
		if !seen[""] {
			t.Fatalf("%s: the others were not told", what)
		}
		return wrong
	}
	flood()
	first := told("at once") // the first of each
	clk.Advance(pinWindow)
	if rest := told("the first minute's end"); first+rest != tries {
		t.Fatalf("%d + %d wrong PINs told, want %d", first, rest, tries)
	}
	flood()
	clk.Advance(pinWindow)
	if n := told("the second minute's end"); n != tries {
		t.Fatalf("%d wrong PINs told, want %d", n, tries)
	}
	// Quiet minutes: the addresses are forgotten, nothing more is told.
	clk.Advance(pinWindow)
	e.lsPINs.refused(netip.MustParseAddr("10.9.9.9"), localsend.ErrPINRequired)
	if ev := nextPIN(t, events); ev.Peer.Addr != "10.9.9.9" || ev.PIN.Missing != 1 {
		t.Fatalf("after a quiet minute: %+v %+v", ev.Peer, ev.PIN)
	}
}

// TestLocalSendPINRefusalsToldOnClose: refusals waiting for their minute's
// end are told as the engine closes; they were dropped.
func TestLocalSendPINRefusalsToldOnClose(t *testing.T) {
	clk := clock.NewFake(time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC))
	e := testEngine(t, Options{Clock: clk})
	events, unsub := e.Subscribe(64)
	defer unsub()
	from := netip.MustParseAddr("10.1.2.3")
	e.lsPINs.refused(from, localsend.ErrWrongPIN) // told at once
	if ev := nextPIN(t, events); ev.PIN.Wrong != 1 {
		t.Fatalf("first: %+v", ev.PIN)
	}
	since := clk.Now()
	e.lsPINs.refused(from, localsend.ErrWrongPIN)
	e.lsPINs.refused(from, localsend.ErrTooManyPINs)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case ev := <-events:
			if ev.Kind != EventLocalSendPIN {
				continue
			}
			if ev.Peer.Addr != "10.1.2.3" || *ev.PIN != (PINRefusals{Wrong: 1, Locked: 1, Since: since}) {
				t.Fatalf("told on close: %+v %+v", ev.Peer, ev.PIN)
			}
			return
		default:
			t.Fatal("the refusals waiting for their minute were not told when the engine closed")
		}
	}
}
