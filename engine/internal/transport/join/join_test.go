package join

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine/identity"
	"github.com/ferrydrop/ferry/engine/internal/errcode"
	"github.com/ferrydrop/ferry/engine/internal/transport"
	"github.com/ferrydrop/ferry/engine/internal/transport/transporttest"
	"github.com/ferrydrop/ferry/internal/testutil"
)

func TestMain(m *testing.M) { transporttest.Main(m) }

var tok = Token{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}

// headerCases test ParseHeader and seed its fuzzer (peer input).
var headerCases = []struct {
	name string
	in   []byte
	ok   bool
}{
	{"new", AppendHeader(nil, tok, FlagNew), true},
	{"join", AppendHeader(nil, tok, FlagJoin), true},
	{"spare", AppendHeader(nil, tok, FlagSpare), true},
	{"attach", AppendHeader(nil, tok, FlagAttach), true},
	{"zero flag", AppendHeader(nil, tok, 0), false},
	{"unknown flag", AppendHeader(nil, tok, 0xff), false},
	{"short", tok[:], false},
	{"long", append(AppendHeader(nil, tok, FlagJoin), 0), false},
	{"empty", nil, false},
}

func TestParseHeader(t *testing.T) {
	t.Parallel()
	for _, tc := range headerCases {
		token, _, err := ParseHeader(tc.in)
		if (err == nil) != tc.ok {
			t.Errorf("%s: ParseHeader(%x) = %v, want ok=%v", tc.name, tc.in, err, tc.ok)
		}
		if tc.ok && token != tok {
			t.Errorf("%s: token %x, want %x", tc.name, token, tok)
		}
		if !tc.ok && !errors.Is(err, errcode.ErrBadHeader) {
			t.Errorf("%s: %v is not ErrBadHeader", tc.name, err)
		}
		// ReadHeader agrees, and fails on a short read rather than blocking.
		if _, _, rerr := ReadHeader(bytes.NewReader(tc.in)); (rerr == nil) != tc.ok && len(tc.in) <= HeaderLen {
			t.Errorf("%s: ReadHeader = %v, want ok=%v", tc.name, rerr, tc.ok)
		}
	}
}

func FuzzParseHeader(f *testing.F) {
	for _, tc := range headerCases {
		f.Add(tc.in)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		token, flag, err := ParseHeader(in)
		if err != nil {
			if !errors.Is(err, errcode.ErrRefused) {
				t.Fatalf("error %v does not wrap ErrRefused", err)
			}
			return
		}
		if out := AppendHeader(nil, token, flag); !bytes.Equal(out, in) {
			t.Fatalf("round trip %x -> %x", in, out)
		}
	})
}

// FuzzReadStatus: any status byte from a peer reads as OK or a refusal.
func FuzzReadStatus(f *testing.F) {
	for _, b := range []byte{0, 1, 5, 6, 7, 0xff} {
		f.Add([]byte{b})
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, in []byte) {
		err := ReadStatus(bytes.NewReader(in))
		switch {
		case len(in) == 0:
			if err == nil {
				t.Fatal("an empty answer admitted the connection")
			}
		case in[0] == 0:
			if err != nil {
				t.Fatalf("status 0: %v", err)
			}
		case !errors.Is(err, errcode.ErrRefused):
			t.Fatalf("status %d: %v, not a refusal", in[0], err)
		}
	})
}

func TestStatusRoundTrip(t *testing.T) {
	t.Parallel()
	for _, refusal := range []error{nil, errcode.ErrUnknownSession, errcode.ErrPeerMismatch, errcode.ErrSessionFull,
		errcode.ErrListenerBusy, errcode.ErrBadHeader, errcode.ErrNotReceiving} {
		var b bytes.Buffer
		if err := WriteStatus(&b, refusal); err != nil {
			t.Fatal(err)
		}
		if got := ReadStatus(&b); got != refusal {
			t.Errorf("status of %v read back as %v", refusal, got)
		}
	}
}

// fakeSession is a session as the gate sees it.
type fakeSession struct {
	peer     identity.DeviceID
	done     chan struct{}
	once     sync.Once
	takeOver func(transport.Conn) error // nil: cannot take over
}

func newFake(peer byte) *fakeSession {
	return &fakeSession{peer: identity.DeviceID{peer}, done: make(chan struct{})}
}

func (f *fakeSession) OpenStream(context.Context) (transport.Stream, error) {
	return nil, net.ErrClosed
}
func (f *fakeSession) AcceptStream(context.Context) (transport.Stream, error) {
	return nil, net.ErrClosed
}
func (f *fakeSession) PeerID() identity.DeviceID  { return f.peer }
func (f *fakeSession) RemoteAddr() string         { return "fake" }
func (f *fakeSession) Transport() transport.Kind  { return "fake" }
func (f *fakeSession) Metrics() transport.Metrics { return transport.Metrics{} }
func (f *fakeSession) Done() <-chan struct{}      { return f.done }
func (f *fakeSession) Close(error) error {
	f.once.Do(func() { close(f.done) })
	return nil
}

type takeOverSession struct {
	*fakeSession
	got []transport.Conn
}

func (s *takeOverSession) TakeOver(c transport.Conn) error {
	if len(s.got) > 0 {
		return errcode.ErrSessionFull
	}
	s.got = append(s.got, c)
	return nil
}

func TestGate(t *testing.T) {
	t.Parallel()
	reg := NewRegistry()
	quic := NewGate(reg, transport.QUIC, time.Second)
	tcp := NewGate(reg, transport.TCP, time.Second)
	defer quic.Close()
	defer tcp.Close()
	ctx := t.Context()

	// A new session is registered and accepted; its token is then taken.
	a := &takeOverSession{fakeSession: newFake(1)}
	if err := quic.Start(tok, a); err != nil {
		t.Fatal(err)
	}
	if got, err := quic.Accept(ctx); err != nil || got != a {
		t.Fatalf("Accept = %v, %v", got, err)
	}
	if err := quic.Start(tok, newFake(1)); !errors.Is(err, errcode.ErrBadHeader) {
		t.Errorf("second start with the token: %v", err)
	}
	// Joins find it, from its peer only, on its own transport only.
	if s, err := quic.Find(tok, identity.DeviceID{1}); err != nil || s != a {
		t.Errorf("Find = %v, %v", s, err)
	}
	if _, err := quic.Find(tok, identity.DeviceID{2}); !errors.Is(err, errcode.ErrPeerMismatch) {
		t.Errorf("Find by another peer: %v", err)
	}
	if _, err := tcp.Find(tok, identity.DeviceID{1}); !errors.Is(err, errcode.ErrUnknownSession) {
		t.Errorf("Find on the other transport: %v", err)
	}
	// Another transport's session with the same token takes over from it:
	// only from the same peer, once.
	if err := tcp.Attach(tok, newFake(2)); !errors.Is(err, errcode.ErrPeerMismatch) {
		t.Errorf("attach by another peer: %v", err)
	}
	b := newFake(1)
	if err := tcp.Attach(tok, b); err != nil || len(a.got) != 1 || a.got[0] != b {
		t.Fatalf("attach: %v (%d taken over)", err, len(a.got))
	}
	if s, err := tcp.Find(tok, identity.DeviceID{1}); err != nil || s != b {
		t.Errorf("the attached session is not found for its joins: %v, %v", s, err)
	}
	if err := tcp.Attach(Token{9}, newFake(1)); !errors.Is(err, errcode.ErrUnknownSession) {
		t.Errorf("attach to an unknown token: %v", err)
	}
	// A session that cannot take over refuses as unknown.
	c := newFake(3)
	if err := tcp.Start(Token{7}, c); err != nil {
		t.Fatal(err)
	}
	if err := quic.Attach(Token{7}, newFake(3)); !errors.Is(err, errcode.ErrUnknownSession) {
		t.Errorf("attach to a session that cannot take over: %v", err)
	}
	// Ended sessions leave the registry.
	a.Close(nil)
	testutil.WaitFor(t, "the gate to let the handshake through", func() bool {
		_, err := quic.Find(tok, identity.DeviceID{1})
		return errors.Is(err, errcode.ErrUnknownSession)
	})
}

func TestGateWithdraw(t *testing.T) {
	t.Parallel()
	g := NewGate(NewRegistry(), transport.TCP, time.Second)
	defer g.Close()
	running, queued := newFake(1), newFake(1)
	if err := g.Start(Token{1}, running); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Accept(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := g.Start(Token{2}, queued); err != nil {
		t.Fatal(err)
	}
	released := make(chan struct{})
	g.Withdraw(func() { close(released) })
	// Nobody will accept the queued session: it ends; the running one goes on.
	select {
	case <-queued.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("a queued session outlived Withdraw")
	}
	if err := g.Start(Token{3}, newFake(1)); !errors.Is(err, errcode.ErrNotReceiving) {
		t.Errorf("start after Withdraw: %v", err)
	}
	if _, err := g.Find(Token{1}, identity.DeviceID{1}); err != nil {
		t.Errorf("the running session takes no more joins: %v", err)
	}
	// Resume takes new sessions again; withdrawn once more, the socket is
	// released when the last session ends, and then Resume fails.
	if !g.Resume() {
		t.Fatal("Resume failed while a session runs")
	}
	if err := g.Start(Token{4}, newFake(1)); err != nil {
		t.Errorf("start after Resume: %v", err)
	}
	got, _ := g.Accept(t.Context())
	got.Close(nil)
	g.Withdraw(func() { close(released) })
	select {
	case <-released:
		t.Fatal("released while a session runs")
	default:
	}
	running.Close(nil)
	select {
	case <-released:
	case <-time.After(5 * time.Second):
		t.Fatal("not released after the last session ended")
	}
	if g.Resume() {
		t.Error("Resume after the release")
	}
}

func TestGateHandshakeBounds(t *testing.T) {
	t.Parallel()
	g := NewGate(NewRegistry(), transport.TCP, 50*time.Millisecond)
	block := make(chan struct{})
	var timedOut sync.WaitGroup
	timedOut.Add(1)
	if !g.Handshake("192.0.2.1:1", Connected, func(ctx context.Context, _ *Pending) {
		<-ctx.Done() // the handshake timeout ends it
		timedOut.Done()
	}) {
		t.Fatal("first handshake shed")
	}
	timedOut.Wait()
	testutil.WaitFor(t, "the gate to let the handshake through", func() bool { return g.Pending() == 0 })
	g.Close()

	g = NewGate(NewRegistry(), transport.TCP, time.Minute)
	// One source gets MaxPendingPerSource handshakes at once; a newcomer
	// from it then ends the least advanced of them, the oldest first, and
	// never one that joined (issue #27).
	evicted := make(chan int, 4*MaxPending)
	type place struct {
		i int
		p *Pending
	}
	started := make(chan place, 4*MaxPending)
	hold := func(i int) func(ctx context.Context, p *Pending) {
		return func(ctx context.Context, p *Pending) {
			started <- place{i, p}
			select {
			case <-block:
			case <-ctx.Done():
				evicted <- i
			}
		}
	}
	for i := range MaxPendingPerSource {
		if !g.Handshake("192.0.2.1:1", Connected, hold(i)) {
			t.Fatalf("handshake %d shed", i)
		}
	}
	for range MaxPendingPerSource {
		if pl := <-started; pl.i != 0 {
			pl.p.Reached(Joined)
		}
	}
	// Only the one that did not join is displaced, then the newcomers each other.
	for i := range 3 {
		if !g.Handshake("192.0.2.1:1", Connected, hold(100+i)) {
			t.Fatalf("newcomer %d of a full source was shed", i)
		}
	}
	got := map[int]bool{<-evicted: true, <-evicted: true, <-evicted: true}
	if !got[0] || !got[100] || !got[101] || g.Pending() != MaxPendingPerSource {
		t.Fatalf("%d in flight, displaced %v", g.Pending(), got)
	}
	for range 3 {
		(<-started).p.Reached(Joined)
	}
	if g.Handshake("192.0.2.1:1", Connected, hold(200)) {
		t.Error("a newcomer displaced a handshake that joined")
	}
	// Many sources fill the gate; a newcomer then takes the oldest slot of
	// the busiest source, whose handshake ends.
	for i := 0; g.Pending() < MaxPending; i++ {
		g.Handshake(fmt.Sprintf("192.0.2.%d:1", 2+i), Connected, func(ctx context.Context, _ *Pending) { <-block })
	}
	if !g.Handshake("198.51.100.1:1", Connected, func(ctx context.Context, _ *Pending) { <-block }) {
		t.Fatal("a newcomer was shed while one source held many slots")
	}
	<-evicted // the busiest source's oldest handshake ended
	if g.Pending() != MaxPending {
		t.Errorf("%d in flight, want %d", g.Pending(), MaxPending)
	}
	close(block)
	g.Close()
	if g.Handshake("192.0.2.1:1", Connected, func(context.Context, *Pending) {}) {
		t.Error("a closed gate ran a handshake")
	}
}
