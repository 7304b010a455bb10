package engine

import (
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine/addr"
)

// TestRetryForBoundsTheAttemptsConnecting: an attempt made in an outage
// stops connecting when the outage's budget (RetryFor) runs out; it ran
// to its own end (`--retry-for 30s` gave up after 53 s in the NAT lab: the
// last call through the relay began before the budget ran out). Here the
// device's address takes the first connection and closes it (the outage
// begins), then takes the next ones and never answers, and a handshake
// may take ten minutes: the send ends soon after its 1 s budget.
func TestRetryForBoundsTheAttemptsConnecting(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var mu sync.Mutex
	var held []net.Conn
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	}()
	go func() {
		for n := 0; ; n++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if n == 0 {
				c.Close()
				continue
			}
			mu.Lock()
			held = append(held, c) // silent
			mu.Unlock()
		}
	}()
	a := testEngine(t, Options{RetryFor: time.Second, Transport: TransportConfig{HandshakeTimeout: 10 * time.Minute}})
	src := filepath.Join(t.TempDir(), "f.bin")
	writeFile(t, src, 1000)
	tr, err := a.Send(t.Context(), Target{Addrs: []addr.Addr{addr.New(addr.TCP, ln.Addr().String())}}, []string{src}, SendOptions{Transport: "tcp"})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-tr.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the send outlived its 1 s budget for reconnecting by 30 s: an attempt's connecting was not bounded by it")
	}
	if r := tr.Result(); r.State != StateFailed || !strings.Contains(r.Err, "ave up after ") || !strings.Contains(r.Err, ": no connection before the time for reconnecting ran out.") {
		t.Errorf("result %s %q, want failed, given up", r.State, r.Err)
	}
}
