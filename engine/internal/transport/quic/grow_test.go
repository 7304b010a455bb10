package quic

import (
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine/internal/transport"
	"github.com/ferrydrop/ferry/engine/internal/transport/spread"
	"github.com/ferrydrop/ferry/internal/testutil"
)

// A join that failed (it timed out on a busy host) is tried again when the
// session is advised to grow on, and the sender is told to open a stream
// only for each connection joined or joining: the failed one's went to a
// connection that carried one already (TestSessionGrowsOnRandomLoss in a
// CI rehearsal: "connection 2 carries 2 streams, want 1").
func TestSessionGrowsPastAFailedJoin(t *testing.T) {
	t.Parallel()
	ln := newListener(t, transport.Config{})
	// Joins fail at once until the test gives them time; MaxFlows 1 starts
	// no watcher: the test advises the session itself.
	c, _, _ := sessionPair(t, ln, ln.Addr().String(), transport.Config{CleanRTT: -1, MaxFlows: 1, JoinTimeout: time.Nanosecond})
	ctx := t.Context()
	c.advice = make(chan transport.Advice, 1)
	flows := make(chan int)
	c.wg.Go(func() { c.followAdvice(flows, func() spread.Reason { return spread.Reason{} }) })
	if _, err := c.OpenStream(ctx); err != nil { // the first data stream, on the first connection
		t.Fatal(err)
	}
	flows <- 2
	testutil.WaitFor(t, "the first join to fail", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.slots) == 2 && c.slots[1].failed()
	})
	// followAdvice took the advice above, and starts the joins of the next
	// one after it: they read this.
	c.cfg.JoinTimeout = time.Minute
	flows <- 4
	close(flows)
	var adv transport.Advice
	for a := range c.advice {
		adv = a
	}
	for streams := 1; streams < adv.Streams; streams++ {
		if _, err := c.OpenStream(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if m := c.Metrics(); m.Connections != 4 || adv.Streams != 4 {
		t.Errorf("advised 4 flows: %d connections, %d data streams advised, want 4 and 4", m.Connections, adv.Streams)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, x := range c.slots {
		want := 1 // a data stream each; the first connection has the control stream too
		if i == 0 {
			want = 2
		}
		if x.failed() {
			want = 0
		}
		if x.streams != want {
			t.Errorf("connection %d (failed %v) carries %d streams, want %d", i, x.failed(), x.streams, want)
		}
	}
}
