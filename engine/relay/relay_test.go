package relay

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pion/logging"
	"github.com/pion/turn/v5"

	"github.com/ferrydrop/ferry/engine/internal/anywhere"
	"github.com/ferrydrop/ferry/internal/testutil"
)

func name(c byte) string { return strings.Repeat(string(c), anywhere.NameLen) }

// mailboxOnAClock is an empty mailbox with the default limits, started at
// the time of a clock that the caller moves (the benchmarks' mailbox).
func mailboxOnAClock() (m *Mailbox, now *time.Time) {
	m = NewMailbox(Limits{})
	t := time.Unix(1000, 0)
	now = &t
	m.now = func() time.Time { return *now }
	m.started = t
	return m, now
}

// benchmarkSlotRead runs one request to m per iteration: a caller's read
// of a call box's slot, which every request to a relay resembles in what
// it pays for the mailbox's upkeep.
func benchmarkSlotRead(b *testing.B, m *Mailbox) {
	body := anywhere.EncodeNames([]string{name('a')})
	for b.Loop() {
		if _, err := m.Handle(http.MethodPost, anywhere.PathSlots, "caller", body); err != nil {
			b.Fatal(err)
		}
	}
}

func TestMailboxSlotsAndQueues(t *testing.T) {
	t.Parallel()
	m := NewMailbox(Limits{})
	if _, err := m.Handle(http.MethodPut, anywhere.PathSlot+name('a'), "s", []byte("one")); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Handle(http.MethodPut, anywhere.PathSlot+name('a'), "s", []byte("two")); err != nil {
		t.Fatal(err)
	}
	for range 2 { // a slot is kept when read
		out, err := m.Handle(http.MethodPost, anywhere.PathSlots, "x", anywhere.EncodeNames([]string{name('b'), name('a')}))
		if err != nil {
			t.Fatal(err)
		}
		got, err := anywhere.DecodeRecords(out, 2)
		if err != nil || len(got[0]) != 0 || len(got[1]) != 1 || string(got[1][0]) != "two" {
			t.Fatalf("slots: %q %v", got, err)
		}
	}
	for _, b := range []string{"c1", "c2"} {
		if _, err := m.Handle(http.MethodPost, anywhere.PathQueue+name('c'), "s", []byte(b)); err != nil {
			t.Fatal(err)
		}
	}
	out, _ := m.Handle(http.MethodPost, anywhere.PathQueues, "x", anywhere.EncodeNames([]string{name('c')}))
	got, err := anywhere.DecodeRecords(out, 1)
	if err != nil || len(got[0]) != 2 || string(got[0][0]) != "c1" {
		t.Fatalf("queue: %q %v", got, err)
	}
	out, _ = m.Handle(http.MethodPost, anywhere.PathQueues, "x", anywhere.EncodeNames([]string{name('c')}))
	if len(out) != 0 {
		t.Fatalf("a queue read twice: %q", out)
	}
	if m.Held() != 1 {
		t.Fatalf("held %d, want the one slot", m.Held())
	}
}

// TestMailboxHostile: requests a stranger on the internet could make.
func TestMailboxHostile(t *testing.T) {
	t.Parallel()
	m := NewMailbox(Limits{})
	for _, tc := range []struct {
		name, method, path string
		body               []byte
	}{
		{"unknown path", http.MethodGet, "/", nil},
		{"slot by GET", http.MethodGet, anywhere.PathSlot + name('a'), []byte("x")},
		{"bad name", http.MethodPut, anywhere.PathSlot + "../../etc/passwd", []byte("x")},
		{"upper-case name", http.MethodPut, anywhere.PathSlot + strings.ToUpper(name('a')), []byte("x")},
		{"empty blob", http.MethodPut, anywhere.PathSlot + name('a'), nil},
		{"big blob", http.MethodPost, anywhere.PathQueue + name('a'), make([]byte, anywhere.MaxBlob+1)},
		{"no names", http.MethodPost, anywhere.PathSlots, nil},
		{"bad names", http.MethodPost, anywhere.PathQueues, []byte("a\nb")},
	} {
		if _, err := m.Handle(tc.method, tc.path, "s", tc.body); err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
	if m.Held() != 0 {
		t.Fatalf("held %d after refusals", m.Held())
	}
}

func TestMailboxBounds(t *testing.T) {
	t.Parallel()
	m := NewMailbox(Limits{PerSource: 10, Total: 15, QueueTTL: time.Minute})
	now := time.Unix(1000, 0)
	m.now = func() time.Time { return now }
	// One queue holds MaxQueue blobs.
	for i := range anywhere.MaxQueue + 1 {
		_, err := m.Handle(http.MethodPost, anywhere.PathQueue+name('f'), "s", []byte("x"))
		if (err != nil) != (i == anywhere.MaxQueue) {
			t.Fatalf("blob %d: %v", i, err)
		}
	}
	// One source holds PerSource blobs, whatever the names.
	put := func(src string, c byte) error {
		_, err := m.Handle(http.MethodPut, anywhere.PathSlot+fmt.Sprintf("%032x", c), src, []byte("x"))
		return err
	}
	if err := put("s", 'a'); err != nil {
		t.Fatal(err)
	}
	if err := put("s", 'b'); err != nil {
		t.Fatal(err)
	}
	if err := put("s", 'c'); !errors.Is(err, errFull) {
		t.Fatalf("11th blob of one source: %v", err)
	}
	if err := put("s", 'a'); err != nil {
		t.Fatalf("replacing a slot at the limit: %v", err)
	}
	// The total binds every source together.
	for i := range 5 {
		if err := put("t", byte('d'+i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := put("u", 'z'); !errors.Is(err, errBusy) {
		t.Fatalf("over the total: %v", err)
	}
	// Everything goes when its time is up.
	now = now.Add(3 * time.Minute)
	if err := put("u", 'z'); err != nil {
		t.Fatalf("after expiry: %v", err)
	}
	if m.Held() != 1 {
		t.Fatalf("held %d after expiry, want 1", m.Held())
	}
}

func FuzzMailboxHandle(f *testing.F) {
	f.Add(0, anywhere.PathSlot+name('a'), []byte("x"))
	f.Add(1, anywhere.PathQueue+name('a'), []byte("x"))
	f.Add(1, anywhere.PathQueues, []byte(name('a')))
	f.Add(1, anywhere.PathSlots, []byte(name('a')+"\n"+name('b')))
	f.Fuzz(func(t *testing.T, method int, path string, body []byte) {
		m := NewMailbox(Limits{PerSource: 4, Total: 8})
		meth := []string{http.MethodPut, http.MethodPost, http.MethodGet}[(method%3+3)%3]
		for range 3 {
			out, err := m.Handle(meth, path, "s", body)
			if err == nil && len(out) > anywhere.MaxReply {
				t.Fatalf("reply of %d bytes", len(out))
			}
		}
		if m.Held() > 4 {
			t.Fatalf("one source holds %d", m.Held())
		}
	})
}

// TestRelayMailboxOverHTTP: the client against the real server on loopback,
// and a relay that is down.
func TestRelayMailboxOverHTTP(t *testing.T) {
	t.Parallel()
	r, err := Start(Config{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	addr := r.Addr().String()
	mb := anywhere.NewMailbox(addr, "")
	defer mb.Close()
	ctx := context.Background()
	if err := mb.Push(ctx, name('a'), []byte("call")); err != nil {
		t.Fatal(err)
	}
	got, err := mb.Take(ctx, []string{name('a')})
	if err != nil || len(got[0]) != 1 || string(got[0][0]) != "call" {
		t.Fatalf("take: %q %v", got, err)
	}
	if err := mb.Push(ctx, "nope", []byte("x")); !errors.Is(err, anywhere.ErrRelayRefused) {
		t.Fatalf("bad name: %v", err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := mb.Put(ctx, name('a'), []byte("x")); !errors.Is(err, anywhere.ErrRelayUnreachable) {
		t.Fatalf("relay down: %v", err)
	}
}

const testSecret = "a relay secret for the tests"

// allocate asks the relay at addr for a TURN allocation with user and
// password, as a device's ICE agent does.
func allocate(t *testing.T, addr, user, password string) (net.PacketConn, error) {
	t.Helper()
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return allocateOn(t, pc, addr, user, password)
}

// allocateOn is allocate from the socket pc: closing it makes the device
// vanish, its allocation not given back.
func allocateOn(t *testing.T, pc net.PacketConn, addr, user, password string) (net.PacketConn, error) {
	t.Helper()
	lf := logging.NewDefaultLoggerFactory()
	lf.DefaultLogLevel = logging.LogLevelDisabled
	c, err := turn.NewClient(&turn.ClientConfig{STUNServerAddr: addr, TURNServerAddr: addr, Username: user, Password: password,
		Realm: anywhere.TURNRealm, Conn: pc, LoggerFactory: lf, RTO: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); pc.Close() })
	if err := c.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	return c.AllocateWithContext(ctx)
}

// TestTURNRelaySecret: a relay with a secret takes TURN REST credentials
// made from it (pion's helper, coturn's scheme) and refuses those made
// from another secret, expired ones and the public ones; a relay without
// a secret takes the public ones only.
func TestTURNRelaySecret(t *testing.T) {
	t.Parallel()
	r, err := Start(Config{Listen: "127.0.0.1:0", Secret: testSecret})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	addr := r.Addr().String()
	cred := func(secret string, ttl time.Duration) (string, string) {
		u, p, err := turn.GenerateLongTermTURNRESTCredentials(secret, "ferry", ttl)
		if err != nil {
			t.Fatal(err)
		}
		return u, p
	}
	u, p := cred(testSecret, time.Hour)
	alloc, err := allocate(t, addr, u, p)
	if err != nil {
		t.Fatalf("the right secret: %v", err)
	}
	alloc.Close()
	for _, tc := range []struct{ name, user, password string }{
		{"another secret", u, func() string { _, p := cred("another secret of the same length", time.Hour); return p }()},
		{"expired", func() string { u, _ := cred(testSecret, -time.Minute); return u }(), func() string { _, p := cred(testSecret, -time.Minute); return p }()},
		{"the public credentials", anywhere.TURNUser, anywhere.TURNPassword},
	} {
		if alloc, err := allocate(t, addr, tc.user, tc.password); err == nil {
			alloc.Close()
			t.Errorf("%s: allocated", tc.name)
		}
	}

	open, err := Start(Config{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	if alloc, err := allocate(t, open.Addr().String(), anywhere.TURNUser, anywhere.TURNPassword); err != nil {
		t.Errorf("no secret, the public credentials: %v", err)
	} else {
		alloc.Close()
	}
	if alloc, err := allocate(t, open.Addr().String(), u, p); err == nil {
		alloc.Close()
		t.Error("no secret, credentials made with one: allocated")
	}
}

// TestMailboxRelaySecret: the mailbox of a relay with a secret takes only
// requests signed with it, and a device hears why in a sentence that
// names the relay and its relay secret.
func TestMailboxRelaySecret(t *testing.T) {
	t.Parallel()
	var logged bytes.Buffer
	r, err := Start(Config{Listen: "127.0.0.1:0", Secret: testSecret, Log: slog.New(slog.NewTextHandler(&logged, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	addr := r.Addr().String()
	ctx := t.Context()
	for _, tc := range []struct{ name, secret, says string }{
		{"no secret", "", "this device has none"},
		{"another secret", "another secret of the same length", "refused this device's relay secret"},
	} {
		mb := anywhere.NewMailbox(addr, tc.secret)
		err := mb.Put(ctx, name('a'), []byte("x"))
		mb.Close()
		if !errors.Is(err, anywhere.ErrRelaySecret) || !strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	if r.box.Held() != 0 {
		t.Fatalf("refused requests left %d blobs", r.box.Held())
	}
	if !strings.Contains(logged.String(), "refused a request for its relay secret") {
		t.Errorf("the refusal is not logged: %s", logged.String())
	}
	mb := anywhere.NewMailbox(addr, testSecret)
	defer mb.Close()
	if err := mb.Put(ctx, name('a'), []byte("x")); err != nil {
		t.Fatalf("the right secret: %v", err)
	}
	if got, err := mb.Get(ctx, []string{name('a')}); err != nil || len(got[0]) != 1 {
		t.Fatalf("the right secret: %q %v", got, err)
	}

	// A relay without a secret says so to a device that has one, and warns
	// when it starts.
	logged.Reset()
	open, err := Start(Config{Listen: "127.0.0.1:0", Log: slog.New(slog.NewTextHandler(&logged, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	if !strings.Contains(logged.String(), "anyone who can reach its port can relay through it") {
		t.Errorf("no warning: %s", logged.String())
	}
	mb2 := anywhere.NewMailbox(open.Addr().String(), testSecret)
	defer mb2.Close()
	if err := mb2.Put(ctx, name('a'), []byte("x")); !errors.Is(err, anywhere.ErrRelaySecret) || !strings.Contains(err.Error(), "has no relay secret") {
		t.Errorf("a device with a secret, a relay without: %v", err)
	}
	if _, err := Start(Config{Listen: "127.0.0.1:0", Secret: "short"}); err == nil {
		t.Error("a short secret was taken")
	}
}

// TestTURNAllocationsPerSource: one source address holds at most
// AllocationsPerSource allocations; a freed one makes room.
func TestTURNAllocationsPerSource(t *testing.T) {
	t.Parallel()
	r, err := Start(Config{Listen: "127.0.0.1:0", Limits: Limits{AllocationsPerSource: 2}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	addr := r.Addr().String()
	var held []net.PacketConn
	for i := range 2 {
		a, err := allocate(t, addr, anywhere.TURNUser, anywhere.TURNPassword)
		if err != nil {
			t.Fatalf("allocation %d: %v", i, err)
		}
		held = append(held, a)
	}
	testutil.WaitFor(t, "two allocations counted", func() bool { return r.quota.held() == 2 })
	if a, err := allocate(t, addr, anywhere.TURNUser, anywhere.TURNPassword); err == nil {
		a.Close()
		t.Fatal("a third allocation from one source")
	}
	held[0].Close() // deallocates (a refresh of lifetime 0)
	testutil.WaitFor(t, "the freed allocation uncounted", func() bool { return r.quota.held() == 1 })
	a, err := allocate(t, addr, anywhere.TURNUser, anywhere.TURNPassword)
	if err != nil {
		t.Fatalf("after one was freed: %v", err)
	}
	a.Close()
	held[1].Close()
}

// TestTURNAllocationOfAVanishedDeviceEnds: an allocation whose device
// vanished without giving it back (killed: its socket gone, no refresh
// of lifetime 0 sent) ends once its lifetime (Limits.AllocationLifetime)
// runs out, so that it frees its place in the per-source bound, while an
// allocation older than it, whose device is still there, is refreshed
// and still relays. With pion's lifetime (10 minutes) the first wait
// times out.
func TestTURNAllocationOfAVanishedDeviceEnds(t *testing.T) {
	t.Parallel()
	r, err := Start(Config{Listen: "127.0.0.1:0", AllowLoopbackPeers: true, Limits: Limits{AllocationLifetime: 2 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	addr := r.Addr().String()
	live, err := allocate(t, addr, anywhere.TURNUser, anywhere.TURNPassword)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	sock, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := allocateOn(t, sock, addr, anywhere.TURNUser, anywhere.TURNPassword); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, "two allocations counted", func() bool { return r.quota.held() == 2 })
	sock.Close() // the device vanishes
	testutil.WaitFor(t, "the vanished device's allocation ended", func() bool { return r.quota.held() == 1 })

	// The one left is the live one, allocated first and so older than a
	// lifetime by now: it was refreshed, and relays.
	peer, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	if _, err := live.WriteTo([]byte("still here"), peer.LocalAddr()); err != nil {
		t.Fatalf("the live allocation: %v", err)
	}
	peer.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 64)
	if n, _, err := peer.ReadFrom(buf); err != nil || string(buf[:n]) != "still here" {
		t.Fatalf("the live allocation relayed %q, %v", buf[:n], err)
	}
}

// TestTURNRelaysOnlyToDevices: an allocation may send to a device's
// address, never to one that names the relay's own host or its network's
// services (loopback, a cloud's metadata service at 169.254.169.254,
// multicast, broadcast): whoever holds the relay secret could otherwise
// reach what listens there. Each refusal is logged (bounded).
func TestTURNRelaysOnlyToDevices(t *testing.T) {
	t.Parallel()
	var logged bytes.Buffer
	var mu sync.Mutex
	r, err := Start(Config{Listen: "127.0.0.1:0", Secret: testSecret, Log: slog.New(slog.NewTextHandler(&lockedWriter{w: &logged, mu: &mu}, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	u, p, err := turn.GenerateLongTermTURNRESTCredentials(testSecret, "ferry", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	alloc, err := allocate(t, r.Addr().String(), u, p)
	if err != nil {
		t.Fatal(err)
	}
	defer alloc.Close()
	type peerCase struct {
		peer string
		ok   bool
	}
	cases := []peerCase{
		{"127.0.0.1:6379", false},
		{"127.8.9.10:22", false},
		{"169.254.169.254:80", false},
		{"0.0.0.0:9", false},
		{"224.0.0.251:5353", false},
		{"255.255.255.255:9", false},
		{"203.0.113.7:47800", true},
		{"192.168.1.20:47800", true}, // a device behind the same NAT as the relay (a home server)
	}
	if own := hostAddr(t); own.IsValid() {
		// The host's own address reaches its services as loopback does.
		cases = append(cases, peerCase{netip.AddrPortFrom(own, 5432).String(), false})
	}
	for _, c := range cases {
		_, err := alloc.WriteTo([]byte("x"), net.UDPAddrFromAddrPort(netip.MustParseAddrPort(c.peer)))
		if c.ok && err != nil {
			t.Errorf("to %s: %v; want it relayed", c.peer, err)
		}
		if !c.ok && err == nil {
			t.Errorf("to %s: relayed", c.peer)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(logged.String(), "refused to relay to an address that is not a device's") {
		t.Errorf("the refusals are not logged: %s", logged.String())
	}
}

// hostAddr is an address of this host's interfaces other than loopback
// (none: the zero Addr).
func hostAddr(t *testing.T) netip.Addr {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, ia := range addrs {
		if n, ok := ia.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			a, _ := netip.AddrFromSlice(n.IP.To4())
			return a
		}
	}
	return netip.Addr{}
}

// lockedWriter serialises a log's writes for a test that reads it.
type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

func TestPeerRefusal(t *testing.T) {
	for ip, refused := range map[string]bool{
		"127.0.0.1": true, "::1": true, "::ffff:127.0.0.1": true, "0.0.0.0": true, "0.1.2.3": true, "::": true,
		"169.254.169.254": true, "fe80::1": true, "::ffff:169.254.169.254": true,
		"224.0.0.251": true, "ff02::fb": true, "239.255.255.250": true, "255.255.255.255": true,
		"203.0.113.7": false, "10.0.0.2": false, "192.168.1.20": false, "2001:db8::1": false, "fd00::20": false,
	} {
		if got := peerRefusal(net.ParseIP(ip), false) != ""; got != refused {
			t.Errorf("%s refused = %v, want %v", ip, got, refused)
		}
	}
	if why := peerRefusal(net.ParseIP("127.0.0.1"), true); why != "" {
		t.Errorf("loopback with AllowLoopbackPeers refused: %s", why)
	}
	if why := peerRefusal(nil, true); why == "" {
		t.Error("no address taken")
	}
}

// TestMailboxWait: a wait on names that hold nothing is held until a blob
// is queued under one of them (then answered with it) or Limits.Wait
// passed (empty), or its request ends; a source holds at most
// WaitsPerSource, the relay Waits: beyond, a wait is answered at once.
func TestMailboxWait(t *testing.T) {
	m := NewMailbox(Limits{Wait: time.Hour, WaitsPerSource: 2, Waits: 3})
	type reply struct {
		out []byte
		err error
	}
	wait := func(ctx context.Context, source string, names ...string) chan reply {
		c := make(chan reply, 1)
		go func() { c <- reply{m.wait(ctx, names, source), nil} }()
		return c
	}
	held := func(n int) {
		t.Helper()
		testutil.WaitFor(t, fmt.Sprintf("%d waits held", n), func() bool { return m.Waiting() == n })
	}
	got := func(c chan reply) []byte {
		t.Helper()
		select {
		case r := <-c:
			return r.out
		case <-time.After(10 * time.Second):
			t.Fatal("a wait was not answered")
			return nil
		}
	}
	ctx := t.Context()
	first := wait(ctx, "a", name('a'), name('b'))
	held(1)
	if err := m.put(name('b'), "c", []byte("call"), true); err != nil {
		t.Fatal(err)
	}
	recs, err := anywhere.DecodeRecords(got(first), 2)
	if err != nil || len(recs[1]) != 1 || string(recs[1][0]) != "call" {
		t.Fatalf("the woken wait: %q %v", recs, err)
	}
	held(0)
	if m.Held() != 0 {
		t.Errorf("the blob it took is still held (%d)", m.Held())
	}

	// Queued already: answered at once.
	m.put(name('c'), "c", []byte("early"), true)
	if recs, _ := anywhere.DecodeRecords(got(wait(ctx, "a", name('c'))), 1); len(recs[0]) != 1 {
		t.Errorf("a wait for what was queued: %q", recs)
	}

	// Bounds: two per source, three in all.
	cctx, cancel := context.WithCancel(ctx)
	a1, a2 := wait(cctx, "a", name('d')), wait(cctx, "a", name('d'))
	held(2)
	if out := got(wait(cctx, "a", name('d'))); len(out) != 0 {
		t.Errorf("a third wait of a source: %q", out)
	}
	b1 := wait(cctx, "b", name('e'))
	held(3)
	if out := got(wait(cctx, "c", name('e'))); len(out) != 0 {
		t.Errorf("a wait beyond the relay's bound: %q", out)
	}
	// A request that ends (its client went away) takes nothing.
	cancel()
	for _, c := range []chan reply{a1, a2, b1} {
		if out := got(c); len(out) != 0 {
			t.Errorf("an ended wait answered %q", out)
		}
	}
	held(0)
	m.put(name('e'), "c", []byte("later"), true)
	if m.Held() != 1 {
		t.Errorf("held %d, want the blob queued after", m.Held())
	}

	// Held up to Limits.Wait, then empty.
	short := NewMailbox(Limits{Wait: 50 * time.Millisecond})
	if out := short.wait(ctx, []string{name('f')}, "a"); len(out) != 0 || short.Waiting() != 0 {
		t.Errorf("an expired wait: %q, %d held", out, short.Waiting())
	}
}

// TestMailboxWaitOverHTTP: a device's Mailbox.Wait is held by the relay
// and answered with the blob another device pushes meanwhile.
func TestMailboxWaitOverHTTP(t *testing.T) {
	t.Parallel()
	r, err := Start(Config{Listen: "127.0.0.1:0", Secret: testSecret, Limits: Limits{Wait: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	callee := anywhere.NewMailbox(r.Addr().String(), testSecret)
	defer callee.Close()
	caller := anywhere.NewMailbox(r.Addr().String(), testSecret)
	defer caller.Close()
	done := make(chan [][][]byte, 1)
	go func() {
		got, err := callee.Wait(t.Context(), []string{name('a')})
		if err != nil {
			t.Error(err)
		}
		done <- got
	}()
	testutil.WaitFor(t, "the wait held", func() bool { return r.box.Waiting() == 1 })
	if err := caller.Push(t.Context(), name('a'), []byte("call")); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-done:
		if len(got) != 1 || len(got[0]) != 1 || string(got[0][0]) != "call" {
			t.Fatalf("the wait got %q", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the wait was not answered when the call came")
	}
}

// TestRelayPairOfTwoDevicesIsNoWarning: ICE pairs the two devices' relay
// candidates in every call through the relay, so an allocation asks to
// send to another allocation, at the relay's own address. That is refused
// (the relay's own host) but is ordinary use: logged at debug level, not
// as the warning the operator saw once a minute.
func TestRelayPairOfTwoDevicesIsNoWarning(t *testing.T) {
	t.Parallel()
	var logged bytes.Buffer
	var mu sync.Mutex
	log := slog.New(slog.NewTextHandler(&lockedWriter{w: &logged, mu: &mu}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	// The public address is a documentation one: nothing is sent there.
	r, err := Start(Config{Listen: "127.0.0.1:0", PublicIP: "203.0.113.1", Secret: testSecret, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	u, p, err := turn.GenerateLongTermTURNRESTCredentials(testSecret, "ferry", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	var allocs [2]net.PacketConn
	for i := range allocs {
		if allocs[i], err = allocate(t, r.Addr().String(), u, p); err != nil {
			t.Fatal(err)
		}
		defer allocs[i].Close()
	}
	if _, err := allocs[0].WriteTo([]byte("x"), allocs[1].LocalAddr()); err == nil {
		t.Errorf("relayed to another allocation, %s", allocs[1].LocalAddr())
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(logged.String(), "level=DEBUG msg=\"relay: refused to relay") || strings.Contains(logged.String(), "level=WARN") {
		t.Errorf("the pair of two relay candidates is not said at debug level alone:\n%s", logged.String())
	}
}

// TestMailboxUnwatched: the relay says how long no one looked at a name
// (took or waited for its blobs), which a caller asks of the call box its
// call would go to: a receiver killed stops looking at once, while its
// presence stays two minutes. 0 while a wait is held; a wait whose client
// went away (a process killed: its system closes the connection) says so;
// for a name never looked at, what the relay can vouch for (since it
// started, a minute at most); and nothing vouched for once its bounds
// left a look unnoted.
func TestMailboxUnwatched(t *testing.T) {
	m := NewMailbox(Limits{Wait: time.Hour, LooksPerSource: 3, Looks: 4})
	now := time.Unix(1000, 0)
	m.now = func() time.Time { return now }
	m.started = now
	say := func(what string, names []string, want ...time.Duration) []anywhere.Unwatched {
		t.Helper()
		got := m.Unwatched(names)
		fors := make([]time.Duration, len(got))
		for i, u := range got {
			fors[i] = u.For
		}
		if !slices.Equal(fors, want) {
			t.Errorf("%s: %v, want %v", what, fors, want)
		}
		return got
	}
	a, b, c := name('a'), name('b'), name('c')
	say("a relay just started", []string{a}, 0)
	now = now.Add(20 * time.Second)
	say("never looked at", []string{a, b}, 20*time.Second, 20*time.Second)
	m.Handle(http.MethodPost, anywhere.PathQueues, "r", anywhere.EncodeNames([]string{a}))
	now = now.Add(5 * time.Second)
	say("taken 5 s ago", []string{a, b}, 5*time.Second, 25*time.Second)
	// A held wait: 0 while held, then from its end.
	held := func(ctx context.Context) chan struct{} {
		done := make(chan struct{})
		go func() { m.wait(ctx, []string{a, b}, "r"); close(done) }()
		testutil.WaitFor(t, "the wait held", func() bool { return m.Waiting() == 1 })
		return done
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := held(ctx)
	now = now.Add(time.Minute)
	say("a wait held", []string{a, b, c}, 0, 0, time.Minute)
	cancel() // the receiver killed: its connection ends the wait
	<-done
	now = now.Add(12 * time.Second)
	if got := say("12 s after the wait was dropped", []string{a, b}, 12*time.Second, 12*time.Second); !got[0].Dropped || !got[1].Dropped {
		t.Errorf("a dropped wait is not said: %+v", got)
	}
	// Reading a slot is no look (a caller's question is not a receiver).
	m.Handle(http.MethodPost, anywhere.PathSlots, "s", anywhere.EncodeNames([]string{a}))
	say("after a read of the slot", []string{a}, 12*time.Second)
	// A wait that ends as the relay answers it is no drop.
	short := NewMailbox(Limits{Wait: time.Millisecond})
	short.wait(t.Context(), []string{a}, "r")
	if got := short.Unwatched([]string{a}); got[0].Dropped {
		t.Errorf("a wait answered reads as dropped: %+v", got)
	}
	// A look is remembered LookMemory, then the name reads as never looked at.
	now = now.Add(2 * time.Minute)
	if got := say("forgotten", []string{a}, time.Minute); got[0].Dropped {
		t.Errorf("a forgotten look still says dropped: %+v", got)
	}

	// Bounds: a source's looks beyond LooksPerSource, or beyond Looks
	// in all, are not noted, and from then the relay vouches for no
	// silence of a name without a look until LookMemory passed.
	m.Handle(http.MethodPost, anywhere.PathQueues, "r", anywhere.EncodeNames([]string{a, b, c}))
	now = now.Add(10 * time.Second)
	say("three looks of one source", []string{a, b, c, name('d')}, 10*time.Second, 10*time.Second, 10*time.Second, time.Minute)
	m.Handle(http.MethodPost, anywhere.PathQueues, "r", anywhere.EncodeNames([]string{name('d')}))
	now = now.Add(10 * time.Second)
	say("a fourth look of that source, unnoted", []string{a, name('d'), name('e')}, 20*time.Second, 10*time.Second, 10*time.Second)
	m.Handle(http.MethodPost, anywhere.PathQueues, "s", anywhere.EncodeNames([]string{name('e'), name('f')}))
	now = now.Add(time.Second)
	say("over Looks in all", []string{name('e'), name('f')}, time.Second, time.Second)
	now = now.Add(2 * time.Minute)
	say("all forgotten, a minute vouched for again", []string{a, name('f')}, time.Minute, time.Minute)
}

// TestMailboxUnwatchedOverHTTP: a read of slots carries
// anywhere.HeaderUnwatched, which the device's Mailbox reads.
func TestMailboxUnwatchedOverHTTP(t *testing.T) {
	t.Parallel()
	r, err := Start(Config{Listen: "127.0.0.1:0", Secret: testSecret})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	mb := anywhere.NewMailbox(r.Addr().String(), testSecret)
	defer mb.Close()
	r.box.mu.Lock()
	r.box.started = r.box.started.Add(-time.Hour) // up long enough to vouch for a minute
	r.box.mu.Unlock()
	if _, err := mb.Take(t.Context(), []string{name('a')}); err != nil {
		t.Fatal(err)
	}
	_, unwatched, err := mb.GetUnwatched(t.Context(), []string{name('a'), name('b')})
	if err != nil {
		t.Fatal(err)
	}
	if len(unwatched) != 2 || unwatched[0].For >= time.Minute || unwatched[1].For != time.Minute {
		t.Errorf("unwatched %v, want a little and a minute", unwatched)
	}
}
