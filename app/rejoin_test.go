package app

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine"
	"github.com/ferrydrop/ferry/engine/addr"
	"github.com/ferrydrop/ferry/ui"
	"github.com/ferrydrop/ferry/ui/transfer"
)

// rejoinRig feeds transfer events through the rejoin the way pumpTransfers
// does (mark, the model, ended) and plays discovery's appearances by hand.
type rejoinRig struct {
	r       rejoin
	model   *transfer.Model
	retried []string
}

func (g *rejoinRig) feed(evs ...ui.TransferEvent) {
	for _, ev := range evs {
		g.r.mark(&ev)
		if !ev.Pairing {
			for _, me := range ui.DeliveryEvents(ev) {
				g.model.Apply(me)
			}
		}
		g.r.ended(ev, g.model.Get(ev.ID))
	}
}

func (g *rejoinRig) appear(deviceID string) {
	g.r.back(deviceID, func(id string) error {
		g.retried = append(g.retried, id)
		// Retry's own drop (backend.Retry) and the same delivery going on.
		g.r.drop(id)
		g.feed(ui.TransferEvent{Kind: ui.TransferState, ID: id, Direction: ui.Outgoing, State: ui.StateConnecting})
		return nil
	})
}

var bob = ui.Peer{ID: "bob-id", Name: "Bob's laptop"}

// sendTo starts send id to peer and gets a few bytes across.
func sendTo(id string, peer ui.Peer) []ui.TransferEvent {
	return []ui.TransferEvent{
		{Kind: ui.TransferOffer, ID: id, Direction: ui.Outgoing, Peer: peer,
			Offer: &ui.Offer{Files: []ui.FileInfo{{Path: "big.bin", Size: 100 << 20}}, Total: 100 << 20}},
		{Kind: ui.TransferState, ID: id, Direction: ui.Outgoing, Peer: peer, State: ui.StateActive},
		{Kind: ui.TransferProgress, ID: id, Direction: ui.Outgoing, Peer: peer, Progress: &ui.Progress{Bytes: 10 << 20, Total: 100 << 20}},
	}
}

func failed(id string, peer ui.Peer, code ui.Code) ui.TransferEvent {
	return ui.TransferEvent{Kind: ui.TransferResult, ID: id, Direction: ui.Outgoing, Peer: peer, State: ui.StateFailed,
		Result: &ui.Result{State: ui.StateFailed, Code: code}}
}

// A send whose receiver went away is retried once, when discovery sees
// that device again, and only that device; the row says so meanwhile.
func TestRejoinRetriesOnceWhenTheDeviceIsBack(t *testing.T) {
	g := &rejoinRig{model: transfer.New()}
	g.feed(sendTo("s1", bob)...)
	g.feed(failed("s1", bob, ui.CodeConnectionLost))
	d := g.model.Get("s1")
	if want := "Bob's laptop went away. Ferry will send the rest when it is back."; d.Status() != want {
		t.Fatalf("row says %q, want %q", d.Status(), want)
	}
	if acts := d.Actions(); !slices.Equal(acts, []transfer.Action{transfer.ActionRetry, transfer.ActionCancel}) {
		t.Errorf("actions %v, want Retry and Cancel", acts)
	}
	if d.Over() {
		t.Error("the send that waits for its device is over: Clear finished drops its row")
	}
	g.appear("carol-id")
	if len(g.retried) != 0 {
		t.Fatalf("another device's appearance retried %v", g.retried)
	}
	g.appear("bob-id")
	if !slices.Equal(g.retried, []string{"s1"}) {
		t.Fatalf("retried %v, want s1 once", g.retried)
	}
	if d := g.model.Get("s1"); d.Phase == transfer.Failed || len(g.model.Deliveries()) != 1 {
		t.Errorf("the same delivery does not go on: %s, %d rows", d.Phase, len(g.model.Deliveries()))
	}
	// Gone again: its one rejoin is spent; Retry is the user's.
	g.feed(failed("s1", bob, ui.CodeConnectionLost))
	g.appear("bob-id")
	if len(g.retried) != 1 {
		t.Errorf("retried %v, want once", g.retried)
	}
	if want := "Bob's laptop went away. Retry sends the rest when it is back."; g.model.Get("s1").Status() != want {
		t.Errorf("after its rejoin the row says %q, want %q", g.model.Get("s1").Status(), want)
	}
	if !g.model.Get("s1").Over() {
		t.Error("after its rejoin nothing goes on by itself, yet the send is not over")
	}
}

// Cancel gives up on a send that waits for its device; other failures,
// pairings and devices without an ID are never waited for.
func TestRejoinCancelAndWhatIsNotWaitedFor(t *testing.T) {
	g := &rejoinRig{model: transfer.New()}
	g.feed(sendTo("s1", bob)...)
	g.feed(failed("s1", bob, ui.CodeConnectionLost))
	if !g.r.drop("s1") { // backend.Cancel
		t.Fatal("Cancel found nothing waiting")
	}
	g.model.Apply(transfer.Event{Kind: transfer.ActCancel, Delivery: "s1"})
	if d := g.model.Get("s1"); d.Phase != transfer.Cancelled || d.Status() != "Cancelled by you" {
		t.Errorf("cancelled row: %s %q", d.Phase, d.Status())
	}

	g.feed(sendTo("s2", bob)...)
	g.feed(failed("s2", bob, ui.CodeNoSpace)) // not gone: full
	g.feed(ui.TransferEvent{Kind: ui.TransferState, ID: "s3", Direction: ui.Outgoing, Peer: bob, State: ui.StateConnecting})
	g.feed(failed("s3", bob, ui.CodeIO)) // never reached: unreachable
	anon := ui.Peer{Name: "192.0.2.7"}
	g.feed(sendTo("s4", anon)...)
	g.feed(failed("s4", anon, ui.CodeConnectionLost)) // no ID to know it again
	p := failed("s5", bob, ui.CodeConnectionLost)
	p.Pairing = true
	g.feed(p)
	g.appear("bob-id")
	if len(g.retried) != 0 {
		t.Errorf("retried %v, want none", g.retried)
	}
	if g.r.drop("s2") || g.r.drop("s4") || g.r.drop("s5") {
		t.Error("a send that does not wait for its device was waiting")
	}
}

// Cancel of a send that waits for its device asks the engine nothing (the
// send ended) and History says it was cancelled, by this user.
func TestCancelWhileWaitingForTheDevice(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	b := newTestBackend(t)
	ev := failed("s1", bob, ui.CodeConnectionLost)
	if err := b.history.add(ui.HistoryEntry{ID: "s1", Direction: ui.Outgoing, PeerName: bob.Name, PeerID: bob.ID,
		State: ui.StateFailed, Code: ui.CodeConnectionLost}); err != nil {
		t.Fatal(err)
	}
	model := transfer.New()
	for _, e := range append(sendTo("s1", bob), ev) {
		b.rejoin.mark(&e)
		for _, me := range ui.DeliveryEvents(e) {
			model.Apply(me)
		}
		b.rejoin.ended(e, model.Get(e.ID))
	}
	if err := b.Cancel("s1"); err != nil { // the engine does not know s1: it was not asked
		t.Fatal(err)
	}
	if h := b.history.list(); len(h) != 1 || h[0].State != ui.StateCancelled || h[0].ByPeer {
		t.Fatalf("history: %+v", h)
	}
	if err := b.Cancel("s1"); err == nil {
		t.Error("a second Cancel found it waiting still")
	}
}

// The whole path with two engines: the receiver goes away while the offer
// waits (killed: no goodbye), the send fails as "went away", and when the
// device is heard again the same delivery goes on and finishes, with no
// user action. Discovery may still list the device when the send fails
// (its entry lives until its TTL, 45 s for a probed one, which RetryFor
// may be shorter than); heard again at another port or at the same
// address, it was a change of the table or none, never the PeerAppeared
// the rejoin waits for, and the send waited for ever.
func TestRejoinWhenTheReceiverIsBack(t *testing.T) {
	if testing.Short() {
		t.Skip("two engines and a cut link, three times: a few seconds")
	}
	for _, tc := range []struct {
		name   string
		listed bool // discovery lists the device at the link when the send starts
		same   bool // the device is back at the address discovery listed
	}{
		{name: "not listed, back at another port"},
		{name: "listed, back at another port", listed: true},
		{name: "listed, back at the same address", listed: true, same: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("XDG_CONFIG_HOME", t.TempDir())
			// One try to reach it again after the link is cut, then the send ends.
			// (A QUIC try at the cut link's port waits out its handshake: short.)
			b := newTestBackend(t, func(o *engine.Options) {
				o.RetryFor, o.Transport.HandshakeTimeout = time.Millisecond, 300*time.Millisecond
			})
			rcvDir := t.TempDir()
			start := func(accept engine.AcceptPolicy, listen string) *engine.Engine {
				t.Helper()
				return startedEngine(t, engine.Options{ConfigDir: rcvDir, Name: "Bob's laptop", DownloadDir: t.TempDir(), Listen: listen, Accept: accept})
			}
			recv := start(engine.AcceptAsk, "127.0.0.1:0")
			offers, stop := recv.Subscribe(64)
			t.Cleanup(stop)
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			out, devices := make(chan ui.TransferEvent, 256), make(chan ui.DeviceEvent, 64)
			goPump(t, ctx, b, out, devices)
			go pumpDevices(ctx, b.eng, b.disc, b.named, b.deviceBack, devices)
			go func() { // the UI's side of the device channel
				for {
					select {
					case <-devices:
					case <-ctx.Done():
						return
					}
				}
			}()
			result := func(what string) ui.TransferEvent {
				t.Helper()
				timeout := time.After(time.Minute)
				for {
					select {
					case ev := <-out:
						if ev.Kind == ui.TransferResult {
							return ev
						}
					case <-timeout:
						t.Fatalf("no result in a minute: %s", what)
					}
				}
			}
			file := filepath.Join(t.TempDir(), "a.txt")
			if err := os.WriteFile(file, []byte("hello"), 0o644); err != nil {
				t.Fatal(err)
			}
			// The receiver is reached through a link the test cuts: it vanishes
			// without a word, as a killed app or a closed lid does.
			link := cuttable(t, listening(recv, addr.TCP))
			if tc.listed {
				if _, err := b.disc.AddManual(ctx, link.addr()); err != nil { // discovery sees it there
					t.Fatal(err)
				}
			}
			if err := b.Send(ui.Device{ID: recv.ID(), Name: "Bob's laptop", Addrs: []addr.Addr{addr.New(addr.TCP, link.addr())}}, ui.Items{Paths: []string{file}}); err != nil {
				t.Fatal(err)
			}
			for ev := range offers {
				if ev.Kind == engine.EventOffer {
					break
				}
			}
			link.cut() // gone while its user looks at the offer
			first := result("the send to a device that went away")
			if !first.Result.Rejoin || first.Result.State != ui.StateFailed {
				t.Fatalf("the send ended %s (%s, %q), rejoin %v", first.Result.State, first.Result.Code, first.Result.Err, first.Result.Rejoin)
			}
			recv.Close()
			listen := "127.0.0.1:0"
			if tc.same {
				listen = link.addr() // where discovery listed it (QUIC and TCP)
			}
			back := start(engine.AcceptAll, listen)
			if _, err := b.disc.AddManual(ctx, listening(back, addr.QUIC)); err != nil { // discovery hears it again
				t.Fatal(err)
			}
			second := result("the send was not retried when its device was heard again")
			if second.ID != first.ID || second.Result.State != ui.StateDone {
				t.Fatalf("after the device came back: %s %s (%q), want %s done", second.ID, second.Result.State, second.Result.Err, first.ID)
			}
		})
	}
}

// link forwards TCP connections to a receiver until cut, which closes them
// all at once and refuses new ones; with a limit, it cuts by itself once
// the sender's bytes through it reach that many (cutAfter).
type link struct {
	ln     net.Listener
	limit  int64         // 0: none
	cutNow chan struct{} // closed by the first cut
	once   sync.Once
	mu     sync.Mutex // guards the fields below
	conns  []net.Conn
	passed int64 // the sender's bytes forwarded
}

func cuttable(t *testing.T, to string) *link { return cutAfter(t, to, 0) }

// cutAfter is a link that cuts once limit bytes of the sender's passed: to
// the receiver, the sender vanished mid-send without a word, as a killed
// Ferry does.
func cutAfter(t *testing.T, to string, limit int64) *link {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &link{ln: ln, limit: limit, cutNow: make(chan struct{})}
	t.Cleanup(l.cut)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			d, err := net.Dial("tcp", to)
			if err != nil {
				c.Close()
				continue
			}
			l.mu.Lock()
			l.conns = append(l.conns, c, d)
			l.mu.Unlock()
			go func() { l.forward(d, c); d.Close() }()
			go func() { io.Copy(c, d); c.Close() }()
		}
	}()
	return l
}

// forward copies the sender's bytes, and cuts at the limit.
func (l *link) forward(dst, src net.Conn) {
	if l.limit == 0 {
		io.Copy(dst, src)
		return
	}
	buf := make([]byte, 16<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			l.mu.Lock()
			left := l.limit - l.passed
			l.passed += int64(n)
			l.mu.Unlock()
			if left <= int64(n) {
				dst.Write(buf[:max(left, 0)])
				l.cut()
				return
			}
			if _, err := dst.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (l *link) addr() string { return l.ln.Addr().String() }

func (l *link) cut() {
	l.once.Do(func() { close(l.cutNow) })
	l.ln.Close()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.conns {
		c.Close()
	}
	l.conns = nil
}

// The sends rejoined once are remembered up to maxRejoined, the newest
// kept: the set grew by one for every send that waited for its device
// while the app ran (weeks from the tray).
func TestRejoinedSendsAreBounded(t *testing.T) {
	g := &rejoinRig{model: transfer.New()}
	var last string
	for i := range maxRejoined + 50 {
		last = "s" + strconv.Itoa(i)
		g.feed(sendTo(last, bob)...)
		g.feed(failed(last, bob, ui.CodeConnectionLost))
		g.appear(bob.ID)
	}
	if len(g.retried) != maxRejoined+50 {
		t.Fatalf("%d sends rejoined, want %d", len(g.retried), maxRejoined+50)
	}
	if len(g.r.done) > maxRejoined || len(g.r.order) > maxRejoined {
		t.Errorf("%d sends remembered as rejoined (%d in order), want at most %d", len(g.r.done), len(g.r.order), maxRejoined)
	}
	// The newest is still rejoined only once.
	g.feed(failed(last, bob, ui.CodeConnectionLost))
	g.appear(bob.ID)
	if len(g.retried) != maxRejoined+50 {
		t.Errorf("the newest send was rejoined twice")
	}
}
