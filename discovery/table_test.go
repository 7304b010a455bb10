package discovery

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/ferrydrop/ferry/engine/addr"
	"github.com/ferrydrop/ferry/internal/clock"
)

// newTestDiscovery returns a Discovery on a fake clock that moves only
// when the test moves it.
func newTestDiscovery(t *testing.T, opts Options) (*Discovery, *clock.Fake) {
	t.Helper()
	clk := clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	opts.Clock = clk
	d, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	d.setInterfaces(nil)
	return d, clk
}

// idN returns a valid, distinct device ID for n.
func idN(n int) string {
	s := fmt.Sprintf("%08d", n)
	s = strings.Map(func(r rune) rune { return 'A' + (r - '0') }, s)
	return s + strings.Repeat("Q", IDLen-len(s))
}

// announcement builds the response a zeroconf responder sends to a browse.
func announcement(label, id, host string, ttl uint32, addrs ...string) *dns.Msg {
	inst := label + "." + serviceFQDN
	m := new(dns.Msg)
	m.Response = true
	m.Answer = []dns.RR{&dns.PTR{Hdr: dns.RR_Header{Name: serviceFQDN, Rrtype: dns.TypePTR, Class: dns.ClassINET, Ttl: ttl}, Ptr: inst}}
	m.Extra = []dns.RR{
		&dns.SRV{Hdr: dns.RR_Header{Name: inst, Rrtype: dns.TypeSRV, Class: dns.ClassINET, Ttl: ttl}, Port: 4242, Target: host},
		&dns.TXT{Hdr: dns.RR_Header{Name: inst, Rrtype: dns.TypeTXT, Class: dns.ClassINET, Ttl: ttl},
			Txt: []string{"v=1", "id=" + id, "q=4242", "t=4243", "os=linux", "n=" + label}},
	}
	for _, a := range addrs {
		ip := net.ParseIP(a)
		if ip.To4() != nil {
			m.Extra = append(m.Extra, &dns.A{Hdr: dns.RR_Header{Name: host, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: ttl}, A: ip})
		} else {
			m.Extra = append(m.Extra, &dns.AAAA{Hdr: dns.RR_Header{Name: host, Rrtype: dns.TypeAAAA, Class: dns.ClassINET, Ttl: ttl}, AAAA: ip})
		}
	}
	return m
}

func recv(t *testing.T, ch <-chan Event) Event {
	t.Helper()
	select {
	case e := <-ch:
		return e
	default:
		t.Fatal("no event")
		return Event{}
	}
}

func noEvent(t *testing.T, ch <-chan Event) {
	t.Helper()
	select {
	case e := <-ch:
		t.Fatalf("unexpected event %s %s (%s)", e.Kind, e.Peer.Name, e.Reason)
	default:
	}
}

func TestAppearChangeExpire(t *testing.T) {
	d, clk := newTestDiscovery(t, Options{QueryInterval: 5 * time.Second})
	ev, cancel := d.Subscribe(16)
	defer cancel()
	d.handleMessage(announcement("Desk", idN(1), "h1.local.", 3200, "192.0.2.7"), 0, netip.Addr{})
	e := recv(t, ev)
	if e.Kind != PeerAppeared || e.Peer.Name != "Desk" || e.Peer.ID != idN(1) || e.Peer.Source != SourceMDNS {
		t.Fatalf("event %+v", e)
	}
	if got := hostPorts(e.Peer, addr.QUIC); !slices.Equal(got, []string{"192.0.2.7:4242"}) {
		t.Fatalf("QUIC addresses = %v", got)
	}
	if got := hostPorts(e.Peer, addr.TCP); !slices.Equal(got, []string{"192.0.2.7:4243"}) {
		t.Fatalf("TCP addresses = %v", got)
	}
	// The same announcement again changes nothing but refreshes the peer.
	clk.Advance(10 * time.Second)
	d.handleMessage(announcement("Desk", idN(1), "h1.local.", 3200, "192.0.2.7"), 0, netip.Addr{})
	noEvent(t, ev)
	// A new address is a change; sightings merge (Avahi sends A and AAAA
	// in separate packets).
	clk.Advance(5 * time.Second)
	d.handleMessage(announcement("Desk", idN(1), "h1.local.", 3200, "192.0.2.8"), 0, netip.Addr{})
	if e := recv(t, ev); e.Kind != PeerChanged || fmt.Sprint(e.Peer.Addrs) != "[192.0.2.7 192.0.2.8]" {
		t.Fatalf("event %+v", e)
	}
	// .7 was last heard 16 s ago (PeerTTL): it goes, .8 stays.
	clk.Advance(11 * time.Second)
	d.expire()
	if e := recv(t, ev); e.Kind != PeerChanged || fmt.Sprint(e.Peer.Addrs) != "[192.0.2.8]" {
		t.Fatalf("event %+v", e)
	}
	// Not heard for PeerTTL (16 s by default here): expired, even though the
	// record TTL was 3200 s.
	clk.Advance(4 * time.Second)
	d.expire()
	noEvent(t, ev)
	clk.Advance(2 * time.Second)
	d.expire()
	if e := recv(t, ev); e.Kind != PeerGone || e.Reason != "expired" {
		t.Fatalf("event %+v", e)
	}
	if len(d.Peers()) != 0 {
		t.Fatal("peer still listed")
	}
}

func TestRecordTTLShorterThanPeerTTL(t *testing.T) {
	d, clk := newTestDiscovery(t, Options{})
	d.handleMessage(announcement("Desk", idN(1), "h1.local.", 3, "192.0.2.7"), 0, netip.Addr{})
	clk.Advance(3 * time.Second)
	d.expire()
	if len(d.Peers()) != 0 {
		t.Fatal("peer outlived its record TTL")
	}
}

func TestGoodbye(t *testing.T) {
	d, clk := newTestDiscovery(t, Options{})
	ev, cancel := d.Subscribe(16)
	defer cancel()
	d.handleMessage(announcement("Desk", idN(1), "h1.local.", 120, "192.0.2.7"), 0, netip.Addr{})
	d.handleMessage(announcement("Desk", idN(2), "h2.local.", 120, "192.0.2.9"), 0, netip.Addr{})
	recv(t, ev)
	recv(t, ev)
	// zeroconf's goodbye: every record with TTL 0, TXT included. The peer
	// goes after a grace second unless it is announced again.
	d.handleMessage(announcement("Desk", idN(1), "h1.local.", 0, "192.0.2.7"), 0, netip.MustParseAddr("192.0.2.7"))
	d.expire()
	noEvent(t, ev)
	clk.Advance(goodbyeGrace)
	d.expire()
	if e := recv(t, ev); e.Kind != PeerGone || e.Reason != "goodbye" || e.Peer.ID != idN(1) {
		t.Fatalf("event %+v", e)
	}
	noEvent(t, ev)
	// A bare PTR goodbye (as Avahi sends) matched by name and sender address.
	d.handleMessage(announcement("Desk", idN(3), "h3.local.", 120, "192.0.2.10"), 0, netip.Addr{})
	recv(t, ev)
	bye := new(dns.Msg)
	bye.Response = true
	bye.Answer = []dns.RR{&dns.PTR{Hdr: dns.RR_Header{Name: serviceFQDN, Rrtype: dns.TypePTR, Class: dns.ClassINET}, Ptr: "Desk." + serviceFQDN}}
	d.handleMessage(bye, 0, netip.MustParseAddr("192.0.2.10"))
	clk.Advance(goodbyeGrace)
	d.expire()
	if e := recv(t, ev); e.Kind != PeerGone || e.Peer.ID != idN(3) {
		t.Fatalf("event %+v", e)
	}
	noEvent(t, ev)
	if ps := d.Peers(); len(ps) != 1 || ps[0].ID != idN(2) {
		t.Fatalf("peers %+v", ps)
	}
}

// TestGoodbyeThenReannounce: a rename re-registers (goodbye for the old
// instance, announcement of the new one): one change event, no flicker.
func TestGoodbyeThenReannounce(t *testing.T) {
	d, clk := newTestDiscovery(t, Options{})
	ev, cancel := d.Subscribe(16)
	defer cancel()
	d.handleMessage(announcement("Old", idN(1), "h1.local.", 120, "192.0.2.7"), 0, netip.Addr{})
	recv(t, ev)
	d.handleMessage(announcement("Old", idN(1), "h1.local.", 0, "192.0.2.7"), 0, netip.Addr{})
	clk.Advance(300 * time.Millisecond)
	d.handleMessage(announcement("New", idN(1), "h1.local.", 120, "192.0.2.7"), 0, netip.Addr{})
	clk.Advance(goodbyeGrace)
	d.expire()
	if e := recv(t, ev); e.Kind != PeerChanged || e.Peer.Name != "New" {
		t.Fatalf("event %+v", e)
	}
	noEvent(t, ev)
}

func TestOwnIDExcluded(t *testing.T) {
	d, _ := newTestDiscovery(t, Options{SelfID: strings.ToLower(idN(7))})
	d.handleMessage(announcement("Me", idN(7), "me.local.", 120, "192.0.2.7"), 0, netip.Addr{})
	if ps := d.Peers(); len(ps) != 0 {
		t.Fatalf("own advertisement listed: %+v", ps)
	}
}

func TestDuplicateNamesAndResolve(t *testing.T) {
	d, _ := newTestDiscovery(t, Options{})
	d.handleMessage(announcement("Laptop", idN(1), "h1.local.", 120, "192.0.2.1"), 0, netip.Addr{})
	d.handleMessage(announcement("Laptop", idN(2), "h2.local.", 120, "192.0.2.2"), 0, netip.Addr{})
	d.handleMessage(announcement("Phone", idN(3), "h3.local.", 120, "192.0.2.3"), 0, netip.Addr{})
	if n := len(d.Peers()); n != 3 {
		t.Fatalf("%d peers, want 3 (same name, different IDs are distinct)", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := d.Resolve(ctx, "laptop")
	if !errors.Is(err, ErrAmbiguous) || !strings.Contains(err.Error(), idN(1)[:4]+"-"+idN(1)[4:8]) || !strings.Contains(err.Error(), idN(2)[:4]+"-"+idN(2)[4:8]) {
		t.Fatalf("Resolve(laptop) error = %v, want ambiguity listing both", err)
	}
	for q, want := range map[string]string{
		"PHONE": idN(3),
		idN(2):  idN(2),
		strings.ToLower(idN(2)[:4]) + "-" + idN(2)[4:8]: idN(2),
	} {
		p, err := d.Resolve(ctx, q)
		if err != nil || p.ID != want {
			t.Errorf("Resolve(%q) = %s, %v; want %s", q, p.ID, err, want)
		}
	}
	if _, err := d.Resolve(ctx, "BAA"); !errors.Is(err, ErrNotFound) {
		t.Errorf("3-character prefix: %v, want ErrNotFound", err)
	}
	if _, err := d.Resolve(ctx, "nobody"); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown: %v", err)
	}
}

func TestResolveWaitsForDiscovery(t *testing.T) {
	d, _ := newTestDiscovery(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res := make(chan error, 1)
	go func() {
		_, err := d.Resolve(ctx, "Late")
		res <- err
	}()
	// Keep announcing until the waiting Resolve has subscribed and seen it.
	for {
		d.handleMessage(announcement("Other", idN(9), "h9.local.", 120, "192.0.2.9"), 0, netip.Addr{})
		d.handleMessage(announcement("Late", idN(1), "h1.local.", 120, "192.0.2.1"), 0, netip.Addr{})
		select {
		case err := <-res:
			if err != nil {
				t.Fatal(err)
			}
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func TestFloodIsBounded(t *testing.T) {
	d, clk := newTestDiscovery(t, Options{MaxPeers: 32})
	ev, cancel := d.Subscribe(4)
	defer cancel()
	for i := 0; i < 2000; i++ {
		clk.Advance(time.Millisecond)
		d.handleMessage(announcement(fmt.Sprintf("fake%d", i), idN(i), fmt.Sprintf("h%d.local.", i), 120, "192.0.2.1"), 0, netip.Addr{})
	}
	ps := d.Peers()
	if len(ps) != 32 {
		t.Fatalf("%d peers, want 32", len(ps))
	}
	for _, p := range ps { // the newest survive
		var n int
		fmt.Sscanf(p.Name, "fake%d", &n)
		if n < 2000-32 {
			t.Fatalf("old peer %s survived", p.Name)
		}
	}
	st := d.Stats()
	if st.Evicted != 2000-32 || st.EventsLost == 0 {
		t.Fatalf("stats %+v", st)
	}
	// The slow subscriber learns it lost events once it drains.
	for range 4 {
		<-ev
	}
	d.handleMessage(announcement("fresh", idN(5000), "h.local.", 120, "192.0.2.1"), 0, netip.Addr{})
	if e := recv(t, ev); e.Kind != EventsLost {
		t.Fatalf("want EventsLost, got %s", e.Kind)
	}
}

func TestHostileMessages(t *testing.T) {
	d, _ := newTestDiscovery(t, Options{MaxPeers: 8})
	m := announcement("Many", idN(1), "h1.local.", 120)
	for i := 0; i < 100; i++ {
		m.Extra = append(m.Extra, &dns.A{Hdr: dns.RR_Header{Name: "h1.local.", Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 120},
			A: net.IPv4(10, 0, byte(i), 1)})
	}
	d.handleMessage(m, 0, netip.Addr{})
	ps := d.Peers()
	if len(ps) != 1 || len(ps[0].Addrs) != maxAddrs {
		t.Fatalf("peers %+v", ps)
	}
	// Loopback, multicast, unspecified and zone-less link-local addresses are dropped.
	d.handleMessage(announcement("Odd", idN(2), "h2.local.", 120, "127.0.0.1", "224.0.0.1", "0.0.0.0", "fe80::1", "192.0.2.5"), 0, netip.Addr{})
	p, err := resolveIn(d.Peers(), "Odd")
	if err != nil || len(p.Addrs) != 1 || p.Addrs[0].String() != "192.0.2.5" {
		t.Fatalf("Odd = %+v, %v", p, err)
	}
	// An instance none of whose addresses can be dialled is not listed
	// (it took a place in the table, evicting the oldest peer, until
	// 2026-12-06): it is asked again for its addresses.
	if q := d.handleMessage(announcement("Nowhere", idN(4), "h4.local.", 120, "127.0.0.1", "fe80::9"), 0, netip.Addr{}); q == nil {
		t.Error("no follow-up query for an instance without a usable address")
	}
	if p, err := resolveIn(d.Peers(), "Nowhere"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Nowhere listed: %+v, %v", p, err)
	}
	// Invalid TXT is counted and ignored.
	bad := announcement("Bad", idN(3), "h3.local.", 120, "192.0.2.3")
	bad.Extra[1].(*dns.TXT).Txt = []string{"v=1", "id=nope", "q=1"}
	d.handleMessage(bad, 0, netip.Addr{})
	if _, err := resolveIn(d.Peers(), "Bad"); !errors.Is(err, ErrNotFound) || d.Stats().BadTXT != 1 {
		t.Fatalf("bad TXT accepted: %v %+v", err, d.Stats())
	}
}

func TestIncompleteAnnouncementAsksFollowUp(t *testing.T) {
	d, _ := newTestDiscovery(t, Options{})
	m := announcement("Half", idN(1), "h1.local.", 120) // no addresses
	q := d.handleMessage(m, 0, netip.Addr{})
	if q == nil || len(q.Question) == 0 {
		t.Fatal("no follow-up query for an instance without addresses")
	}
	var types []uint16
	for _, qq := range q.Question {
		types = append(types, qq.Qtype)
	}
	if !slices.Contains(types, dns.TypeA) || !slices.Contains(types, dns.TypeAAAA) {
		t.Fatalf("follow-up asks %v", types)
	}
	if d.handleMessage(m, 0, netip.Addr{}) != nil {
		t.Fatal("follow-up repeated within a second")
	}
	if len(d.Peers()) != 0 {
		t.Fatal("incomplete peer listed")
	}
}

func TestLinkLocalZoneAndOrdering(t *testing.T) {
	d, _ := newTestDiscovery(t, Options{})
	d.mu.Lock()
	d.ifNames = map[int]string{3: "eth0"}
	d.localNets = []netip.Prefix{netip.MustParsePrefix("192.168.1.0/24")}
	d.mu.Unlock()
	d.handleMessage(announcement("Z", idN(1), "h1.local.", 120, "fe80::1", "2001:db8::1", "10.9.9.9", "192.168.1.20"), 3, netip.Addr{})
	ps := d.Peers()
	if len(ps) != 1 {
		t.Fatal("no peer")
	}
	var got []string
	for _, a := range ps[0].Addrs {
		got = append(got, a.String())
	}
	want := []string{"192.168.1.20", "10.9.9.9", "2001:db8::1", "fe80::1%eth0"}
	if !slices.Equal(got, want) {
		t.Fatalf("addrs %v, want %v", got, want)
	}
	if da := hostPorts(ps[0], addr.QUIC); da[3] != "[fe80::1%eth0]:4242" {
		t.Fatalf("QUIC addresses %v", da)
	}
}

func TestReportMismatch(t *testing.T) {
	d, _ := newTestDiscovery(t, Options{})
	ev, cancel := d.Subscribe(16)
	defer cancel()
	d.handleMessage(announcement("Victim", idN(1), "h1.local.", 120, "192.0.2.1", "192.0.2.2"), 0, netip.Addr{})
	recv(t, ev)
	d.ReportMismatch(idN(1), idN(66), "192.0.2.1:4242")
	e := recv(t, ev)
	if e.Kind != PeerRefused || e.Peer.Refused || !slices.Equal(hostPorts(e.Peer, addr.QUIC), []string{"192.0.2.2:4242"}) {
		t.Fatalf("after first mismatch: %+v", e)
	}
	// Re-announcing does not bring the refused address back.
	d.handleMessage(announcement("Victim", idN(1), "h1.local.", 120, "192.0.2.1", "192.0.2.2"), 0, netip.Addr{})
	noEvent(t, ev)
	d.ReportMismatch(idN(1), idN(66), "192.0.2.2:4242")
	e = recv(t, ev)
	if e.Kind != PeerRefused || !e.Peer.Refused || hostPorts(e.Peer, addr.QUIC) != nil || !strings.Contains(e.Reason, idN(66)[:4]+"-"+idN(66)[4:8]) {
		t.Fatalf("after second mismatch: %+v", e)
	}
	if _, err := d.Resolve(context.Background(), "Victim"); !errors.Is(err, ErrRefused) {
		t.Fatalf("Resolve refused peer: %v", err)
	}
}

func TestRememberedAndManual(t *testing.T) {
	var mu sync.Mutex
	answers := map[string][2]string{ // addr -> id, name
		"192.0.2.50:7000": {idN(50), "Remote"},
		"192.0.2.60:7000": {idN(99), "Impostor"},
		"192.0.2.70:7000": {idN(70), "Manual"},
	}
	prober := func(ctx context.Context, addr string) (string, string, error) {
		mu.Lock()
		defer mu.Unlock()
		a, ok := answers[addr]
		if !ok {
			return "", "", errors.New("timeout")
		}
		return a[0], a[1], nil
	}
	d, clk := newTestDiscovery(t, Options{
		Prober: prober,
		Remembered: func() []Remembered {
			return []Remembered{
				{ID: idN(50), Name: "Remote", Addrs: []string{"192.0.2.49:7000", "192.0.2.50:7000"}},
				{ID: idN(60), Name: "Moved", Addrs: []string{"192.0.2.60:7000"}},
			}
		},
	})
	ctx := context.Background()
	d.probeRound(ctx)
	ps := d.Peers()
	if len(ps) != 1 || ps[0].ID != idN(50) || ps[0].Source != SourceRemembered || hostPorts(ps[0], addr.QUIC)[0] != "192.0.2.50:7000" {
		t.Fatalf("after probing: %+v", ps)
	}
	p, err := d.AddManual(ctx, "192.0.2.70:7000")
	if err != nil || p.Source != SourceManual || p.Name != "Manual" {
		t.Fatalf("AddManual = %+v, %v", p, err)
	}
	if _, err := d.AddManual(ctx, "192.0.2.71:7000"); err == nil {
		t.Fatal("AddManual of a silent address succeeded")
	}
	if _, err := d.AddManual(ctx, "no-port"); err == nil {
		t.Fatal("AddManual without port succeeded")
	}
	// mDNS sighting takes over as the source but keeps the proven address.
	d.handleMessage(announcement("Remote", idN(50), "h50.local.", 120, "192.0.2.51"), 0, netip.Addr{})
	p, _ = resolveIn(d.Peers(), idN(50))
	if p.Source != SourceMDNS || hostPorts(p, addr.QUIC)[0] != "192.0.2.50:7000" {
		t.Fatalf("merged peer %+v", p)
	}
	// Nothing answers any more: probed peers expire after 3 intervals.
	mu.Lock()
	clear(answers)
	mu.Unlock()
	clk.Advance(46 * time.Second)
	d.probeRound(ctx)
	d.expire()
	if ps := d.Peers(); len(ps) != 0 {
		t.Fatalf("stale peers %+v", ps)
	}
}

func TestSubscribeCancel(t *testing.T) {
	d, _ := newTestDiscovery(t, Options{})
	ch, cancel := d.Subscribe(1)
	cancel()
	cancel()
	if _, ok := <-ch; ok {
		t.Fatal("channel open after cancel")
	}
	d.handleMessage(announcement("X", idN(1), "h.local.", 120, "192.0.2.1"), 0, netip.Addr{})
}

// TestNoFyneOrEngine keeps the layering: discovery never imports the GUI
// toolkit or the engine; of the engine's packages it uses only leaves that
// import nothing of Ferry's (addresses, peer IDs, the LocalSend protocol).
func TestNoFyneOrEngine(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Skipf("go list unavailable: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		engine := dep == "github.com/ferrydrop/ferry/engine" || strings.HasPrefix(dep, "github.com/ferrydrop/ferry/engine/")
		leaf := slices.Contains([]string{"addr", "peer", "localsend"}, strings.TrimPrefix(dep, "github.com/ferrydrop/ferry/engine/"))
		if strings.HasPrefix(dep, "fyne.io/") || engine && !leaf {
			t.Errorf("discovery depends on %s", dep)
		}
	}
}

// FuzzHandleMessage feeds arbitrary packets through the parser and the
// table: nothing may panic and the table stays bounded.
func FuzzHandleMessage(f *testing.F) {
	for i, m := range []*dns.Msg{
		announcement("Desk", idN(1), "h1.local.", 120, "192.0.2.7", "fe80::1"),
		announcement("Desk", idN(1), "h1.local.", 0, "192.0.2.7"),
		announcement("we.ird\\name", idN(2), "h2.local.", 120),
		announcement("Lab", idN(3), "h3.local.", 120, "127.0.0.1", "0.0.0.0", "224.0.0.251", "::ffff:192.0.2.8", "fe80::2"),
	} {
		b, err := m.Pack()
		if err != nil {
			f.Fatal(i, err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, pkt []byte) {
		d, err := New(Options{MaxPeers: 4})
		if err != nil {
			t.Fatal(err)
		}
		var m dns.Msg
		if m.Unpack(pkt) != nil {
			return
		}
		d.handleMessage(&m, 1, netip.MustParseAddr("192.0.2.1"))
		if len(d.Peers()) > 4 {
			t.Fatal("table over its bound")
		}
		// A peer seen is one a sender can dial: its ID, name and ports
		// within their bounds, its addresses none of this device's own,
		// of everyone's, or of no interface.
		for _, p := range d.Peers() {
			if !isID(p.ID) || len(p.Name) > MaxNameLen || len(p.Ports) == 0 ||
				len(p.Addrs) == 0 || len(p.Addrs) > maxAddrs {
				t.Fatalf("a peer %+v", p)
			}
			for _, port := range p.Ports {
				if port.Port <= 0 || port.Port > 65535 {
					t.Fatalf("a peer on port %d: %+v", port.Port, p)
				}
			}
			for _, a := range p.Addrs {
				if !a.IsValid() || a.IsUnspecified() || a.IsLoopback() || a.IsMulticast() || a.Is4In6() ||
					a.Is6() && a.IsLinkLocalUnicast() && a.Zone() == "" {
					t.Fatalf("a peer at %v: %+v", a, p)
				}
			}
		}
	})
}

// hostPorts are the "host:port"s of p's addresses of kind, best first.
func hostPorts(p Peer, kind addr.Kind) []string {
	var out []string
	for _, a := range p.Addresses() {
		if a.Kind == kind {
			out = append(out, a.HostPort())
		}
	}
	return out
}

func TestAddresses(t *testing.T) {
	h1, h2 := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("fe80::1%eth0")
	q, tk := addr.QUIC, addr.TCP
	for _, tc := range []struct {
		name string
		p    Peer
		want []addr.Addr
	}{
		{"advertised", Peer{Addrs: []netip.Addr{h1, h2}, Ports: ports(4242, 4243)},
			[]addr.Addr{addr.New(q, "192.0.2.1:4242"), addr.New(tk, "192.0.2.1:4243"), addr.New(q, "[fe80::1%eth0]:4242"), addr.New(tk, "[fe80::1%eth0]:4243")}},
		{"direct on both ports", Peer{Addrs: []netip.Addr{h1}, Ports: ports(7000, 7000), Direct: "192.0.2.9:7000"},
			[]addr.Addr{addr.New(q, "192.0.2.9:7000"), addr.New(tk, "192.0.2.9:7000"), addr.New(q, "192.0.2.1:7000"), addr.New(tk, "192.0.2.1:7000")}},
		{"direct on another port", Peer{Addrs: []netip.Addr{h1}, Ports: ports(4242, 4243), Direct: "192.0.2.1:7000"},
			[]addr.Addr{addr.New(q, "192.0.2.1:7000"), addr.New(q, "192.0.2.1:4242"), addr.New(tk, "192.0.2.1:4243")}},
		{"direct is advertised too", Peer{Addrs: []netip.Addr{h1}, Ports: ports(4242, 0), Direct: "192.0.2.1:4242"},
			[]addr.Addr{addr.New(q, "192.0.2.1:4242")}},
		{"tcp only", Peer{Addrs: []netip.Addr{h1}, Ports: ports(0, 80)}, []addr.Addr{addr.New(tk, "192.0.2.1:80")}},
		{"refused", Peer{Addrs: []netip.Addr{h1}, Ports: ports(1, 2), Refused: true}, nil},
	} {
		if got := tc.p.Addresses(); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A probed device's name is its own, as Ferry's hello carries it (up to 255
// bytes), not bounded as an mDNS label (63): a device added by address
// whose name was longer was listed as its address, then as "Device
// 25HQ-ZJ63", though the pairing dialog named it.
func TestProbedNameLongerThanALabel(t *testing.T) {
	long := "Bob’s extraordinarily long-named workstation in the third-floor lab of the east wing"
	answers := map[string][2]string{
		"192.0.2.80:7000": {idN(80), long},
		"192.0.2.81:7000": {idN(81), strings.Repeat("n", 256)},
		"192.0.2.82:7000": {idN(82), ""},
	}
	prober := func(ctx context.Context, addr string) (string, string, error) {
		a, ok := answers[addr]
		if !ok {
			return "", "", errors.New("timeout")
		}
		return a[0], a[1], nil
	}
	d, _ := newTestDiscovery(t, Options{
		Prober: prober,
		Remembered: func() []Remembered {
			return []Remembered{{ID: idN(82), Name: long + " (remembered)", Addrs: []string{"192.0.2.82:7000"}}}
		},
	})
	ctx := context.Background()
	if p, err := d.AddManual(ctx, "192.0.2.80:7000"); err != nil || p.Name != long {
		t.Errorf("AddManual = %q, %v; want %q", p.Name, err, long)
	}
	// Over the wire's bound: not a name (the address stands in).
	if p, err := d.AddManual(ctx, "192.0.2.81:7000"); err != nil || p.Name != "192.0.2.81:7000" {
		t.Errorf("AddManual of a 256-byte name = %q, %v", p.Name, err)
	}
	d.probeRound(ctx)
	if p, err := resolveIn(d.Peers(), idN(82)); err != nil || p.Name != long+" (remembered)" {
		t.Errorf("remembered peer = %q (%v), want the name it was remembered by", p.Name, err)
	}
}

// TestPeerShortIDIsTheShownForm: ferry-cli peers and doctor print a found
// device's short ID as every other screen and line does ("PT27-TYCL"); they
// printed "PT27TYCL".
func TestPeerShortIDIsTheShownForm(t *testing.T) {
	for id, want := range map[string]string{"PT27TYCLABCDEFGH": "PT27-TYCL", "ABC": "ABC"} {
		if got := (Peer{ID: id}).ShortID(); got != want {
			t.Errorf("Peer{ID: %q}.ShortID() = %q, want %q", id, got, want)
		}
	}
}

// Discovery has looked long enough at the network to take a device it
// does not see as away once its first queries had their second to be
// answered and a probe round of remembered devices that began after that
// network came up finished; new interfaces start the look again, and a
// discovery without a Prober never has.
func TestLooked(t *testing.T) {
	prober := func(ctx context.Context, addr string) (string, string, error) {
		return "", "", errors.New("timeout")
	}
	d, clk := newTestDiscovery(t, Options{
		Prober: prober,
		Remembered: func() []Remembered {
			return []Remembered{{ID: idN(50), Name: "Away", Addrs: []string{"192.0.2.50:7000"}}}
		},
	})
	ctx := context.Background()
	if d.Looked() {
		t.Fatal("looked before it ran")
	}
	d.lookAgain() // Run
	d.probeRound(ctx)
	if d.Looked() {
		t.Fatal("looked before its first queries went out")
	}
	clk.Advance(2 * time.Second)
	d.firstQueriesSent()
	clk.Advance(answerWait - time.Millisecond)
	if d.Looked() {
		t.Fatal("looked before the queries' answers had time to come")
	}
	clk.Advance(time.Millisecond)
	if !d.Looked() {
		t.Fatal("not looked after the first queries were answered and a probe round finished")
	}

	// New interfaces: the look starts again; a probe round that began
	// before the change does not count.
	began := clk.Now()
	clk.Advance(time.Millisecond)
	d.lookAgain()
	clk.Advance(2 * time.Second)
	d.firstQueriesSent()
	clk.Advance(answerWait)
	d.probeRoundDone(began)
	if d.Looked() {
		t.Fatal("looked with a probe round that began on the old network")
	}
	d.probeRound(ctx)
	if !d.Looked() {
		t.Fatal("not looked after a probe round on the new network")
	}

	// A probe round cut short by the end of Run does not count.
	clk.Advance(time.Millisecond)
	d.lookAgain()
	clk.Advance(2 * time.Second)
	d.firstQueriesSent()
	clk.Advance(answerWait)
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	d.probeRound(cancelled)
	if d.Looked() {
		t.Fatal("looked after a probe round that was cut short")
	}

	// Without a Prober nothing is probed: a remembered device that mDNS
	// misses could not be seen.
	bare, clk2 := newTestDiscovery(t, Options{})
	bare.lookAgain()
	bare.probeLoop(ctx) // returns at once: nothing to probe with
	bare.firstQueriesSent()
	clk2.Advance(time.Minute)
	if bare.Looked() {
		t.Error("a discovery without a Prober looked")
	}
}
