package peerresolve

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/ferrydrop/ferry/discovery"
	"github.com/ferrydrop/ferry/engine/addr"
)

func TestAddrs(t *testing.T) {
	id := "ABCD"
	q, tc := addr.QUIC, addr.TCP
	for _, c := range []struct {
		name string
		p    discovery.Peer
		want []addr.Addr
	}{
		{"advertised", discovery.Peer{ID: id, Ports: []discovery.Port{{Kind: q, Port: 5000}, {Kind: tc, Port: 5001}},
			Addrs: []netip.Addr{netip.MustParseAddr("192.168.1.5"), netip.MustParseAddr("10.0.0.5")}},
			[]addr.Addr{addr.New(q, "192.168.1.5:5000"), addr.New(tc, "192.168.1.5:5001"), addr.New(q, "10.0.0.5:5000"), addr.New(tc, "10.0.0.5:5001")}},
		// A probed peer: every kind at the address that answered.
		{"probed", discovery.Peer{ID: id, Ports: []discovery.Port{{Kind: q, Port: 6000}}, Direct: "10.1.1.1:6000",
			Addrs: []netip.Addr{netip.MustParseAddr("10.1.1.1")}},
			[]addr.Addr{addr.New(q, "10.1.1.1:6000"), addr.New(tc, "10.1.1.1:6000")}},
		{"tcp only", discovery.Peer{ID: id, Ports: []discovery.Port{{Kind: tc, Port: 7000}}, Addrs: []netip.Addr{netip.MustParseAddr("10.2.2.2")}},
			[]addr.Addr{addr.New(tc, "10.2.2.2:7000")}},
		{"refused", discovery.Peer{ID: id, Ports: []discovery.Port{{Kind: q, Port: 1}}, Direct: "10.1.1.1:1", Refused: true}, nil},
	} {
		if got := Addrs(c.p); !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	var r Resolver
	if got := r.ResolvePeer(t.Context(), id); got != nil {
		t.Errorf("a resolver without discovery answered %+v", got)
	}
}

// fakeTable is a discovery table as the test says it is.
type fakeTable struct {
	peers  []discovery.Peer
	looked bool
}

func (f fakeTable) Peers() []discovery.Peer { return f.peers }
func (f fakeTable) Looked() bool            { return f.looked }

// A device is absent when discovery has looked long enough and does not
// see it (a remembered one that answered its probe is seen); never before
// discovery has looked, nor without discovery.
func TestAbsent(t *testing.T) {
	here, away := "HEREHEREHERE", "AWAYAWAYAWAY"
	seenAt := func(src discovery.Source, refused bool) discovery.Peer {
		return discovery.Peer{ID: here, Source: src, Refused: refused, Ports: []discovery.Port{{Kind: addr.QUIC, Port: 5000}},
			Addrs: []netip.Addr{netip.MustParseAddr("192.168.1.5")}}
	}
	var r Resolver
	if r.Absent(away) {
		t.Error("absent without discovery")
	}
	r.Use(nil)
	if r.Absent(away) {
		t.Error("absent after Use(nil)")
	}
	for _, c := range []struct {
		name   string
		table  fakeTable
		absent bool
	}{
		{"seen over mDNS", fakeTable{[]discovery.Peer{seenAt(discovery.SourceMDNS, false)}, true}, false},
		{"answered its probe", fakeTable{[]discovery.Peer{seenAt(discovery.SourceRemembered, false)}, true}, false},
		{"only another identity at its address", fakeTable{[]discovery.Peer{seenAt(discovery.SourceMDNS, true)}, true}, true},
		{"not seen", fakeTable{nil, true}, true},
		{"not seen, discovery has not looked long enough", fakeTable{nil, false}, false},
	} {
		r.use(c.table)
		if got := r.Absent(here); got != c.absent {
			t.Errorf("%s: Absent = %v, want %v", c.name, got, c.absent)
		}
	}
	r.use(fakeTable{[]discovery.Peer{seenAt(discovery.SourceMDNS, false)}, true})
	if !r.Absent(away) {
		t.Error("a device discovery does not see, after it looked, is not absent")
	}
}
