package quic

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine/internal/errcode"
	"github.com/ferrydrop/ferry/engine/internal/transport"
	"github.com/ferrydrop/ferry/engine/internal/transport/join"
	"github.com/ferrydrop/ferry/engine/internal/transport/transporttest"
	"github.com/ferrydrop/ferry/internal/fair"
)

// Issue #27 (1): a peer that opens streams and fills them before the
// listener reads anything can make it buffer one small initial window per
// connection, not quic-go's default windows. The attack of the issue: a
// join header one byte short on the first stream, and as much as flow
// control lets through on five more. The listener's own handshake timeout
// ends the connection; every write then returns what it handed over.
func TestWindowBeforeAdmission(t *testing.T) {
	t.Parallel()
	ln := newListener(t, transport.Config{HandshakeTimeout: time.Second})
	ra := ln.Addr().(*net.UDPAddr)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	qc, err := dialConn(ctx, ra, newTestIdentity(t).TLSConfig(false, nil), transport.Config{}.WithDefaults())
	if err != nil {
		t.Fatal(err)
	}
	defer qc.closeWait(0, "")
	first, err := qc.c.OpenStreamSync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	hdr := join.AppendHeader(nil, join.NewToken(), join.FlagNew)
	if _, err := first.Write(hdr[:len(hdr)-1]); err != nil {
		t.Fatal(err)
	}
	const streams, perStream = 5, 4 << 20
	var mu sync.Mutex
	sent := 0
	var wg sync.WaitGroup
	buf := make([]byte, 16<<10)
	for range streams {
		st, err := qc.c.OpenStreamSync(ctx)
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			for left := perStream; left > 0; left -= len(buf) {
				n, err := st.Write(buf)
				mu.Lock()
				sent += n
				mu.Unlock()
				if err != nil {
					return
				}
			}
		})
	}
	wg.Wait() // the listener ended the connection: nothing more could go
	// Write hands quic-go up to one packet's worth beyond what it sent.
	if limit := initialConnectionWindow + streams*2048; sent > limit {
		t.Errorf("a connection that never passed its header got %d bytes in, want at most %d", sent, limit)
	}
	if sent >= streams*perStream {
		t.Errorf("the listener took everything (%d bytes) and never ended the connection", sent)
	}
}

// A connection's window may grow only once its session was admitted; the
// connections it adds later are admitted as they join.
func TestWindowGrowsOnceAdmitted(t *testing.T) {
	t.Parallel()
	ln := newListener(t, transport.Config{})
	_, s, _ := sessionPair(t, ln, ln.Addr().String(), transport.Config{})
	qc := s.primary.c
	if ln.allowIncrease(qc, 1<<20) {
		t.Fatal("the window of a session not admitted may grow")
	}
	if ln.unadmitted.Held() != 1 {
		t.Fatalf("%d connections counted as not admitted, want 1", ln.unadmitted.Held())
	}
	s.Admitted()
	if !ln.allowIncrease(qc, 1<<20) {
		t.Fatal("the window of an admitted session may not grow")
	}
	if ln.unadmitted.Held() != 0 {
		t.Fatalf("%d connections counted as not admitted after the admission, want 0", ln.unadmitted.Held())
	}
}

// Connections not admitted share one budget, fairly by source: when
// sessions from many addresses hold every place, a connection from
// another address still gets in, and the oldest connection of a busiest
// address is closed to make room.
func TestUnadmittedBudget(t *testing.T) {
	t.Parallel()
	// The listener's budget, scaled down: 4 sources of 3 fill it.
	const sources, perSource = 4, 3
	ln, err := listen("127.0.0.1:0", newTestIdentity(t).TLSConfig(true, nil), join.NewRegistry(), transport.Config{HandshakeTimeout: time.Minute},
		fair.Limits{Total: sources * perSource, PerSource: perSource, Floor: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	dial := func(from net.IP) (*Session, *Session) {
		t.Helper()
		c, err := Dial(ctx, ln.Addr().String(), newTestIdentity(t).TLSConfig(false, nil), transport.Config{LocalIP: from.String(), QUICConns: 1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close(nil) })
		if _, err := c.OpenStream(ctx); err != nil {
			t.Fatal(err)
		}
		s, err := ln.Accept(ctx)
		if err != nil {
			t.Fatalf("a sender from %v was shut out: %v", from, err)
		}
		return c, s.(*Session)
	}
	var clients, held []*Session
	for i := range sources * perSource {
		c, s := dial(transporttest.LoopbackSource(t, 2+i%sources))
		clients, held = append(clients, c), append(held, s)
	}
	if got := ln.unadmitted.Held(); got != sources*perSource {
		t.Fatalf("%d connections hold a place, want %d", got, sources*perSource)
	}
	_, s := dial(transporttest.LoopbackSource(t, 2+sources))
	select {
	case <-held[0].Done():
	case <-ctx.Done():
		t.Fatal("the oldest connection of a busiest address was not closed")
	}
	<-clients[0].Done()
	if _, err := clients[0].AcceptStream(ctx); !errors.Is(err, errcode.ErrListenerBusy) {
		t.Errorf("the evicted connection's peer read %v, want %v", err, errcode.ErrListenerBusy)
	}
	for _, h := range held[1:] {
		select {
		case <-h.Done():
			t.Fatalf("a second connection was closed for one newcomer")
		default:
		}
	}
	s.Admitted()
	if got := ln.unadmitted.Held(); got != sources*perSource-1 {
		t.Errorf("%d connections hold a place after one was admitted, want %d", got, sources*perSource-1)
	}
}
