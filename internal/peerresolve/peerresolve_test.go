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
