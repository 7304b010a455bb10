package pack

import (
	"testing"
	"time"
)

// link plays a session's streams for one window: chunks of 1 MiB sent
// at rate bytes a second of wire (each chunk's wire bytes are its bytes
// times ratio when packed), blocked the share of their time the writes
// waited on the link.
type link struct {
	g   *Gate
	now time.Time
}

func (l *link) window(t *testing.T, wireRate float64, blocked float64, ratio float64) {
	t.Helper()
	const chunk = 1 << 20
	wire := chunk
	packed := l.g.Packing()
	if packed {
		wire = int(float64(chunk) * ratio)
	}
	per := time.Duration(float64(wire) / wireRate * float64(time.Second))
	end := l.now.Add(Window)
	for l.now.Before(end) {
		l.now = l.now.Add(per)
		s := Sample{Bytes: chunk, Wire: wire, Busy: per, Blocked: time.Duration(float64(per) * blocked)}
		if packed {
			s.Packed, s.PackTime = true, chunk*time.Second/240e6
		}
		l.g.Sent(l.now, s)
	}
}

func TestGate(t *testing.T) {
	const MB = 1e6
	for _, tc := range []struct {
		name  string
		steps func(t *testing.T, l *link)
		want  bool
	}{
		{"a 100 Mbit/s link the sender waits on: packed", func(t *testing.T, l *link) {
			l.window(t, 12.5*MB, 0.9, 0.25)
		}, true},
		{"and it stays packed while the link is still the limit", func(t *testing.T, l *link) {
			for range 8 {
				l.window(t, 12.5*MB, 0.9, 0.25)
			}
		}, true},
		{"1 Gbit/s, below what a core packs: packed", func(t *testing.T, l *link) {
			l.window(t, 117*MB, 0.9, 0.3)
		}, true},
		{"800 MB/s: not packed", func(t *testing.T, l *link) {
			for range 4 {
				l.window(t, 800*MB, 0.9, 0.25)
			}
		}, false},
		{"a slow sender's own CPU or disk, not the link: not packed", func(t *testing.T, l *link) {
			for range 4 {
				l.window(t, 12.5*MB, 0.1, 0.25)
			}
		}, false},
		{"packed, then its CPU the limit and slower than unpacked: back off", func(t *testing.T, l *link) {
			l.window(t, 50*MB, 0.9, 0.25)
			if !l.g.Packing() {
				t.Fatal("not packed on a 400 Mbit/s link the sender waits on")
			}
			l.window(t, 10*MB, 0.1, 0.25) // 40 MB/s of chunks against 50 unpacked
		}, false},
		{"packed, its CPU the limit but faster than unpacked: stays", func(t *testing.T, l *link) {
			l.window(t, 50*MB, 0.9, 0.25)
			l.window(t, 20*MB, 0.1, 0.25) // 80 MB/s of chunks against 50
		}, true},
		{"packed, then the path moves to a link faster than packing: off", func(t *testing.T, l *link) {
			l.window(t, 12.5*MB, 0.9, 0.25)
			l.window(t, 400*MB, 0.9, 0.25)
		}, false},
		{"packed and faster, but unpacked measured long ago: off, to measure again", func(t *testing.T, l *link) {
			l.window(t, 50*MB, 0.9, 0.25)
			for range int(RawMaxAge/Window) + 1 {
				l.window(t, 20*MB, 0.1, 0.25)
				if l.now.Sub(time.Unix(0, 0)) < RawMaxAge && !l.g.Packing() {
					t.Fatal("off before the measure of unpacked aged")
				}
			}
		}, false},
		{"a window spent waiting changes nothing", func(t *testing.T, l *link) {
			l.window(t, 12.5*MB, 0.9, 0.25)
			l.now = l.now.Add(10 * Window)
			l.g.Sent(l.now, Sample{Bytes: 100, Wire: 144, Busy: time.Millisecond})
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := &link{g: NewGate(Auto, time.Unix(0, 0)), now: time.Unix(0, 0)}
			if l.g.Packing() {
				t.Fatal("a session starts packed")
			}
			tc.steps(t, l)
			if got := l.g.Packing(); got != tc.want {
				t.Fatalf("packing %v, want %v", got, tc.want)
			}
		})
	}
}

// TestGateMeasuresPacking: where this machine packs slower than twice the
// link, packing stays off once that is measured.
func TestGateMeasuresPacking(t *testing.T) {
	g := NewGate(Auto, time.Unix(0, 0))
	now := time.Unix(0, 0)
	// 4 MiB packed in 400 ms (10 MB/s: tried, and sent as they were), on
	// a link of 12.5 MB/s.
	for range 4 {
		now = now.Add(100 * time.Millisecond)
		g.Sent(now, Sample{Bytes: 1 << 20, Wire: 1_250_000, Busy: 100 * time.Millisecond, Blocked: 90 * time.Millisecond, Packed: true, PackTime: 100 * time.Millisecond})
	}
	if g.Packing() {
		t.Fatal("packing at 10 MB/s for a 12.5 MB/s link")
	}
}

func TestGateFixedModes(t *testing.T) {
	for mode, want := range map[Mode]bool{Always: true, Never: false} {
		l := &link{g: NewGate(mode, time.Unix(0, 0)), now: time.Unix(0, 0)}
		for _, rate := range []float64{12.5e6, 800e6} {
			l.window(t, rate, 0.9, 0.25)
			if l.g.Packing() != want || l.g.Turns() != 0 {
				t.Fatalf("mode %v at %v B/s: packing %v, turns %d", mode, rate, l.g.Packing(), l.g.Turns())
			}
		}
	}
}
