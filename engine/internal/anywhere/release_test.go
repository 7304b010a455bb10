package anywhere_test

import (
	"encoding/binary"
	"net"
	"sync/atomic"
	"testing"

	"github.com/pion/stun/v4"

	"github.com/ferrydrop/ferry/engine/internal/anywhere"
	"github.com/ferrydrop/ferry/engine/relay"
)

// dropFirstRelease is a TURN client's socket that loses the first release
// (a Refresh of lifetime 0) it is asked to send.
type dropFirstRelease struct {
	net.PacketConn
	releases *atomic.Int32 // releases asked to be sent
}

func (c *dropFirstRelease) WriteTo(p []byte, to net.Addr) (int, error) {
	if anywhere.IsRelease(p) && c.releases.Add(1) == 1 {
		return len(p), nil // lost on the way
	}
	return c.PacketConn.WriteTo(p, to)
}

// An agent that closes gives its TURN allocation back even when the
// release's first datagram is lost: the relay holds none right after the
// close. pion's TURN client sent the release once and closed its socket,
// so a lost one left the allocation at the relay for its lifetime (2
// minutes), holding its place in the per-source bound.
func TestTURNReleaseSurvivesALostDatagram(t *testing.T) {
	r, err := relay.Start(relay.Config{Listen: "127.0.0.1:0", AllowLoopbackPeers: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var releases atomic.Int32
	closeAgent, err := anywhere.GatherRelayed(t.Context(), r.Addr().String(), func(pc net.PacketConn) net.PacketConn {
		return &dropFirstRelease{PacketConn: pc, releases: &releases}
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := r.Allocations(); n != 1 {
		t.Fatalf("%d allocations after gathering on loopback, want 1", n)
	}
	closeAgent()
	if n := releases.Load(); n < 2 {
		t.Errorf("the release was sent %d times: once lost, it was never sent again", n)
	}
	if n := r.Allocations(); n != 0 {
		t.Errorf("%d allocations held by the relay right after the agent closed, want 0", n)
	}
}

// releaseCases are datagrams a TURN client's socket sees go out (isRelease)
// and come in from anywhere (answers: the relay, or whoever sends to the
// socket): each says whether it is the release of transaction releaseID,
// and whether it answers it. They seed FuzzReleaseParsers.
func releaseCases(t testing.TB) []releaseCase {
	build := func(typ stun.MessageType, id [stun.TransactionIDSize]byte, lifetime int) []byte {
		setters := []stun.Setter{stun.NewTransactionIDSetter(id), typ}
		if lifetime >= 0 {
			setters = append(setters, stun.RawAttribute{Type: stun.AttrLifetime, Value: binary.BigEndian.AppendUint32(nil, uint32(lifetime))})
		}
		setters = append(setters, stun.Fingerprint)
		m, err := stun.Build(setters...)
		if err != nil {
			t.Fatal(err)
		}
		return m.Raw
	}
	refresh := stun.NewType(stun.MethodRefresh, stun.ClassRequest)
	ok := stun.NewType(stun.MethodRefresh, stun.ClassSuccessResponse)
	fail := stun.NewType(stun.MethodRefresh, stun.ClassErrorResponse)
	other := [stun.TransactionIDSize]byte{9}
	release := build(refresh, releaseID, 0)
	return []releaseCase{
		{"empty", nil, false, false},
		{"one byte", []byte{0}, false, false},
		{"ChannelData", append([]byte{0x40, 0x00, 0x00, 0x04}, 1, 2, 3, 4), false, false},
		{"the release", release, true, false},
		{"the release cut short", release[:len(release)-4], false, false},
		{"a header alone, with the cookie", release[:20], false, false},
		{"a refresh that keeps the allocation", build(refresh, releaseID, 600), false, false},
		{"a refresh without a lifetime", build(refresh, releaseID, -1), false, false},
		{"a lifetime of 2 bytes", func() []byte {
			m, _ := stun.Build(stun.NewTransactionIDSetter(releaseID), refresh, stun.RawAttribute{Type: stun.AttrLifetime, Value: []byte{0, 0}})
			return m.Raw
		}(), false, false},
		{"a binding request", build(stun.BindingRequest, releaseID, 0), false, false},
		{"its success answer", build(ok, releaseID, 0), false, true},
		{"its error answer", build(fail, releaseID, -1), false, true},
		{"another transaction's answer", build(ok, other, 0), false, false},
		{"a request with its ID", build(refresh, releaseID, 0), true, false},
		{"an indication with its ID", build(stun.NewType(stun.MethodData, stun.ClassIndication), releaseID, -1), false, false},
	}
}

type releaseCase struct {
	name             string
	p                []byte
	release, answers bool
}

var releaseID = [stun.TransactionIDSize]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}

func TestReleaseParsers(t *testing.T) {
	for _, c := range releaseCases(t) {
		if got := anywhere.IsRelease(c.p); got != c.release {
			t.Errorf("%s: isRelease %v, want %v", c.name, got, c.release)
		}
		if got := anywhere.Answers(c.p, releaseID[:]); got != c.answers {
			t.Errorf("%s: answers %v, want %v", c.name, got, c.answers)
		}
	}
}

// FuzzReleaseParsers: neither parser panics on anything, and what answers
// the release is never a release itself.
func FuzzReleaseParsers(f *testing.F) {
	for _, c := range releaseCases(f) {
		f.Add(c.p)
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		if anywhere.IsRelease(p) && anywhere.Answers(p, releaseID[:]) {
			t.Fatalf("%x is a release and its answer", p)
		}
	})
}
