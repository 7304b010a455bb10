package engine

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// sessionPair dials a session and returns both ends once the first stream
// (which carries the session header) arrived.
func sessionPair(t *testing.T, ln *quicListener, addr string) (client, server *quicSession, first Stream) {
	t.Helper()
	ctx := t.Context()
	c, err := dialQUIC(ctx, addr, newTestIdentity(t).TLSConfig(false, nil))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(0, "") })
	first, err = c.OpenStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ln.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(0, "") })
	return c.(*quicSession), s.(*quicSession), first
}

// pushStreams writes size bytes on each of n new streams and reads them all
// on the listener's side (after the first stream, whose header was read).
func pushStreams(t *testing.T, c, s *quicSession, n int, size int) {
	t.Helper()
	ctx := t.Context()
	if st, err := s.AcceptStream(ctx); err != nil {
		t.Fatal(err)
	} else {
		go io.Copy(io.Discard, st)
	}
	done := make(chan error, n)
	for range n {
		st, err := c.OpenStream(ctx)
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			_, err := st.Write(make([]byte, size))
			st.Close()
			done <- err
		}()
	}
	for range n {
		st, err := s.AcceptStream(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.Copy(io.Discard, st)
		if err != nil || got != int64(size) {
			t.Fatalf("read %d of %d bytes: %v", got, size, err)
		}
	}
	for range n {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

// On a clean local path a session adds a connection and spreads its data
// streams over both; the counters add up on both sides.
func TestQUICSessionSpreadsStreams(t *testing.T) {
	// Under the race detector a loopback handshake can take longer than cleanRTT.
	old := cleanRTT
	cleanRTT = time.Second
	t.Cleanup(func() { cleanRTT = old })
	ln := newQUICTestListener(t)
	c, s, _ := sessionPair(t, ln, ln.Addr().String())
	const size = 4 << 20
	pushStreams(t, c, s, 4, size)
	if m := c.Metrics(); m.Connections != 2 || m.BytesSent < 4*size {
		t.Errorf("dialer: %d connections, %d bytes sent", m.Connections, m.BytesSent)
	}
	if m := s.Metrics(); m.Connections != 2 || m.BytesRecv < 4*size {
		t.Errorf("listener: %d connections, %d bytes received", m.Connections, m.BytesRecv)
	}
	c.mu.Lock()
	conns := c.conns
	c.mu.Unlock()
	for i, qc := range conns {
		if sent := qc.c.ConnectionStats().BytesSent; sent < 2*size {
			t.Errorf("connection %d carried %d bytes, want two streams' worth", i, sent)
		}
	}
	// Closing the session ends every connection on both sides.
	c.Close(0, "")
	for i, qc := range conns {
		select {
		case <-qc.Done():
		case <-time.After(5 * time.Second):
			t.Fatalf("dialer connection %d still open", i)
		}
	}
	select {
	case <-s.ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("listener session still open")
	}
}

// Beyond a clean local path, or with FERRY_QUIC_CONNS=1, a session is one connection.
func TestQUICSessionOneConnection(t *testing.T) {
	for _, tc := range []struct {
		name  string
		clean time.Duration
		conns int
	}{
		{"long path", time.Nanosecond, 2},
		{"turned off", cleanRTT, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			oldClean, oldConns := cleanRTT, quicSessionConns
			cleanRTT, quicSessionConns = tc.clean, tc.conns
			t.Cleanup(func() { cleanRTT, quicSessionConns = oldClean, oldConns })
			ln := newQUICTestListener(t)
			c, s, _ := sessionPair(t, ln, ln.Addr().String())
			pushStreams(t, c, s, 3, 64<<10)
			if cm, sm := c.Metrics(), s.Metrics(); cm.Connections != 1 || sm.Connections != 1 {
				t.Errorf("connections: dialer %d, listener %d", cm.Connections, sm.Connections)
			}
		})
	}
}

// Hostile joins are refused with the status that says why, and never reach
// the session; the session itself carries on.
func TestQUICJoinRefused(t *testing.T) {
	ln := newQUICTestListener(t)
	c, s, _ := sessionPair(t, ln, ln.Addr().String())
	ra := ln.Addr().(*net.UDPAddr)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	var unknown [tcpTokenLen]byte
	unknown[0] = 0xEE
	for _, tc := range []struct {
		name  string
		token [tcpTokenLen]byte
		own   bool // dial with the session's certificate
		want  error
	}{
		{"unknown token", unknown, true, errTCPUnknown},
		{"other certificate", c.token, false, errTCPPeer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tlsConf := c.tlsConf
			if !tc.own {
				tlsConf = newTestIdentity(t).TLSConfig(false, nil)
			}
			qc, err := dialQUICConn(ctx, ra, tlsConf)
			if err != nil {
				t.Fatal(err)
			}
			defer qc.Close(0, "")
			if err := quicJoin(ctx, qc, tc.token); !errors.Is(err, tc.want) {
				t.Errorf("join: %v, want %v", err, tc.want)
			}
		})
	}
	// A session is full at quicMaxSessionConns connections.
	for i := 1; ; i++ {
		qc, err := dialQUICConn(ctx, ra, c.tlsConf)
		if err != nil {
			t.Fatal(err)
		}
		defer qc.Close(0, "")
		err = quicJoin(ctx, qc, c.token)
		if i < quicMaxSessionConns {
			if err != nil {
				t.Fatalf("join %d: %v", i, err)
			}
			continue
		}
		if !errors.Is(err, errTCPFull) {
			t.Fatalf("join %d: %v, want %v", i, err, errTCPFull)
		}
		break
	}
	if m := s.Metrics(); m.Connections != quicMaxSessionConns {
		t.Errorf("listener session has %d connections", m.Connections)
	}
	pushStreams(t, c, s, 2, 1<<10)
}

// A connection whose first stream does not start with a valid header (a
// TCP spare flag, an unknown flag, too few bytes) is closed with a reason,
// and no session reaches Accept.
func TestQUICBadHeader(t *testing.T) {
	old := tcpHandshakeTimeout
	tcpHandshakeTimeout = 500 * time.Millisecond
	t.Cleanup(func() { tcpHandshakeTimeout = old })
	ln := newQUICTestListener(t)
	ra := ln.Addr().(*net.UDPAddr)
	var token [tcpTokenLen]byte
	for _, tc := range []struct {
		name string
		hdr  []byte
	}{
		{"spare flag", appendJoinHeader(nil, token, tcpFlagSpare)},
		{"unknown flag", appendJoinHeader(nil, token, 9)},
		{"short", []byte("ferry")},
		{"no stream", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			qc, err := dialQUICConn(ctx, ra, newTestIdentity(t).TLSConfig(false, nil))
			if err != nil {
				t.Fatal(err)
			}
			defer qc.Close(0, "")
			if tc.hdr != nil {
				st, err := qc.c.OpenStreamSync(ctx)
				if err != nil {
					t.Fatal(err)
				}
				st.Write(tc.hdr)
			}
			select {
			case <-qc.Done():
			case <-ctx.Done():
				t.Fatal("listener kept the connection open")
			}
			if err := context.Cause(qc.c.Context()); err == nil || !strings.Contains(err.Error(), "header") && !strings.Contains(err.Error(), "no stream") {
				t.Errorf("closed with %v", err)
			}
			actx, acancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
			defer acancel()
			if s, err := ln.Accept(actx); err == nil {
				t.Errorf("a session reached Accept: %v", s.RemoteAddr())
			}
		})
	}
}
