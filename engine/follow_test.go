package engine

import (
	"context"
	"net"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine/addr"
)

// fakeResolver answers with whatever the test says the device's address is now.
type fakeResolver struct {
	mu    sync.Mutex
	at    map[string]Target
	calls atomic.Int64
}

func (r *fakeResolver) ResolvePeer(_ context.Context, id string) []addr.Addr {
	r.calls.Add(1)
	r.mu.Lock()
	defer r.mu.Unlock()
	if t, ok := r.at[id]; ok {
		return t.Addrs
	}
	return nil
}

func (r *fakeResolver) set(id string, t Target) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.at == nil {
		r.at = map[string]Target{}
	}
	r.at[id] = t
}

// followedSize is the file the following tests send.
const followedSize = 96 << 20

// sendFollowedAt30 sends a followedSize file over QUIC to recv by its ID,
// with the resolver res and the retry time retryFor, and returns once 30 %
// of it has arrived.
func sendFollowedAt30(t *testing.T, recv *Engine, res *fakeResolver, retryFor time.Duration) (send *Engine, tr *Transfer, path string) {
	t.Helper()
	send = testEngine(t, Options{RetryFor: retryFor, ProgressInterval: 2 * time.Millisecond, Resolver: res})
	path = filepath.Join(t.TempDir(), "big.bin")
	writeFile(t, path, followedSize)
	events, unsub := send.Subscribe(4096)
	defer unsub()
	to := target(recv)
	to.ID, to.Follow = recv.ID(), true
	tr, err := send.Send(context.Background(), to, []string{path}, SendOptions{Transport: "quic"})
	if err != nil {
		t.Fatal(err)
	}
	waitProgress(t, events, tr.ID(), followedSize, 0.3)
	return send, tr, path
}

// The receiver restarts on another port mid-transfer; the sender, which
// addressed it by ID, finds it through the resolver and finishes without
// help, sending again little more than what was in flight.
func TestFollowFindsMovedReceiver(t *testing.T) {
	skipIfShort(t)
	cfg, dl := t.TempDir(), t.TempDir()
	recv := startReceiver(t, Options{ConfigDir: cfg, DownloadDir: dl})
	res := &fakeResolver{}
	_, tr, big := sendFollowedAt30(t, recv, res, 30*time.Second)
	recv.Close()
	moved := startReceiver(t, Options{ConfigDir: cfg, DownloadDir: dl}) // any free port: not the old one
	res.set(moved.ID(), target(moved))
	select {
	case <-tr.Done():
	case <-time.After(time.Minute):
		t.Fatal("did not finish after the receiver moved")
	}
	r := tr.Result()
	if r.State != StateDone {
		t.Fatalf("%s: %s", r.State, r.Err)
	}
	sameTree(t, big, dl)
	if r.Bytes > followedSize+followedSize/4 {
		t.Errorf("sent %d bytes in all for a %d-byte file: resume did not save much", r.Bytes, followedSize)
	}
	if res.calls.Load() < 2 {
		t.Errorf("the resolver was asked %d times; want every attempt", res.calls.Load())
	}
	t.Logf("%d bytes sent for %d, %d look-ups", r.Bytes, followedSize, res.calls.Load())
}

// Retry of a failed send looks the device up again too; an explicit
// address (Follow off) is dialled as given and the resolver is not asked.
func TestRetryFollowsAndExplicitStays(t *testing.T) {
	skipIfShort(t)
	cfg, dl := t.TempDir(), t.TempDir()
	recv := startReceiver(t, Options{ConfigDir: cfg, DownloadDir: dl})
	res := &fakeResolver{}
	send := testEngine(t, Options{RetryFor: -1, Resolver: res})
	small := filepath.Join(t.TempDir(), "small.bin")
	writeFile(t, small, 1<<20)

	explicit := target(recv)
	explicit.ID = recv.ID()
	tr, err := send.Send(context.Background(), explicit, []string{small}, SendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	<-tr.Done()
	if r := tr.Result(); r.State != StateDone || res.calls.Load() != 0 {
		t.Fatalf("explicit send: %s %s, resolver asked %d times", r.State, r.Err, res.calls.Load())
	}

	follow := explicit
	follow.Follow = true
	recv.Close()
	tr, err = send.Send(context.Background(), follow, []string{small}, SendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	<-tr.Done()
	if r := tr.Result(); r.State != StateFailed {
		t.Fatalf("send to a closed receiver: %s", r.State)
	}
	moved := startReceiver(t, Options{ConfigDir: cfg, DownloadDir: t.TempDir()})
	res.set(moved.ID(), target(moved))
	again, err := send.Retry(context.Background(), tr.ID())
	if err != nil {
		t.Fatal(err)
	}
	<-again.Done()
	if r := again.Result(); r.State != StateDone {
		t.Fatalf("Retry after the receiver moved: %s: %s", r.State, r.Err)
	}
}

// Receiving turned off and on again mid-transfer (the receiver's listeners
// come back on another port): the sender is told at once, and its Retry
// (the app's Resume) finds the device again by ID and sends only what the
// receiver does not have yet.
func TestRetryAfterReceivingOffAndOn(t *testing.T) {
	skipIfShort(t)
	recv := startReceiver(t, Options{ConfigDir: t.TempDir(), DownloadDir: t.TempDir()})
	res := &fakeResolver{}
	send, tr, big := sendFollowedAt30(t, recv, res, -1)
	before := listening(recv, addr.QUIC)
	if err := recv.StopReceivingNow(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-tr.Done():
	case <-time.After(time.Minute):
		t.Fatal("the sender was not told that receiving was turned off")
	}
	if r := tr.Result(); r.State == StateDone {
		t.Fatalf("finished although the receiver stopped receiving at 30 %%")
	}
	if err := recv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	after := listening(recv, addr.QUIC)
	t.Logf("QUIC listener %s before, %s after", before, after)
	res.set(recv.ID(), target(recv))
	calls := res.calls.Load()
	again, err := send.Retry(context.Background(), tr.ID())
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-again.Done():
	case <-time.After(time.Minute):
		t.Fatal("Retry did not finish")
	}
	r := again.Result()
	if r.State != StateDone {
		t.Fatalf("Retry after receiving came back: %s: %s", r.State, r.Err)
	}
	sameTree(t, big, recv.opts.DownloadDir)
	if res.calls.Load() == calls {
		t.Error("Retry did not look the device up again")
	}
	if r.Bytes > followedSize+followedSize/4 {
		t.Errorf("sent %d bytes in all for a %d-byte file: the receiver's partial was not resumed", r.Bytes, followedSize)
	}
}

// The addresses of a followed device are one race: a first address where
// nothing answers (a UDP socket with no QUIC behind it, so the handshake
// would wait for its timeout) does not hold the send up, the next one gets
// its turn after the stagger and wins, and another device at a third
// address (trust on the wrong key) is no reason to give up on the others.
func TestFollowRacesTheAddresses(t *testing.T) {
	recv := startReceiver(t, Options{})
	impostor := startReceiver(t, Options{})
	dead, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer dead.Close()
	res := &fakeResolver{}
	res.set(recv.ID(), Target{Addrs: []addr.Addr{
		addr.New(addr.QUIC, dead.LocalAddr().String()),
		addr.New(addr.QUIC, listening(impostor, addr.QUIC)),
		addr.New(addr.QUIC, listening(recv, addr.QUIC)),
	}})
	send := testEngine(t, Options{Resolver: res, RetryFor: -1})
	src := filepath.Join(t.TempDir(), "a.bin")
	writeFile(t, src, 1<<20)
	to := Target{ID: recv.ID(), Follow: true, Addrs: []addr.Addr{addr.New(addr.QUIC, dead.LocalAddr().String())}}
	r := sendWait(t, send, to, []string{src}, SendOptions{Transport: "quic"})
	if r.State != StateDone {
		t.Fatalf("%s: %s", r.State, r.Err)
	}
	p, ok := send.trust.Get(recv.ident.ID.Peer())
	if !ok || len(p.LastAddrs) == 0 || p.LastAddrs[0] != listening(recv, addr.QUIC) {
		t.Errorf("reached at %+v, want %s", p.LastAddrs, listening(recv, addr.QUIC))
	}
}

// A receiver whose Ferry was closed comes back on another port while an
// attempt of the sender dials where it was (a QUIC dial of an address
// that nothing answers runs to its handshake timeout): the sender, which
// asks its resolver again while it dials, races the new address at once,
// within that attempt, where it ran the dead dial out, said once more that
// it retries, and waited its back-off before it looked again.
func TestFollowDialsWhereTheReceiverMovedMidAttempt(t *testing.T) {
	skipIfShort(t)
	cfg, dl := t.TempDir(), t.TempDir()
	recv := startReceiver(t, Options{ConfigDir: cfg, DownloadDir: dl})
	res := &fakeResolver{}
	res.set(recv.ID(), target(recv)) // discovery still sees it where it was
	send, tr, big := sendFollowedAt30(t, recv, res, time.Minute)
	events, unsub := send.Subscribe(4096)
	defer unsub()
	old := listening(recv, addr.QUIC)
	recv.Close()
	// Where it was, nothing answers: a socket that reads and never replies.
	hole, err := net.ListenPacket("udp", old)
	if err != nil {
		t.Skipf("the receiver's old port was taken at once: %v", err)
	}
	defer hole.Close()
	hole.SetReadDeadline(time.Now().Add(30 * time.Second))
	// A new attempt's dial: a QUIC Initial (a long header of type 0, padded
	// to 1200 bytes), not what the old session still had in flight when
	// the receiver closed (short headers), which reached the hole before
	// the sender heard of the close, nor the dial's port checks (a byte).
	for buf := make([]byte, 2048); ; {
		n, _, err := hole.ReadFrom(buf)
		if err != nil {
			t.Fatalf("no attempt dialled the receiver's old address: %v", err)
		}
		if n >= 1200 && buf[0]&0xf0 == 0xc0 {
			break
		}
	}
	for drained := false; !drained; { // what was said before this attempt began
		select {
		case <-events:
		default:
			drained = true
		}
	}
	moved := startReceiver(t, Options{ConfigDir: cfg, DownloadDir: dl}) // any free port: not the old one
	res.set(moved.ID(), target(moved))
	timeout := time.After(time.Minute)
	for active := false; !active; {
		select {
		case ev := <-events:
			if ev.TransferID != tr.ID() {
				continue
			}
			switch {
			case ev.Kind == EventState && ev.State == StateRetrying:
				t.Fatalf("the attempt dialling where the receiver was ran out before it dialled where it is now: %+v", ev.Result)
			case ev.Kind == EventResult:
				t.Fatalf("ended before it reached the receiver again: %+v", ev.Result)
			}
			active = ev.Kind == EventState && ev.State == StateActive
		case <-timeout:
			t.Fatal("not active again a minute after the receiver came back")
		}
	}
	<-tr.Done()
	if r := tr.Result(); r.State != StateDone {
		t.Fatalf("%s: %s", r.State, r.Err)
	}
	sameTree(t, big, dl)
}
