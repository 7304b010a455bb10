package anywhere_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/ferrydrop/ferry/engine/internal/anywhere"
	"github.com/ferrydrop/ferry/engine/internal/rendezvous"
	"github.com/ferrydrop/ferry/engine/relay"
	"github.com/ferrydrop/ferry/internal/testutil"
)

// What pion (ICE, TURN) has to say goes to Ferry's log, never to standard
// error, which is the user's terminal: a relayed send ended with "ice
// ERROR: 2026/12/05 09:13:27 Failed to read UDP packet: closed" among
// ferry-cli's lines (the socket shared with QUIC closed under ICE's reader).
func TestPionLogsToFerrysLog(t *testing.T) {
	r, err := relay.Start(relay.Config{Listen: "127.0.0.1:0", AllowLoopbackPeers: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rd, wr, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stderr
	os.Stderr = wr
	t.Cleanup(func() { os.Stderr = old })
	var mu sync.Mutex
	var stderr, logged bytes.Buffer
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		buf := make([]byte, 4096)
		for {
			n, err := rd.Read(buf)
			mu.Lock()
			stderr.Write(buf[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	// A shared socket that fails under ICE's reader, as the QUIC
	// session's does when it closes the socket it owns.
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	pc.Close()
	a, b := ident(t), ident(t)
	var s rendezvous.Secret
	s[0] = 7
	started := make(chan struct{})
	srv := &anywhere.Server{
		Relay: r.Addr().String(), Self: b.ID, Loopback: true,
		Peers:    func() []anywhere.Peer { return []anywhere.Peer{{ID: a.ID, Secret: s}} },
		Listener: func() *net.UDPAddr { return nil },
		NonQUIC:  func() net.PacketConn { return pc },
		Started:  func() { close(started) },
		Log: slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
			mu.Lock()
			defer mu.Unlock()
			return logged.Write(p)
		}), nil)),
	}
	ctx, stop := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- srv.Run(ctx) }()
	<-started
	said := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return strings.Contains(stderr.String()+logged.String(), "Failed to read UDP packet")
	}
	testutil.WaitFor(t, "pion's word on the failed socket", said)
	stop()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	os.Stderr = old
	wr.Close()
	<-copied
	io.Copy(io.Discard, rd)
	mu.Lock()
	defer mu.Unlock()
	if stderr.Len() > 0 {
		t.Errorf("written to standard error: %q", stderr.String())
	}
	if !strings.Contains(logged.String(), "level=WARN") || !strings.Contains(logged.String(), "Failed to read UDP packet") {
		t.Errorf("Ferry's log: %q", logged.String())
	}
}
