package relay

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine/internal/anywhere"
	"github.com/ferrydrop/ferry/internal/testutil"
)

// holdingWaits is a mailbox holding one wait fewer than Waits (the
// default bound, 1024), each on the same MaxNames (48) names, from 64
// sources of WaitsPerSource (16) waits each; the waits are held until tb
// ends. It returns the names.
func holdingWaits(tb testing.TB) (*Mailbox, []string) {
	tb.Helper()
	m, _ := mailboxOnAClock()
	m.lim.Wait = time.Hour // held as long as the benchmark runs
	names := make([]string, anywhere.MaxNames)
	for i := range names {
		names[i] = fmt.Sprintf("%0*x", anywhere.NameLen, i)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	tb.Cleanup(func() { cancel(); wg.Wait() })
	for i := range m.lim.Waits - 1 {
		wg.Go(func() { m.wait(ctx, names, fmt.Sprint("source", i/m.lim.WaitsPerSource)) })
	}
	testutil.WaitFor(tb, "the waits held", func() bool { return m.Waiting() == m.lim.Waits-1 })
	return m, names
}

// BenchmarkMailboxWaitEndsAmongWaits is one wait held and ended (its
// client gone) on names that as many other waits as the relay holds are
// held on: what the end of a wait pays for the waits beside it.
func BenchmarkMailboxWaitEndsAmongWaits(b *testing.B) {
	m, names := holdingWaits(b)
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	for b.Loop() {
		if out := m.wait(gone, names, "caller"); out != nil {
			b.Fatalf("a wait whose client is gone answered %q", out)
		}
	}
	if n := m.Waiting(); n != m.lim.Waits-1 {
		b.Fatalf("%d waits held after, want %d", n, m.lim.Waits-1)
	}
}

// TestMailboxWaitEndedAmongOthers: a wait that ends leaves the waits of
// each of its names, and it alone: ended in the middle of others on the
// same names, it leaves each name the waits still held on it (one of
// them naming a name twice); a blob queued then wakes exactly the waits
// held on its name (one of them takes it); nothing is left once all
// ended.
func TestMailboxWaitEndedAmongOthers(t *testing.T) {
	t.Parallel()
	m := NewMailbox(Limits{Wait: time.Hour})
	a, b, c, d := name('a'), name('b'), name('c'), name('d')
	type held struct {
		names  []string
		cancel context.CancelFunc
		out    chan []byte
	}
	hold := func(names ...string) held {
		t.Helper()
		ctx, cancel := context.WithCancel(t.Context())
		t.Cleanup(cancel)
		h := held{names, cancel, make(chan []byte, 1)}
		n := m.Waiting()
		go func() { h.out <- m.wait(ctx, names, "r") }()
		testutil.WaitFor(t, fmt.Sprintf("%d waits held", n+1), func() bool { return m.Waiting() == n+1 })
		return h
	}
	// ended is what h was answered, the blobs it took.
	ended := func(h held) (blobs []string) {
		t.Helper()
		select {
		case out := <-h.out:
			recs, err := anywhere.DecodeRecords(out, len(h.names))
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range recs {
				for _, blob := range r {
					blobs = append(blobs, string(blob))
				}
			}
			return blobs
		case <-time.After(10 * time.Second):
			t.Fatalf("the wait on %.1q… was not answered", h.names)
			return nil
		}
	}
	// heldOn says how many waits each name holds, by its first letter.
	heldOn := func(when string, want map[string]int) {
		t.Helper()
		m.mu.Lock()
		got := map[string]int{}
		for n, ws := range m.waiters {
			got[n[:1]] = len(ws)
		}
		m.mu.Unlock()
		if !maps.Equal(got, want) {
			t.Errorf("%s: waits held by name %v, want %v", when, got, want)
		}
	}
	waits := []held{hold(a, b), hold(a, c), hold(a, b, c), hold(c, a, b), hold(d, a, d)}
	heldOn("five held", map[string]int{"a": 5, "b": 3, "c": 3, "d": 1})
	waits[2].cancel()
	if got := ended(waits[2]); len(got) != 0 {
		t.Errorf("an ended wait took %q", got)
	}
	heldOn("the middle one ended", map[string]int{"a": 4, "b": 2, "c": 2, "d": 1})

	// c's blob wakes the two waits held on c, and those alone.
	if err := m.put(c, "s", []byte("call"), true); err != nil {
		t.Fatal(err)
	}
	if got := append(ended(waits[1]), ended(waits[3])...); len(got) != 1 || got[0] != "call" {
		t.Errorf("the two waits on c took %q, want the one call", got)
	}
	heldOn("the waits on c ended", map[string]int{"a": 2, "b": 1, "d": 1})
	if n := m.Waiting(); n != 2 {
		t.Errorf("%d waits held, want the two not on c", n)
	}
	for _, last := range []struct {
		h    held
		name string
	}{{waits[4], d}, {waits[0], b}} {
		if err := m.put(last.name, "s", []byte(last.name[:1]), true); err != nil {
			t.Fatal(err)
		}
		if got := ended(last.h); len(got) != 1 || got[0] != last.name[:1] {
			t.Errorf("the wait on %.1q… took %q, want %s's blob", last.h.names, got, last.name[:1])
		}
	}
	heldOn("all ended", map[string]int{})
	if m.Waiting() != 0 || len(m.waitsBy) != 0 || m.Held() != 0 {
		t.Errorf("all ended, yet %d waits, by source %v, %d blobs held", m.Waiting(), m.waitsBy, m.Held())
	}
}
