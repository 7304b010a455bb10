package discovery

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/ferrydrop/ferry/internal/clock"
	"github.com/ferrydrop/ferry/internal/testutil"
)

// queryCount is an mdnsSender that counts the browse queries sent.
type queryCount struct {
	mu sync.Mutex // guards n
	n  int
}

func (q *queryCount) send(_ []net.Interface, msg *dns.Msg) error {
	if len(msg.Question) == 1 && msg.Question[0].Name == serviceFQDN && msg.Question[0].Qtype == dns.TypePTR {
		q.mu.Lock()
		q.n++
		q.mu.Unlock()
	}
	return nil
}

func (q *queryCount) count() int { q.mu.Lock(); defer q.mu.Unlock(); return q.n }

// fakeProber answers as the devices set at their addresses, and counts
// the probes of every address.
type fakeProber struct {
	mu    sync.Mutex           // guards the fields below
	at    map[string][2]string // "host:port" -> ID and name of who answers there
	calls map[string]int
}

func newFakeProber() *fakeProber {
	return &fakeProber{at: map[string][2]string{}, calls: map[string]int{}}
}

func (f *fakeProber) probe(ctx context.Context, addr string) (string, string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[addr]++
	a, ok := f.at[addr]
	if !ok {
		return "", "", errors.New("timeout")
	}
	return a[0], a[1], nil
}

func (f *fakeProber) answer(addr, id, name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.at[addr] = [2]string{id, name}
}

func (f *fakeProber) probed(addr string) int { f.mu.Lock(); defer f.mu.Unlock(); return f.calls[addr] }

func (f *fakeProber) String() string { f.mu.Lock(); defer f.mu.Unlock(); return fmt.Sprint(f.calls) }

// waitTimers waits until n timers are armed on clk, failing t after the
// bound WaitFor keeps (a timer never armed is a failure, not a hang).
func waitTimers(t *testing.T, clk *clock.Fake, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := clk.WaitTimers(ctx, n); err != nil {
		t.Fatalf("waiting for %d timers armed (%d are): %v", n, clk.Timers(), err)
	}
}

// startLoops runs d's query and probe loops on clk, as Run does, until the
// test ends (or the returned stop), and brings them past their start: the
// first probe round done, the first three queries sent and the clock
// againGap past the last, so that what comes next is neither a first
// query nor a periodic one (QueryInterval and ProbeInterval are far).
func startLoops(t *testing.T, d *Discovery, clk *clock.Fake) (q *queryCount, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	q = &queryCount{}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); d.probeLoop(ctx) }()
	go func() { defer wg.Done(); d.queryLoop(ctx, q, func() []net.Interface { return nil }, nil) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	t.Cleanup(stop)
	testutil.WaitFor(t, "the first probe round", func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		return !d.look.probed.IsZero()
	})
	for n := 1; n <= 3; n++ {
		testutil.WaitFor(t, fmt.Sprintf("query %d", n), func() bool { return q.count() == n })
		waitTimers(t, clk, 2) // the query loop's timer and the probe loop's ticker
		clk.Advance(time.Second)
	}
	return q, stop
}

// A device that went away and is back at its address before the send to
// it gave up (a receiver killed and started again while the sender still
// tried to reach it) appears again as soon as the send's Unreached takes
// it off the table, not at the next periodic query or probe (an hour
// away here; the clock does not move): its last addresses are probed,
// and the network is asked. One that does not answer stays gone; one
// neither remembered nor added by address is not probed (a probed peer
// is one of those), only asked for.
func TestUnreachedLooksAgainAtOnce(t *testing.T) {
	pr := newFakeProber()
	back, away, stranger := idN(50), idN(60), idN(70)
	d, clk := newTestDiscovery(t, Options{
		QueryInterval: time.Hour, ProbeInterval: time.Hour,
		Prober: pr.probe,
		Remembered: func() []Remembered {
			return []Remembered{
				{ID: back, Name: "Back", Addrs: []string{"192.0.2.49:7000"}}, // where it was once
				{ID: away, Name: "Away"},
			}
		},
	})
	ev, cancel := d.Subscribe(16)
	defer cancel()
	d.handleMessage(announcement("Back", back, "h50.local.", 120, "192.0.2.50"), 0, netip.Addr{})
	d.handleMessage(announcement("Away", away, "h60.local.", 120, "192.0.2.60"), 0, netip.Addr{})
	d.handleMessage(announcement("Stranger", stranger, "h70.local.", 120, "192.0.2.70"), 0, netip.Addr{})
	for range 3 {
		recv(t, ev)
	}
	q, _ := startLoops(t, d, clk)

	// The stranger is asked for first: by the time the device back is
	// probed, whether to probe it was decided.
	pr.answer("192.0.2.70:4242", stranger, "Stranger")
	d.Unreached(stranger)
	d.Unreached(away)
	pr.answer("192.0.2.50:4242", back, "Back")
	d.Unreached(back)
	for _, id := range []string{stranger, away, back} {
		if e := recv(t, ev); e.Kind != PeerGone || e.Peer.ID != id || e.Reason != "unreached" {
			t.Fatalf("Unreached(%s): %s %s (%s)", id, e.Kind, e.Peer.ID, e.Reason)
		}
	}
	testutil.WaitFor(t, "the device back at its address listed again", func() bool {
		_, err := resolveIn(d.Peers(), back)
		return err == nil
	})
	e := recv(t, ev)
	if e.Kind != PeerAppeared || e.Peer.ID != back || e.Peer.Name != "Back" || e.Peer.Source != SourceRemembered || e.Peer.Direct != "192.0.2.50:4242" {
		t.Fatalf("back: %s %+v", e.Kind, e.Peer)
	}
	testutil.WaitFor(t, "a query asked for", func() bool { return q.count() == 4 })
	testutil.WaitFor(t, "the away device's addresses probed", func() bool {
		return pr.probed("192.0.2.60:4242") == 1 && pr.probed("192.0.2.60:4243") == 1
	})
	if n := pr.probed("192.0.2.70:4242"); n != 0 {
		t.Errorf("a device neither remembered nor added by address was probed %d times", n)
	}
	if n := pr.probed("192.0.2.49:7000"); n != 0 {
		t.Errorf("the remembered address was probed %d times, after the one the table had answered", n)
	}
	if _, err := resolveIn(d.Peers(), away); !errors.Is(err, ErrNotFound) {
		t.Errorf("the away device is listed: %v", err)
	}
	noEvent(t, ev)
}

// A burst of Unreached calls (sends to many devices, several to each)
// sends one query and probes each device once while the clock stands
// still; what it asked meanwhile waits for againGap and is then one more
// query and at most one more probe of each device, not one per call.
func TestUnreachedBurstIsBounded(t *testing.T) {
	const devices, sends = 20, 3
	pr := newFakeProber() // nobody answers
	var rem []Remembered
	d, clk := newTestDiscovery(t, Options{
		QueryInterval: time.Hour, ProbeInterval: time.Hour,
		Prober:     pr.probe,
		Remembered: func() []Remembered { return rem },
	})
	id := func(i int) string { return idN(100 + i) }
	first := func(i int) string { return fmt.Sprintf("192.0.2.%d:4242", 100+i) }
	for i := range devices {
		rem = append(rem, Remembered{ID: id(i), Name: fmt.Sprint("dev", i)})
		d.handleMessage(announcement(fmt.Sprint("dev", i), id(i), fmt.Sprintf("h%d.local.", i), 120, fmt.Sprintf("192.0.2.%d", 100+i)), 0, netip.Addr{})
	}
	q, stop := startLoops(t, d, clk)
	probedEach := func(lo, hi int) func() bool {
		return func() bool {
			for i := range devices {
				if n := pr.probed(first(i)); n < lo || n > hi {
					return false
				}
			}
			return true
		}
	}

	// The first call's query and probe go out before the rest of the
	// burst, which then waits for them to be againGap old.
	d.Unreached(id(0))
	testutil.WaitFor(t, "the first query and probe", func() bool { return q.count() == 4 && pr.probed(first(0)) == 1 })
	for s := range sends {
		for i := range devices {
			if s > 0 || i > 0 {
				d.Unreached(id(i))
			}
		}
	}
	testutil.WaitFor(t, "each device probed", probedEach(1, 1<<30))
	// The query loop's timer and its query held back, the probe loop's
	// ticker and its probes held back.
	waitTimers(t, clk, 4)
	if n := q.count(); n != 4 || !probedEach(1, 1)() {
		t.Fatalf("while the clock stood still: %d queries (3 first ones), probes %v", n, pr)
	}
	clk.Advance(againGap)
	testutil.WaitFor(t, "the query and the probe held back", func() bool { return q.count() == 5 && pr.probed(first(0)) == 2 })
	stop()
	if n := q.count(); n != 5 || !probedEach(1, 2)() {
		t.Fatalf("after againGap: %d queries (3 first ones), probes %v", n, pr)
	}
}
