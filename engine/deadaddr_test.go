package engine

import (
	"errors"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ferrydrop/ferry/engine/identity"
	"github.com/ferrydrop/ferry/engine/internal/core"
	"github.com/ferrydrop/ferry/engine/internal/transport"
)

// closedPort is a loopback "host:port" where nothing listens: a port the
// system handed out and took back.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hp := l.Addr().String()
	l.Close()
	return hp
}

// A send to an address where no Ferry listens any more (its receiver quit)
// ends its attempt saying so, whatever the transport: TCP is refused at once,
// and QUIC's dial ends once the host refused its port twice, a second or
// more apart, where it resent its first packet until the handshake's
// timeout (5 s) and the line said "could not connect ...: timeout: no recent
// network activity". Each dial that ran met the closed port.
func TestDeadAddressSaysNothingListens(t *testing.T) {
	t.Parallel()
	send := testEngine(t, Options{RetryFor: -1})
	p := filepath.Join(t.TempDir(), "a.txt")
	writeFile(t, p, 10)
	for _, tc := range []struct {
		kind  string
		dials []string // the transports whose dials ran, as the error names them
	}{
		{"auto", []string{"quic", "tcp"}},
		{"quic", []string{"quic"}},
		{"tcp", []string{"tcp"}},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			t.Parallel()
			hp := closedPort(t)
			kind, _ := parseTransport(tc.kind)
			_, err := send.dial(t.Context(), AddrsAt(hp), 0, identity.DeviceID{}, kind)
			var nl *core.NothingListeningError
			if !errors.As(err, &nl) || nl.Addr != hp {
				t.Fatalf("dial %s: %v", hp, err)
			}
			var leaves []error
			if j, ok := nl.Err.(interface{ Unwrap() []error }); ok {
				leaves = j.Unwrap()
			} else {
				leaves = []error{nl.Err}
			}
			if len(leaves) != len(tc.dials) {
				t.Fatalf("%d dials failed, want %d: %v", len(leaves), len(tc.dials), nl.Err)
			}
			for _, kind := range tc.dials { // in the order they failed
				i := slices.IndexFunc(leaves, func(leaf error) bool { return strings.Contains(leaf.Error(), "dial "+kind+" "+hp) })
				var tn *transport.NothingListeningError
				if i < 0 || !errors.As(leaves[i], &tn) || tn.Addr != hp {
					t.Errorf("%s's dial: not one that met nothing listening in %v", kind, nl.Err)
				}
			}

			r := sendWait(t, send, Target{Addrs: AddrsAt(hp)}, []string{p}, SendOptions{Transport: tc.kind})
			if want := "Nothing is listening at " + hp + ": is Ferry running there?"; r.State != StateFailed || r.Err != want {
				t.Errorf("%s: %q, want %q", r.State, r.Err, want)
			}
		})
	}
}

// deafPort is a loopback "host:port" where a UDP socket takes every
// datagram and answers none (so the host sends no ICMP port unreachable,
// as where a firewall drops it or the sender is on Windows), and nothing
// listens for TCP.
func deafPort(t *testing.T) string {
	t.Helper()
	for range 10 {
		u, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		hp := u.LocalAddr().String()
		l, err := net.Listen("tcp", hp) // the TCP port is free: nothing listens there
		if err != nil {
			u.Close()
			continue
		}
		l.Close()
		go func() {
			buf := make([]byte, 2048)
			for {
				if _, _, err := u.ReadFrom(buf); err != nil {
					return
				}
			}
		}()
		t.Cleanup(func() { u.Close() })
		return hp
	}
	t.Fatal("no UDP port whose TCP port was free")
	return ""
}

// A dead address whose QUIC port never refuses (no ICMP reaches the dial)
// while TCP is refused at the same port: Ferry listens for both on one
// port, so auto's QUIC dial ends a second after TCP's refusal, nothing
// listening, where it ran to the handshake's timeout (5 s) and the line
// said "Could not connect to the receiver ...: quic: ... timeout: no recent
// network activity".
func TestDeafQUICPortBesideRefusedTCPSaysNothingListens(t *testing.T) {
	t.Parallel()
	send := testEngine(t, Options{RetryFor: -1})
	p := filepath.Join(t.TempDir(), "a.txt")
	writeFile(t, p, 10)
	hp := deafPort(t)
	_, err := send.dial(t.Context(), AddrsAt(hp), 0, identity.DeviceID{}, "")
	var nl *core.NothingListeningError
	if !errors.As(err, &nl) || nl.Addr != hp {
		t.Fatalf("dial %s: %v", hp, err)
	}
	leaves := nl.Err.(interface{ Unwrap() []error }).Unwrap()
	for _, kind := range []string{"quic", "tcp"} {
		i := slices.IndexFunc(leaves, func(leaf error) bool { return strings.Contains(leaf.Error(), "dial "+kind+" "+hp) })
		var tn *transport.NothingListeningError
		if i < 0 || !errors.As(leaves[i], &tn) || tn.Addr != hp {
			t.Errorf("%s's dial: not one that met nothing listening in %v", kind, nl.Err)
		}
	}
	r := sendWait(t, send, Target{Addrs: AddrsAt(hp)}, []string{p}, SendOptions{})
	if want := "Nothing is listening at " + hp + ": is Ferry running there?"; r.State != StateFailed || r.Err != want {
		t.Errorf("%s: %q, want %q", r.State, r.Err, want)
	}
}
