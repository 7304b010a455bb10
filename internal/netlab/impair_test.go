package netlab

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"sync"
	"testing"
	"time"
)

func TestImpairmentValidate(t *testing.T) {
	cases := []struct {
		name string
		im   Impairment
		ok   bool
	}{
		{"zero", Impairment{}, true},
		{"typical", Impairment{Delay: 60 * time.Millisecond, Loss: 0.02, Rate: 100e6}, true},
		{"loss > 1", Impairment{Loss: 1.5}, false},
		{"loss NaN", Impairment{Loss: math.NaN()}, false},
		{"negative delay", Impairment{Delay: -1}, false},
		{"negative rate", Impairment{Rate: -1}, false},
		{"tiny MTU", Impairment{MTU: 40}, false},
		{"bad burst", Impairment{Burst: &GilbertElliott{P: 2}}, false},
		{"good burst", Impairment{Burst: &GilbertElliott{P: 0.01, R: 0.3, LossBad: 1}}, true},
		{"duplicate > 1", Impairment{Duplicate: 1.01}, false},
	}
	for _, c := range cases {
		err := c.im.Validate()
		if (err == nil) != c.ok {
			t.Errorf("%s: Validate() = %v, want ok=%v", c.name, err, c.ok)
		}
		if err != nil && !errors.Is(err, ErrInvalidImpairment) {
			t.Errorf("%s: error %v does not wrap ErrInvalidImpairment", c.name, err)
		}
	}
}

var t0 = time.Unix(1_000_000, 0)

// TestShaperRate: packets are serialized at Rate and tail-dropped when the
// backlog would exceed QueueBytes.
func TestShaperRate(t *testing.T) {
	s := newShaper(1)
	// 8 Mbit/s = 1 byte per microsecond; the queue holds 2500 bytes.
	s.set(Impairment{Rate: 8_000_000, QueueBytes: 2500, Delay: 10 * time.Millisecond})
	var ats []time.Duration
	var verdicts []verdict
	for range 5 {
		v, d := s.admit(t0, 1000)
		verdicts = append(verdicts, v)
		if v == pass {
			ats = append(ats, d.at.Sub(t0))
		}
	}
	// Backlog seen by each packet: 0, 1000, 2000; the third would make it
	// 3000 > 2500 bytes and is dropped, and so are the rest.
	want := []verdict{pass, pass, dropQueue, dropQueue, dropQueue}
	for i := range want {
		if verdicts[i] != want[i] {
			t.Fatalf("verdicts = %v, want %v", verdicts, want)
		}
	}
	if ats[0] != 11*time.Millisecond || ats[1] != 12*time.Millisecond {
		t.Errorf("delivery times %v, want [11ms 12ms]", ats)
	}
	// Once the link drained, packets pass again.
	if v, _ := s.admit(t0.Add(5*time.Millisecond), 1000); v != pass {
		t.Errorf("after draining: %v", v)
	}
}

// TestShaperJitterKeepsOrder: jitter alone never reorders.
func TestShaperJitterKeepsOrder(t *testing.T) {
	s := newShaper(2)
	s.set(Impairment{Delay: 10 * time.Millisecond, Jitter: 8 * time.Millisecond})
	var last time.Time
	for i := range 10000 {
		now := t0.Add(time.Duration(i) * 100 * time.Microsecond)
		v, d := s.admit(now, 100)
		if v != pass {
			t.Fatal(v)
		}
		if d.at.Before(last) {
			t.Fatalf("packet %d delivered at %v before its predecessor at %v", i, d.at, last)
		}
		if lo := now.Add(2 * time.Millisecond); d.at.Before(lo) {
			t.Fatalf("packet %d delay %v below Delay-Jitter", i, d.at.Sub(now))
		}
		last = d.at
	}
}

// TestShaperReorderDuplicate: reordered packets are held back and later
// packets overtake them; duplicates are flagged.
func TestShaperReorderDuplicate(t *testing.T) {
	s := newShaper(3)
	s.set(Impairment{Delay: time.Millisecond, Reorder: 1, ReorderDelay: 5 * time.Millisecond, Duplicate: 1})
	_, a := s.admit(t0, 100)
	if !a.reordered || a.at != t0.Add(6*time.Millisecond) || !a.dup {
		t.Fatalf("first packet: %+v", a)
	}
	s.set(Impairment{Delay: time.Millisecond})
	_, b := s.admit(t0.Add(time.Millisecond), 100)
	if !b.at.Before(a.at) {
		t.Fatalf("second packet at %v did not overtake the held-back one at %v", b.at, a.at)
	}
}

// TestShaperLossRates: the loss models' long-run rates (deterministic seed).
func TestShaperLossRates(t *testing.T) {
	g := GilbertElliott{P: 0.02, R: 0.2, LossGood: 0.001, LossBad: 0.8}
	cases := []struct {
		name string
		im   Impairment
		want float64
	}{
		{"random 1%", Impairment{Loss: 0.01}, 0.01},
		{"random 5%", Impairment{Loss: 0.05}, 0.05},
		{"gilbert-elliott", Impairment{Burst: &g}, g.MeanLoss()},
	}
	const n = 400000
	for _, c := range cases {
		s := newShaper(4)
		s.set(c.im)
		lost := 0
		for range n {
			if v, _ := s.admit(t0, 100); v != pass {
				lost++
			}
		}
		got := float64(lost) / n
		if math.Abs(got-c.want) > 0.1*c.want {
			t.Errorf("%s: loss %.4f, want %.4f ± 10%%", c.name, got, c.want)
		}
	}
}

func TestShaperMTU(t *testing.T) {
	s := newShaper(5)
	s.set(Impairment{MTU: 1280})
	if v, _ := s.admit(t0, 1280); v != pass {
		t.Errorf("1280 bytes: %v", v)
	}
	if v, _ := s.admit(t0, 1281); v != dropMTU {
		t.Errorf("1281 bytes: %v", v)
	}
}

func TestFragNeeded(t *testing.T) {
	pkt := make([]byte, 1400)
	pkt[0] = 0x45
	binary.BigEndian.PutUint16(pkt[2:], 1400)
	pkt[6] = 0x40 // DF
	pkt[8] = 64
	pkt[9] = 6
	copy(pkt[12:], []byte{10, 77, 1, 1})
	copy(pkt[16:], []byte{10, 77, 1, 2})
	m := fragNeeded(pkt, 1200)
	if m == nil {
		t.Fatal("no ICMP for a DF packet")
	}
	if checksum(m[:20]) != 0 || checksum(m[20:]) != 0 {
		t.Error("bad checksums")
	}
	if m[20] != 3 || m[21] != 4 || binary.BigEndian.Uint16(m[26:]) != 1200 {
		t.Errorf("ICMP header % x", m[20:28])
	}
	if string(m[12:16]) != string(pkt[16:20]) || string(m[16:20]) != string(pkt[12:16]) {
		t.Error("addresses not swapped")
	}
	pkt[6] = 0
	if fragNeeded(pkt, 1200) != nil {
		t.Error("ICMP for a packet without DF")
	}
	if fragNeeded(pkt[:10], 1200) != nil || fragNeeded([]byte{0x60, 0, 0, 0}, 1200) != nil {
		t.Error("ICMP for a runt or IPv6 packet")
	}
}

// fakeDev is an in-memory device: reads come from in, writes go to out.
type fakeDev struct {
	in  chan []byte
	out chan []byte
}

func (f *fakeDev) readBatch(bufs [][]byte, sizes []int) (int, error) {
	p, ok := <-f.in
	if !ok {
		return 0, io.EOF
	}
	n := 0
	for {
		sizes[n] = copy(bufs[n], p)
		n++
		if n == len(bufs) {
			return n, nil
		}
		select {
		case p, ok = <-f.in:
			if !ok {
				return n, nil
			}
		default:
			return n, nil
		}
	}
}

func (f *fakeDev) write(p []byte) error {
	f.out <- append([]byte(nil), p...)
	return nil
}

// TestLinkDelayOrder drives a link through fake devices: every packet comes
// out in order, no earlier than Delay after it went in; Cut drops; stats add up.
func TestLinkDelayOrder(t *testing.T) {
	in := &fakeDev{in: make(chan []byte, 256)}
	out := &fakeDev{out: make(chan []byte, 256)}
	l := newLink(in, out, 1600, 7)
	l.setImpairment(Impairment{Delay: 5 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); l.readLoop() }()
	go func() { defer wg.Done(); l.writeLoop(ctx) }()
	defer func() { close(in.in); cancel(); wg.Wait() }()

	const n = 100
	sent := make([]time.Time, n)
	for i := range n {
		p := make([]byte, 20)
		binary.BigEndian.PutUint32(p, uint32(i))
		sent[i] = time.Now()
		in.in <- p
	}
	for i := range n {
		p := <-out.out
		if got := binary.BigEndian.Uint32(p); got != uint32(i) {
			t.Fatalf("packet %d came out as %d", i, got)
		}
		if d := time.Since(sent[i]); d < 5*time.Millisecond {
			t.Fatalf("packet %d delayed %v, want >= 5ms", i, d)
		}
	}
	l.setCut(true)
	in.in <- make([]byte, 20)
	// The cut packet is counted when read; wait for the count, not a time.
	for l.snapshot().CutDropped == 0 {
		time.Sleep(time.Millisecond)
	}
	s := l.snapshot()
	if s.Packets != n+1 || s.Delivered != n || s.CutDropped != 1 || s.DeliveredBytes != 20*n {
		t.Errorf("stats %+v", s)
	}
}
