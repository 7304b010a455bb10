package relay

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine/internal/anywhere"
)

// fullOfLooks is a mailbox holding Looks noted looks (the default bound,
// 16384), from 16 sources of LooksPerSource (1024) names each, on a clock
// that the caller moves.
func fullOfLooks(tb testing.TB) (m *Mailbox, now *time.Time) {
	tb.Helper()
	m, now = mailboxOnAClock()
	for s := range m.lim.Looks / m.lim.LooksPerSource {
		names := make([]string, m.lim.LooksPerSource)
		for i := range names {
			names[i] = fmt.Sprintf("%0*d", anywhere.NameLen, s*m.lim.LooksPerSource+i)
		}
		m.lookedLocked(names, fmt.Sprint("source", s), false)
	}
	if len(m.looks) != m.lim.Looks {
		tb.Fatalf("%d looks noted, want %d", len(m.looks), m.lim.Looks)
	}
	return m, now
}

// BenchmarkMailboxRequestAmongLooks is one request (a caller's read of a
// call box's slot, which says how long no one looked at it) to a relay
// that remembers as many looks as it may, none of them old enough to be
// forgotten: what every request pays for the expiry of looks.
func BenchmarkMailboxRequestAmongLooks(b *testing.B) {
	m, _ := fullOfLooks(b)
	benchmarkSlotRead(b, m)
}

// TestMailboxLooksForgottenOldestFirst: looks are kept oldest first, a
// look noted again moving to the back (so forgetting them stops at the
// first one remembered): a name looked at again outlives the older ones
// noted after its first look, a name another source looked at counts for
// that source alone, and once all are forgotten nothing is left of them.
func TestMailboxLooksForgottenOldestFirst(t *testing.T) {
	m := NewMailbox(Limits{LookMemory: time.Minute})
	now := time.Unix(1000, 0)
	m.now = func() time.Time { return now }
	m.started = now
	a, b, c, d := name('a'), name('b'), name('c'), name('d')
	m.lookedLocked([]string{a, b}, "r", false)
	now = now.Add(10 * time.Second)
	m.lookedLocked([]string{c}, "r", false)
	now = now.Add(10 * time.Second)
	m.lookedLocked([]string{a}, "r", true) // a again: after c now
	m.lookedLocked([]string{b}, "s", false)
	now = now.Add(10 * time.Second)
	m.lookedLocked([]string{d}, "s", false)
	order := func() (names []string) {
		for el := m.lookOrder.Front(); el != nil; el = el.Next() {
			names = append(names, el.Value.(*look).name)
		}
		return names
	}
	if got, want := order(), []string{c, a, b, d}; !slices.Equal(got, want) {
		t.Fatalf("looks in the order %q, want %q", got, want)
	}
	if m.looksBy["r"] != 2 || m.looksBy["s"] != 2 {
		t.Errorf("looks by source %v, want r and s 2 each", m.looksBy)
	}
	now = now.Add(45 * time.Second) // c's look 65 s old, a's and b's 55 s
	m.expireLocked(now)
	if got, want := order(), []string{a, b, d}; !slices.Equal(got, want) {
		t.Errorf("after c's look was forgotten: %q, want %q", got, want)
	}
	if u := m.Unwatched([]string{a, c}); u[0].For != 55*time.Second || !u[0].Dropped || u[1].For != time.Minute {
		t.Errorf("a looked at again 55 s ago and c forgotten read %+v", u)
	}
	now = now.Add(time.Minute)
	m.expireLocked(now)
	if len(m.looks) != 0 || m.lookOrder.Len() != 0 || len(m.looksBy) != 0 {
		t.Errorf("all forgotten, yet %d looks, %d in order, by source %v", len(m.looks), m.lookOrder.Len(), m.looksBy)
	}
}
