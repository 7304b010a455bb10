package anywhere_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
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

// staleNonceCases are answers a TURN client's socket reads (from the
// relay, or whoever sends to it): staleNonce says whether each is a 438
// (Stale Nonce) that gives a new nonce, and which. They seed
// FuzzReleaseParsers.
func staleNonceCases(t testing.TB) []staleNonceCase {
	build := func(class stun.MessageClass, setters ...stun.Setter) []byte {
		all := append([]stun.Setter{stun.NewTransactionIDSetter(releaseID), stun.NewType(stun.MethodRefresh, class)}, setters...)
		m, err := stun.Build(append(all, stun.Fingerprint)...)
		if err != nil {
			t.Fatal(err)
		}
		return m.Raw
	}
	stale := build(stun.ClassErrorResponse, stun.CodeStaleNonce, stun.NewRealm("ferry"), stun.NewNonce("n2"))
	return []staleNonceCase{
		{"empty", nil, ""},
		{"a 438 with a nonce", stale, "n2"},
		{"a 438 cut short", stale[:len(stale)-8], ""},
		{"a 438 without a nonce", build(stun.ClassErrorResponse, stun.CodeStaleNonce, stun.NewRealm("ferry")), ""},
		{"a 438 with an empty nonce", build(stun.ClassErrorResponse, stun.CodeStaleNonce, stun.NewNonce("")), ""},
		{"a 401 with a nonce", build(stun.ClassErrorResponse, stun.CodeUnauthorized, stun.NewNonce("n2")), ""},
		{"a success with a nonce", build(stun.ClassSuccessResponse, stun.NewNonce("n2")), ""},
		{"a request with a 438 and a nonce", build(stun.ClassRequest, stun.CodeStaleNonce, stun.NewNonce("n2")), ""},
		{"an error without a code", build(stun.ClassErrorResponse, stun.NewNonce("n2")), ""},
	}
}

type staleNonceCase struct {
	name  string
	p     []byte
	nonce string // "": not a 438 that gives a nonce
}

func TestStaleNonce(t *testing.T) {
	for _, c := range staleNonceCases(t) {
		got, ok := anywhere.StaleNonce(c.p)
		if ok != (c.nonce != "") || got != c.nonce {
			t.Errorf("%s: staleNonce %q %v, want %q", c.name, got, ok, c.nonce)
		}
	}
}

// FuzzReleaseParsers: no parser panics on anything, what answers the
// release is never a release itself, and a stale nonce comes only from an
// answer, never empty.
func FuzzReleaseParsers(f *testing.F) {
	for _, c := range releaseCases(f) {
		f.Add(c.p)
	}
	for _, c := range staleNonceCases(f) {
		f.Add(c.p)
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		if anywhere.IsRelease(p) && anywhere.Answers(p, releaseID[:]) {
			t.Fatalf("%x is a release and its answer", p)
		}
		if nonce, ok := anywhere.StaleNonce(p); ok && (nonce == "" || anywhere.IsRelease(p)) {
			t.Fatalf("%x: a stale nonce %q from a request, or an empty one", p, nonce)
		}
	})
}

// fakeTURN is a TURN server on loopback that grants allocations (not
// relaying anything: gathering needs no more) and answers releases as a
// test says: it holds one nonce at a time, which the test rotates, and
// answers a request signed with another 438 (Stale Nonce) and the current
// one, as relays do whose nonces expire (coturn's every 10 minutes,
// pion's every hour); pion's TURN server has no setting for its nonces'
// lifetime, so it cannot stand in.
type fakeTURN struct {
	pc net.PacketConn
	// quietReleases: releases go unanswered (a relay gone after the
	// allocations were made).
	quietReleases bool
	// rotateEach: every release is answered 438 with a new nonce.
	rotateEach bool

	mu          sync.Mutex // guards the fields below
	nonce       string
	gen         int
	allocations int
	released    int             // releases answered as done
	staleSent   int             // 438 answers
	nonces      map[string]bool // nonces releases were signed with
}

const fakeRealm = "ferry"

func startFakeTURN(t *testing.T, quietReleases, rotateEach bool) *fakeTURN {
	t.Helper()
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeTURN{pc: pc, quietReleases: quietReleases, rotateEach: rotateEach, nonces: map[string]bool{}}
	f.rotate()
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			m := &stun.Message{Raw: bytes.Clone(buf[:n])}
			if m.Decode() == nil && m.Type.Class == stun.ClassRequest {
				f.handle(m, from)
			}
		}
	}()
	t.Cleanup(func() { pc.Close(); <-done })
	return f
}

func (f *fakeTURN) addr() string { return f.pc.LocalAddr().String() }

// rotate makes a new nonce the only one taken.
func (f *fakeTURN) rotate() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gen++
	f.nonce = fmt.Sprintf("nonce-%d", f.gen)
}

func (f *fakeTURN) handle(m *stun.Message, from net.Addr) {
	f.mu.Lock()
	defer f.mu.Unlock()
	integrity := stun.NewLongTermIntegrity(anywhere.TURNUser, fakeRealm, anywhere.TURNPassword)
	reply := func(class stun.MessageClass, setters ...stun.Setter) {
		all := append([]stun.Setter{stun.NewTransactionIDSetter(m.TransactionID), stun.NewType(m.Type.Method, class)}, setters...)
		r, err := stun.Build(append(all, stun.Fingerprint)...)
		if err == nil {
			f.pc.WriteTo(r.Raw, from)
		}
	}
	if _, err := m.Get(stun.AttrMessageIntegrity); err != nil || integrity.Check(m) != nil {
		reply(stun.ClassErrorResponse, stun.CodeUnauthorized, stun.NewRealm(fakeRealm), stun.NewNonce(f.nonce))
		return
	}
	lifetime, _ := m.Get(stun.AttrLifetime)
	release := m.Type.Method == stun.MethodRefresh && bytes.Equal(lifetime, []byte{0, 0, 0, 0})
	var nonce stun.Nonce
	nonce.GetFrom(m)
	if release {
		f.nonces[string(nonce)] = true
		if f.quietReleases {
			return
		}
		if f.rotateEach {
			f.gen++
			f.nonce = fmt.Sprintf("nonce-%d", f.gen)
		}
	}
	if string(nonce) != f.nonce {
		f.staleSent++
		reply(stun.ClassErrorResponse, stun.CodeStaleNonce, stun.NewRealm(fakeRealm), stun.NewNonce(f.nonce))
		return
	}
	life := func(s uint32) stun.Setter {
		return stun.RawAttribute{Type: stun.AttrLifetime, Value: binary.BigEndian.AppendUint32(nil, s)}
	}
	switch {
	case m.Type.Method == stun.MethodAllocate:
		f.allocations++
		relayed := &stun.XORMappedAddress{IP: net.IPv4(127, 0, 0, 1), Port: 40000 + f.allocations}
		mapped := &stun.XORMappedAddress{IP: from.(*net.UDPAddr).IP, Port: from.(*net.UDPAddr).Port}
		reply(stun.ClassSuccessResponse, setter(func(r *stun.Message) error { return relayed.AddToAs(r, stun.AttrXORRelayedAddress) }),
			mapped, life(600), integrity)
	case release:
		f.released++
		reply(stun.ClassSuccessResponse, life(0), integrity)
	case m.Type.Method == stun.MethodRefresh:
		reply(stun.ClassSuccessResponse, life(600), integrity)
	}
}

type setter func(*stun.Message) error

func (s setter) AddTo(m *stun.Message) error { return s(m) }

// An allocation whose release the relay answers 438 (its nonce went
// stale: the relay rotated it since the allocation was made) is given
// back all the same: the release is signed again with the nonce the
// answer carries. The 438 ended the wait for the release as if it were
// its answer, and the allocation stayed at the relay for its lifetime.
func TestTURNReleaseWithAStaleNonce(t *testing.T) {
	f := startFakeTURN(t, false, false)
	closeAgent, err := anywhere.GatherRelayed(t.Context(), f.addr(), nil)
	if err != nil {
		t.Fatal(err)
	}
	f.rotate()
	closeAgent()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.allocations != 1 || f.staleSent != 1 || f.released != 1 {
		t.Errorf("%d allocation, %d answers 438, %d releases done; want 1, 1, 1", f.allocations, f.staleSent, f.released)
	}
}

// A relay that answers every release 438 with yet another nonce gets the
// release signed again MaxStaleNonces times, no more.
func TestTURNReleaseStaleNoncesAreBounded(t *testing.T) {
	f := startFakeTURN(t, false, true)
	closeAgent, err := anywhere.GatherRelayed(t.Context(), f.addr(), nil)
	if err != nil {
		t.Fatal(err)
	}
	closeAgent()
	f.mu.Lock()
	defer f.mu.Unlock()
	if n := len(f.nonces); n != 1+anywhere.MaxStaleNonces {
		t.Errorf("the release was signed with %d nonces, want %d (the first, then one per 438 up to the bound)", n, 1+anywhere.MaxStaleNonces)
	}
}

// eventLog records, in order, what the sockets of an agent's TURN clients
// did.
type eventLog struct {
	mu     sync.Mutex
	events []string
	next   int
}

// recordConn is a TURN client's socket that logs its releases and its
// close in an eventLog.
type recordConn struct {
	net.PacketConn
	n   int
	log *eventLog
}

func (c *recordConn) WriteTo(p []byte, to net.Addr) (int, error) {
	if anywhere.IsRelease(p) {
		c.log.add(fmt.Sprintf("release %d", c.n))
	}
	return c.PacketConn.WriteTo(p, to)
}

func (c *recordConn) Close() error {
	c.log.add(fmt.Sprintf("close %d", c.n))
	return c.PacketConn.Close()
}

func (l *eventLog) add(e string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
}

func (l *eventLog) wrap(pc net.PacketConn) net.PacketConn {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.next++
	return &recordConn{PacketConn: pc, n: l.next, log: l}
}

// Closing an agent with several TURN allocations (one per local address)
// while the relay no longer answers waits for their releases together:
// each release is sent again, and once the wait gives up, every socket
// closes, none is left to wait on its own. ICE closes its candidates one
// by one and each socket waited up to 1 s for its own release's answer,
// so such a close cost a second per allocation: the releases of the
// sockets still open went on after the first had given up and closed.
func TestTURNReleasesOfOneCloseWaitTogether(t *testing.T) {
	const n = 3
	f := startFakeTURN(t, true, false)
	var log eventLog
	closeAgent, err := anywhere.GatherRelayedN(t.Context(), f.addr(), n, log.wrap)
	if err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	allocations := f.allocations
	f.mu.Unlock()
	if allocations != n {
		t.Fatalf("%d allocations, want %d", allocations, n)
	}
	closeAgent()
	log.mu.Lock()
	defer log.mu.Unlock()
	firstClose := slices.IndexFunc(log.events, func(e string) bool { return strings.HasPrefix(e, "close ") })
	if firstClose < 0 {
		t.Fatalf("no socket closed: %v", log.events)
	}
	for i := 1; i <= n; i++ {
		if sent := countOf(log.events[:firstClose], fmt.Sprintf("release %d", i)); sent < 2 {
			t.Errorf("socket %d's release went out %d times before the first socket closed, want it sent again: %v", i, sent, log.events)
		}
	}
	if after := slices.IndexFunc(log.events[firstClose:], func(e string) bool { return strings.HasPrefix(e, "release ") }); after >= 0 {
		t.Errorf("a release went out after the first socket gave up and closed (%s): each socket waited for its own in turn: %v", log.events[firstClose+after], log.events)
	}
	if closed := countPrefix(log.events, "close "); closed != n {
		t.Errorf("%d sockets closed, want %d: %v", closed, n, log.events)
	}
}

func countOf(events []string, e string) int {
	n := 0
	for _, x := range events {
		if x == e {
			n++
		}
	}
	return n
}

func countPrefix(events []string, prefix string) int {
	n := 0
	for _, x := range events {
		if strings.HasPrefix(x, prefix) {
			n++
		}
	}
	return n
}
