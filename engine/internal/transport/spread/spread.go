// Package spread decides how many parallel congestion-controlled flows a
// session's data should use: QUIC connections for a QUIC session, TCP
// connections (streams) for a TCP session.
//
// A loss-based congestion control (quic-go's Reno, kernel Cubic or Reno)
// reads every lost packet as congestion and halves its window, so under
// random loss a flow's window settles near 1.22/sqrt(p) packets whatever
// the path could carry (Mathis et al.): about 9 packets at 2 % loss, under
// 1 Mbit/s on a 120 ms path. N such flows carry about N times as much. BBR
// does not read random loss as congestion; where it is available one
// session needs no more flows.
//
// So a session starts with its usual flows, and grows them while its path
// shows random loss: packets lost in at least two round trips of a window,
// at a rate of at least Rule.MinLoss, while the RTT showed no queue. A full
// queue drops packets when the RTT is at its highest, random loss strikes
// whatever the RTT: each loss is told by the latest RTT around it, and a
// window with more than one loss in five at a queued RTT, or with a
// standing queue, does not count; nor does a window whose losses came in a
// burst rather than spread over its round trips (spreadOut), which a queue
// met already standing shows where the RTT cannot. So the session's own
// slow start, or a neighbour filling a shared bottleneck, does not make the
// flows grow: a transfer does not crowd out its neighbours. Each window that shows
// random loss multiplies the flows in use by sqrt(loss rate / MinLoss) (at
// least 2), up to Rule.Max; once the flows fill the path, a standing queue
// stops the growth. The measurements behind the numbers are
// in docs/transport-choice.md.
package spread

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Sample is what a session measured of its path so far: counters are
// cumulative and summed over the session's flows.
type Sample struct {
	// Sent and Lost count packets (QUIC) or segments (TCP) sent, and those
	// declared lost (TCP: retransmitted).
	Sent, Lost uint64
	// SRTT and MinRTT are the smoothed and the minimum round trip;
	// LatestRTT is the latest sample (SRTT where the session keeps none).
	SRTT, MinRTT, LatestRTT time.Duration
	// Flows is how many flows carry data now, if the session knows (0:
	// as many as advised).
	Flows int
}

// Rule is what counts as random loss and how far flows may grow. The zero
// value of each field means the default written next to it.
type Rule struct {
	// Max bounds the flows of a session. Zero means 16.
	Max int
	// MinLoss is the smallest loss rate over a window that counts as random
	// loss. A flow sharing a bottleneck with others loses far less than
	// this to congestion (about (1.22/W)^2 for a window of W packets: 0.02 %
	// for 85 packets), so a neighbour's queue does not make flows grow.
	// Zero means 0.1 %.
	MinLoss float64
	// Slack is the scheduling noise allowed on top of the minimum RTT when
	// telling a queue. Zero means DefaultSlack.
	Slack time.Duration
	// Every is how often the watcher samples. Zero means 10 ms.
	Every time.Duration
	// Local is the minimum RTT under which a path never grows (zero: every
	// path may). On loopback or a wired LAN (well under 1 ms) one
	// loss-limited flow still carries a lot (1.22/sqrt(p) packets per
	// round trip: at 0.5 % loss and 0.5 ms, 400 Mbit/s), and the losses
	// seen there are mostly a host's socket buffers overflowing: on
	// loopback a QUIC session's slow start lost 6 % of its packets before
	// its RTT showed the queue, and growing to 16 connections cost a 1 GiB
	// transfer 20 % more CPU and twice the memory. From a few ms (Wi-Fi) a
	// fast link needs more flows: at 2 ms and 0.5 % one Cubic flow carries
	// about 70 Mbit/s.
	Local time.Duration
}

// DefaultSlack is the scheduling noise Queued allows by default. It was
// 2 ms; on a 2 ms path through a user-space forwarder on a busy machine
// (issue #30's lab cell, load 8-14) the connections' mean smoothed RTT read
// 4.4-5.5 ms with nothing in the bottleneck's queue, over the 4.5 ms that
// 2 ms allowed, so a TCP session that had grown to 8 flows counted its
// random losses as a queue's and stayed there for the rest of the
// transfer (docs/benchmarks/lab-fastlossy.md, sitting "noise"). A
// neighbour's standing queue reads far above it (96 ms on that path with
// iperf3 beside), and its losses still fail the burst check.
const DefaultSlack = 4 * time.Millisecond

func (r Rule) withDefaults() Rule {
	if r.Max <= 0 {
		r.Max = 16
	}
	if r.MinLoss <= 0 {
		r.MinLoss = 0.001
	}
	if r.Slack <= 0 {
		r.Slack = DefaultSlack
	}
	if r.Every <= 0 {
		r.Every = 10 * time.Millisecond
	}
	return r
}

// Queued reports whether rtt shows a queue on a path whose minimum is
// minRTT: more than a quarter above it, plus slack for scheduling noise.
func Queued(rtt, minRTT, slack time.Duration) bool {
	return rtt > minRTT+minRTT/4+slack
}

// Judge tells random loss from a sequence of samples. It is not safe for
// concurrent use; Watch runs one.
type Judge struct {
	rule  Rule
	flows int

	// the current window
	start      time.Time
	first      Sample
	lossRounds int       // round trips of the window in which packets were lost at random
	roundStart time.Time // when the last counted loss round began
	lastLost   uint64
	randomLost uint64        // losses seen while the RTT showed no queue
	queueLost  uint64        // losses seen while it did
	sumSRTT    time.Duration // over the window's samples
	samples    int
	why        Reason
}

// Reason says what the last verdict of a Judge saw.
type Reason struct {
	Flows    int           // flows after the verdict
	LossRate float64       // lost over sent in the window
	SRTT     time.Duration // mean smoothed RTT over the window
	MinRTT   time.Duration
}

// Describe says what r saw in words, for a session whose flows are called
// flows ("QUIC connections", "TCP connections").
func (r Reason) Describe(flows string) string {
	return fmt.Sprintf("random loss: %.1f %% of packets lost with no queue on the path (RTT %s, minimum %s); "+
		"each loss-based flow is capped by it, so the batch spreads over %d %s", 100*r.LossRate,
		ms(r.SRTT), ms(r.MinRTT), r.Flows, flows)
}

func ms(d time.Duration) string {
	if d < 10*time.Millisecond {
		return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond))
}

// NewJudge starts judging a session that has flows flows now.
func NewJudge(rule Rule, flows int) *Judge {
	return &Judge{rule: rule.withDefaults(), flows: max(flows, 1)}
}

// Flows is the number of flows the judge advises now.
func (j *Judge) Flows() int { return j.flows }

// Reason is what the latest growth was based on.
func (j *Judge) Reason() Reason { return j.why }

// Observe takes the sample s taken at now and reports whether the advised
// flows grew.
func (j *Judge) Observe(now time.Time, s Sample) bool {
	if j.flows >= j.rule.Max || s.MinRTT <= 0 || s.MinRTT < j.rule.Local {
		return false
	}
	if j.start.IsZero() || s.Sent < j.first.Sent || s.Lost < j.first.Lost {
		j.reset(now, s)
		return false
	}
	j.sumSRTT += s.SRTT
	j.samples++
	if s.Lost > j.lastLost {
		// A loss is told by the RTT around it: a full queue drops packets
		// while the RTT is at its highest, random loss strikes at any RTT.
		lost := s.Lost - j.lastLost
		j.lastLost = s.Lost
		latest := s.LatestRTT
		if latest <= 0 {
			latest = s.SRTT
		}
		if Queued(latest, s.MinRTT, j.rule.Slack) {
			j.queueLost += lost
		} else {
			j.randomLost += lost
			if j.lossRounds == 0 || now.Sub(j.roundStart) >= j.round(s.SRTT) {
				j.lossRounds++
				j.roundStart = now
			}
		}
	}
	age := now.Sub(j.start)
	round := j.round(s.SRTT)
	if age < windowRounds*round || j.lossRounds < 2 {
		if age > 4*windowRounds*round {
			j.reset(now, s) // too little loss to matter: start a fresh window
		}
		return false
	}
	j.flows = max(j.flows, min(s.Flows, j.rule.Max))
	sent := s.Sent - j.first.Sent
	srtt := j.sumSRTT / time.Duration(max(j.samples, 1))
	rate := float64(j.randomLost) / float64(max(sent, 1))
	why := Reason{LossRate: rate, SRTT: srtt, MinRTT: s.MinRTT}
	congested := j.queueLost*4 > j.randomLost
	bursty := !spreadOut(j.lossRounds, j.randomLost, float64(age)/float64(j.round(srtt)))
	j.reset(now, s)
	if congested || bursty || Queued(srtt, s.MinRTT, j.rule.Slack) || rate < j.rule.MinLoss {
		// Losses with a queue behind them, or a standing queue: the path
		// is full, congestion, ours or a neighbour's, which more flows
		// would only make worse. Losses in a burst are a queue's too,
		// even where the RTT cannot show it (below).
		return false
	}
	j.flows = min(j.flows*growth(rate, j.rule.MinLoss), j.rule.Max)
	why.Flows = j.flows
	j.why = why
	return true
}

// windowRounds is the shortest window a verdict is based on, in round
// trips: long enough to tell losses spread over the round trips from a
// burst in two or three of them.
const windowRounds = 6

// round is the length of a round trip as the judge counts them: the RTT,
// rounded up to whole samples.
func (j *Judge) round(srtt time.Duration) time.Duration {
	every := j.rule.Every
	return max(every, (srtt+every-1)/every*every)
}

// spreadOut reports whether lost packets, struck in lossRounds of the
// window's rounds round trips, are spread over them as random loss is. A
// packet lost at random is lost in whichever round trip it was sent, so L
// such losses strike about R*(1-exp(-L/R)) of R round trips; a
// drop-tail queue drops its packets in a burst, in the round or two when it
// overflows. That tells a neighbour's standing queue from a long path with
// random loss where the RTT cannot: a session that meets the queue already
// standing takes the queued RTT for the path's minimum, and its own slow
// start, or the slow start of the flows it just added, overflows the queue
// in a burst (measured: a QUIC session joining an iperf3 Cubic flow on a
// 20 ms, 50 ms-queue bottleneck saw minimum 65 ms and lost 6 % in two
// rounds). Losses must strike at least two thirds of the rounds random loss
// would.
func spreadOut(lossRounds int, lost uint64, rounds float64) bool {
	if rounds < 1 {
		return false
	}
	expected := rounds * (1 - math.Exp(-float64(lost)/rounds))
	return 3*float64(lossRounds) >= 2*expected
}

func (j *Judge) reset(now time.Time, s Sample) {
	j.start, j.first, j.lastLost = now, s, s.Lost
	j.lossRounds, j.sumSRTT, j.samples, j.randomLost, j.queueLost = 0, 0, 0, 0, 0
}

// growth is the factor a verdict of random loss at rate multiplies the
// flows by: a loss-based flow's window is about 1.22/sqrt(rate) packets, so
// sqrt(rate/minLoss) flows together hold the window one flow would hold at
// minLoss (rounded up, at least 2): 5 at 2 %, 3 at 0.5 %.
func growth(rate, minLoss float64) int {
	return max(2, int(math.Ceil(math.Sqrt(rate/minLoss))))
}

// Watcher samples a session's path on its own goroutine and publishes the
// flows its Judge advises.
type Watcher struct {
	advice chan int // capacity 1: the latest advice
	cancel context.CancelFunc
	done   chan struct{}
	limit  atomic.Int64 // Limit's bound; 0 for none

	mu  sync.Mutex // guards why
	why Reason
}

// Watch starts sampling with sample every rule.Every until ctx ends or Stop.
func Watch(ctx context.Context, rule Rule, flows int, sample func() Sample) *Watcher {
	rule = rule.withDefaults()
	ctx, cancel := context.WithCancel(ctx)
	w := &Watcher{advice: make(chan int, 1), cancel: cancel, done: make(chan struct{})}
	j := NewJudge(rule, flows)
	go func() {
		defer close(w.done)
		defer close(w.advice)
		t := time.NewTicker(rule.Every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-t.C:
				if l := int(w.limit.Load()); l > 0 {
					j.rule.Max = min(rule.Max, l)
				}
				if !j.Observe(now, sample()) {
					continue
				}
				w.mu.Lock()
				w.why = j.Reason()
				w.mu.Unlock()
				select { // replace advice nobody took yet
				case <-w.advice:
				default:
				}
				w.advice <- j.Flows()
				if j.Flows() >= j.rule.Max {
					return
				}
			}
		}
	}()
	return w
}

// Advice delivers the advised number of flows each time it grows; a value
// not taken yet is replaced by the next. It is closed when no more advice
// will come: the flows reached the maximum, or the watcher stopped.
func (w *Watcher) Advice() <-chan int { return w.advice }

// Limit bounds the flows w advises to n (at least 1), below its rule's
// Max: what the peer takes, known only once its session began (its hello).
// Flows advised already stay advised.
func (w *Watcher) Limit(n int) { w.limit.Store(int64(max(n, 1))) }

// Reason is what the latest growth was based on.
func (w *Watcher) Reason() Reason {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.why
}

// Stop ends the sampling and waits for it.
func (w *Watcher) Stop() {
	w.cancel()
	<-w.done
}
