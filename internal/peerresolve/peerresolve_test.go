package peerresolve

import (
	"net/netip"
	"testing"

	"github.com/ferrydrop/ferry/discovery"
)

func TestTargets(t *testing.T) {
	id := "ABCD"
	p := discovery.Peer{ID: id, QUICPort: 5000, TCPPort: 5001,
		Addrs: []netip.Addr{netip.MustParseAddr("192.168.1.5"), netip.MustParseAddr("10.0.0.5")}}
	got := Targets(p)
	if len(got) != 2 || got[0].QUICAddr != "192.168.1.5:5000" || got[0].TCPAddr != "192.168.1.5:5001" ||
		got[1].QUICAddr != "10.0.0.5:5000" || got[1].TCPAddr != "10.0.0.5:5001" || got[0].ID != id {
		t.Errorf("advertised peer: %+v", got)
	}
	probed := discovery.Peer{ID: id, QUICPort: 6000, Direct: "10.1.1.1:6000", Addrs: []netip.Addr{netip.MustParseAddr("10.1.1.1")}}
	got = Targets(probed)
	if len(got) != 1 || got[0].QUICAddr != "10.1.1.1:6000" || got[0].TCPAddr != "10.1.1.1:6000" {
		t.Errorf("probed peer: %+v", got)
	}
	tcpOnly := discovery.Peer{ID: id, TCPPort: 7000, Addrs: []netip.Addr{netip.MustParseAddr("10.2.2.2")}}
	got = Targets(tcpOnly)
	if len(got) != 1 || got[0].TCPAddr != "10.2.2.2:7000" || got[0].QUICAddr != "" {
		t.Errorf("TCP-only peer: %+v", got)
	}
	var r Resolver
	if got := r.ResolvePeer(t.Context(), id); got != nil {
		t.Errorf("a resolver without discovery answered %+v", got)
	}
}
