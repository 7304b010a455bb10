package quic

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/ferrydrop/ferry/engine/internal/transport"
	"github.com/ferrydrop/ferry/engine/internal/transport/join"
)

// A receiver killed and started again on its port ends the connections of
// the one before it as soon as their sender speaks (a stateless reset, from
// a key both derive from the device's identity), so the sender reconnects
// and resumes at once: it waited out the idle timeout (10 s) before, where
// TCP's sender, told by a reset segment, was back in milliseconds.
func TestRestartedListenerResetsOldConnections(t *testing.T) {
	id := newTestIdentity(t)
	cfg := transport.Config{QUICIdleTimeout: time.Minute, QUICConns: 1}
	ln, err := Listen("127.0.0.1:0", id.TLSConfig(true, nil), join.NewRegistry(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() }) // on every way out: a test that stops early leaks no listener
	addr := ln.Addr().String()
	c, _, first := sessionPair(t, ln, addr, cfg)
	// Killed: its socket is gone without a word to the sender.
	ln.udp.Close()
	again, err := Listen(addr, id.TLSConfig(true, nil), join.NewRegistry(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	wrote := make(chan error, 1)
	go func() {
		_, err := first.Write(make([]byte, 64<<10))
		wrote <- err
	}()
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the sender's connection still lives 5 s after the receiver restarted")
	}
	var reset *quic.StatelessResetError
	if cause := context.Cause(c.primary.c.Context()); !errors.As(cause, &reset) {
		t.Errorf("the connection ended with %v, want a stateless reset", cause)
	}
	// What the sender's user reads of it (the engine starts it with a
	// capital): not quic-go's "received a stateless reset" alone.
	if err := <-wrote; err == nil || !strings.HasPrefix(err.Error(), "the other device restarted: ") {
		t.Errorf("the write ended with %v, want it to say the other device restarted", err)
	}
}

// The same where the data goes over the session's second connection and
// its first one only waits on the control stream: the first one's
// keep-alives are too small to draw a stateless reset (RFC 9000 10.3), so
// the second one's reset ends the session (the device that restarted
// knows none of it), instead of the idle timeout ("Control stream: the
// connection went silent for 10s").
func TestRestartedListenerResetsAnIdleFirstConnection(t *testing.T) {
	id := newTestIdentity(t)
	cfg := transport.Config{QUICIdleTimeout: time.Minute, QUICConns: 2}
	ln, err := Listen("127.0.0.1:0", id.TLSConfig(true, nil), join.NewRegistry(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() }) // on every way out: a test that stops early leaks no listener
	addr := ln.Addr().String()
	c, s, first := sessionPair(t, ln, addr, cfg)
	srvFirst, err := s.AcceptStream(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	// A round trip on it, so that nothing of the first connection waits
	// for an acknowledgement when the receiver dies: the answer
	// acknowledges the question.
	if _, err := first.Write([]byte("?")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(srvFirst, make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	if _, err := srvFirst.Write([]byte("!")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(first, make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	data, err := c.OpenStream(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if st, ok := data.(stream); !ok || st.c == c.primary {
		t.Skipf("the second stream is on the first connection (%T): the path was not taken for a clean local one", data)
	}
	ln.udp.Close() // killed
	again, err := Listen(addr, id.TLSConfig(true, nil), join.NewRegistry(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	go data.Write(make([]byte, 64<<10))
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the session still lives 5 s after the receiver restarted")
	}
	if _, err := first.Read(make([]byte, 1)); err == nil || !strings.HasPrefix(err.Error(), "the other device restarted: ") {
		t.Errorf("the control stream's read ended with %v, want it to say the other device restarted", err)
	}
}
