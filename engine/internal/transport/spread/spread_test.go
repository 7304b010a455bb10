package spread

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"
)

// path simulates what a session measures: packets sent each tick, a share
// of them lost at random or when a queue overflows, and the RTT.
type path struct {
	minRTT  time.Duration
	perTick uint64                       // packets sent per 10 ms
	loss    func(tick int) float64       // share of packets lost in this tick
	rtt     func(tick int) time.Duration // smoothed RTT in this tick
}

// run feeds a judge ticks of the path and returns the flows it advises
// after each growth, in order, and the tick of the first growth (-1: none).
func (p path) run(j *Judge, ticks int, seed uint64) (grew []int, first int) {
	rng := rand.New(rand.NewPCG(seed, 1))
	start := time.Unix(1000, 0)
	var s Sample
	s.MinRTT = p.minRTT
	first = -1
	for i := range ticks {
		s.Sent += p.perTick
		for range p.perTick {
			if rng.Float64() < p.loss(i) {
				s.Lost++
			}
		}
		s.SRTT = p.rtt(i)
		if j.Observe(start.Add(time.Duration(i)*10*time.Millisecond), s) {
			grew = append(grew, j.Flows())
			if first < 0 {
				first = i
			}
		}
	}
	return grew, first
}

func flat(d time.Duration) func(int) time.Duration { return func(int) time.Duration { return d } }
func rate(p float64) func(int) float64             { return func(int) float64 { return p } }

func TestJudge(t *testing.T) {
	ms := time.Millisecond
	cases := []struct {
		name  string
		p     path
		flows int
		want  []int // flows after each growth
	}{
		{"2% random loss at 120 ms grows to the maximum", path{120 * ms, 10, rate(0.02), flat(121 * ms)}, 1, []int{5, 16}},
		{"2% random loss at 20 ms, TCP's four flows", path{20 * ms, 40, rate(0.02), flat(20 * ms)}, 4, []int{16}},
		{"0.5% random loss at 120 ms", path{120 * ms, 20, rate(0.005), flat(122 * ms)}, 4, []int{12, 16}},
		{"random loss, RTT samples that jitter", path{20 * ms, 40, rate(0.02),
			func(i int) time.Duration { return 20*ms + time.Duration(i%5)*3*ms }}, 4, []int{16}},
		// A neighbour's Cubic flow fills a 20 Mbit/s, 50 ms queue: the RTT
		// saws between 49 and 70 ms (the session met the queue standing:
		// its minimum is 49), and the queue drops packets at its top, often
		// enough for a small window (0.5 %): congestion, not random loss.
		{"a neighbour's sawtooth", path{49 * ms, 20,
			func(i int) float64 {
				if i%40 >= 38 {
					return 0.05
				}
				return 0
			},
			func(i int) time.Duration { return 49*ms + time.Duration(i%40)*ms/2 + time.Duration(i%40/38)*ms }}, 1, nil},
		// Issue #30's lab cell on a busy machine: a 2 ms path through a
		// user-space forwarder, nothing in its queue, the connections' mean
		// RTT reading 4.4-5.5 ms of scheduling noise.
		{"1% random loss at 2 ms, RTT noisy on a busy machine", path{2 * ms, 125, rate(0.01),
			func(i int) time.Duration { return 4400*time.Microsecond + time.Duration(i%12)*100*time.Microsecond }}, 4, []int{16}},
		{"random loss at 2 ms, but with a standing queue", path{2 * ms, 125, rate(0.01), flat(9 * ms)}, 4, nil},
		{"clean path", path{20 * ms, 80, rate(0), flat(21 * ms)}, 1, nil},
		{"losses only when a queue stands (a shared bottleneck)", path{20 * ms, 80,
			func(i int) float64 {
				if i%30 == 29 {
					return 0.01 // the queue overflows once every 300 ms
				}
				return 0
			},
			func(i int) time.Duration { return 20*ms + time.Duration(i%30)*2*ms }}, 1, nil},
		{"random loss, but with a standing queue", path{20 * ms, 80, rate(0.02), flat(45 * ms)}, 1, nil},
		{"loss too rare to matter", path{20 * ms, 80, rate(0.0002), flat(20 * ms)}, 1, nil},
		// The session met a neighbour's queue standing (minimum 58 ms on a
		// 20 ms path) and the RTT barely moves; its slow start overflows
		// the queue in a burst of two rounds (6 % of the window's packets),
		// then the queue drops a few packets every 1.5 s at its top. As
		// measured in the lab (ferry-bench share), where the old judge grew
		// to 8 and then 16 connections.
		{"joining a standing queue: a slow-start burst, then rare drops", path{58 * ms, 20,
			func(i int) float64 {
				switch {
				case i >= 20 && i < 33:
					return 0.1
				case i > 40 && i%150 < 6:
					return 0.02
				}
				return 0
			}, func(i int) time.Duration { return 62*ms + time.Duration(i%7)*ms }}, 1, nil},
		// The same standing queue, where a neighbour's Cubic sawtooth
		// (3 s from top to top) overflows it at its top and the queue
		// drops one or two of our packets in two neighbouring round trips
		// (0.3 % of a window), as spread over their rounds as two losses can
		// be: from the session's side the same evidence as sparse random
		// loss on a flat path, which must grow (TestJudgeRandomLossIsSpreadOut),
		// so the judge takes one step here (in these 10 s; a later window
		// may take another). Asking for a third round trip with losses where
		// the RTT swings stopped it, but slowed the growth on true random
		// loss on a busy 20 ms path (docs/transport-choice.md); the lab's
		// share test bounds what the step costs the neighbour. (TestLab/share
		// met it in CI once: 2 connections, 1.08x iperf3's share.)
		{"joining a standing queue: drops in two neighbouring rounds", path{54 * ms, 9,
			func(i int) float64 {
				if i > 40 && (i%300 == 292 || i%300 == 299) {
					return 0.15
				}
				return 0
			}, func(i int) time.Duration { return 58*ms + time.Duration(i%300)*ms/30 }}, 1, []int{2}},
		{"one burst of loss, then none", path{120 * ms, 20,
			func(i int) float64 {
				if i == 5 {
					return 0.5
				}
				return 0
			}, flat(120 * ms)}, 1, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			j := NewJudge(Rule{}, c.flows)
			got, _ := c.p.run(j, 1000, 7)
			if !equal(got, c.want) {
				t.Errorf("grew %v, want %v", got, c.want)
			}
			if len(got) > 0 {
				if r := j.Reason(); r.Flows != got[len(got)-1] || r.LossRate < 0.001 || r.MinRTT != c.p.minRTT {
					t.Errorf("reason %+v", r)
				}
			}
		})
	}
}

// TestJudgeRandomLossIsSpreadOut: random loss of any density, on short and
// long paths, passes the burst check; the same number of losses crammed
// into a few round trips does not.
func TestJudgeRandomLossIsSpreadOut(t *testing.T) {
	ms := time.Millisecond
	for _, rtt := range []time.Duration{5 * ms, 15 * ms, 20 * ms, 65 * ms, 120 * ms, 300 * ms} {
		for _, p := range []float64{0.002, 0.005, 0.01, 0.02, 0.05} {
			for _, perTick := range []uint64{2, 10, 80} {
				if float64(perTick)*p*float64(rtt/(10*ms)+1) < 0.05 {
					continue // a loss every 20 round trips or fewer: too rare to matter
				}
				pt := path{rtt, perTick, rate(p), flat(rtt)}
				for seed := range uint64(5) {
					if got, _ := pt.run(NewJudge(Rule{}, 1), 3000, seed); got == nil {
						t.Errorf("RTT %v, %.1f %% random loss, %d packets per 10 ms, seed %d: never grew", rtt, 100*p, perTick, seed)
					}
				}
			}
		}
	}
	for _, c := range []struct {
		lossRounds int
		lost       uint64
		rounds     float64
		want       bool
	}{
		{6, 40, 6, true},   // random loss, every round
		{5, 40, 6, true},   // nearly every round
		{2, 40, 6, false},  // a burst in two rounds of six
		{3, 100, 8, false}, // slow start overflowing a queue
		{2, 2, 20, true},   // two losses, two rounds: as spread as they can be
		{3, 4, 24, true},   // four losses, two in one round
		{1, 10, 24, false}, // ten losses in one round
		{0, 0, 0.5, false}, // no round trip yet
	} {
		if got := spreadOut(c.lossRounds, c.lost, c.rounds); got != c.want {
			t.Errorf("spreadOut(%d rounds with loss, %d lost, %.1f rounds) = %v, want %v", c.lossRounds, c.lost, c.rounds, got, c.want)
		}
	}
}

// A local link never grows, whatever it loses (there the losses are mostly
// a host's socket buffers); the same loss on a longer path still does.
func TestJudgeLocal(t *testing.T) {
	ms := time.Millisecond
	local := path{600 * time.Microsecond, 200, rate(0.06), flat(2400 * time.Microsecond)}
	if got, _ := local.run(NewJudge(Rule{Local: 5 * ms}, 2), 1000, 7); got != nil {
		t.Errorf("a 0.6 ms path losing 6 %% grew %v with Local 5 ms", got)
	}
	if got, _ := local.run(NewJudge(Rule{}, 2), 1000, 7); got == nil {
		t.Error("without Local the same path did not grow: the case tests nothing")
	}
	far := path{20 * ms, 40, rate(0.02), flat(20 * ms)}
	if got, _ := far.run(NewJudge(Rule{Local: 5 * ms}, 4), 1000, 7); got == nil {
		t.Error("a 20 ms path with 2 % random loss did not grow with Local 5 ms")
	}
}

func TestGrowth(t *testing.T) {
	for _, c := range []struct {
		rate float64
		want int
	}{{0.001, 2}, {0.005, 3}, {0.01, 4}, {0.02, 5}, {0.05, 8}} {
		if got := growth(c.rate, 0.001); got != c.want {
			t.Errorf("growth(%v) = %d, want %d", c.rate, got, c.want)
		}
	}
}

// TestJudgeSpeed: at 2 % loss on a 120 ms path, one flow becomes 16 within
// about ten round trips.
func TestJudgeSpeed(t *testing.T) {
	j := NewJudge(Rule{}, 1)
	p := path{120 * time.Millisecond, 10, rate(0.02), flat(120 * time.Millisecond)}
	start := time.Unix(1000, 0)
	var s Sample
	s.MinRTT = p.minRTT
	rng := rand.New(rand.NewPCG(3, 3))
	for i := range 1000 {
		s.Sent += p.perTick * uint64(j.Flows())
		for range p.perTick * uint64(j.Flows()) {
			if rng.Float64() < 0.02 {
				s.Lost++
			}
		}
		s.SRTT = p.minRTT
		j.Observe(start.Add(time.Duration(i)*10*time.Millisecond), s)
		if j.Flows() == 16 {
			if elapsed := time.Duration(i) * 10 * time.Millisecond; elapsed > 12*p.minRTT {
				t.Errorf("16 flows after %v, more than 12 RTTs", elapsed)
			}
			return
		}
	}
	t.Fatalf("flows stayed at %d", j.Flows())
}

// TestJudgeCounterReset: counters that go backwards (a flow closed and
// its counts left the sum) start a new window instead of misjudging.
func TestJudgeCounterReset(t *testing.T) {
	j := NewJudge(Rule{}, 1)
	now := time.Unix(1000, 0)
	for i := range 100 {
		s := Sample{Sent: uint64(1000 - i), Lost: uint64(100 - i), SRTT: 20 * time.Millisecond, MinRTT: 20 * time.Millisecond}
		if j.Observe(now.Add(time.Duration(i)*10*time.Millisecond), s) {
			t.Fatal("grew on shrinking counters")
		}
	}
}

func TestWatch(t *testing.T) {
	var sent, lost uint64
	rng := rand.New(rand.NewPCG(5, 5))
	w := Watch(context.Background(), Rule{Max: 4, Every: time.Millisecond}, 1, func() Sample {
		// Called from the watcher's goroutine only.
		sent += 50
		for range 50 {
			if rng.Float64() < 0.05 {
				lost++
			}
		}
		return Sample{Sent: sent, Lost: lost, SRTT: 2 * time.Millisecond, MinRTT: 2 * time.Millisecond}
	})
	defer w.Stop()
	for n := range w.Advice() {
		if n == 4 {
			if r := w.Reason(); r.Flows != 4 {
				t.Errorf("reason %+v", r)
			}
			return
		}
	}
}

// Limit bounds the advice below the rule's Max (what the peer takes),
// and the advice ends once it reached the limit.
func TestWatchLimit(t *testing.T) {
	var sent, lost uint64
	rng := rand.New(rand.NewPCG(5, 5))
	w := Watch(context.Background(), Rule{Max: 64, Every: time.Millisecond}, 1, func() Sample {
		sent += 50
		for range 50 {
			if rng.Float64() < 0.05 {
				lost++
			}
		}
		return Sample{Sent: sent, Lost: lost, SRTT: 2 * time.Millisecond, MinRTT: 2 * time.Millisecond}
	})
	w.Limit(6)
	defer w.Stop()
	var got []int
	timeout := time.After(time.Minute)
	for {
		select {
		case n, ok := <-w.Advice():
			if !ok {
				if len(got) == 0 || got[len(got)-1] != 6 {
					t.Fatalf("advised %v, want growth up to the limit 6", got)
				}
				return
			}
			if n > 6 {
				t.Fatalf("advised %d flows, over the limit 6 (all: %v)", n, append(got, n))
			}
			got = append(got, n)
		case <-timeout:
			t.Fatalf("advice did not end at the limit: %v", got)
		}
	}
}

func equal(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
