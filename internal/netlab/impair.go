package netlab

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// Dir names one direction of a path.
type Dir int

const (
	// SenderToReceiver is the direction from the Sender namespace to the Receiver namespace.
	SenderToReceiver Dir = iota
	// ReceiverToSender is the direction from the Receiver namespace back to the Sender.
	ReceiverToSender
	// Both applies a setting to both directions (SetImpairment only).
	Both
)

func (d Dir) String() string {
	switch d {
	case SenderToReceiver:
		return "sender->receiver"
	case ReceiverToSender:
		return "receiver->sender"
	case Both:
		return "both"
	}
	return fmt.Sprintf("Dir(%d)", int(d))
}

// Impairment describes what one direction of a path does to packets. The zero
// value is a perfect wire: no delay, no loss, no rate limit.
//
// The model, applied to each packet in order:
//  1. MTU: a packet longer than MTU is dropped; for IPv4 with DF set an ICMP
//     "fragmentation needed" is returned to the sender, as a router would.
//  2. Random loss with probability Loss, then bursty loss from Burst.
//  3. The bottleneck: with Rate > 0 each packet occupies the link for
//     len*8/Rate seconds; packets wait in a FIFO queue of QueueBytes and a packet
//     that does not fit is tail-dropped (congestion loss).
//  4. Propagation: Delay plus a uniform jitter in [-Jitter, +Jitter]. Jitter
//     never reorders packets on its own (a packet never overtakes its
//     predecessor), as on a real link.
//  5. Reordering: with probability Reorder a packet is held back an extra
//     ReorderDelay, so later packets overtake it.
//  6. Duplication: with probability Duplicate a second copy is delivered.
type Impairment struct {
	// Delay is the one-way propagation delay.
	Delay time.Duration
	// Jitter is the half-width of a uniform variation added to Delay.
	Jitter time.Duration
	// Loss is the probability (0..1) that a packet is lost, independently.
	Loss float64
	// Burst, when not nil, adds Gilbert-Elliott bursty loss.
	Burst *GilbertElliott
	// Rate is the bottleneck bandwidth in bits per second; 0 means unlimited.
	Rate int64
	// QueueBytes bounds the bottleneck queue. 0 means 50 ms worth of Rate (at
	// least 16 KiB). Ignored when Rate is 0.
	QueueBytes int
	// Reorder is the probability (0..1) that a packet is held back.
	Reorder float64
	// ReorderDelay is how long a reordered packet is held back; 0 means 1 ms.
	ReorderDelay time.Duration
	// Duplicate is the probability (0..1) that a packet is delivered twice.
	Duplicate float64
	// MTU is the largest IP packet that passes; 0 means no limit beyond the
	// path's interface MTU.
	MTU int
}

// GilbertElliott is a two-state Markov loss model. The chain moves once per
// packet: from Good to Bad with probability P, from Bad to Good with
// probability R. In Good a packet is lost with probability LossGood, in Bad
// with LossBad. The mean loss rate is (R*LossGood + P*LossBad) / (P + R) and
// the mean time spent in Bad is 1/R packets.
type GilbertElliott struct {
	P, R              float64
	LossGood, LossBad float64
}

// MeanLoss is the stationary loss rate of the model.
func (g GilbertElliott) MeanLoss() float64 {
	if g.P+g.R == 0 {
		return g.LossGood
	}
	return (g.R*g.LossGood + g.P*g.LossBad) / (g.P + g.R)
}

// ErrInvalidImpairment is returned for out-of-range impairment parameters.
var ErrInvalidImpairment = errors.New("netlab: invalid impairment")

func prob(name string, p float64) error {
	if !(p >= 0 && p <= 1) {
		return fmt.Errorf("%w: %s %v not in [0,1]", ErrInvalidImpairment, name, p)
	}
	return nil
}

// Validate reports whether all parameters are in range.
func (im Impairment) Validate() error {
	if im.Delay < 0 || im.Jitter < 0 || im.ReorderDelay < 0 {
		return fmt.Errorf("%w: negative duration", ErrInvalidImpairment)
	}
	if im.Rate < 0 || im.QueueBytes < 0 || im.MTU < 0 {
		return fmt.Errorf("%w: negative rate, queue or MTU", ErrInvalidImpairment)
	}
	if im.MTU != 0 && im.MTU < 68 {
		return fmt.Errorf("%w: MTU %d below 68", ErrInvalidImpairment, im.MTU)
	}
	for _, c := range []struct {
		n string
		p float64
	}{{"loss", im.Loss}, {"reorder", im.Reorder}, {"duplicate", im.Duplicate}} {
		if err := prob(c.n, c.p); err != nil {
			return err
		}
	}
	if g := im.Burst; g != nil {
		for _, c := range []struct {
			n string
			p float64
		}{{"burst p", g.P}, {"burst r", g.R}, {"burst loss good", g.LossGood}, {"burst loss bad", g.LossBad}} {
			if err := prob(c.n, c.p); err != nil {
				return err
			}
		}
	}
	return nil
}

func (im Impairment) queueLimit() int {
	if im.QueueBytes > 0 {
		return im.QueueBytes
	}
	q := int(im.Rate / 8 / 20) // 50 ms
	return max(q, 16<<10)
}

// verdict is what the shaper decided for one packet.
type verdict int

const (
	pass verdict = iota
	dropLoss
	dropBurst
	dropQueue
	dropMTU
	dropCut
)

// shaper holds the per-direction state of the impairment model. It is not
// safe for concurrent use; the forwarder guards it with its link mutex. It
// knows nothing about devices so it can be tested without root.
type shaper struct {
	imp         Impairment
	rng         *rand.Rand
	bad         bool      // Gilbert-Elliott state
	busyUntil   time.Time // when the bottleneck finishes the last accepted packet
	lastDeliver time.Time // delivery time of the last in-order packet
}

func newShaper(seed uint64) *shaper {
	return &shaper{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// decision is the outcome of admit for a passing packet.
type decision struct {
	at        time.Time // when to deliver
	dupAt     time.Time // when to deliver the duplicate, if dup
	dup       bool
	reordered bool
}

// admit runs one packet of size n bytes, arriving at now, through the model.
func (s *shaper) admit(now time.Time, n int) (verdict, decision) {
	im := &s.imp
	if im.MTU > 0 && n > im.MTU {
		return dropMTU, decision{}
	}
	if im.Loss > 0 && s.rng.Float64() < im.Loss {
		return dropLoss, decision{}
	}
	if g := im.Burst; g != nil {
		if s.bad {
			if s.rng.Float64() < g.R {
				s.bad = false
			}
		} else if s.rng.Float64() < g.P {
			s.bad = true
		}
		pl := g.LossGood
		if s.bad {
			pl = g.LossBad
		}
		if pl > 0 && s.rng.Float64() < pl {
			return dropBurst, decision{}
		}
	}
	depart := now
	if im.Rate > 0 {
		start := now
		if s.busyUntil.After(now) {
			start = s.busyUntil
			backlog := int64(s.busyUntil.Sub(now)) * im.Rate / 8 / int64(time.Second)
			if backlog+int64(n) > int64(im.queueLimit()) {
				return dropQueue, decision{}
			}
		}
		depart = start.Add(time.Duration(int64(n) * 8 * int64(time.Second) / im.Rate))
		s.busyUntil = depart
	}
	var d decision
	d.at = depart.Add(s.delay())
	if d.at.Before(s.lastDeliver) {
		d.at = s.lastDeliver
	}
	if im.Reorder > 0 && s.rng.Float64() < im.Reorder {
		rd := im.ReorderDelay
		if rd == 0 {
			rd = time.Millisecond
		}
		d.at = d.at.Add(rd)
		d.reordered = true
	} else {
		s.lastDeliver = d.at
	}
	if im.Duplicate > 0 && s.rng.Float64() < im.Duplicate {
		d.dup = true
		d.dupAt = d.at
	}
	return pass, d
}

func (s *shaper) delay() time.Duration {
	d := s.imp.Delay
	if j := s.imp.Jitter; j > 0 {
		d += time.Duration(s.rng.Int64N(int64(2*j)+1)) - j
	}
	return max(d, 0)
}

// set replaces the parameters while keeping queue and burst state, so a
// change while traffic flows behaves like the link changing underneath it.
func (s *shaper) set(im Impairment) {
	if im.Burst != nil {
		g := *im.Burst // the caller may reuse its struct
		im.Burst = &g
	}
	s.imp = im
	if im.Burst == nil {
		s.bad = false
	}
	if im.Rate == 0 {
		s.busyUntil = time.Time{}
	}
}
