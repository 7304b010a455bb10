package discovery

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine/addr"
	"github.com/ferrydrop/ferry/engine/localsend"
	"github.com/ferrydrop/ferry/engine/peer"
	"github.com/ferrydrop/ferry/internal/clock"
)

// fpN is a distinct LocalSend fingerprint for n.
func fpN(n int) string { return fmt.Sprintf("%064X", n) }

// keyOf is the key hash whose Ferry ID is id.
func keyOf(t *testing.T, id string) [32]byte {
	t.Helper()
	k, err := peer.ParseFerryKey(id)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func lsDevice(alias, fp, ip string, verified bool) localsend.Device {
	return localsend.Device{Info: localsend.Info{Alias: alias, DeviceModel: "Pixel", DeviceType: localsend.TypeMobile,
		Fingerprint: fp, Port: 53317, Protocol: "https"}, Addr: netip.MustParseAddr(ip), Verified: verified, Via: "multicast"}
}

func TestLocalSendDeviceInTable(t *testing.T) {
	d, clk := newTestDiscovery(t, Options{LocalSendTTL: time.Minute})
	ch, cancel := d.Subscribe(16)
	defer cancel()
	fp := strings.ToLower(fpN(7)) // compared case-insensitively, kept upper-case
	d.SeeLocalSend(lsDevice("Anna's phone", fp, "192.0.2.9", false))
	ev := recv(t, ch)
	p := ev.Peer
	if ev.Kind != PeerAppeared || p.ID != "localsend:"+fpN(7) || p.Name != "Anna's phone" || p.Source != SourceLocalSend ||
		p.Kind() != peer.LocalSend || p.SpeaksFerry() || !p.SpeaksLocalSend() {
		t.Fatalf("event %+v", ev)
	}
	ls := p.LocalSend
	if ls.Alias != "Anna's phone" || ls.DeviceModel != "Pixel" || ls.DeviceType != "mobile" || ls.Fingerprint != fpN(7) ||
		ls.Verified || !ls.LastSeen.Equal(clk.Now()) {
		t.Fatalf("LocalSend %+v", ls)
	}
	want := []addr.Addr{addr.NewLocalSend("https", "192.0.2.9:53317", fpN(7))}
	if got := p.Addresses(); !slices.Equal(got, want) || got[0].Pin() != fpN(7) {
		t.Fatalf("Addresses %v, want %v", got, want)
	}
	for _, q := range []string{"anna's PHONE", fpN(7)[:12], "localsend:" + strings.ToLower(fpN(7))} {
		if got, err := resolveIn(d.Peers(), q); err != nil || got.ID != p.ID {
			t.Errorf("resolve %q: %v, %v", q, got.ID, err)
		}
	}

	// Its register answer proves it: the same entry, now verified.
	d.SeeLocalSend(lsDevice("Anna's phone", fpN(7), "192.0.2.9", true))
	if ev := recv(t, ch); ev.Kind != PeerChanged || !ev.Peer.LocalSend.Verified {
		t.Fatalf("event %+v", ev)
	}
	// Someone else announcing its fingerprint from elsewhere does not move it.
	d.SeeLocalSend(lsDevice("Anna's phone", fpN(7), "192.0.2.66", false))
	noEvent(t, ch)
	if got := d.Peers(); len(got) != 1 || got[0].Addrs[0].String() != "192.0.2.9" {
		t.Fatalf("peers %+v", got)
	}

	clk.Advance(time.Minute)
	d.expire()
	if ev := recv(t, ch); ev.Kind != PeerGone || ev.Reason != "expired" {
		t.Fatalf("event %+v", ev)
	}
	if len(d.Peers()) != 0 {
		t.Fatal("expired device still listed")
	}
}

func TestLocalSendHTTPDeviceIsAnonymous(t *testing.T) {
	d, _ := newTestDiscovery(t, Options{})
	dev := lsDevice("old laptop", "random-string", "192.0.2.10", true)
	dev.Protocol = "http"
	d.SeeLocalSend(dev)
	ps := d.Peers()
	if len(ps) != 1 || ps[0].ID != "anon:192.0.2.10:53317" || ps[0].Kind() != peer.Anon || ps[0].LocalSend.Verified {
		t.Fatalf("peers %+v", ps)
	}
	if a := ps[0].Addresses(); len(a) != 1 || a[0].String() != "localsend+http://192.0.2.10:53317#random-string" {
		t.Fatalf("addresses %v", a)
	}
}

// TestDeviceSpeakingBothIsOne: a Ferry device heard over LocalSend, its
// key proven by the certificate, is its Ferry entry with both addresses,
// whichever protocol is heard first; a claim alone never joins them.
func TestDeviceSpeakingBothIsOne(t *testing.T) {
	ferryID := idN(3)
	proven := lsDevice("desk", fpN(3), "192.0.2.7", true)
	proven.KeyHash = keyOf(t, ferryID)

	t.Run("ferry first", func(t *testing.T) {
		d, clk := newTestDiscovery(t, Options{LocalSendTTL: 30 * time.Second, PeerTTL: time.Minute})
		d.handleMessage(announcement("desk", ferryID, "h.local.", 120, "192.0.2.7"), 0, netip.Addr{})
		ch, cancel := d.Subscribe(16)
		defer cancel()

		claim := proven
		claim.Verified = false // an announcement claims, it does not prove
		d.SeeLocalSend(claim)
		if ev := recv(t, ch); ev.Kind != PeerAppeared || ev.Peer.ID != "localsend:"+fpN(3) {
			t.Fatalf("a claim joined the Ferry device: %+v", ev)
		}

		d.SeeLocalSend(proven)
		gone, changed := recv(t, ch), recv(t, ch)
		if gone.Kind != PeerGone || gone.Reason != "merged" || changed.Kind != PeerChanged || changed.Peer.ID != ferryID {
			t.Fatalf("events %+v, %+v", gone, changed)
		}
		ps := d.Peers()
		if len(ps) != 1 || !ps[0].SpeaksFerry() || !ps[0].SpeaksLocalSend() || ps[0].Name != "desk" {
			t.Fatalf("peers %+v", ps)
		}
		// Its announcements (claims) keep it fresh, and add no second device.
		d.SeeLocalSend(claim)
		noEvent(t, ch)
		if ps := d.Peers(); len(ps) != 1 || !ps[0].LocalSend.Verified {
			t.Fatalf("after a claim: %+v", ps)
		}
		kinds := addr.Kinds(ps[0].Addresses())
		if !slices.Equal(kinds, []addr.Kind{addr.QUIC, addr.TCP, addr.LocalSend}) {
			t.Fatalf("kinds %v", kinds)
		}
		// mDNS heard again keeps the LocalSend side.
		d.handleMessage(announcement("desk", ferryID, "h.local.", 120, "192.0.2.7"), 0, netip.Addr{})
		if ps := d.Peers(); len(ps) != 1 || ps[0].LocalSend == nil {
			t.Fatalf("peers %+v", ps)
		}
		noEvent(t, ch)

		// The LocalSend side runs out alone.
		clk.Advance(30 * time.Second)
		d.expire()
		if ev := recv(t, ch); ev.Kind != PeerChanged || ev.Peer.LocalSend != nil || ev.Peer.ID != ferryID {
			t.Fatalf("event %+v", ev)
		}
	})

	t.Run("localsend first", func(t *testing.T) {
		d, clk := newTestDiscovery(t, Options{LocalSendTTL: 5 * time.Minute, PeerTTL: 10 * time.Second})
		ch, cancel := d.Subscribe(16)
		defer cancel()
		d.SeeLocalSend(proven)
		if ev := recv(t, ch); ev.Kind != PeerAppeared || ev.Peer.SpeaksFerry() {
			t.Fatalf("event %+v", ev)
		}
		d.handleMessage(announcement("desk", ferryID, "h.local.", 120, "192.0.2.7"), 0, netip.Addr{})
		gone, appeared := recv(t, ch), recv(t, ch)
		if gone.Kind != PeerGone || gone.Reason != "merged" || appeared.Kind != PeerAppeared ||
			appeared.Peer.ID != ferryID || appeared.Peer.LocalSend == nil || appeared.Peer.LocalSend.Fingerprint != fpN(3) {
			t.Fatalf("events %+v, %+v", gone, appeared)
		}
		if n := len(d.Peers()); n != 1 {
			t.Fatalf("%d peers", n)
		}
		// Ferry stops (its mDNS expires) while LocalSend is still heard:
		// the device stays, as a LocalSend device.
		clk.Advance(11 * time.Second)
		d.expire()
		gone, appeared = recv(t, ch), recv(t, ch)
		if gone.Kind != PeerGone || gone.Peer.ID != ferryID || appeared.Kind != PeerAppeared || appeared.Peer.ID != "localsend:"+fpN(3) {
			t.Fatalf("events %+v, %+v", gone, appeared)
		}
		// ... and joins again when Ferry is back.
		d.handleMessage(announcement("desk", ferryID, "h.local.", 120, "192.0.2.7"), 0, netip.Addr{})
		if ps := d.Peers(); len(ps) != 1 || ps[0].ID != ferryID || ps[0].LocalSend == nil {
			t.Fatalf("peers %+v", ps)
		}
	})

	t.Run("this device", func(t *testing.T) {
		d, _ := newTestDiscovery(t, Options{SelfID: ferryID})
		d.SeeLocalSend(proven)
		if n := len(d.Peers()); n != 0 {
			t.Fatalf("this device is listed: %+v", d.Peers())
		}
	})
}

// TestGoodbyeTakesTheLocalSendSide: a Ferry device that says goodbye is
// quitting, LocalSend side and all: nothing of it stays listed (it stayed
// as a LocalSend device for LocalSendTTL, offered Send). Devices beside
// it, whatever their name or address, stay; the same device announced
// again over LocalSend is listed as before, as is a side that proved
// itself after the goodbye (a claim does not count); a re-registration
// (goodbye, then announced again within the grace) keeps the side.
func TestGoodbyeTakesTheLocalSendSide(t *testing.T) {
	ferryID, otherID := idN(3), idN(4)
	proven := lsDevice("desk", fpN(3), "192.0.2.7", true)
	proven.KeyHash = keyOf(t, ferryID)
	setup := func(t *testing.T) (*Discovery, *clock.Fake, <-chan Event) {
		d, clk := newTestDiscovery(t, Options{LocalSendTTL: 90 * time.Second, PeerTTL: time.Minute})
		d.handleMessage(announcement("desk", ferryID, "h.local.", 120, "192.0.2.7"), 0, netip.Addr{})
		d.SeeLocalSend(proven)
		// Another device's LocalSend on the same host under the same name,
		// its key another Ferry device's; and a claim under the same name.
		other := lsDevice("desk", fpN(4), "192.0.2.7", true)
		other.Port = 53318
		other.KeyHash = keyOf(t, otherID)
		d.SeeLocalSend(other)
		d.SeeLocalSend(lsDevice("desk", fpN(5), "192.0.2.7", false))
		ch, cancel := d.Subscribe(16)
		t.Cleanup(cancel)
		if ps := d.Peers(); len(ps) != 3 {
			t.Fatalf("peers %+v", ps)
		}
		return d, clk, ch
	}
	peerByID := func(d *Discovery, id string) (Peer, bool) {
		ps := d.Peers()
		i := slices.IndexFunc(ps, func(p Peer) bool { return p.ID == id })
		if i < 0 {
			return Peer{}, false
		}
		return ps[i], true
	}
	// goneWithItsSide: ferryID's going (for reason) is its one event;
	// the devices beside it stay.
	goneWithItsSide := func(t *testing.T, d *Discovery, ch <-chan Event, reason string) {
		t.Helper()
		if ev := recv(t, ch); ev.Kind != PeerGone || ev.Reason != reason || ev.Peer.ID != ferryID {
			t.Fatalf("event %+v", ev)
		}
		noEvent(t, ch)
		var ids []string
		for _, p := range d.Peers() {
			ids = append(ids, p.ID)
		}
		slices.Sort(ids)
		if want := []string{"localsend:" + fpN(4), "localsend:" + fpN(5)}; !slices.Equal(ids, want) {
			t.Fatalf("peers %v, want %v", ids, want)
		}
	}

	// Its Ferry said it was closing (the app heard going_away): gone at
	// once, side and all, with no grace.
	t.Run("closed", func(t *testing.T) {
		d, _, ch := setup(t)
		d.Closed(ferryID)
		goneWithItsSide(t, d, ch, "closed")
	})

	t.Run("goodbye", func(t *testing.T) {
		d, clk, ch := setup(t)
		d.handleMessage(announcement("desk", ferryID, "h.local.", 0, "192.0.2.7"), 0, netip.MustParseAddr("192.0.2.7"))
		clk.Advance(goodbyeGrace)
		d.expire()
		goneWithItsSide(t, d, ch, "goodbye")
		// Still there for its TTL: nothing of it comes back unheard.
		clk.Advance(80 * time.Second)
		d.expire()
		noEvent(t, ch)

		// Heard again over LocalSend: a claim, then proven, as any device.
		d.SeeLocalSend(lsDevice("desk", fpN(3), "192.0.2.7", false))
		if ev := recv(t, ch); ev.Kind != PeerAppeared || ev.Peer.ID != "localsend:"+fpN(3) || ev.Peer.LocalSend.Verified {
			t.Fatalf("event %+v", ev)
		}
		d.SeeLocalSend(proven)
		if ev := recv(t, ch); ev.Kind != PeerChanged || !ev.Peer.LocalSend.Verified {
			t.Fatalf("event %+v", ev)
		}
		// ... and joins its Ferry entry when Ferry is back.
		d.handleMessage(announcement("desk", ferryID, "h.local.", 120, "192.0.2.7"), 0, netip.Addr{})
		if gone, appeared := recv(t, ch), recv(t, ch); gone.Reason != "merged" || appeared.Peer.ID != ferryID || appeared.Peer.LocalSend == nil {
			t.Fatalf("events %+v, %+v", gone, appeared)
		}
	})

	t.Run("proven again after the goodbye", func(t *testing.T) {
		// Its LocalSend server answered after the goodbye (Ferry ends
		// LocalSend first when it quits): that side is still there.
		d, clk, ch := setup(t)
		d.handleMessage(announcement("desk", ferryID, "h.local.", 0, "192.0.2.7"), 0, netip.Addr{})
		clk.Advance(goodbyeGrace / 2)
		d.SeeLocalSend(proven)
		clk.Advance(goodbyeGrace)
		d.expire()
		gone, appeared := recv(t, ch), recv(t, ch)
		if gone.Kind != PeerGone || gone.Reason != "goodbye" || gone.Peer.ID != ferryID ||
			appeared.Kind != PeerAppeared || appeared.Peer.ID != "localsend:"+fpN(3) || !appeared.Peer.LocalSend.Verified {
			t.Fatalf("events %+v, %+v", gone, appeared)
		}
	})

	t.Run("a claim after the goodbye", func(t *testing.T) {
		// Anyone can announce its fingerprint: that keeps nothing.
		d, clk, ch := setup(t)
		d.handleMessage(announcement("desk", ferryID, "h.local.", 0, "192.0.2.7"), 0, netip.Addr{})
		clk.Advance(goodbyeGrace / 2)
		d.SeeLocalSend(lsDevice("desk", fpN(3), "192.0.2.7", false))
		clk.Advance(goodbyeGrace)
		d.expire()
		goneWithItsSide(t, d, ch, "goodbye")
	})

	t.Run("re-registration", func(t *testing.T) {
		d, clk, ch := setup(t)
		d.handleMessage(announcement("desk", ferryID, "h.local.", 0, "192.0.2.7"), 0, netip.Addr{})
		clk.Advance(goodbyeGrace / 2)
		d.handleMessage(announcement("desk", ferryID, "h.local.", 120, "192.0.2.7"), 0, netip.Addr{})
		clk.Advance(goodbyeGrace)
		d.expire()
		noEvent(t, ch)
		if p, ok := peerByID(d, ferryID); !ok || p.LocalSend == nil || p.LocalSend.Fingerprint != fpN(3) {
			t.Fatalf("peer %+v", p)
		}
	})

	t.Run("the other device's goodbye", func(t *testing.T) {
		// otherID is heard over Ferry (its LocalSend joins it), then says
		// goodbye: only it goes, ferryID keeps its side.
		d, clk, ch := setup(t)
		d.handleMessage(announcement("desk", otherID, "h2.local.", 120, "192.0.2.7"), 0, netip.Addr{})
		recv(t, ch)
		recv(t, ch)
		d.handleMessage(announcement("desk", otherID, "h2.local.", 0, "192.0.2.7"), 0, netip.Addr{})
		clk.Advance(goodbyeGrace)
		d.expire()
		if ev := recv(t, ch); ev.Kind != PeerGone || ev.Peer.ID != otherID || ev.Peer.LocalSend.Fingerprint != fpN(4) {
			t.Fatalf("event %+v", ev)
		}
		noEvent(t, ch)
		if p, ok := peerByID(d, ferryID); !ok || p.LocalSend == nil || p.LocalSend.Fingerprint != fpN(3) {
			t.Fatalf("peer %+v", p)
		}
	})
}

// TestHostileLocalSendSightings: what a LocalSend device says is peer
// input; bad sightings are dropped and the table stays bounded.
func TestHostileLocalSendSightings(t *testing.T) {
	d, _ := newTestDiscovery(t, Options{MaxPeers: 8})
	for _, dev := range []localsend.Device{
		lsDevice("short fp", "ABCD", "192.0.2.1", false),
		lsDevice("not hex", strings.Repeat("Z", 64), "192.0.2.1", false),
		lsDevice("no fp", "", "192.0.2.1", false),
		{Info: localsend.Info{Alias: "no addr", Fingerprint: fpN(1), Port: 53317}},
	} {
		d.SeeLocalSend(dev)
	}
	if ps := d.Peers(); len(ps) != 0 {
		t.Fatalf("hostile sightings listed: %+v", ps)
	}
	dev := lsDevice("port zero", fpN(2), "192.0.2.2", false)
	dev.Port = 0
	d.SeeLocalSend(dev)
	if ps := d.Peers(); len(ps) != 1 || ps[0].Addresses()[0].HostPort() != "192.0.2.2:53317" {
		t.Fatalf("peers %+v", ps)
	}
	for i := range 100 {
		d.SeeLocalSend(lsDevice("flood", fpN(100+i), "192.0.2.3", false))
	}
	if n := len(d.Peers()); n != 8 {
		t.Fatalf("%d peers in a table of 8", n)
	}
	if _, err := d.Resolve(context.Background(), "flood"); err == nil {
		t.Fatal("an ambiguous name resolved")
	}
}

// On a link with IPv6 addresses only, a Ferry receiver's LocalSend
// announcement (IPv4 multicast) leaves from 0.0.0.0: unanswerable there,
// it is no device. Listed, it was a second "Lima" at 0.0.0.0:53317 beside
// the Ferry one, and send --to Lima was refused as ambiguous.
func TestLocalSendFromUnspecifiedAddressIgnored(t *testing.T) {
	d, _ := newTestDiscovery(t, Options{LocalSendTTL: time.Minute})
	for _, ip := range []string{"0.0.0.0", "::"} {
		d.SeeLocalSend(lsDevice("Lima", fpN(3), ip, false))
	}
	if got := d.Peers(); len(got) != 0 {
		t.Fatalf("peers %+v; want none", got)
	}
}

// A Ferry that only looks for devices (ferry-cli peers and send) announces
// itself to LocalSend devices as localsend.ModelNotReceiving, and is no
// device to list: it declines every offer. One that receives is listed.
func TestLocalSendDeviceNotReceivingIsNotListed(t *testing.T) {
	d, _ := newTestDiscovery(t, Options{LocalSendTTL: time.Minute})
	looking := lsDevice("vm", fpN(3), "192.0.2.7", false)
	looking.DeviceModel, looking.DeviceType = localsend.ModelNotReceiving, localsend.TypeHeadless
	d.SeeLocalSend(looking)
	if got := d.Peers(); len(got) != 0 {
		t.Fatalf("peers %+v; want none", got)
	}
	receiving := lsDevice("vm", fpN(4), "192.0.2.7", false)
	receiving.DeviceModel, receiving.DeviceType = "Ferry", localsend.TypeHeadless
	d.SeeLocalSend(receiving)
	if got := d.Peers(); len(got) != 1 || got[0].LocalSend.DeviceModel != "Ferry" {
		t.Fatalf("peers %+v; want the receiving one", got)
	}
}
