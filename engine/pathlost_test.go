package engine

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine/addr"
	"github.com/ferrydrop/ferry/engine/identity"
)

// lostConn is a session whose path the test declares lost
// (transport.PathLoser); nothing else of it is used.
type lostConn struct {
	Conn
	lost chan struct{}
}

func (c lostConn) PathLost() <-chan struct{} { return c.lost }

// A session that lost its path (a QUIC connection whose address went away
// with nowhere to migrate) ends its attempt at once as errPathGone, and
// the transfer's next attempt is told so, once.
func TestPathLostEndsAttempt(t *testing.T) {
	e := testEngine(t, Options{})
	tr := &Transfer{id: "lost", dir: Sending, done: make(chan struct{}), started: time.Now()}
	ctx, stop := context.WithCancelCause(context.Background())
	defer stop(nil)
	c := lostConn{lost: make(chan struct{})}
	defer e.watchPath(ctx, tr, c, stop)()
	close(c.lost)
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the attempt did not end when its path was lost")
	}
	if err := context.Cause(ctx); !errors.Is(err, errPathGone) {
		t.Errorf("the attempt ended with %v, want errPathGone", err)
	}
	if !tr.takePathLost() {
		t.Error("the next attempt is not told the path was lost")
	}
	if tr.takePathLost() {
		t.Error("told twice")
	}
}

// After a lost path the relay is called at once beside the LAN address
// (which is the one that just failed), not after the LAN's head start.
// The LAN address here never answers, and the device is not paired, so a
// call through the relay fails at once with ErrNotPaired; within half the
// head start only that call can have ended the dial.
func TestPathLostCallsRelayAtOnce(t *testing.T) {
	e := testEngine(t, Options{})
	silent, err := net.ListenPacket("udp", "127.0.0.1:0") // takes QUIC's handshake and never answers
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	other, err := identity.LoadOrCreate(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	to := Target{ID: other.ID.String(), Addrs: []addr.Addr{addr.New(addr.QUIC, silent.LocalAddr().String()), addr.NewRendezvous("127.0.0.1:9")}}
	for _, lost := range []bool{false, true} {
		ctx, cancel := context.WithTimeout(context.Background(), anywhereHeadStart/2)
		_, err := e.dialTarget(ctx, to, other.ID, "", lost, nil)
		cancel()
		switch {
		case lost && !errors.Is(err, ErrNotPaired):
			t.Errorf("after a lost path: %v, want the relay's answer (not paired) before the head start ended", err)
		case !lost && errors.Is(err, ErrNotPaired):
			t.Errorf("the relay was called before the LAN's head start ended: %v", err)
		}
	}
}
