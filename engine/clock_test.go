package engine

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/internal/clock"
)

// stepClock moves one minute forward every time it is read; its timers
// are the system's.
type stepClock struct {
	clock.Real
	mu  sync.Mutex
	now time.Time
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(time.Minute)
	return c.now
}

// What the engine records and reports comes from its clock.
func TestInjectedClock(t *testing.T) {
	t.Parallel()
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := &stepClock{now: start}
	recv := startReceiver(t, Options{})
	send := testEngine(t, Options{Clock: clock})
	src := filepath.Join(t.TempDir(), "a.bin")
	writeFile(t, src, 64<<10)
	events, unsub := send.Subscribe(256)
	defer unsub()
	tr, err := send.Send(context.Background(), target(recv), []string{src}, SendOptions{Transport: "tcp"})
	if err != nil {
		t.Fatal(err)
	}
	for ev := range events {
		if ev.Time.Before(start) || ev.Time.After(start.Add(24*time.Hour)) {
			t.Errorf("%s event stamped %v, not by the engine's clock", ev.Kind, ev.Time)
		}
		if ev.Kind == EventResult {
			break
		}
	}
	<-tr.Done()
	// The clock moved a minute per reading: the transfer took whole minutes.
	if d := tr.Result().Duration; d < 60 || d != float64(int(d)) {
		t.Errorf("duration %v s, not measured by the engine's clock", d)
	}
}

// The back-off between attempts runs on the engine's clock: a send to a
// device that is away tries again each time the clock passes the back-off
// (0.5 s, doubling up to 10 s) and gives up once RetryFor has passed since
// the first failure, or would have before the next attempt began (it would
// have no time left to connect), however little real time went by.
func TestBackoffFollowsTheClock(t *testing.T) {
	t.Parallel()
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := clock.NewFake(start)
	send := testEngine(t, Options{Clock: clk, RetryFor: time.Minute})
	p := filepath.Join(t.TempDir(), "a.bin")
	writeFile(t, p, 1000)
	// A port nobody listens on: each TCP dial is refused at once.
	gone := listenAndClose(t)
	events, unsub := send.Subscribe(256)
	defer unsub()
	tr, err := send.Send(context.Background(), Target{Addrs: AddrsAt(gone)}, []string{p}, SendOptions{Transport: "tcp"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() {
		<-tr.Done()
		cancel()
	}()
	var waits []time.Duration
	for clk.WaitTimers(ctx, 1) == nil {
		// The one timer armed is the back-off: move to its end.
		before := clk.Now()
		clk.Advance(10 * time.Second)
		waits = append(waits, clk.Now().Sub(before))
	}
	r := tr.Result()
	// Attempts at 0, 10, 20, ... 50 s of clock time: the sixth back-off
	// is 10 s, so a seventh would begin a minute after the first failure,
	// with no time left to connect; the outage took 50 s (the message
	// says so, not the minute's budget).
	if r.State != StateFailed || !strings.Contains(r.Err, "6 attempts in 50s") {
		t.Errorf("result %s %q, want a failure after 6 attempts in 50s", r.State, r.Err)
	}
	if len(waits) != 5 {
		t.Errorf("%d back-offs, want 5", len(waits))
	}
	var retrying int
	for len(events) > 0 {
		if ev := <-events; ev.Kind == EventState && ev.State == StateRetrying {
			retrying++
		}
	}
	if retrying != 5 {
		t.Errorf("%d reconnecting events, want 5", retrying)
	}
	if d := r.Duration; d != 50 {
		t.Errorf("duration %v s by the engine's clock, want 50", d)
	}
}

// listenAndClose returns a loopback address where nothing listens (a port
// that was just free).
func listenAndClose(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// The trust store dates what it records by the engine's clock.
func TestTrustStoreDatesByTheClock(t *testing.T) {
	t.Parallel()
	start := time.Date(2031, 6, 1, 12, 0, 0, 0, time.UTC)
	clk := clock.NewFake(start)
	recv := startReceiver(t, Options{Clock: clk})
	send := testEngine(t, Options{})
	p := filepath.Join(t.TempDir(), "a.bin")
	writeFile(t, p, 1000)
	if r := sendWait(t, send, target(recv), []string{p}, SendOptions{Transport: "tcp"}); r.State != StateDone {
		t.Fatalf("%+v", r)
	}
	peers := recv.Trusted()
	if len(peers) != 1 || !peers[0].LastSeen.Equal(start) {
		t.Fatalf("trust store: %+v, want last seen at %v", peers, start)
	}
}
