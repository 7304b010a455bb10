package engine

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ferrydrop/ferry/engine/internal/transport"
	"github.com/ferrydrop/ferry/engine/internal/transport/join"

	"github.com/ferrydrop/ferry/engine/addr"
)

// errNoUDP stands for a platform that refuses UDP sockets (Wine, see FACTS).
var errNoUDP = &LocalError{Err: errors.New("listen quic: wsaioctl: winapi error #10045")}

// withoutQUICListen makes e's QUIC listener fail to start, as on a platform
// that refuses UDP.
func withoutQUICListen(e *Engine) {
	for i, k := range e.transports {
		if k.Kind == transport.QUIC {
			e.transports[i].Listen = func(string, *tls.Config, *join.Registry) (transport.Listener, error) { return nil, errNoUDP }
		}
	}
}

// Each transport listens on its own: one that cannot start is reported, and
// the others receive.
func TestListenerFailsAlone(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, e *Engine)
	}{
		{"platform refuses UDP", func(t *testing.T, e *Engine) { withoutQUICListen(e) }},
		{"UDP port taken", func(t *testing.T, e *Engine) {
			pc, err := net.ListenPacket("udp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { pc.Close() })
			e.opts.Listen = pc.LocalAddr().String()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			recv := testEngine(t, Options{})
			tc.setup(t, recv)
			events, unsub := recv.Subscribe(16)
			defer unsub()
			if err := recv.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			q, tcpAddr := listening(recv, addr.QUIC), listening(recv, addr.TCP)
			if q != "" || tcpAddr == "" {
				t.Fatalf("listening quic=%q tcp=%q", q, tcpAddr)
			}
			ev := <-events
			if ev.Kind != EventListener || ev.Listener == nil || ev.Listener.Transport != "quic" ||
				!strings.HasPrefix(ev.Listener.Err, "Could not open a network socket on this device") {
				t.Errorf("event %+v", ev)
			}
			sts := recv.Listeners()
			if len(sts) != 2 || sts[0].Err == "" || sts[1].Err != "" || sts[1].Addr != tcpAddr {
				t.Errorf("listeners %+v", sts)
			}
			// A sender that knows one address for both (as discovery may
			// advertise) gets through over TCP.
			send := testEngine(t, Options{})
			src := filepath.Join(t.TempDir(), "a.bin")
			writeFile(t, src, 1<<20)
			res := sendWait(t, send, Target{Addrs: AddrsAt(tcpAddr)}, []string{src}, SendOptions{})
			if res.State != StateDone || res.Transport != "tcp" {
				t.Fatalf("%s over %s: %s", res.State, res.Transport, res.Err)
			}
		})
	}
}

func TestNoListenerStarts(t *testing.T) {
	t.Parallel()
	e := testEngine(t, Options{NoListen: onlyListen("quic")})
	withoutQUICListen(e)
	err := e.Start(context.Background())
	if !errors.Is(err, errNoUDP) {
		t.Fatalf("Start: %v", err)
	}
	if e.Receiving() || e.Listeners() != nil {
		t.Error("receiving without a listener")
	}
}

// A sender that cannot open its own socket says so and does not retry as if
// the receiver were away.
func TestLocalDialErrorIsNotRetried(t *testing.T) {
	t.Parallel()
	recv := startReceiver(t, Options{})
	send := testEngine(t, Options{}) // RetryFor: the default two minutes
	for i, k := range send.transports {
		if k.Kind == transport.QUIC {
			send.transports[i].Dial = func(context.Context, string, *tls.Config) (transport.Conn, error) {
				return nil, &LocalError{Err: errors.New("socket: too many open files")}
			}
		}
	}
	src := filepath.Join(t.TempDir(), "a.bin")
	writeFile(t, src, 1<<10)
	events, unsub := send.Subscribe(64)
	defer unsub()
	res := sendWait(t, send, target(recv), []string{src}, SendOptions{Transport: "quic"})
	if res.State != StateFailed || !strings.HasPrefix(res.Err, "Could not open a network socket on this device") {
		t.Fatalf("%s: %q", res.State, res.Err)
	}
	for ev := range events {
		if ev.State == StateRetrying {
			t.Fatal("retried a local failure")
		}
		if ev.Kind == EventResult {
			break
		}
	}
	// Auto carries on over TCP when only QUIC's socket fails.
	if res := sendWait(t, send, target(recv), []string{src}, SendOptions{}); res.State != StateDone || res.Transport != "tcp" {
		t.Fatalf("auto: %s over %s: %s", res.State, res.Transport, res.Err)
	}
}

// With ListenAnyIfTaken, a port another program holds for both transports
// is no reason not to receive: both listen on a free port.
func TestListenAnyIfTaken(t *testing.T) {
	t.Parallel()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	held := pc.LocalAddr().(*net.UDPAddr).Port
	tl, err := net.Listen("tcp", pc.LocalAddr().String())
	if err != nil {
		t.Skipf("TCP port %d not free next to the UDP one: %v", held, err)
	}
	defer tl.Close()
	for _, anyIfTaken := range []bool{false, true} {
		e := testEngine(t, Options{Listen: pc.LocalAddr().String(), ListenAnyIfTaken: anyIfTaken})
		err := e.Start(context.Background())
		if !anyIfTaken {
			if err == nil {
				t.Fatal("started on a port held for both transports")
			}
			continue
		}
		if err != nil {
			t.Fatalf("ListenAnyIfTaken: %v", err)
		}
		q, tcpAddr := listening(e, addr.QUIC), listening(e, addr.TCP)
		if q == "" || tcpAddr == "" || strings.HasSuffix(q, fmt.Sprint(":", held)) || strings.HasSuffix(tcpAddr, fmt.Sprint(":", held)) {
			t.Fatalf("listening quic=%q tcp=%q with port %d held", q, tcpAddr, held)
		}
	}
}
