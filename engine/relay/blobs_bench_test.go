package relay

import (
	"container/list"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine/internal/anywhere"
)

// fullOfBlobs is a mailbox holding Total blobs (the default bound,
// 16384), put by 64 sources of PerSource (256) blobs each, half of them
// presences (slots) and half calls (queues of MaxQueue), on a clock that
// the caller moves.
func fullOfBlobs(tb testing.TB) (m *Mailbox, now *time.Time) {
	tb.Helper()
	m, now = mailboxOnAClock()
	n := 0
	hexName := func() string { n++; return fmt.Sprintf("%0*x", anywhere.NameLen, n) }
	for s := range m.lim.Total / m.lim.PerSource {
		src := fmt.Sprint("source", s)
		for range m.lim.PerSource / 2 {
			if _, err := m.Handle(http.MethodPut, anywhere.PathSlot+hexName(), src, []byte("presence")); err != nil {
				tb.Fatal(err)
			}
		}
		for range m.lim.PerSource / 2 / anywhere.MaxQueue {
			q := hexName()
			for range anywhere.MaxQueue {
				if _, err := m.Handle(http.MethodPost, anywhere.PathQueue+q, src, []byte("call")); err != nil {
					tb.Fatal(err)
				}
			}
		}
	}
	if m.Held() != m.lim.Total {
		tb.Fatalf("%d blobs held, want %d", m.Held(), m.lim.Total)
	}
	return m, now
}

// BenchmarkMailboxRequestAmongBlobs is one request (a caller's read of a
// call box's slot) to a relay that holds as many blobs as it may, none
// of them old enough to expire: what every request pays for the expiry
// of blobs.
func BenchmarkMailboxRequestAmongBlobs(b *testing.B) {
	m, _ := fullOfBlobs(b)
	benchmarkSlotRead(b, m)
}

// TestMailboxBlobsExpireOldestFirst: slots and queued blobs are kept
// oldest first, each with its own time to live (so expiring them stops
// at the first one kept): a slot put again is renewed and outlives the
// older ones put after its first time, a queued blob taken leaves its
// order, a queue loses its oldest blobs alone, and once all expired
// nothing is left of them.
func TestMailboxBlobsExpireOldestFirst(t *testing.T) {
	t.Parallel()
	m := NewMailbox(Limits{SlotTTL: 2 * time.Minute, QueueTTL: time.Minute})
	start := time.Unix(1000, 0)
	now := start
	m.now = func() time.Time { return now }
	a, b, c, d, e := name('a'), name('b'), name('c'), name('d'), name('e')
	do := func(method, path, blob string) {
		t.Helper()
		if _, err := m.Handle(method, path, "s", []byte(blob)); err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
	}
	do(http.MethodPut, anywhere.PathSlot+a, "a1")
	do(http.MethodPut, anywhere.PathSlot+b, "b")
	do(http.MethodPost, anywhere.PathQueue+c, "c1")
	do(http.MethodPost, anywhere.PathQueue+d, "d")
	now = start.Add(10 * time.Second)
	do(http.MethodPut, anywhere.PathSlot+c, "c")
	do(http.MethodPost, anywhere.PathQueue+c, "c2")
	now = start.Add(20 * time.Second)
	do(http.MethodPut, anywhere.PathSlot+a, "a2") // renewed: after c now
	do(http.MethodPost, anywhere.PathQueue+e, "e")
	do(http.MethodPost, anywhere.PathQueues, d) // d taken
	order := func(l *list.List) (blobs []string) {
		for el := l.Front(); el != nil; el = el.Next() {
			blobs = append(blobs, string(el.Value.(*entry).blob))
		}
		return blobs
	}
	check := func(when string, slots, queued []string) {
		t.Helper()
		m.mu.Lock()
		m.expireLocked(now)
		gotSlots, gotQueued := order(&m.slotOrder), order(&m.queueOrder)
		var inQueues int
		for _, q := range m.queues {
			inQueues += len(q)
		}
		held, counted := len(m.slots)+inQueues, m.count["s"]
		m.mu.Unlock()
		if !slices.Equal(gotSlots, slots) || !slices.Equal(gotQueued, queued) {
			t.Errorf("%s: slots %q and queued %q in order, want %q and %q", when, gotSlots, gotQueued, slots, queued)
		}
		if want := len(slots) + len(queued); held != want || counted != want || m.Held() != want {
			t.Errorf("%s: %d blobs in slots and queues, %d counted for the source, %d held; want %d", when, held, counted, m.Held(), want)
		}
	}
	check("before any expired", []string{"b", "c", "a2"}, []string{"c1", "c2", "e"})
	now = start.Add(65 * time.Second) // c1 a minute old, c2 55 s
	check("after c1 expired", []string{"b", "c", "a2"}, []string{"c2", "e"})
	out, _ := m.Handle(http.MethodPost, anywhere.PathQueues, "r", anywhere.EncodeNames([]string{c}))
	if got, err := anywhere.DecodeRecords(out, 1); err != nil || len(got[0]) != 1 || string(got[0][0]) != "c2" {
		t.Errorf("c's queue after its oldest expired: %q %v", got, err)
	}
	check("after c's queue was taken", []string{"b", "c", "a2"}, []string{"e"})
	now = start.Add(125 * time.Second) // past a's first 2 minutes and b's
	check("after b expired", []string{"c", "a2"}, nil)
	out, _ = m.Handle(http.MethodPost, anywhere.PathSlots, "r", anywhere.EncodeNames([]string{a, b}))
	if got, err := anywhere.DecodeRecords(out, 2); err != nil || len(got[0]) != 1 || string(got[0][0]) != "a2" || len(got[1]) != 0 {
		t.Errorf("slots a (renewed) and b (expired) read %q %v, want a2 and nothing", got, err)
	}
	now = start.Add(135 * time.Second)
	check("after c expired", []string{"a2"}, nil)
	now = start.Add(145 * time.Second)
	check("after all expired", nil, nil)
	if len(m.slots) != 0 || len(m.queues) != 0 || len(m.count) != 0 {
		t.Errorf("all expired, yet slots %d, queues %d, counts %v", len(m.slots), len(m.queues), m.count)
	}
}
