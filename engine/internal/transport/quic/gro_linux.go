package quic

import (
	"encoding/binary"
	"net"
	"sync"
	"sync/atomic"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"
)

// Receiving with UDP GRO.
//
// quic-go reads its socket with recvmmsg, 8 datagrams of at most 1452 bytes
// per call, and does not ask the kernel for GRO. With GRO on, the kernel
// hands a socket the datagrams of one flow coalesced into one buffer of up
// to 64 KiB (a GSO batch from a quic-go sender arrives whole on loopback,
// and NICs coalesce too), so the kernel's per-datagram receive work and the
// receive calls shrink by an order of magnitude. quic-go cannot split such
// a buffer, so countingUDP implements the ReadBatch that quic-go uses when
// its socket offers one: it reads coalesced buffers of its own and hands
// quic-go one datagram per message, a copy each (docs/transport-choice.md).

const (
	groBatch  = 8         // coalesced buffers per receive call
	groBuffer = 64 * 1024 // largest coalesced buffer the kernel builds (and one IP datagram)
	groOOB    = 256       // control messages of one buffer: quic-go's own (128) and the GRO size
)

// groReader holds what one receive call brought in and what of it quic-go
// has not taken yet. Only quic-go's read loop calls ReadBatch, one call at a
// time; the mutex keeps a stray concurrent caller safe. It is held while the
// call waits for datagrams, so the counters are atomics of their own.
type groReader struct {
	mu      sync.Mutex
	on      bool             // the kernel accepted UDP_GRO
	pc      *ipv4.PacketConn // recvmmsg
	msgs    []ipv4.Message   // our coalesced buffers
	oob     [][]byte         // each buffer's control messages without the GRO size
	pending []groSegment     // datagrams read
	next    int              // the first of pending not handed out yet
	calls   atomic.Int64     // receive calls
	dgrams  atomic.Int64     // datagrams handed to quic-go
}

// groSegment is one datagram inside a coalesced buffer.
type groSegment struct {
	data []byte
	oob  []byte
	addr net.Addr
}

// enableGRO asks the kernel to coalesce; a kernel that refuses leaves the
// socket as it was and ReadBatch reads straight into quic-go's buffers.
func (c *countingUDP) enableGRO() {
	c.gro.pc = ipv4.NewPacketConn(c.UDPConn)
	raw, err := c.UDPConn.SyscallConn()
	if err != nil {
		return
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_UDP, unix.UDP_GRO, 1)
	}); err != nil || serr != nil {
		return
	}
	c.gro.on = true
	c.gro.msgs = make([]ipv4.Message, groBatch)
	c.gro.oob = make([][]byte, groBatch)
	for i := range c.gro.msgs {
		c.gro.msgs[i].Buffers = [][]byte{make([]byte, groBuffer)}
		c.gro.msgs[i].OOB = make([]byte, groOOB)
		c.gro.oob[i] = make([]byte, groOOB)
	}
}

// ReadBatch fills ms with datagrams, one per message, as recvmmsg would:
// from what an earlier call read, or else from one new receive call.
func (c *countingUDP) ReadBatch(ms []ipv4.Message, flags int) (int, error) {
	g := &c.gro
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.on {
		n, err := g.pc.ReadBatch(ms, flags)
		g.calls.Add(1)
		g.dgrams.Add(int64(max(n, 0)))
		return n, err
	}
	if g.next == len(g.pending) {
		g.pending, g.next = g.pending[:0], 0
		n, err := g.pc.ReadBatch(g.msgs, flags)
		if n <= 0 || err != nil {
			return 0, err
		}
		g.calls.Add(1)
		for i := range g.msgs[:n] {
			m := &g.msgs[i]
			g.pending = splitGRO(g.pending, m.Buffers[0][:m.N], m.OOB[:m.NN], g.oob[i], m.Addr)
		}
	}
	n := 0
	for ; n < len(ms) && g.next < len(g.pending); n++ {
		s := g.pending[g.next]
		g.next++
		m := &ms[n]
		m.N = copy(m.Buffers[0], s.data)
		m.NN = copy(m.OOB, s.oob)
		m.Addr = s.addr
		m.Flags = 0
		if len(s.data) > len(m.Buffers[0]) {
			m.Flags = unix.MSG_TRUNC // as the kernel reports a datagram cut short
		}
	}
	g.dgrams.Add(int64(n))
	return n, nil
}

// receiveCounts returns the receive calls made and the datagrams handed to
// quic-go so far.
func (c *countingUDP) receiveCounts() (calls, datagrams int64) {
	return c.gro.calls.Load(), c.gro.dgrams.Load()
}

// splitGRO appends the datagrams of one coalesced buffer to segs: every
// datagram but the last has the size the kernel gives in its UDP_GRO control
// message; without one the buffer is one datagram. Their control messages,
// written into scratch, are the buffer's without the GRO size, which quic-go
// does not know; a malformed control area is passed on as it came, for
// quic-go to judge, as it would be without GRO.
func splitGRO(segs []groSegment, data, oob, scratch []byte, addr net.Addr) []groSegment {
	size, rest := groSize(oob, scratch)
	if size <= 0 || size >= len(data) {
		return append(segs, groSegment{data: data, oob: rest, addr: addr})
	}
	for len(data) > 0 {
		n := min(size, len(data))
		segs = append(segs, groSegment{data: data[:n:n], oob: rest, addr: addr})
		data = data[n:]
	}
	return segs
}

// groSize finds the UDP_GRO segment size in a control area and copies the
// area's other messages into dst.
func groSize(oob, dst []byte) (size int, rest []byte) {
	rest = dst[:0]
	for b := oob; len(b) > 0; {
		h, body, remainder, err := unix.ParseOneSocketControlMessage(b)
		if err != nil {
			return 0, oob
		}
		one := b[:len(b)-len(remainder)]
		if h.Level == unix.SOL_UDP && h.Type == unix.UDP_GRO {
			if len(body) < 4 {
				return 0, oob
			}
			size = int(int32(binary.NativeEndian.Uint32(body)))
		} else {
			rest = append(rest, one...)
		}
		b = remainder
	}
	return size, rest
}

// groOn reports whether the kernel coalesces for this socket.
func (c *countingUDP) groOn() bool { return c.gro.on }
