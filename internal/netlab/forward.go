package netlab

import (
	"context"
	"encoding/binary"
	"sync"
	"sync/atomic"
	"time"
)

// device is one end of the wire (a TUN file descriptor in the lab, a fake in
// unit tests).
type device interface {
	// readBatch blocks until at least one packet is ready, then fills bufs
	// with as many ready packets as fit and stores their lengths in sizes.
	readBatch(bufs [][]byte, sizes []int) (int, error)
	// write hands one IP packet to the device.
	write(p []byte) error
}

// DirStats counts what happened to packets in one direction of a path.
type DirStats struct {
	Packets, Bytes            uint64 // packets and bytes that entered the wire
	Delivered, DeliveredBytes uint64 // handed to the far end
	Lost                      uint64 // dropped by random loss
	BurstLost                 uint64 // dropped by Gilbert-Elliott loss
	QueueDropped              uint64 // tail-dropped at the bottleneck queue
	MTUDropped                uint64 // longer than the impairment MTU
	CutDropped                uint64 // dropped because the path was cut
	Duplicated                uint64 // extra copies delivered
	Reordered                 uint64 // packets held back so others overtook them
	WriteErrors               uint64 // the far end refused a packet
}

// PathStats are the counters of both directions of one path.
type PathStats struct {
	Name             string
	Cut              bool
	SenderToReceiver DirStats
	ReceiverToSender DirStats
}

type packet struct {
	buf []byte
	n   int
	at  time.Time
	seq uint64
}

// pktHeap is a min-heap on (at, seq): the delay line. With plain delay the
// inserts are almost always at the tail, so pushes cost one comparison.
type pktHeap []*packet

func (h pktHeap) less(i, j int) bool {
	if h[i].at.Equal(h[j].at) {
		return h[i].seq < h[j].seq
	}
	return h[i].at.Before(h[j].at)
}

func (h *pktHeap) push(p *packet) {
	*h = append(*h, p)
	s := *h
	i := len(s) - 1
	for i > 0 {
		parent := (i - 1) / 2
		if !s.less(i, parent) {
			break
		}
		s[i], s[parent] = s[parent], s[i]
		i = parent
	}
}

func (h *pktHeap) pop() *packet {
	s := *h
	p := s[0]
	last := len(s) - 1
	s[0] = s[last]
	s[last] = nil
	s = s[:last]
	i := 0
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(s) && s.less(l, m) {
			m = l
		}
		if r < len(s) && s.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	*h = s
	return p
}

// maxQueued bounds the delay line when no rate limit bounds it.
const maxQueued = 1 << 16

// link moves packets one way between two devices through a shaper. A reader
// goroutine admits packets into the delay line (or, when nothing is delayed,
// writes them straight through); a writer goroutine releases them when due.
type link struct {
	in, out  device
	pool     sync.Pool
	wake     chan struct{}
	writeErr atomic.Uint64

	mu      sync.Mutex // guards the fields below
	sh      *shaper
	cut     bool
	q       pktHeap
	writing int // popped by the writer, not yet written
	seq     uint64
	stats   DirStats
}

func newLink(in, out device, bufSize int, seed uint64) *link {
	l := &link{in: in, out: out, wake: make(chan struct{}, 1), sh: newShaper(seed)}
	l.pool.New = func() any { return &packet{buf: make([]byte, bufSize)} }
	return l
}

func (l *link) get() *packet { return l.pool.Get().(*packet) }

func (l *link) put(p *packet) {
	p.n = 0
	l.pool.Put(p)
}

func (l *link) setImpairment(im Impairment) {
	l.mu.Lock()
	l.sh.set(im)
	l.mu.Unlock()
	l.signal()
}

func (l *link) impairment() Impairment {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sh.imp
}

// setCut cuts or restores the link. Cutting also loses what is in flight.
func (l *link) setCut(cut bool) {
	l.mu.Lock()
	l.cut = cut
	if cut {
		for len(l.q) > 0 {
			l.put(l.q.pop())
			l.stats.CutDropped++
		}
	}
	l.mu.Unlock()
}

func (l *link) snapshot() DirStats {
	l.mu.Lock()
	s := l.stats
	l.mu.Unlock()
	s.WriteErrors = l.writeErr.Load()
	return s
}

func (l *link) signal() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

const batchSize = 32

// readLoop runs until the input device fails (it is closed on shutdown).
func (l *link) readLoop() error {
	pkts := make([]*packet, batchSize)
	bufs := make([][]byte, batchSize)
	sizes := make([]int, batchSize)
	for i := range pkts {
		pkts[i] = l.get()
		bufs[i] = pkts[i].buf
	}
	direct := make([]*packet, 0, batchSize)
	var icmp [][]byte
	for {
		n, err := l.in.readBatch(bufs, sizes)
		if err != nil {
			return err
		}
		now := time.Now()
		pushed := false
		l.mu.Lock()
		for i := range n {
			p := pkts[i]
			p.n = sizes[i]
			l.stats.Packets++
			l.stats.Bytes += uint64(p.n)
			if l.cut {
				l.stats.CutDropped++
				continue
			}
			if len(l.q) >= maxQueued {
				l.stats.QueueDropped++
				continue
			}
			v, d := l.sh.admit(now, p.n)
			switch v {
			case dropLoss:
				l.stats.Lost++
				continue
			case dropBurst:
				l.stats.BurstLost++
				continue
			case dropQueue:
				l.stats.QueueDropped++
				continue
			case dropMTU:
				l.stats.MTUDropped++
				if m := fragNeeded(p.buf[:p.n], l.sh.imp.MTU); m != nil {
					icmp = append(icmp, m)
				}
				continue
			}
			// The packet is consumed: give the batch slot a fresh buffer.
			pkts[i] = l.get()
			bufs[i] = pkts[i].buf
			if d.reordered {
				l.stats.Reordered++
			}
			if d.dup {
				c := l.get()
				c.n = copy(c.buf, p.buf[:p.n])
				l.seq++
				c.at, c.seq = d.dupAt, l.seq
				l.q.push(c)
				l.stats.Duplicated++
				pushed = true
			}
			if !d.at.After(now) && len(l.q) == 0 && l.writing == 0 {
				// Nothing is delayed: skip the writer goroutine.
				l.stats.Delivered++
				l.stats.DeliveredBytes += uint64(p.n)
				direct = append(direct, p)
				continue
			}
			l.seq++
			p.at, p.seq = d.at, l.seq
			l.q.push(p)
			pushed = true
		}
		l.mu.Unlock()
		for i, p := range direct {
			if err := l.out.write(p.buf[:p.n]); err != nil {
				l.writeErr.Add(1)
			}
			l.put(p)
			direct[i] = nil
		}
		direct = direct[:0]
		for i, m := range icmp {
			if err := l.in.write(m); err != nil {
				l.writeErr.Add(1)
			}
			icmp[i] = nil
		}
		icmp = icmp[:0]
		if pushed {
			l.signal()
		}
	}
}

// writeLoop releases delayed packets when they are due, until ctx ends.
func (l *link) writeLoop(ctx context.Context) error {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	batch := make([]*packet, 0, batchSize)
	for {
		l.mu.Lock()
		now := time.Now()
		wait := time.Duration(-1)
		for len(l.q) > 0 && len(batch) < batchSize {
			if l.q[0].at.After(now) {
				break
			}
			p := l.q.pop()
			l.stats.Delivered++
			l.stats.DeliveredBytes += uint64(p.n)
			batch = append(batch, p)
		}
		if len(batch) == 0 && len(l.q) > 0 {
			wait = l.q[0].at.Sub(now)
		}
		l.writing = len(batch)
		l.mu.Unlock()
		if len(batch) > 0 {
			for i, p := range batch {
				if err := l.out.write(p.buf[:p.n]); err != nil {
					l.writeErr.Add(1)
				}
				l.put(p)
				batch[i] = nil
			}
			batch = batch[:0]
			l.mu.Lock()
			l.writing = 0
			l.mu.Unlock()
			continue
		}
		if wait >= 0 {
			timer.Reset(wait)
		} else {
			timer.Stop()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-l.wake:
		case <-timer.C:
		}
	}
}

// fragNeeded builds the ICMPv4 "fragmentation needed" reply a router sends
// for an IPv4 packet with DF set that exceeds mtu, or nil if none is due.
func fragNeeded(pkt []byte, mtu int) []byte {
	if len(pkt) < 20 || pkt[0]>>4 != 4 {
		return nil
	}
	ihl := int(pkt[0]&0x0f) * 4
	if ihl < 20 || len(pkt) < ihl || pkt[6]&0x40 == 0 { // DF bit
		return nil
	}
	if pkt[9] == 1 && len(pkt) > ihl && pkt[ihl] != 0 && pkt[ihl] != 8 {
		return nil // never answer an ICMP error with an ICMP error
	}
	quote := min(len(pkt), ihl+8)
	m := make([]byte, 20+8+quote)
	// IPv4 header: from the original destination back to its source.
	m[0] = 0x45
	binary.BigEndian.PutUint16(m[2:], uint16(len(m)))
	m[8] = 64 // TTL
	m[9] = 1  // ICMP
	copy(m[12:16], pkt[16:20])
	copy(m[16:20], pkt[12:16])
	binary.BigEndian.PutUint16(m[10:], checksum(m[:20]))
	icmp := m[20:]
	icmp[0], icmp[1] = 3, 4 // destination unreachable, fragmentation needed
	binary.BigEndian.PutUint16(icmp[6:], uint16(mtu))
	copy(icmp[8:], pkt[:quote])
	binary.BigEndian.PutUint16(icmp[2:], checksum(icmp))
	return m
}

// checksum is the Internet checksum (RFC 1071).
func checksum(b []byte) uint16 {
	var s uint32
	for len(b) >= 2 {
		s += uint32(b[0])<<8 | uint32(b[1])
		b = b[2:]
	}
	if len(b) == 1 {
		s += uint32(b[0]) << 8
	}
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	return ^uint16(s)
}
